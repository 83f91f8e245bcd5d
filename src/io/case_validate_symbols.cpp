// The run's identity and its symbols: name, seed, dtype, device, constants, coordinates, time,
// fields, parameters. Every symbol an expression can use must be distinct and not built in.
#include <algorithm>
#include <map>

#include "tessera/io/case_detail.hpp"

namespace tessera::io::detail {

namespace {

/// Names an expression already gives a meaning to (expr::function_names() and the built-in
/// constants; io does not depend on expr).
const std::vector<std::string>& built_in_names() {
  static const std::vector<std::string> names = {
      "pi",   "e",    "sin", "cos", "tan",  "asin", "acos", "atan",  "atan2", "sinh",
      "cosh", "tanh", "exp", "log", "sqrt", "abs",  "sign", "min",   "max",   "pow",
      "if",   "lap",  "D",   "d",   "grad", "div",  "dot",  "vector"};
  return names;
}

/// Tracks every symbol declared so far, to report clashes with where the first one came from.
class Symbols {
 public:
  void declare(const std::string& name, const JsonNode& at, const std::string& what) {
    const auto& reserved = built_in_names();
    if (std::find(reserved.begin(), reserved.end(), name) != reserved.end())
      at.fail("'" + name + "' is built into expressions (" +
              (name == "pi" || name == "e" ? std::string("the constant ") + name : "a function") +
              "); choose another name for this " + what);
    auto it = origin_.find(name);
    if (it != origin_.end())
      at.fail("'" + name + "' is already declared at " + it->second +
              "; every coordinate, field, constant and parameter needs its own name");
    origin_[name] = at.key();
  }

