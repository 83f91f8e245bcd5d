#pragma once
/// `--set path=value` overrides of a case document (docs/case-format.md). Internal to io: load_case
/// applies them before validation.
#include <string>

#include <nlohmann/json.hpp>

namespace tessera::io::detail {

/// An override as given and the key path it set, in message form ("training.stages[0].lr").
struct AppliedOverride {
  std::string text;
  std::string key;
};

/// Applies "path=value" to `document`. The path is keys separated by dots, with array indices
/// either as a dotted number ("stages.0") or in brackets ("stages[0]"); a number names an
/// array element where the container is an array and an object key otherwise ("subdomains.0").
/// The value is parsed as JSON when it parses, else taken as a string. It replaces what was
/// there (objects are replaced, not merged); missing object keys along the path are created;
/// an index past the end of an array is an error. Throws tessera::Error ("--set 'x': ...").
AppliedOverride apply_override(nlohmann::json& document, const std::string& text);

}  // namespace tessera::io::detail
