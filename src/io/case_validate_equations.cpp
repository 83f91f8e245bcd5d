// "equations", "exact" and "reference". Expressions stay text here; the expr module parses
// them and reports their errors with the same keys.
#include <algorithm>

#include "tessera/io/case_detail.hpp"

namespace tessera::io::detail {

void read_equations(const JsonNode& root, Case& c) {
  const JsonNode equations = root.required(
      "equations", "\"equations\": [{\"residual\": \"-lap(u) - f\"}] (one per field, usually)");
  const auto nodes = equations.elements(1, "equation");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const JsonNode& node = nodes[i];
    node.check_object(keys_at("equations[]"));
    EquationSpec eq;
    eq.name = node["name"].string("eq" + std::to_string(i));
    eq.residual =
        node.required("residual", "\"residual\": \"<expression that must vanish>\"").expression();
    if (const JsonNode flux = node["flux"]; flux.present()) {
      const auto parts = flux.elements(1, "expression");
      if (parts.size() != c.coordinates.size())
        flux.fail("expected one flux expression per spatial coordinate (" +
                  quoted_list(c.coordinates) + "), got " + std::to_string(parts.size()));
      for (const auto& part : parts) eq.flux.push_back(part.expression());
    }
    eq.weight = node["weight"].number(Range::non_negative, eq.weight);
    c.equations.push_back(eq);
  }

  if (const JsonNode exact = root["exact"]; exact.present()) {
    for (const auto& [field, node] : exact.members()) {
      if (std::find(c.fields.begin(), c.fields.end(), field) == c.fields.end())
        node.fail("'" + field + "' is not a field; declared fields: " + quoted_list(c.fields) +
                  suggest(field, c.fields));
      c.exact[field] = node.expression();
    }
  }

  if (const JsonNode reference = root["reference"]; reference.present()) {
    reference.check_object(keys_at("reference"));
    const JsonNode file = reference.required("file", "\"file\": \"path/to/reference.h5\"");
    const std::string path = file.string();
    if (path.empty()) file.fail("expected an HDF5 file path, got \"\"");
    c.reference_file = resolve_against_case(c, path);
  }
}

}  // namespace tessera::io::detail
