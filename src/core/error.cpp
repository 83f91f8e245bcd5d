#include "tessera/core/error.hpp"

#include <filesystem>

namespace tessera::detail {

void throw_internal_error(const char* file, int line, const std::string& message) {
  // The path below src/ or include/ is enough to find the place; build paths differ.
  const std::string path = file;
  std::string shown = std::filesystem::path(path).filename().string();
  for (const char* root : {"/src/", "/include/", "/tests/", "/tools/"})
    if (auto at = path.rfind(root); at != std::string::npos) {
      shown = path.substr(at + 1);
      break;
    }
  throw InternalError("internal error at " + shown + ":" + std::to_string(line) + ": " + message +
                      " (a bug in Tessera; please report it with the case file)");
}

}  // namespace tessera::detail
