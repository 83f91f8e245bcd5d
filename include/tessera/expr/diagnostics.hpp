#pragma once
/// The one shape of expression errors: "<key>: <what> at column <c> (<detail>)".
#include <string>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::expr {

/// Throws tessera::Error "<key>: <what> at column <column>" followed by " (<detail>)" when
/// detail is not empty. Columns are 1-based.
[[noreturn]] inline void fail_at(const std::string& key, const std::string& what, int column,
                                 const std::string& detail = "") {
  TESSERA_FAIL(key << ": " << what << " at column " << column
                   << (detail.empty() ? "" : " (" + detail + ")"));
}

/// "a, b, c" (or "none").
inline std::string join(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace tessera::expr
