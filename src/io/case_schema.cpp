// The JSON Schema of the case format (case_schema.hpp): the objects from the key table, each
// key's type from the table below.
#include "tessera/io/case_schema.hpp"

#include <map>
#include <set>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/io/case_keys.hpp"
#include "tessera/io/case_options.hpp"
#include "tessera/io/optimizers.hpp"

namespace tessera::io {
namespace {

using nlohmann::json;

json type(const char* name) { return {{"type", name}}; }

json integer(int64_t minimum) { return {{"type", "integer"}, {"minimum", minimum}}; }

json number_at_least(double minimum) { return {{"type", "number"}, {"minimum", minimum}}; }

json positive() { return {{"type", "number"}, {"exclusiveMinimum", 0}}; }

json array_of(json items, int64_t min_items = 0) {
  json a = {{"type", "array"}, {"items", std::move(items)}};
  if (min_items > 0) a["minItems"] = min_items;
  return a;
}

json pair_of_numbers() {
  json a = array_of(type("number"), 2);
  a["maxItems"] = 2;
  return a;
}

json map_of(json values) {
  return {{"type", "object"}, {"additionalProperties", std::move(values)}};
}

template <typename E>
json one_of() {
  return {{"type", "string"}, {"enum", names_of<E>()}};
}

json choice(std::vector<std::string> words) {
  return {{"type", "string"}, {"enum", std::move(words)}};
}

/// An expression: a string in the expression language or a plain number.
json expression() { return {{"type", {"string", "number"}}}; }

/// The object of the key group `path`, filled in by build() (a placeholder until then).
json group(const std::string& path) { return {{"$group", path}}; }

/// Alternatives: `value` or the object of the group at the same path.
json or_group(json value, const std::string& path) {
  return {{"anyOf", {std::move(value), group(path)}}};
}

/// Every key of the case format with its value's schema. A key with an object of its own (a
/// group of case_keys.cpp) and no entry here is that object.
std::map<std::string, json> key_types() {
  const json shape = {{"$ref", "#/$defs/shape"}};
  return {
      {"name", type("string")},
      {"description", {{"anyOf", {type("string"), array_of(type("string"))}}}},
      {"seed", integer(0)},
      {"dtype", one_of<FloatType>()},
      {"device", {{"type", "string"}, {"pattern", "^(auto|cpu|cuda(:[0-9]+)?)$"}}},
      {"constants", map_of(type("number"))},
      {"definitions", map_of(expression())},
      {"coordinates",
       [] {
         json a = array_of(type("string"), 1);
         a["maxItems"] = 8;
         return a;
       }()},
      {"time.name", type("string")},
      {"time.range", pair_of_numbers()},
      {"fields", array_of(or_group(type("string"), "fields[]"), 1)},
      {"fields[].name", type("string")},
      {"fields[].of", array_of(type("string"), 1)},
      {"fields[].hidden", array_of(integer(1), 1)},
      {"geometry", shape},
      {"geometry.interval", pair_of_numbers()},
      {"geometry.box", array_of(pair_of_numbers(), 1)},
      {"geometry.disk.center", array_of(type("number"), 2)},
      {"geometry.disk.radius", positive()},
      {"geometry.ball.center", array_of(type("number"), 3)},
      {"geometry.ball.radius", positive()},
      {"geometry.polygon", or_group(type("string"), "geometry.polygon")},
      {"geometry.polygon.vertices", array_of(pair_of_numbers(), 3)},
      {"geometry.polygon.holes", array_of(array_of(pair_of_numbers(), 3))},
      {"geometry.mesh", type("string")},
      {"geometry.union", array_of(shape, 1)},
      {"geometry.intersection", array_of(shape, 2)},
      {"geometry.difference", array_of(shape, 2)},
      {"geometry.tags", map_of(type("string"))},
      {"equations", array_of(group("equations[]"), 1)},
      {"equations[].name", type("string")},
      {"equations[].residual", expression()},
      {"equations[].flux", array_of(expression(), 1)},
      {"equations[].weight", number_at_least(0)},
      {"conditions", array_of(group("conditions[]"))},
      {"conditions[].name", type("string")},
      {"conditions[].type", one_of<ConditionKind>()},
      {"conditions[].on", or_group(type("string"), "conditions[].on")},
      {"conditions[].on.points", array_of(array_of(type("number"), 1), 1)},
      {"conditions[].field", type("string")},
      {"conditions[].value", expression()},
      {"conditions[].a", expression()},
      {"conditions[].b", expression()},
      {"conditions[].derivative", type("string")},
      {"conditions[].axis", type("string")},
      {"conditions[].file", type("string")},
      {"conditions[].fields", array_of(type("string"), 1)},
      {"conditions[].expression", expression()},
      {"conditions[].points", integer(1)},
      {"conditions[].weight", number_at_least(0)},
      {"conditions[].enforce", choice({"penalty", "exact"})},
      {"exact", map_of(expression())},
      {"reference.file", type("string")},
      {"parameters", map_of(group("parameters.<name>"))},
      {"data", map_of(group("data.<name>"))},
      {"data.<name>.file", type("string")},
      {"data.<name>.dataset", type("string")},
      {"data.<name>.interpolation", one_of<InterpolationChoice>()},
      {"parameters.<name>.initial", type("number")},
      {"parameters.<name>.trainable", type("boolean")},
      {"parameters.<name>.positive", type("boolean")},
      {"decomposition.method", one_of<DecompositionMethod>()},
      {"decomposition.split", map_of(integer(1))},
      {"decomposition.cuts", map_of(array_of(type("number")))},
      {"decomposition.balance", one_of<Balance>()},
      {"decomposition.interface.points", integer(1)},
      {"decomposition.interface.weights.continuity", number_at_least(0)},
      {"decomposition.interface.weights.residual", number_at_least(0)},
      {"decomposition.interface.weights.flux", number_at_least(0)},
      {"decomposition.interface.weights.gradient", number_at_least(0)},
      {"decomposition.ranks_per_subdomain", integer(1)},
      {"decomposition.overlap",
       [] {
         json n = positive();
         n["maximum"] = 1;
         return n;
       }()},
      {"decomposition.levels", array_of(map_of(integer(1)))},
      {"decomposition.slices",
       [] {
         json n = integer(1);
         n["maximum"] = 65536;
         return n;
       }()},
      {"subdomains",
       [] {
         json m = map_of(group("subdomains.<id>"));
         m["propertyNames"] = {{"pattern", "^(0|[1-9][0-9]*)$"}};
         return m;
       }()},
      {"subdomains.<id>.network", {{"$ref", "#/$defs/network"}}},
      {"subdomains.<id>.collocation.points", integer(1)},
      {"network", {{"$ref", "#/$defs/network"}}},
      {"network.architecture", one_of<ArchitectureChoice>()},
      {"network.hidden", array_of(integer(1), 1)},
      {"network.activation", one_of<ActivationChoice>()},
      {"network.weight_factorization", or_group(type("boolean"), "network.weight_factorization")},
      {"network.weight_factorization.mean", type("number")},
      {"network.weight_factorization.std", number_at_least(0)},
      {"network.adaptive_activation.scale", positive()},
      {"network.fourier_features.count", integer(1)},
      {"network.fourier_features.scale", positive()},
      {"network.init", or_group(one_of<InitChoice>(), "network.init")},
      {"network.init.from", type("string")},
      {"network.init.subdomain", integer(0)},
      {"training.derivatives", one_of<DerivativeChoice>()},
      {"training.stages", array_of(group("training.stages[]"), 1)},
      {"training.log_every", integer(1)},
      {"training.checkpoint_every", integer(0)},
      {"training.time_limit", positive()},
      {"training.budget", positive()},
      {"training.batch.points", integer(1)},
      {"training.batch.memory", {{"anyOf", {positive(), type("string")}}}},
      {"training.collocation.points", integer(1)},
      {"training.collocation.sampler", one_of<SamplerChoice>()},
      {"training.collocation.resample_every", integer(0)},
      {"training.collocation.adaptive", or_group(type("boolean"), "training.collocation.adaptive")},
      {"training.collocation.adaptive.every", integer(1)},
      {"training.collocation.adaptive.candidates", integer(1)},
      {"training.collocation.adaptive.exponent", number_at_least(0)},
      {"training.collocation.adaptive.constant", number_at_least(0)},
      {"training.collocation.adaptive.across_subdomains", type("boolean")},
      {"training.causal.enabled", type("boolean")},
      {"training.causal.chunks", integer(1)},
      {"training.causal.tolerance", number_at_least(0)},
      {"training.stages[].optimizer", choice(optimizer_names())},
      {"training.stages[].iterations", integer(1)},
      {"training.stages[].lr", positive()},
      {"training.stages[].warmup", integer(0)},
      {"training.stages[].clip", positive()},
      {"training.stages[].points", integer(1)},
      {"training.stages[].history", integer(1)},
      {"training.stages[].scaling", one_of<HistoryScaling>()},
      {"training.stages[].tolerance", number_at_least(0)},
      {"training.stages[].dtype", one_of<FloatType>()},
      {"training.stages[].precision", one_of<Precision>()},
      {"training.stages[].hessian", one_of<HessianLayout>()},
      {"training.stages[].decay.rate", positive()},
      {"training.stages[].decay.every", integer(1)},
      {"training.weights.adaptive", one_of<WeightBalancing>()},
      {"training.weights.adaptive_every", integer(1)},
      {"training.weights.adaptive_alpha",
       [] {
         json n = number_at_least(0);
         n["exclusiveMaximum"] = 1;
         return n;
       }()},
      {"output.directory", type("string")},
      {"output.points", type("string")},
      {"output.grid", map_of(integer(2))},
      {"output.every", {{"const", 0}}},
      {"output.mesh.max_cell_size", positive()},
      {"output.mesh.times", integer(2)},
  };
}

/// The keys an object must have, by group (the validator's `required` reads).
const std::map<std::string, std::vector<std::string>>& required_keys() {
  static const std::map<std::string, std::vector<std::string>> required = {
      {"", {"name", "coordinates", "fields", "geometry", "equations", "training"}},
      {"time", {"range"}},
      {"fields[]", {"name", "of"}},
      {"geometry.disk", {"center", "radius"}},
      {"geometry.ball", {"center", "radius"}},
      {"geometry.polygon", {"vertices"}},
      {"equations[]", {"residual"}},
      {"conditions[]", {"type"}},
      {"conditions[].on", {"points"}},
      {"reference", {"file"}},
      {"data.<name>", {"file"}},
      {"subdomains.<id>.collocation", {"points"}},
      {"network.adaptive_activation", {"scale"}},
      {"network.fourier_features", {"count", "scale"}},
      {"network.init", {"from"}},
      {"training.stages[]", {"optimizer"}},
      {"training.stages[].decay", {"rate"}},
      {"output.mesh", {"max_cell_size"}},
  };
  return required;
}

std::string joined(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

class Builder {
 public:
  Builder() : types_(key_types()) {
    for (const auto& g : case_key_groups()) groups_[g.path] = &g.keys;
  }

  json build() {
    json schema = {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
                   {"title", "Tessera case file"},
                   {"description",
                    "The case format of docs/case-format.md. Files may hold // and /* */ "
                    "comments, which a JSON Schema validator does not take: strip them first."}};
    schema.update(object("", nullptr));
    schema["$defs"] = {{"network", object("network", nullptr)}, {"shape", shape()}};
    for (const auto& [path, value] : types_)
      TESSERA_ASSERT(used_.count(path), "case_schema: '" << path << "' is not a case key");
    return schema;
  }

 private:
  /// The object of group `path`: its keys, the required ones, and no others unless `extra`
  /// (the schema of the values of free names) says otherwise.
  json object(const std::string& path, json extra) {
    json properties = json::object();
    for (const auto& key : *groups_.at(path)) properties[key] = value(joined(path, key));
    json o = {{"type", "object"}, {"properties", properties}};
    o["additionalProperties"] = extra.is_null() ? json(false) : extra;
    if (auto it = required_keys().find(path); it != required_keys().end())
      o["required"] = it->second;
    return o;
  }

  /// A shape: one of the shapes (CSG shapes hold shapes: #/$defs/shape) and its tags.
  json shape() { return object("geometry", nullptr); }

  json value(const std::string& path) {
    used_.insert(path);
    const auto it = types_.find(path);
    if (it != types_.end()) return expand(it->second);
    TESSERA_ASSERT(groups_.count(path), "case_schema: no type for the case key '" << path << "'");
    // training.weights: its fixed keys and the weights of terms by name.
    if (path == "training.weights") return object(path, number_at_least(0));
    json o = object(path, nullptr);
    // Stages, or a budget that plans them.
    if (path == "training") o["oneOf"] = {{{"required", {"stages"}}}, {{"required", {"budget"}}}};
    return o;
  }

  /// `fragment` with every group placeholder replaced by its object.
  json expand(const json& fragment) {
    if (fragment.is_object() && fragment.contains("$group"))
      return object(fragment["$group"].get<std::string>(), nullptr);
    if (!fragment.is_structured()) return fragment;
    json out = fragment;
    for (auto& item : out.items()) item.value() = expand(item.value());
    return out;
  }

  std::map<std::string, json> types_;
  std::map<std::string, const std::vector<std::string>*> groups_;
  std::set<std::string> used_;
};

}  // namespace

nlohmann::json case_schema() { return Builder().build(); }

}  // namespace tessera::io
