#pragma once
/// 3-D geometry done by CGAL (src/geometry/cgal/surface_*.cpp): reading and checking closed
/// triangle surfaces, exact-predicate volumes and Boolean operations (corefinement), point
/// location with an AABB tree, and tetrahedral meshing (Mesh_3). Errors are tessera::Error
/// naming the file or `key`.
#include <memory>
#include <string>

#include "tessera/geometry/polygonal.hpp"

namespace tessera::geometry {

/// Reads a closed triangle surface from an OFF, OBJ or STL file (chosen by extension; polygonal
/// faces are triangulated) and returns it oriented outward. Throws naming `path` for: a missing
/// or unreadable file, an unknown extension, a file CGAL cannot parse, no faces, a surface that
/// is not a manifold, not closed (with the number of border edges), self-intersecting (with the
/// number of intersecting face pairs), or encloses no volume.
TriangleSurface read_surface_file(const std::string& path);

/// Checks that `surface` is closed, manifold and not self-intersecting and returns it oriented
/// outward; the same errors as read_surface_file, naming `key`.
TriangleSurface checked_surface(TriangleSurface surface, const std::string& key);

/// Enclosed volume of a closed, outward-oriented surface.
double volume(const TriangleSurface& surface);

/// a op b of two closed outward surfaces (CGAL Polygon_mesh_processing corefinement); the
/// result may be empty (no triangles).
TriangleSurface boolean(const TriangleSurface& a, const TriangleSurface& b, BooleanOp op);

/// Point location against a closed surface: an AABB tree of its triangles; built once, then
/// queried from many threads.
class SurfaceLocator {
 public:
  /// `tolerance`: points within this distance of the surface classify as boundary.
  SurfaceLocator(const TriangleSurface& surface, double tolerance);
  ~SurfaceLocator();
  SurfaceLocator(const SurfaceLocator&) = delete;
  SurfaceLocator& operator=(const SurfaceLocator&) = delete;

  /// xyz: n points, row-major [n * 3]; out: n PointClass values.
  void classify(const double* xyz, std::int64_t n, std::int8_t* out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Tetrahedral mesh of the region a closed surface bounds (CGAL Mesh_3 with a polyhedral
/// domain): cell size at most max_cell_size, facets approximating the surface to within
/// max_cell_size / 50, chosen so that the mesh keeps the enclosed volume to about 1 %
/// (docs/benchmarks.md, "Tetrahedral mesh volume"). Deterministic for the same input.
SimplexMesh mesh_volume(const TriangleSurface& surface, double max_cell_size);

/// An icosphere: the icosahedron subdivided until every edge is at most max_edge, with vertices
/// on the sphere (so it is inscribed), oriented outward.
TriangleSurface sphere_surface(const Point3& center, double radius, double max_edge);

}  // namespace tessera::geometry
