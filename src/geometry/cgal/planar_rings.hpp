#pragma once
// Private to src/geometry/cgal/: ring edges and where they meet, shared by polygon checking
// (planar_polygons.cpp) and 2-D file reading (planar_file.cpp).
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Polygon_2.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tessera/geometry/polygonal.hpp"

namespace tessera::geometry::cgal {

using Epick = CGAL::Exact_predicates_inexact_constructions_kernel;
using IPoint = Epick::Point_2;
using ISegment = Epick::Segment_2;
using IPolygon = CGAL::Polygon_2<Epick>;

IPolygon to_cgal(const Ring& ring);
/// Exact orientation of a simple ring.
CGAL::Orientation ring_orientation(const Ring& ring);
/// "(x, y)" for messages.
std::string point_text(double x, double y);

// One edge of a ring: vertices index and index + 1 (cyclically) of ring `ring`.
struct Edge {
  int ring = 0;
  int index = 0;
  ISegment segment;
  CGAL::Bbox_2 box;
};

std::vector<Edge> ring_edges(const Ring& ring, int ring_id);

// Where two segments meet, and how: "cross" (interiors cross at a point), "touch" (a point
// that is an end point of one of them), "overlap" (a common piece).
struct Contact {
  const Edge* first = nullptr;
  const Edge* second = nullptr;
  std::string how;
  double x = 0.0, y = 0.0;
};

/// The first contact between two edges accepted by `consider`, found by a sweep over the
/// edges' bounding boxes in x (near-linear for ordinary polygons); `sizes`: ring sizes by ring
/// id, for adjacency. Reports the lowest-numbered edges, so messages do not depend on the sweep.
std::optional<Contact> first_contact(std::vector<Edge>& edges, const std::vector<int>& sizes,
                                     const std::function<bool(const Edge&, const Edge&)>& consider);

}  // namespace tessera::geometry::cgal
