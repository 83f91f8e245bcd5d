#include "tessera/io/xdmf.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "tessera/core/error.hpp"

namespace tessera::io {

namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// Shortest of 15 or 17 significant digits that reads back as the same double.
std::string number(double value) {
  std::ostringstream s15;
  s15.precision(15);
  s15 << value;
  if (std::strtod(s15.str().c_str(), nullptr) == value) return s15.str();
  std::ostringstream s17;
  s17.precision(17);
  s17 << value;
  return s17.str();
}

std::string dims(const std::vector<int64_t>& shape) {
  std::string out;
  for (int64_t n : shape) out += (out.empty() ? "" : " ") + std::to_string(n);
  return out;
}

/// HDF5 number types as XDMF spells them.
enum class Number { f64, i32, i64 };

struct Writer {
  std::ostringstream out;
  std::string h5;

  void data_item(int indent, const std::vector<int64_t>& shape, Number type,
                 const std::string& dataset) {
    out << std::string(indent, ' ') << "<DataItem Dimensions=\"" << dims(shape)
        << "\" NumberType=\"" << (type == Number::f64 ? "Float" : "Int") << "\" Precision=\""
        << (type == Number::i32 ? 4 : 8) << "\" Format=\"HDF\">" << escape(h5) << ":"
        << escape(dataset) << "</DataItem>\n";
  }
};

/// The points of one grid (one time value), XDMF order: slowest first [nz?, ny?, nx] over the
/// first `space` axes, or [n_points] for a mesh.
std::vector<int64_t> spatial_shape(const GridLayout& layout, int space) {
  if (layout.mesh) return {layout.mesh->point_count()};
  std::vector<int64_t> shape;
  for (int a = space - 1; a >= 0; --a) shape.push_back(static_cast<int64_t>(layout.axes[a].size()));
  return shape;
}

/// <Topology> and <Geometry> of one grid: an unstructured mesh, a line, or a rectilinear grid.
/// `space` is the number of axes drawn as space (time included for a time-only layout) and
/// `space_shape` is spatial_shape(layout, space).
void topology_and_geometry(Writer& w, const GridLayout& layout, int space,
                           const std::vector<int64_t>& space_shape, int indent) {
  const std::string pad(indent, ' ');
  int64_t n_points = 1;
  for (int64_t n : space_shape) n_points *= n;
  if (layout.mesh) {
    const MeshPoints& mesh = *layout.mesh;
    const int64_t cells = mesh.cell_count();
    w.out << pad << "<Topology TopologyType=\"" << (mesh.dims == 2 ? "Triangle" : "Tetrahedron")
          << "\" NumberOfElements=\"" << cells << "\">\n";
    w.data_item(indent + 2, {cells, mesh.dims + 1}, Number::i64, "/mesh/cells");
    w.out << pad << "</Topology>\n"
          << pad << "<Geometry GeometryType=\"" << (mesh.dims == 2 ? "XY" : "XYZ") << "\">\n";
    w.data_item(indent + 2, {n_points, mesh.dims}, Number::f64, "/mesh/points");
    w.out << pad << "</Geometry>\n";
  } else if (space == 1) {
    // A line: a rectilinear "1DRectMesh" does not exist in XDMF, and a 2DRectMesh with one
    // row is a surface to ParaView's filters; explicit segments give a real polyline.
    const int64_t segments = std::max<int64_t>(n_points - 1, 1);
    w.out << pad << "<Topology TopologyType=\"Polyline\" NodesPerElement=\"2\" NumberOfElements=\""
          << segments << "\">\n";
    w.data_item(indent + 2, {segments, 2}, Number::i32, "/xdmf/segments");
    w.out << pad << "</Topology>\n" << pad << "<Geometry GeometryType=\"XYZ\">\n";
    w.data_item(indent + 2, {n_points, 3}, Number::f64, "/xdmf/points");
    w.out << pad << "</Geometry>\n";
  } else {
    // Topology dimensions run slowest first (nz ny nx) but VXVYVZ lists the axes x, y, z.
    w.out << pad << "<Topology TopologyType=\"" << space << "DRectMesh\" Dimensions=\""
          << dims(space_shape) << "\"/>\n"
          << pad << "<Geometry GeometryType=\"" << (space == 2 ? "VXVY" : "VXVYVZ") << "\">\n";
    for (int a = 0; a < space; ++a) {
      w.data_item(indent + 2, {static_cast<int64_t>(layout.axes[a].size())}, Number::f64,
                  "/grid/" + layout.names[a]);
    }
    w.out << pad << "</Geometry>\n";
  }
}

}  // namespace

std::string xdmf_text(const GridLayout& layout, const std::vector<std::string>& fields,
                      bool with_subdomain, const std::string& h5_file_name,
                      const std::string& grid_name) {
  layout.validate();
  // A layout with time only is drawn as a line over time; otherwise time makes a collection.
  const bool temporal = layout.has_time && layout.spatial_dims() >= 1;
  const int space = temporal ? layout.spatial_dims() : static_cast<int>(layout.names.size());
  if (space > 3 && !layout.mesh) {
    // XDMF grids have at most 3 axes: beyond that only the HDF5 file holds the solution.
    return "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
           "<!-- A " +
           std::to_string(space) +
           "-D grid has no XDMF view: XDMF grids have at most 3 axes. The solution is in " +
           h5_file_name +
           " (docs/output-format.md). -->\n<Xdmf Version=\"3.0\">\n  <Domain/>\n</Xdmf>\n";
  }
  const std::vector<int64_t> space_shape = spatial_shape(layout, space);

  Writer w;
  w.h5 = h5_file_name;
  w.out << "<?xml version=\"1.0\" ?>\n"
        << "<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n"
        << "<Xdmf Version=\"3.0\" xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n"
        << "  <Domain>\n";

  // One uniform grid; `step` < 0: the whole (space-only) arrays under /fields.
  auto grid = [&](int indent, const std::string& name, long step) {
    const std::string pad(indent, ' ');
    w.out << pad << "<Grid Name=\"" << escape(name) << "\" GridType=\"Uniform\">\n";
    if (step >= 0)
      w.out << pad << "  <Time Value=\"" << number(layout.axes.back()[step]) << "\"/>\n";
    topology_and_geometry(w, layout, space, space_shape, indent + 2);
    auto attribute = [&](const std::string& field, bool is_int) {
      const std::string dataset =
          step >= 0 ? "/steps/" + std::to_string(step) + "/" + field : "/fields/" + field;
      w.out << pad << "  <Attribute Name=\"" << escape(field)
            << "\" AttributeType=\"Scalar\" Center=\"Node\">\n";
      w.data_item(indent + 4, space_shape, is_int ? Number::i32 : Number::f64, dataset);
      w.out << pad << "  </Attribute>\n";
    };
    for (const auto& field : fields) attribute(field, false);
    if (with_subdomain) attribute("subdomain", true);
    w.out << pad << "</Grid>\n";
  };

  if (temporal) {
    w.out << "    <Grid Name=\"" << escape(grid_name)
          << "\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
    const auto& times = layout.axes.back();
    for (std::size_t k = 0; k < times.size(); ++k) {
      grid(6, grid_name + "_" + std::to_string(k), static_cast<long>(k));
    }
    w.out << "    </Grid>\n";
  } else {
    grid(4, grid_name, -1);
  }
  w.out << "  </Domain>\n</Xdmf>\n";
  return w.out.str();
}

}  // namespace tessera::io
