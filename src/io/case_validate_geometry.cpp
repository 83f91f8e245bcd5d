// "geometry": exactly one shape key (plus optional "tags"). interval and box are read fully;
// the other shapes are kept as JSON for the geometry module, with their dimension checked
// where it is fixed and mesh file paths resolved against the case folder.
#include "tessera/io/case_detail.hpp"

namespace tessera::io::detail {

namespace {

const std::vector<std::string>& shape_kinds() {
  static const std::vector<std::string> kinds = {"interval", "box",   "disk",         "ball",
                                                 "polygon",  "mesh",  "union",        "intersection",
                                                 "difference"};
  return kinds;
}

std::string dims_text(std::size_t n) {
  return std::to_string(n) + " coordinate" + (n == 1 ? "" : "s");
}

std::array<double, 2> read_bounds(const JsonNode& node) {
  const auto ends = node.elements(0, "number");
  if (ends.size() != 2) node.fail("expected [lo, hi], got " + node.describe());
  const std::array<double, 2> bounds{ends[0].number(), ends[1].number()};
  if (!(bounds[0] < bounds[1])) node.fail("expected lo < hi, got " + node.describe());
  return bounds;
}

/// Reads one shape object; `raw` is its copy in which mesh paths get resolved.
void read_shape(const JsonNode& node, nlohmann::json& raw, const Case& c, GeometrySpec* top) {
  std::vector<std::string> allowed = shape_kinds();
  allowed.push_back("tags");
  node.check_object(allowed);
  std::string kind;
  for (const auto& k : shape_kinds()) {
    if (!node[k].present()) continue;
    if (!kind.empty())
      node.fail("a shape has exactly one of " + quoted_list(shape_kinds()) + "; this one has '" +
                kind + "' and '" + k + "' (combine shapes with \"union\": [...])");
    kind = k;
  }
  if (kind.empty())
    node.fail("missing the shape; add one of " + quoted_list(shape_kinds()) +
              ", e.g. \"box\": [[0, 1], [0, 1]]");

  const std::size_t dims = c.coordinates.size();
  const JsonNode shape = node[kind];
  const auto need_dims = [&](std::size_t n) {
    if (dims != n)
      shape.fail("'" + kind + "' is " + std::to_string(n) + "-D but the case has " +
                 dims_text(dims) + " (" + quoted_list(c.coordinates) + ")");
  };
  std::vector<std::array<double, 2>> box;
  if (kind == "interval") {
    if (dims != 1)
      shape.fail("'interval' is 1-D but the case has " + dims_text(dims) +
                 "; use \"box\": [[lo, hi], ...] with one pair per coordinate");
    box.push_back(read_bounds(shape));
  } else if (kind == "box") {
    const auto pairs = shape.elements(1, "[lo, hi] pair");
    if (pairs.size() != dims)
      shape.fail("expected one [lo, hi] pair per coordinate (" + quoted_list(c.coordinates) +
                 "), got " + std::to_string(pairs.size()) + " pair" +
                 (pairs.size() == 1 ? "" : "s"));
    for (const auto& pair : pairs) box.push_back(read_bounds(pair));
  } else if (kind == "disk" || kind == "polygon") {
    need_dims(2);
    shape.check_object(kind == "disk" ? std::vector<std::string>{"center", "radius"}
                                      : std::vector<std::string>{"vertices", "holes"});
  } else if (kind == "ball") {
    need_dims(3);
    shape.check_object({"center", "radius"});
  } else if (kind == "mesh") {
    if (dims < 2) shape.fail("a mesh is 2-D or 3-D but the case has 1 coordinate");
    raw[kind] = resolve_against_case(c, shape.string());
  } else {  // union, intersection, difference
    const auto parts = shape.elements(kind == "union" ? 1 : 2, "shape");
    for (std::size_t i = 0; i < parts.size(); ++i) read_shape(parts[i], raw[kind][i], c, nullptr);
  }

  if (const JsonNode tags = node["tags"]; tags.present())
    for (const auto& [name, selector] : tags.members()) {
      const std::string text = selector.string();
      if (text.empty()) selector.fail("expected a selector such as \"x=0\", got \"\"");
      if (top) top->tags[name] = text;
    }
  if (top) {
    top->kind = kind;
    top->box = box;
  }
}

}  // namespace

void read_geometry(const JsonNode& root, Case& c) {
  const JsonNode node =
      root.required("geometry", "\"geometry\": {\"box\": [[0, 1], [0, 1]]} (one pair per coordinate)");
  c.geometry.key = node.key();
  c.geometry.raw = node.value();
  read_shape(node, c.geometry.raw, c, &c.geometry);
}

}  // namespace tessera::io::detail
