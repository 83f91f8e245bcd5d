#pragma once
/// A JSON Schema (draft 2020-12) of the case format, for editors and other tools (`tessera
/// schema`). Its objects and their keys come from the key table (case_keys.hpp), so the schema
/// names exactly the keys the validator accepts; each key's JSON type, its fixed choices (the
/// spellings of case_options.hpp and the optimizer table) and simple ranges come from the table
/// of types in case_schema.cpp. Unknown keys are refused (additionalProperties false) where
/// the validator refuses them. What depends on other keys (an expression's symbols, a selector,
/// which optimizer takes a stage key, one shape per geometry) stays the validator's: every
/// valid case passes the schema, not every case that passes it is valid.
#include <nlohmann/json.hpp>

namespace tessera::io {

nlohmann::json case_schema();

}  // namespace tessera::io
