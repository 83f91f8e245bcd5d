#pragma once
// Shared by the geometry unit tests (test_geometry*.cpp): sampler kinds and error capture.
#include <functional>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/geometry/sampler.hpp"

namespace tessera::geometry::testing {

inline const SamplerKind all_kinds[] = {SamplerKind::uniform, SamplerKind::lhs, SamplerKind::sobol};

/// The message of the tessera::Error that f throws, or "" when it does not throw.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline bool contains_text(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace tessera::geometry::testing
