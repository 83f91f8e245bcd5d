// Reading a 2-D region from an OFF, OBJ or STL file of faces in the plane z = 0 (planar.hpp):
// the faces' boundary edges become polygons with holes, checked like inline polygons.
#include <CGAL/IO/OBJ.h>
#include <CGAL/IO/OFF.h>
#include <CGAL/IO/STL.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "planar_rings.hpp"
#include "tessera/core/error.hpp"
#include "tessera/geometry/planar.hpp"

namespace tessera::geometry {

using namespace cgal;

namespace {

// The boundary of a set of faces: the edges used by exactly one face, chained into rings.
// Vertices are merged by coordinates (STL repeats them per facet).
std::vector<Ring> boundary_rings(const std::string& path, const std::vector<Epick::Point_3>& points,
                                 const std::vector<std::vector<std::size_t>>& faces,
                                 double& face_area) {
  std::map<std::pair<double, double>, int> index_of;
  std::vector<Point2> vertices;
  std::vector<int> merged(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::pair<double, double> xy{points[i].x(), points[i].y()};
    const auto [it, is_new] = index_of.emplace(xy, static_cast<int>(vertices.size()));
    if (is_new) vertices.push_back({xy.first, xy.second});
    merged[i] = it->second;
  }
  std::map<std::pair<int, int>, int> uses;  // undirected edge -> number of faces using it
  face_area = 0.0;
  for (std::size_t f = 0; f < faces.size(); ++f) {
    const auto& face = faces[f];
    TESSERA_CHECK(face.size() >= 3, path << ": face " << f << " has " << face.size()
                                         << " vertices; faces need at least 3");
    Ring ring;
    for (const auto v : face) {
      TESSERA_CHECK(v < points.size(), path << ": face " << f << " uses vertex " << v
                                            << " but the file has " << points.size()
                                            << " vertices");
      ring.push_back(vertices[merged[v]]);
    }
    const double twice = std::abs(CGAL::to_double(to_cgal(ring).area())) * 2.0;
    TESSERA_CHECK(twice > 0.0, path << ": face " << f << " has zero area; remove degenerate faces");
    face_area += twice / 2.0;
    for (std::size_t k = 0; k < face.size(); ++k) {
      int a = merged[face[k]], b = merged[face[(k + 1) % face.size()]];
      TESSERA_CHECK(a != b, path << ": face " << f << " repeats a vertex; remove degenerate faces");
      if (a > b) std::swap(a, b);
      const int count = ++uses[{a, b}];
      TESSERA_CHECK(count <= 2, path << ": the edge from "
                                     << point_text(vertices[a][0], vertices[a][1]) << " to "
                                     << point_text(vertices[b][0], vertices[b][1])
                                     << " is shared by more than 2 faces; faces must not overlap");
    }
  }
  std::map<int, std::vector<int>> neighbours;  // along boundary edges
  for (const auto& [edge, count] : uses) {
    if (count != 1) continue;
    neighbours[edge.first].push_back(edge.second);
    neighbours[edge.second].push_back(edge.first);
  }
  for (const auto& [v, next] : neighbours) {
    TESSERA_CHECK(next.size() == 2,
                  path << ": " << next.size() << " boundary edges meet at "
                       << point_text(vertices[v][0], vertices[v][1])
                       << " (expected 2); faces must share whole edges, and the "
                          "polygons and holes they form must not touch each other");
  }
  std::vector<Ring> rings;
  std::map<int, bool> done;
  for (const auto& [start, next] : neighbours) {
    if (done[start]) continue;
    Ring ring;
    int previous = start, current = start;
    do {
      done[current] = true;
      ring.push_back(vertices[current]);
      const auto& n = neighbours[current];
      const int step = (n[0] != previous || current == start) ? n[0] : n[1];
      previous = current;
      current = step;
    } while (current != start);
    rings.push_back(std::move(ring));
  }
  return rings;
}

std::string lower(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

PolygonSet read_polygon_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  TESSERA_CHECK(fs::exists(path, error), path << ": file not found; check the path");
  TESSERA_CHECK(fs::is_regular_file(path, error),
                path << ": not a regular file; give a polygon file");
  const std::string extension = lower(fs::path(path).extension().string());
  std::vector<Epick::Point_3> points;
  std::vector<std::vector<std::size_t>> faces;
  bool ok = false;
  try {
    if (extension == ".off") {
      ok = CGAL::IO::read_OFF(path, points, faces);
    } else if (extension == ".obj") {
      ok = CGAL::IO::read_OBJ(path, points, faces);
    } else if (extension == ".stl") {
      ok = CGAL::IO::read_STL(path, points, faces);
    } else {
      TESSERA_FAIL(path << ": unknown extension '" << extension << "'; use .off, .obj or .stl");
    }
  } catch (const tessera::Error&) {
    throw;
  } catch (const std::exception& e) {
    TESSERA_FAIL(path << ": cannot read the file (" << e.what() << "); check that it is a valid "
                      << extension.substr(1) << " file");
  }
  TESSERA_CHECK(ok, path << ": cannot read the file; check that it is a valid "
                         << extension.substr(1) << " file");
  TESSERA_CHECK(!faces.empty() && !points.empty(),
                path << ": the file has no faces; a polygon file needs faces covering the region");

  double extent = 0.0;
  for (int axis = 0; axis < 3; ++axis) {
    auto [lo, hi] =
        std::minmax_element(points.begin(), points.end(),
                            [axis](const auto& p, const auto& q) { return p[axis] < q[axis]; });
    extent = std::max(extent, (*hi)[axis] - (*lo)[axis]);
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    TESSERA_CHECK(std::isfinite(p.x()) && std::isfinite(p.y()) && std::isfinite(p.z()),
                  path << ": vertex " << i << " is not finite");
    TESSERA_CHECK(
        std::abs(p.z()) <= 1e-12 * extent,
        path << ": vertex " << i << " has z = " << p.z()
             << "; a 2-D polygon file must lie in the plane z = 0 (for a 3-D surface use a "
                "3-D geometry)");
  }

  double face_area = 0.0;
  std::vector<Ring> rings = boundary_rings(path, points, faces, face_area);
  {
    // Rings that meet come from overlapping faces (checked_polygon would blame a "hole").
    std::vector<Edge> edges;
    std::vector<int> sizes;
    for (std::size_t r = 0; r < rings.size(); ++r) {
      auto e = ring_edges(rings[r], static_cast<int>(r));
      edges.insert(edges.end(), e.begin(), e.end());
      sizes.push_back(static_cast<int>(rings[r].size()));
    }
    const auto c =
        first_contact(edges, sizes, [](const Edge& e, const Edge& f) { return e.ring != f.ring; });
    TESSERA_CHECK(!c, path << ": faces overlap near " << point_text(c->x, c->y)
                           << "; remove the overlapping faces");
  }
  // Nesting: larger rings first; each ring's parent is the smallest ring containing it.
  std::vector<double> ring_area;
  std::vector<IPolygon> cgal_rings;
  for (const auto& r : rings) {
    cgal_rings.push_back(to_cgal(r));
    ring_area.push_back(std::abs(CGAL::to_double(cgal_rings.back().area())));
  }
  std::vector<std::size_t> order(rings.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](auto i, auto j) { return ring_area[i] > ring_area[j]; });
  std::vector<int> depth(rings.size(), 0), polygon_of(rings.size(), -1);
  PolygonSet region;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto r = order[k];
    int parent = -1;
    for (std::size_t m = k; m-- > 0;) {  // smallest containing ring first
      const auto q = order[m];
      if (cgal_rings[q].bounded_side(cgal_rings[r].vertex(0)) == CGAL::ON_BOUNDED_SIDE) {
        parent = static_cast<int>(q);
        break;
      }
    }
    depth[r] = parent < 0 ? 0 : depth[parent] + 1;
    if (depth[r] % 2 == 0) {
      polygon_of[r] = static_cast<int>(region.size());
      region.push_back({rings[r], {}});
    } else {
      polygon_of[r] = polygon_of[parent];
      region[polygon_of[r]].holes.push_back(rings[r]);
    }
  }
  for (auto& p : region) p = checked_polygon(std::move(p), path);
  const double covered = area(region);
  TESSERA_CHECK(std::abs(covered - face_area) <= 1e-9 * face_area,
                path << ": faces overlap (their areas add up to " << face_area << " but they cover "
                     << covered << "); remove the overlapping faces");
  return region;
}

}  // namespace tessera::geometry
