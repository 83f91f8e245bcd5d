#pragma once
/// 2-D geometry done by CGAL (src/geometry/cgal/planar_*.cpp): validating and orienting
/// polygons, reading 2-D polygon files, exact areas and Boolean operations, point location,
/// and triangle meshing. Errors are tessera::Error naming `key` (a case-file key or a file).
#include <memory>
#include <string>

#include "tessera/geometry/polygonal.hpp"

namespace tessera::geometry {

/// Checks that `polygon` is a valid polygon with holes and returns it oriented (outer ring
/// counterclockwise, holes clockwise). Throws naming `key` for: fewer than 3 distinct vertices,
/// repeated consecutive vertices, a self-intersecting ring ("<key>.vertices: edges 2 and 5
/// cross at (x, y)"), zero area, a hole that is not strictly inside the outer ring, holes that
/// overlap or touch each other. Hole keys are "<key>.holes[j]".
PolygonWithHoles checked_polygon(PolygonWithHoles polygon, const std::string& key);

/// Reads a 2-D region from an OFF, OBJ or STL file (chosen by extension) whose faces all lie in
/// the plane z = 0 (or have no z): the faces are merged and the region's boundary rings become
/// the polygons with holes. Throws naming `path` for: a missing or unreadable file, an unknown
/// extension, a file CGAL cannot parse, no faces, vertices off the plane z = 0, overlapping
/// faces, and anything checked_polygon rejects.
PolygonSet read_polygon_file(const std::string& path);

/// Exact area of the region (holes subtracted).
double area(const PolygonSet& region);

/// a op b, computed exactly (CGAL's exact-construction kernel) and rounded back to doubles.
/// The result may be empty.
PolygonSet boolean(const PolygonSet& a, const PolygonSet& b, BooleanOp op);

/// Point location in a fixed region; built once, then queried from many threads.
class PlanarLocator {
 public:
  /// `tolerance`: points within this distance of an edge classify as boundary.
  PlanarLocator(const PolygonSet& region, double tolerance);
  ~PlanarLocator();
  PlanarLocator(const PlanarLocator&) = delete;
  PlanarLocator& operator=(const PlanarLocator&) = delete;

  /// xy: n points, row-major [n * 2]; out: n PointClass values.
  void classify(const double* xy, std::int64_t n, std::int8_t* out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Triangulation of the region without extra vertices (constrained Delaunay of its rings,
/// triangles inside the region only); used for sampling by area.
SimplexMesh triangulate(const PolygonSet& region);

/// Quality triangle mesh of the region (CGAL's 2-D constrained Delaunay mesher): edges no
/// longer than max_cell_size, angles bounded below; every boundary vertex of `region` is a
/// mesh vertex.
SimplexMesh mesh_region(const PolygonSet& region, double max_cell_size);

}  // namespace tessera::geometry
