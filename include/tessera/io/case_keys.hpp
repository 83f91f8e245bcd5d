#pragma once
/// Every object of the case format with the keys it accepts, named by its path as
/// docs/case-format.md writes it ("training.stages[]", "parameters.<name>"). The validator
/// takes each object's allowed keys from here, and a unit test checks that the reference
/// documents exactly these keys.
#include <string>
#include <vector>

namespace tessera::io {

struct KeyGroup {
  std::string path;               ///< "" for the top level
  std::vector<std::string> keys;  ///< fixed keys (objects of free names list only these)
};

/// All objects of the case format.
const std::vector<KeyGroup>& case_key_groups();

/// The keys of the object at `path`; an unknown path is an internal error. A C string, so that
/// GCC 13's -Wdangling-reference does not mistake the returned reference into the static table
/// for one into a temporary std::string argument.
const std::vector<std::string>& keys_at(const char* path);

}  // namespace tessera::io
