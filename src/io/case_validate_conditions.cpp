// "conditions": each type has its own required keys and rejects the keys of other types.
// Also checks that equation and condition names (the loss term names) are unique.
#include <algorithm>
#include <cctype>
#include <map>

#include "tessera/io/case_detail.hpp"

namespace tessera::io::detail {

namespace {

const std::vector<std::string>& condition_types() {
  static const std::vector<std::string> types = names_of<ConditionKind>();
  return types;
}

/// The keys a condition of `type` takes besides name, type, points and weight, and which of
/// them are required.
struct TypeKeys {
  std::vector<std::string> allowed;
  std::vector<std::string> required;
};

TypeKeys keys_of(const std::string& type) {
  if (type == "dirichlet") return {{"on", "field", "value", "enforce"}, {"field", "value"}};
  if (type == "neumann") return {{"on", "field", "value"}, {"field", "value"}};
  if (type == "robin") return {{"on", "field", "a", "b", "value"}, {"field", "a", "b", "value"}};
  if (type == "initial")
    return {{"on", "field", "value", "derivative", "enforce"}, {"field", "value"}};
  if (type == "periodic") return {{"axis", "enforce"}, {"axis"}};
  if (type == "data") return {{"file", "fields"}, {"file", "fields"}};
  return {{"on", "expression"}, {"on", "expression"}};  // residual
}

const std::vector<std::string>& interface_terms() {
  static const std::vector<std::string> terms = {"continuity", "residual_jump", "flux", "gradient"};
  return terms;
}

std::string required_fix(const std::string& key) {
  if (key == "field") return "\"field\": \"u\"";
  if (key == "value") return "\"value\": \"<expression>\"";
  if (key == "a" || key == "b") return "\"" + key + "\": \"<coefficient expression>\"";
  if (key == "axis") return "\"axis\": \"x\" (the coordinate whose two sides match)";
  if (key == "file") return "\"file\": \"data/observations.h5\"";
  if (key == "fields") return "\"fields\": [\"u\"]";
  if (key == "on") return "\"on\": \"boundary\" (or a tag, a plane such as \"x=0\", joined with |)";
  return "\"expression\": \"<expression that must vanish>\"";
}

std::string field_of(const JsonNode& node, const Case& c) {
  const std::string field = node.string();
  if (std::find(c.fields.begin(), c.fields.end(), field) == c.fields.end())
    node.fail("'" + field + "' is not a field; declared fields: " + quoted_list(c.fields) +
              suggest(field, c.fields));
  return field;
}

void check_term_name(const JsonNode& node, const std::string& name) {
  const bool ok = !name.empty() && std::isalpha(static_cast<unsigned char>(name[0])) &&
                  std::all_of(name.begin(), name.end(), [](char ch) {
                    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-';
                  });
  if (!ok)
    node.fail("'" + name +
              "' is not a valid name; use a letter followed by letters, digits, '_' "
              "or '-' (it names the loss term in logs and in training.weights)");
  const auto& reserved = interface_terms();
  if (std::find(reserved.begin(), reserved.end(), name) != reserved.end())
    node.fail("'" + name + "' names an interface loss term; choose another name");
}

/// "on": {"points": [[x, y, t], ...]}: a dirichlet or residual condition at fixed points.
/// Only these two: a point has no outward normal for neumann or robin, and an initial
/// condition's points are the start time's.
void read_points(const JsonNode& on, const JsonNode& node, ConditionSpec& cond, const Case& c) {
  on.check_object(keys_at("conditions[].on"));
  if (cond.type != ConditionKind::dirichlet && cond.type != ConditionKind::residual)
    on.fail(
        "points are taken by dirichlet and residual conditions only (a point has no "
        "outward normal); for a derivative at a point write a residual condition, e.g. "
        "\"type\": \"residual\", \"expression\": \"u_x - 1\"");
  if (node["points"].present())
    node["points"].fail(
        "a condition at given points holds at exactly those points; remove 'points'");
  if (cond.exact)
    node["enforce"].fail("a condition at points is a penalty only; remove \"enforce\"");
  std::vector<std::string> inputs = c.coordinates;
  if (c.time) inputs.push_back(c.time->name);
  std::string example;
  for (const auto& name : inputs)
    example += (example.empty() ? "" : ", ") + std::string("<") + name + ">";
  const JsonNode list = on.required("points", "\"points\": [[" + example + "]]");
  for (const auto& point : list.elements(1, "point")) {
    const auto values = point.elements();
    if (values.size() != inputs.size())
      point.fail("a point needs one number per input (" + quoted_list(inputs) + "): expected " +
                 std::to_string(inputs.size()) + ", got " + std::to_string(values.size()));
    std::vector<double> xs;
    for (const auto& v : values) xs.push_back(v.number());
    cond.at_points.push_back(std::move(xs));
  }
  // The memory estimate counts a condition's points through the network.
  cond.points = static_cast<int64_t>(cond.at_points.size());
}

ConditionSpec read_condition(const JsonNode& node, std::size_t index, const Case& c) {
  node.check_object(keys_at("conditions[]"));
  ConditionSpec cond;
  cond.key = node.key();
  const std::string type =
      node.required("type", "\"type\": one of " + quoted_list(condition_types()))
          .choice(condition_types());
  parse_option(type, cond.type);
  const TypeKeys keys = keys_of(type);
  for (const auto& [key, child] : node.members()) {
    if (key == "name" || key == "type" || key == "points" || key == "weight") continue;
    if (std::find(keys.allowed.begin(), keys.allowed.end(), key) == keys.allowed.end())
      child.fail("not a key of a " + type + " condition; it takes " + quoted_list(keys.allowed) +
                 " (and 'name', 'points', 'weight')");
  }
  for (const auto& key : keys.required) node.required(key, required_fix(key));
  // Observations are fixed points: a point count would be silently ignored.
  if (cond.type == ConditionKind::data && node["points"].present())
    node["points"].fail(
        "a data condition uses every observation in its file (inside each subdomain); "
        "remove 'points' or thin the file with tools/make_observations.py");

  cond.name = node["name"].string(type + std::to_string(index));
  if (node["name"].present()) check_term_name(node["name"], cond.name);
  cond.points = node["points"].integer(1, cond.points);
  cond.weight = node["weight"].number(Range::non_negative, cond.weight);

  if (node["field"].present()) cond.field = field_of(node["field"], c);
  if (const JsonNode enforce = node["enforce"]; enforce.present()) {
    cond.exact = enforce.choice({"penalty", "exact"}) == "exact";
    if (cond.exact && node["derivative"].present())
      enforce.fail(
          "an initial rate of change cannot be enforced exactly (only values can); remove "
          "\"enforce\" or \"derivative\"");
  }
  if (node["value"].present()) cond.value = node["value"].expression();
  if (node["a"].present()) cond.a = node["a"].expression();
  if (node["b"].present()) cond.b = node["b"].expression();
  if (node["expression"].present()) cond.expression = node["expression"].expression();

  if (cond.type == ConditionKind::initial) {
    if (!c.time)
      node["type"].fail(
          "an initial condition needs a time coordinate; add \"time\": "
          "{\"name\": \"t\", \"range\": [0, 1]} at the top level");
    cond.on = node["on"].string("initial");
    if (cond.on != "initial")
      node["on"].fail("an initial condition holds on \"initial\", got " + node["on"].describe() +
                      "; remove \"on\"");
    if (const JsonNode d = node["derivative"]; d.present()) {
      cond.derivative = d.string();
      if (cond.derivative != c.time->name)
        d.fail("expected \"" + c.time->name +
               "\" (the time name: the initial rate of change), got " + d.describe());
    }
  } else if (cond.type == ConditionKind::periodic) {
    const JsonNode axis = node["axis"];
    cond.axis = axis.string();
    if (std::find(c.coordinates.begin(), c.coordinates.end(), cond.axis) == c.coordinates.end())
      axis.fail("'" + cond.axis + "' is not a spatial coordinate; expected one of " +
                quoted_list(c.coordinates) + suggest(cond.axis, c.coordinates));
  } else if (cond.type == ConditionKind::data) {
    const JsonNode file = node["file"];
    const std::string path = file.string();
    if (path.empty()) file.fail("expected an HDF5 file path, got \"\"");
    cond.file = resolve_against_case(c, path);
    for (const auto& f : node["fields"].elements(1, "field")) {
      cond.fields.push_back(field_of(f, c));
      if (std::count(cond.fields.begin(), cond.fields.end(), cond.fields.back()) > 1)
        f.fail("'" + cond.fields.back() + "' is listed twice");
    }
  } else if (node["on"].present() && node["on"].value().is_object()) {
    read_points(node["on"], node, cond, c);
  } else {
    const JsonNode on = node["on"];
    cond.on = on.string("boundary");
    if (cond.on.find_first_not_of(" \t") == std::string::npos)
      on.fail(
          "expected a selector: \"boundary\", a tag, a plane such as \"x=0\", or several "
          "joined with |");
  }
  return cond;
}

}  // namespace

void read_conditions(const JsonNode& root, Case& c) {
  std::map<std::string, std::string> names;  // term name -> key that declared it
  const JsonNode equations = root["equations"];
  for (std::size_t i = 0; i < c.equations.size(); ++i) {
    const JsonNode at = equations.elements()[i]["name"];
    if (at.present()) check_term_name(at, c.equations[i].name);
    if (names.count(c.equations[i].name))
      (at.present() ? at : equations.elements()[i])
          .fail("the name '" + c.equations[i].name + "' is already used by " +
                names[c.equations[i].name] + "; names must be unique");
    names[c.equations[i].name] = equations.element_key(i);
  }
  const JsonNode conditions = root["conditions"];
  if (!conditions.present()) return;
  const auto nodes = conditions.elements();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    ConditionSpec cond = read_condition(nodes[i], i, c);
    if (names.count(cond.name))
      (nodes[i]["name"].present() ? nodes[i]["name"] : nodes[i])
          .fail("the name '" + cond.name + "' is already used by " + names[cond.name] +
                "; give each equation and condition its own \"name\"");
    names[cond.name] = nodes[i].key();
    c.conditions.push_back(std::move(cond));
  }
}

}  // namespace tessera::io::detail
