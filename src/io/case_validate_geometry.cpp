// "geometry": exactly one shape key (plus optional "tags" on the top shape), read into a
// ShapeSpec tree: numbers and dimensions checked here, mesh and polygon file paths resolved
// against the case folder. What only the geometry module can check (self-intersections,
// closed surfaces, file contents) fails when the shapes are built.
#include "tessera/io/case_detail.hpp"

namespace tessera::io::detail {

namespace {

const std::vector<std::string>& shape_kinds() {
  static const std::vector<std::string> kinds = names_of<ShapeKind>();
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

std::array<double, 2> read_point2(const JsonNode& node) {
  const auto xy = node.elements(0, "coordinate");
  if (xy.size() != 2) node.fail("expected a point [x, y], got " + node.describe());
  return {xy[0].number(), xy[1].number()};
}

std::vector<std::array<double, 2>> read_ring(const JsonNode& node) {
  std::vector<std::array<double, 2>> ring;
  for (const auto& point : node.elements(3, "vertex [x, y]")) ring.push_back(read_point2(point));
  return ring;
}

void read_round(const JsonNode& shape, const std::string& kind, std::size_t dims, ShapeSpec& out) {
  shape.check_object(keys_at(("geometry." + kind).c_str()));
  const JsonNode center =
      shape.required("center", "\"center\": [" + std::string(dims == 2 ? "0, 0" : "0, 0, 0") + "]");
  const auto coordinates = center.elements(0, "coordinate");
  if (coordinates.size() != dims)
    center.fail("expected " + std::to_string(dims) + " coordinates for a " + kind + ", got " +
                center.describe());
  for (const auto& x : coordinates) out.center.push_back(x.number());
  out.radius = shape.required("radius", "\"radius\": 1").number(Range::positive);
}

void read_polygon(const JsonNode& shape, const Case& c, ShapeSpec& out) {
  if (shape.present() && shape.value().is_string()) {  // a polygon file from meshes/
    out.file = resolve_against_case(c, shape.string());
    return;
  }
  shape.check_object(keys_at("geometry.polygon"));
  out.vertices = read_ring(shape.required("vertices", "\"vertices\": [[0, 0], [1, 0], [0, 1]]"));
  if (const JsonNode holes = shape["holes"]; holes.present())
    for (const auto& hole : holes.elements(0, "hole")) out.holes.push_back(read_ring(hole));
}

/// Reads one shape object; `raw` is its copy in which file paths get resolved; `counts` numbers
/// the shapes of each kind depth-first for their names.
ShapeSpec read_shape(const JsonNode& node, nlohmann::json& raw, const Case& c, bool top,
                     std::map<std::string, int>& counts) {
  node.check_object(keys_at("geometry"));
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
  if (!top && node["tags"].present())
    node["tags"].fail(
        "tags belong on the top-level geometry; select the parts of a nested shape "
        "there with \"inside(" +
        kind + std::to_string(counts[kind]) + ")\"");

  ShapeSpec out;
  parse_option(kind, out.kind);  // kind is one of shape_kinds()
  out.name = kind + std::to_string(counts[kind]++);
  const std::size_t dims = c.coordinates.size();
  const JsonNode shape = node[kind];
  out.key = shape.key();
  const auto need_dims = [&](std::size_t n) {
    if (dims != n)
      shape.fail("'" + kind + "' is " + std::to_string(n) + "-D but the case has " +
                 dims_text(dims) + " (" + quoted_list(c.coordinates) + ")");
  };
  if (kind == "interval") {
    if (dims != 1)
      shape.fail("'interval' is 1-D but the case has " + dims_text(dims) +
                 "; use \"box\": [[lo, hi], ...] with one pair per coordinate");
    out.box.push_back(read_bounds(shape));
  } else if (kind == "box") {
    const auto pairs = shape.elements(1, "[lo, hi] pair");
    if (pairs.size() != dims)
      shape.fail("expected one [lo, hi] pair per coordinate (" + quoted_list(c.coordinates) +
                 "), got " + std::to_string(pairs.size()) + " pair" +
                 (pairs.size() == 1 ? "" : "s"));
    for (const auto& pair : pairs) out.box.push_back(read_bounds(pair));
  } else if (kind == "disk") {
    need_dims(2);
    read_round(shape, kind, 2, out);
  } else if (kind == "polygon") {
    need_dims(2);
    read_polygon(shape, c, out);
    if (!out.file.empty()) raw[kind] = out.file;
  } else if (kind == "ball") {
    need_dims(3);
    read_round(shape, kind, 3, out);
  } else if (kind == "mesh") {
    if (dims < 2 || dims > 3)
      shape.fail("a mesh is 2-D or 3-D but the case has " + dims_text(dims));
    out.file = resolve_against_case(c, shape.string());
    raw[kind] = out.file;
  } else {  // union, intersection, difference
    // Combinations classify through outlines (2-D) and surfaces (3-D), which have no 4-D kin.
    if (dims > 3)
      shape.fail("'" + kind + "' combines shapes in 1 to 3 dimensions; the case has " +
                 dims_text(dims) + ": use a single \"box\"");
    const auto parts = shape.elements(kind == "union" ? 1 : 2, "shape");
    for (std::size_t i = 0; i < parts.size(); ++i)
      out.children.push_back(read_shape(parts[i], raw[kind][i], c, false, counts));
  }
  return out;
}

}  // namespace

void read_geometry(const JsonNode& root, Case& c) {
  const JsonNode node = root.required(
      "geometry", "\"geometry\": {\"box\": [[0, 1], [0, 1]]} (one pair per coordinate)");
  c.geometry.key = node.key();
  c.geometry.raw = node.value();
  std::map<std::string, int> counts;
  c.geometry.shape = read_shape(node, c.geometry.raw, c, true, counts);
  c.geometry.kind = c.geometry.shape.kind;
  c.geometry.box = c.geometry.shape.box;
  if (const JsonNode tags = node["tags"]; tags.present())
    for (const auto& [name, selector] : tags.members()) {
      const std::string text = selector.string();
      if (text.empty()) selector.fail("expected a selector such as \"x=0\", got \"\"");
      c.geometry.tags[name] = text;
    }
}

}  // namespace tessera::io::detail
