#pragma once
/// Plain-data polygonal and simplicial geometry passed between the shapes and the CGAL layer
/// (planar.hpp, surface.hpp). No CGAL or LibTorch types here, so CGAL stays inside
/// src/geometry/cgal/ and its translation units build without the LibTorch headers.
#include <array>
#include <cstdint>
#include <vector>

namespace tessera::geometry {

using Point2 = std::array<double, 2>;
using Point3 = std::array<double, 3>;
/// A closed ring of vertices, the last one not repeated.
using Ring = std::vector<Point2>;

/// A simple polygon with holes: the outer ring counterclockwise, each hole clockwise (so the
/// domain is always on the left of an edge and the outward normal of edge (a, b) is
/// (b - a) rotated clockwise).
struct PolygonWithHoles {
  Ring outer;
  std::vector<Ring> holes;
};

/// Disjoint polygons with holes: a 2-D region (the result of a CSG operation may have several).
using PolygonSet = std::vector<PolygonWithHoles>;

/// A triangle surface: vertex coordinates and triangles as vertex indices. Shapes hand out
/// closed surfaces oriented outward (counterclockwise seen from outside).
struct TriangleSurface {
  std::vector<Point3> vertices;
  std::vector<std::array<std::int64_t, 3>> triangles;
};

/// A simplicial mesh of a region: triangles (dims 2) or tetrahedra (dims 3).
struct SimplexMesh {
  int dims = 0;
  std::vector<double> points;       ///< [n_points * dims], row-major
  std::vector<std::int64_t> cells;  ///< [n_cells * (dims + 1)], row-major vertex indices
  std::int64_t point_count() const {
    return dims ? static_cast<std::int64_t>(points.size()) / dims : 0;
  }
  std::int64_t cell_count() const {
    return dims ? static_cast<std::int64_t>(cells.size()) / (dims + 1) : 0;
  }
};

enum class BooleanOp { union_, intersection, difference };

/// Where a point lies relative to a closed shape. Shapes classify with a round-off tolerance,
/// so points sampled on the boundary classify as `boundary`. Combining children's classes:
/// union = max, intersection = min, complement = negation (difference a - b = min(a, -b)).
enum PointClass : std::int8_t { outside = -1, boundary = 0, inside = 1 };

}  // namespace tessera::geometry