 private:
  std::map<std::string, std::string> origin_;
};

void check_identifier(const std::string& name, const JsonNode& at, const std::string& what) {
  if (!is_plain_identifier(name))
    at.fail("'" + name + "' is not a valid " + what +
            " name; use a letter followed by letters and digits (no '_', which starts "
            "derivative suffixes such as u_xx)");
}

/// "auto", "cpu", "cuda" or "cuda:N" (a device index, as in PyTorch).
void read_device(const JsonNode& node, Case& c) {
  if (!node.present()) return;
  const std::string text = node.string();
  const std::string prefix = "cuda:";
  if (text.compare(0, prefix.size(), prefix) != 0) {
    c.device = node.option(c.device);
    return;
  }
  const std::string index = text.substr(prefix.size());
  if (index.empty() || index.size() > 4 ||
      index.find_first_not_of("0123456789") != std::string::npos)
    node.fail("expected \"cuda:N\" with N a device index (0, 1, ...), got " + node.describe());
  c.device = DeviceChoice::cuda;
  c.device_index = std::stoi(index);
}

/// A field object {"name", "of", "hidden"}: `of` names some of the inputs, each once, in
/// input order (coordinates, then time), so the field's network sees its columns as the case
/// lists them.
FieldInputs read_field_inputs(const JsonNode& node, const Case& c) {
  node.check_object(keys_at("fields[]"));
  std::vector<std::string> inputs = c.coordinates;
  if (c.time) inputs.push_back(c.time->name);
  std::string listed;
  for (const auto& name : inputs) listed += (listed.empty() ? "'" : ", '") + name + "'";
  FieldInputs field;
  field.key = node.key();
  const JsonNode of = node.required(
      "of", "\"of\": [" + listed + "] (the inputs the field depends on, in that order)");
  std::size_t next = 0;  // the position in `inputs` the next name may take
  for (const auto& entry : of.elements(1, "input")) {
    const std::string name = entry.string();
    const auto at = std::find(inputs.begin(), inputs.end(), name);
    if (at == inputs.end())
      entry.fail("'" + name + "' is not an input of this case; \"of\" takes " + listed);
    const auto position = static_cast<std::size_t>(at - inputs.begin());
    if (position < next)
      entry.fail("'" + name + "' is " +
                 (std::find(field.of.begin(), field.of.end(), name) != field.of.end()
                      ? std::string("named twice")
                      : "out of order") +
                 "; list each input once, in the order " + listed);
    field.of.push_back(name);
    next = position + 1;
  }
  if (const JsonNode hidden = node["hidden"]; hidden.present()) {
    field.hidden.emplace();
    for (const auto& width : hidden.elements(1, "layer width"))
      field.hidden->push_back(width.integer(1));
  }
  return field;
}

}  // namespace

void read_symbols(const JsonNode& root, Case& c) {
  const JsonNode name =
      root.required("name", "\"name\": \"my_run\" (names the run and its output)");
  c.name = name.string();
  if (c.name.empty() || c.name.find_first_of("/\\ \t\n") != std::string::npos)
    name.fail("expected a non-empty run name without spaces or slashes, got " + name.describe());
  if (const JsonNode description = root["description"]; description.present()) {
    if (description.value().is_array())
      for (const auto& line : description.elements()) c.description.push_back(line.string());
    else
      c.description.push_back(description.string());
  }
  c.seed = root["seed"].unsigned_integer(c.seed);
  c.dtype = root["dtype"].option(c.dtype);
  read_device(root["device"], c);

  Symbols symbols;
  const JsonNode coordinates =
      root.required("coordinates", "\"coordinates\": [\"x\", \"y\"] (1 to 8 spatial coordinates)");
  const auto coordinate_nodes = coordinates.elements(1, "coordinate");
  // The network's inputs are the coordinates and time; beyond 8 the shipped geometry (boxes)
  // and the default output grid stop being useful, and nothing has been tested there.
  const std::size_t max_inputs = root["time"].present() ? 7 : 8;
  if (coordinate_nodes.size() > max_inputs)
    coordinates.fail("expected 1 to " + std::to_string(max_inputs) +
                     " spatial coordinates (8 inputs with time), got " +
                     std::to_string(coordinate_nodes.size()) +
                     "; time goes in \"time\": {\"name\": \"t\", \"range\": [0, 1]}");
  for (const auto& node : coordinate_nodes) {
    c.coordinates.push_back(node.string());
    check_identifier(c.coordinates.back(), node, "coordinate");
    symbols.declare(c.coordinates.back(), node, "coordinate");
  }

  if (const JsonNode time = root["time"]; time.present()) {
    time.check_object(keys_at("time"));
    TimeSpec spec;
    const JsonNode time_name = time["name"];
    spec.name = time_name.string(spec.name);
    if (time_name.present()) check_identifier(spec.name, time_name, "time");
    symbols.declare(spec.name, time_name.present() ? time_name : time, "time coordinate");
    const JsonNode range = time.required("range", "\"range\": [start, end]");
    const auto ends = range.elements(2, "number");
    if (ends.size() != 2) range.fail("expected [start, end], got " + range.describe());
    spec.range = {ends[0].number(), ends[1].number()};
    if (!(spec.range[0] < spec.range[1]))
      range.fail("expected start < end, got " + range.describe());
    c.time = spec;
  }

  const JsonNode fields = root.required("fields", "\"fields\": [\"u\"] (the unknowns)");
  for (const auto& node : fields.elements(1, "field")) {
    if (node.present() && node.value().is_object()) {
      const JsonNode name = node.required("name", "\"name\": \"a\"");
      c.fields.push_back(name.string());
      check_identifier(c.fields.back(), name, "field");
      symbols.declare(c.fields.back(), name, "field");
      c.field_inputs[c.fields.back()] = read_field_inputs(node, c);
      continue;
    }
    c.fields.push_back(node.string());
    check_identifier(c.fields.back(), node, "field");
    symbols.declare(c.fields.back(), node, "field");
  }

  if (const JsonNode constants = root["constants"]; constants.present()) {
    for (const auto& [key, node] : constants.members()) {
      check_identifier(key, node, "constant");
      symbols.declare(key, node, "constant");
      c.constants[key] = node.number();
    }
  }

  if (const JsonNode parameters = root["parameters"]; parameters.present()) {
    for (const auto& [key, node] : parameters.members()) {
      check_identifier(key, node, "parameter");
      symbols.declare(key, node, "parameter");
      node.check_object(keys_at("parameters.<name>"));
      ParameterSpec p;
      p.initial = node["initial"].number(Range::any, p.initial);
      p.trainable = node["trainable"].boolean(p.trainable);
      p.positive = node["positive"].boolean(p.positive);
      if (p.positive && !(p.initial > 0))
        (node["initial"].present() ? node["initial"] : node)
            .fail("a positive parameter needs a positive \"initial\" value, got " +
                  node["initial"].describe());
      c.parameters[key] = p;
    }
  }

  if (const JsonNode data = root["data"]; data.present()) {
    for (const auto& [key, node] : data.members()) {
      check_identifier(key, node, "data");
      symbols.declare(key, node, "data");
      node.check_object(keys_at("data.<name>"));
      DataSpec spec;
      const JsonNode file = node.required("file", "\"file\": \"path/to/table.h5\"");
      if (file.string().empty()) file.fail("expected an HDF5 file path, got \"\"");
      spec.file = resolve_against_case(c, file.string());
      spec.dataset = node["dataset"].string(spec.dataset);
      if (spec.dataset.empty() || spec.dataset[0] != '/')
        node["dataset"].fail("expected an absolute dataset path such as \"/values\", got " +
                             node["dataset"].describe());
      spec.interpolation = node["interpolation"].option(spec.interpolation);
      c.data[key] = spec;
    }
  }

  if (const JsonNode definitions = root["definitions"]; definitions.present()) {
    for (const auto& [key, node] : definitions.members()) {
      check_identifier(key, node, "definition");
      symbols.declare(key, node, "definition");
      c.definitions[key] = node.expression();
    }
  }
}

}  // namespace tessera::io::detail
