// `tessera schema`: the JSON Schema of the case format names every key of the key table.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "tessera/io/case_keys.hpp"
#include "tessera/io/case_schema.hpp"

using namespace tessera;
using nlohmann::json;

namespace {

/// The object schema of the key group `path` inside `schema`, through the wrappers the
/// generator uses: $ref, an array's items, a map's values (`<name>`, `<id>`) and anyOf.
const json* group_schema(const json& schema, const std::string& path) {
  const json* node = &schema;
  std::string rest = path;
  while (!rest.empty()) {
    const auto dot = rest.find('.');
    std::string key = rest.substr(0, dot);
    rest = dot == std::string::npos ? "" : rest.substr(dot + 1);
    if (key.front() == '<') {
      node = &(*node)["additionalProperties"];
      continue;
    }
    const bool items = key.size() > 2 && key.compare(key.size() - 2, 2, "[]") == 0;
    if (items) key.resize(key.size() - 2);
    if (!node->contains("properties") || !(*node)["properties"].contains(key)) return nullptr;
    node = &(*node)["properties"][key];
    if (node->contains("$ref"))
      node = &schema["$defs"][(*node)["$ref"].get<std::string>().substr(8)];
    if (items) node = &(*node)["items"];
    if (node->contains("anyOf"))
      for (const auto& choice : (*node)["anyOf"])
        if (choice.contains("properties")) node = &choice;
  }
  return node;
}

}  // namespace

TEST_CASE("the schema is draft 2020-12 and lists every key of the key table, no other") {
  const json schema = io::case_schema();
  CHECK(schema["$schema"] == "https://json-schema.org/draft/2020-12/schema");
  for (const auto& group : io::case_key_groups()) {
    CAPTURE(group.path);
    const json* object = group_schema(schema, group.path);
    REQUIRE(object != nullptr);
    REQUIRE(object->contains("properties"));
    CHECK((*object)["properties"].size() == group.keys.size());
    for (const auto& key : group.keys) {
      CAPTURE(key);
      CHECK((*object)["properties"].contains(key));
    }
    // Unknown keys are errors everywhere but among the weights of terms by name.
    if (group.path == "training.weights")
      CHECK((*object)["additionalProperties"].is_object());
    else
      CHECK((*object)["additionalProperties"] == false);
  }
}

TEST_CASE("the schema carries the validator's choices and required keys") {
  const json schema = io::case_schema();
  const json& top = schema["properties"];
  CHECK(top["dtype"]["enum"] == json({"float32", "float64"}));
  CHECK(top["decomposition"]["properties"]["method"]["enum"] ==
        json({"none", "xpinn", "cpinn", "fbpinn"}));
  const json& stage = top["training"]["properties"]["stages"]["items"];
  CHECK(stage["required"] == json({"optimizer"}));
  CHECK(stage["properties"]["iterations"]["type"] == "integer");
  const json optimizers = stage["properties"]["optimizer"]["enum"];
  CHECK(std::find(optimizers.begin(), optimizers.end(), "lbfgs") != optimizers.end());
  CHECK(schema["required"] ==
        json({"name", "coordinates", "fields", "geometry", "equations", "training"}));
  // A CSG shape holds shapes.
  CHECK(schema["$defs"]["shape"]["properties"]["union"]["items"]["$ref"] == "#/$defs/shape");
}
