#pragma once
// Shared by the io unit tests (test_io_case*.cpp): the one-line error a case is refused with.
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/io/case.hpp"

namespace tessera::io::testing {

/// The message loading `document` (as "cases/p.json") fails with, or "loaded".
inline std::string case_error(const nlohmann::json& document) {
  try {
    case_from_json(document, "cases/p.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "loaded";
}

}  // namespace tessera::io::testing
