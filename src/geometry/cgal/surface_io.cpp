// Closed triangle surfaces with CGAL: reading OFF/OBJ/STL files, checking (closed, manifold, no
// self-intersections, bounds a volume), volumes, Boolean operations by corefinement, and the
// icosphere. CGAL stays in this translation unit; the interface is surface.hpp.
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/IO/OBJ.h>
#include <CGAL/IO/OFF.h>
#include <CGAL/IO/STL.h>
#include <CGAL/Polygon_mesh_processing/corefinement.h>
#include <CGAL/Polygon_mesh_processing/measure.h>
#include <CGAL/Polygon_mesh_processing/orient_polygon_soup.h>
#include <CGAL/Polygon_mesh_processing/orientation.h>
#include <CGAL/Polygon_mesh_processing/polygon_soup_to_polygon_mesh.h>
#include <CGAL/Polygon_mesh_processing/self_intersections.h>
#include <CGAL/Polygon_mesh_processing/triangulate_faces.h>
#include <CGAL/Surface_mesh.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

#include "surface_mesh.hpp"
#include "tessera/core/error.hpp"
#include "tessera/geometry/surface.hpp"

namespace tessera::geometry {
namespace {

namespace PMP = CGAL::Polygon_mesh_processing;
using cgal::CgalPoint;
using cgal::Kernel;
using cgal::Mesh;
using cgal::to_mesh;

struct Soup {
  std::vector<CgalPoint> points;
  std::vector<std::vector<std::size_t>> polygons;
};

// The faces of `mesh` (triangles) with the vertices they use, numbered in face order.
TriangleSurface to_surface(const Mesh& mesh) {
  TriangleSurface surface;
  std::vector<std::int64_t> index(mesh.num_vertices(), -1);
  for (const auto f : mesh.faces()) {
    std::array<std::int64_t, 3> triangle{};
    int corner = 0;
    for (const auto v : CGAL::vertices_around_face(mesh.halfedge(f), mesh)) {
      TESSERA_ASSERT(corner < 3, "a non-triangular face in a CGAL surface");
      auto& i = index[v.idx()];
      if (i < 0) {
        i = static_cast<std::int64_t>(surface.vertices.size());
        const auto& p = mesh.point(v);
        surface.vertices.push_back({p.x(), p.y(), p.z()});
      }
      triangle[corner++] = i;
    }
    surface.triangles.push_back(triangle);
  }
  return surface;
}

// Validates the soup, orients it and checks everything read_surface_file promises; `key` names
// the file or case-file key in messages.
TriangleSurface checked_soup(Soup soup, const std::string& key) {
  TESSERA_CHECK(
      !soup.polygons.empty(),
      key << ": the surface has no faces; a mesh geometry must be a closed triangle surface");
  for (std::size_t i = 0; i < soup.points.size(); ++i) {
    const auto& p = soup.points[i];
    TESSERA_CHECK(std::isfinite(p.x()) && std::isfinite(p.y()) && std::isfinite(p.z()),
                  key << ": vertex " << i << " has a coordinate that is not a finite number");
  }
  for (std::size_t f = 0; f < soup.polygons.size(); ++f) {
    auto polygon = soup.polygons[f];
    TESSERA_CHECK(polygon.size() >= 3, key << ": face " << f << " has " << polygon.size()
                                           << " vertices; every face needs at least 3");
    for (const auto i : polygon) {
      TESSERA_CHECK(i < soup.points.size(), key << ": face " << f << " uses vertex " << i
                                                << ", but there are only " << soup.points.size()
                                                << " vertices");
    }
    std::sort(polygon.begin(), polygon.end());
    TESSERA_CHECK(std::adjacent_find(polygon.begin(), polygon.end()) == polygon.end(),
                  key << ": face " << f << " uses a vertex twice; remove the degenerate face");
  }

  // false: points had to be duplicated to orient the soup, so an edge is shared by more than two
  // faces, faces meet only at a vertex, or the surface cannot be oriented.
  const bool manifold = PMP::orient_polygon_soup(soup.points, soup.polygons);
  TESSERA_CHECK(manifold, key << ": the surface is not a manifold (an edge shared by more than two "
                                 "faces, faces that meet only at a vertex, or a non-orientable "
                                 "surface); a mesh geometry must be a closed manifold surface");
  Mesh mesh;
  PMP::polygon_soup_to_polygon_mesh(soup.points, soup.polygons, mesh);
  if (!CGAL::is_triangle_mesh(mesh)) {
    TESSERA_CHECK(PMP::triangulate_faces(mesh),
                  key << ": a polygonal face could not be triangulated; split the faces into "
                         "triangles");
  }

  std::size_t border_edges = 0;
  for (const auto h : mesh.halfedges()) {
    if (mesh.is_border(h)) ++border_edges;
  }
  TESSERA_CHECK(border_edges == 0,
                key << ": the surface is not closed: " << border_edges
                    << " border edges; a mesh geometry must be a closed surface");

  std::vector<std::pair<Mesh::Face_index, Mesh::Face_index>> pairs;
  PMP::self_intersections(mesh, std::back_inserter(pairs));
  TESSERA_CHECK(pairs.empty(), key << ": the surface self-intersects: " << pairs.size()
                                   << " pairs of faces intersect; a mesh geometry must not "
                                      "self-intersect (repair it, or give overlapping parts as "
                                      "separate shapes combined with \"union\")");

  // Outward orientation; with several components (a shell with a cavity) each is oriented so
  // the whole bounds a volume.
  PMP::orient_to_bound_a_volume(mesh);
  const double enclosed = PMP::volume(mesh);
  TESSERA_CHECK(enclosed > 0.0, key << ": the surface encloses no volume (volume " << enclosed
                                    << "); a mesh geometry must bound a solid");
  return to_surface(mesh);
}

std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

}  // namespace

TriangleSurface read_surface_file(const std::string& path) {
  std::error_code ec;
  TESSERA_CHECK(std::filesystem::exists(path, ec),
                path << ": no such file; check the mesh path (relative paths are relative to the "
                        "working directory unless the case file says otherwise)");
  TESSERA_CHECK(std::filesystem::is_regular_file(path, ec),
                path << ": not a regular file; give the path of an .off, .obj or .stl file");
  TESSERA_CHECK(std::ifstream(path, std::ios::binary).good(),
                path << ": the file cannot be opened for reading; check its permissions");
  const std::string ext = lower_extension(path);
  Soup soup;
  bool ok = false;
  std::string format;
  if (ext == ".off") {
    format = "OFF";
    ok = CGAL::IO::read_OFF(path, soup.points, soup.polygons);
  } else if (ext == ".obj") {
    format = "OBJ";
    ok = CGAL::IO::read_OBJ(path, soup.points, soup.polygons);
  } else if (ext == ".stl") {
    format = "STL";
    ok = CGAL::IO::read_STL(path, soup.points, soup.polygons);
  } else {
    TESSERA_FAIL(path << ": unknown surface file format '" << ext
                      << "'; use a .off, .obj or .stl file");
  }
  TESSERA_CHECK(ok, path << ": the file could not be read as " << format
                         << " (malformed or truncated); check that it is a valid " << format
                         << " surface");
  return checked_soup(std::move(soup), path);
}

TriangleSurface checked_surface(TriangleSurface surface, const std::string& key) {
  Soup soup;
  soup.points.reserve(surface.vertices.size());
  for (const auto& p : surface.vertices) soup.points.emplace_back(p[0], p[1], p[2]);
  soup.polygons.reserve(surface.triangles.size());
  for (std::size_t f = 0; f < surface.triangles.size(); ++f) {
    const auto& t = surface.triangles[f];
    for (const auto i : t) {
      TESSERA_CHECK(i >= 0, key << ": triangle " << f << " uses the negative vertex index " << i);
    }
    soup.polygons.push_back({static_cast<std::size_t>(t[0]), static_cast<std::size_t>(t[1]),
                             static_cast<std::size_t>(t[2])});
  }
  return checked_soup(std::move(soup), key);
}

double volume(const TriangleSurface& surface) {
  if (surface.triangles.empty()) return 0.0;
  return PMP::volume(to_mesh(surface, "volume"));
}

TriangleSurface boolean(const TriangleSurface& a, const TriangleSurface& b, BooleanOp op) {
  // Corefinement modifies its inputs, so it works on copies.
  Mesh ma = to_mesh(a, "boolean");
  Mesh mb = to_mesh(b, "boolean");
  if (ma.number_of_faces() == 0 || mb.number_of_faces() == 0) {
    switch (op) {
      case BooleanOp::union_:
        return ma.number_of_faces() == 0 ? b : a;
      case BooleanOp::intersection:
        return {};
      case BooleanOp::difference:
        return a;
    }
  }
  Mesh out;
  bool ok = false;
  const char* name = "";
  switch (op) {
    case BooleanOp::union_:
      name = "union";
      ok = PMP::corefine_and_compute_union(ma, mb, out);
      break;
    case BooleanOp::intersection:
      name = "intersection";
      ok = PMP::corefine_and_compute_intersection(ma, mb, out);
      break;
    case BooleanOp::difference:
      name = "difference";
      ok = PMP::corefine_and_compute_difference(ma, mb, out);
      break;
  }
  TESSERA_CHECK(ok, "the " << name
                           << " of two 3-D shapes is not a manifold surface (the shapes "
                              "touch along an edge or at a point); move one of them slightly");
  return to_surface(out);
}

TriangleSurface sphere_surface(const Point3& center, double radius, double max_edge) {
  TESSERA_CHECK(std::isfinite(center[0]) && std::isfinite(center[1]) && std::isfinite(center[2]),
                "sphere_surface: the center must be finite");
  TESSERA_CHECK(std::isfinite(radius) && radius > 0.0,
                "sphere_surface: expected a positive radius, got " << radius);
  TESSERA_CHECK(std::isfinite(max_edge) && max_edge > 0.0,
                "sphere_surface: expected a positive max_edge, got " << max_edge);
  // The icosahedron on the unit sphere.
  const double g = (1.0 + std::sqrt(5.0)) / 2.0;
  std::vector<Point3> unit = {{-1, g, 0}, {1, g, 0}, {-1, -g, 0}, {1, -g, 0},
                              {0, -1, g}, {0, 1, g}, {0, -1, -g}, {0, 1, -g},
                              {g, 0, -1}, {g, 0, 1}, {-g, 0, -1}, {-g, 0, 1}};
  const auto normalise = [](Point3 p) {
    const double r = std::sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    return Point3{p[0] / r, p[1] / r, p[2] / r};
  };
  for (auto& p : unit) p = normalise(p);
  std::vector<std::array<std::int64_t, 3>> triangles = {
      {0, 11, 5},  {0, 5, 1},  {0, 1, 7},  {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
      {11, 10, 2}, {10, 7, 6}, {7, 1, 8},  {3, 9, 4},  {3, 4, 2},   {3, 2, 6}, {3, 6, 8},
      {3, 8, 9},   {4, 9, 5},  {2, 4, 11}, {6, 2, 10}, {8, 6, 7},   {9, 8, 1}};
  // Outward: the normal points away from the center (the table's order is not trusted).
  for (auto& t : triangles) {
    const auto& a = unit[t[0]];
    const auto& b = unit[t[1]];
    const auto& c = unit[t[2]];
    const Point3 ab{b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    const Point3 ac{c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    const Point3 n{ab[1] * ac[2] - ab[2] * ac[1], ab[2] * ac[0] - ab[0] * ac[2],
                   ab[0] * ac[1] - ab[1] * ac[0]};
    if (n[0] * (a[0] + b[0] + c[0]) + n[1] * (a[1] + b[1] + c[1]) + n[2] * (a[2] + b[2] + c[2]) <
        0) {
      std::swap(t[1], t[2]);
    }
  }
  const auto longest_edge = [&] {
    double longest = 0.0;
    for (const auto& t : triangles) {
      for (int e = 0; e < 3; ++e) {
        const auto& p = unit[t[e]];
        const auto& q = unit[t[(e + 1) % 3]];
        const double dx = p[0] - q[0], dy = p[1] - q[1], dz = p[2] - q[2];
        longest = std::max(longest, std::sqrt(dx * dx + dy * dy + dz * dz));
      }
    }
    return longest * radius;
  };
  constexpr std::size_t max_triangles = 20u << (2 * 9);  // 9 subdivisions, ~5 million
  while (longest_edge() > max_edge) {
    TESSERA_CHECK(4 * triangles.size() <= max_triangles,
                  "sphere_surface: max_edge " << max_edge << " is too small for radius " << radius
                                              << " (more than " << max_triangles
                                              << " triangles); use a larger max_edge");
    std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> midpoints;
    const auto midpoint = [&](std::int64_t i, std::int64_t j) {
      const auto key = std::minmax(i, j);
      const auto found = midpoints.find(key);
      if (found != midpoints.end()) return found->second;
      const auto& p = unit[i];
      const auto& q = unit[j];
      unit.push_back(normalise({p[0] + q[0], p[1] + q[1], p[2] + q[2]}));
      const auto index = static_cast<std::int64_t>(unit.size()) - 1;
      midpoints.emplace(key, index);
      return index;
    };
    std::vector<std::array<std::int64_t, 3>> finer;
    finer.reserve(4 * triangles.size());
    for (const auto& t : triangles) {
      const auto ab = midpoint(t[0], t[1]);
      const auto bc = midpoint(t[1], t[2]);
      const auto ca = midpoint(t[2], t[0]);
      finer.push_back({t[0], ab, ca});
      finer.push_back({ab, t[1], bc});
      finer.push_back({ca, bc, t[2]});
      finer.push_back({ab, bc, ca});
    }
    triangles = std::move(finer);
  }
  TriangleSurface surface;
  surface.vertices.reserve(unit.size());
  for (const auto& p : unit) {
    surface.vertices.push_back(
        {center[0] + radius * p[0], center[1] + radius * p[1], center[2] + radius * p[2]});
  }
  surface.triangles = std::move(triangles);
  return surface;
}

namespace cgal {

Mesh to_mesh(const TriangleSurface& surface, const std::string& who) {
  Mesh mesh;
  std::vector<Mesh::Vertex_index> vertex;
  vertex.reserve(surface.vertices.size());
  for (const auto& p : surface.vertices)
    vertex.push_back(mesh.add_vertex(CgalPoint(p[0], p[1], p[2])));
  for (const auto& t : surface.triangles) {
    TESSERA_CHECK(
        mesh.add_face(vertex.at(t[0]), vertex.at(t[1]), vertex.at(t[2])) != Mesh::null_face(),
        who << ": internal error: a surface that is not a manifold reached the CGAL layer "
               "(use checked_surface first)");
  }
  return mesh;
}

}  // namespace cgal
}  // namespace tessera::geometry
