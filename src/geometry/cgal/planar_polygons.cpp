// Validating polygons with holes, exact areas and Boolean operations (planar.hpp).
// Predicates use CGAL's exact-predicates kernel on the input doubles, so "is this simple",
// "is this hole inside" never suffer from round-off; Boolean operations construct exactly and
// round once at the end.
#include <CGAL/Boolean_set_operations_2.h>
#include <CGAL/Exact_predicates_exact_constructions_kernel.h>
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Exact_rational.h>
#include <CGAL/IO/OBJ.h>
#include <CGAL/IO/OFF.h>
#include <CGAL/IO/STL.h>
#include <CGAL/Polygon_2.h>
#include <CGAL/Polygon_set_2.h>
#include <CGAL/Polygon_with_holes_2.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/geometry/planar.hpp"

namespace tessera::geometry {
namespace {

using Epick = CGAL::Exact_predicates_inexact_constructions_kernel;
using Epeck = CGAL::Exact_predicates_exact_constructions_kernel;
using IPoint = Epick::Point_2;
using ISegment = Epick::Segment_2;
using IPolygon = CGAL::Polygon_2<Epick>;
using EPolygon = CGAL::Polygon_2<Epeck>;
using EPolygonWithHoles = CGAL::Polygon_with_holes_2<Epeck>;
using EPolygonSet = CGAL::Polygon_set_2<Epeck>;

IPolygon to_cgal(const Ring& ring) {
  IPolygon polygon;
  for (const auto& p : ring) polygon.push_back(IPoint(p[0], p[1]));
  return polygon;
}

// Exact orientation of a simple ring.
CGAL::Orientation ring_orientation(const Ring& ring) {
  return to_cgal(ring).orientation();
}

std::string point_text(double x, double y) {
  std::ostringstream s;
  s << "(" << x << ", " << y << ")";
  return s.str();
}

// One edge of a ring: vertices index and index + 1 (cyclically) of ring `ring`.
struct Edge {
  int ring = 0;
  int index = 0;
  ISegment segment;
  CGAL::Bbox_2 box;
};

std::vector<Edge> ring_edges(const Ring& ring, int ring_id) {
  std::vector<Edge> edges;
  const int n = static_cast<int>(ring.size());
  for (int i = 0; i < n; ++i) {
    const auto& a = ring[i];
    const auto& b = ring[(i + 1) % n];
    ISegment s(IPoint(a[0], a[1]), IPoint(b[0], b[1]));
    edges.push_back({ring_id, i, s, s.bbox()});
  }
  return edges;
}

// Where two segments meet, and how: "cross" (interiors cross at a point), "touch" (a point
// that is an end point of one of them), "overlap" (a common piece).
struct Contact {
  const Edge* first = nullptr;
  const Edge* second = nullptr;
  std::string how;
  double x = 0.0, y = 0.0;
};

// Adjacent edges of one ring share a vertex; they conflict only when they fold back onto
// each other.
bool adjacent(const Edge& e, const Edge& f, int ring_size) {
  if (e.ring != f.ring) return false;
  const int d = std::abs(e.index - f.index);
  return d == 1 || d == ring_size - 1;
}

std::optional<Contact> contact(const Edge& e, const Edge& f, bool are_adjacent) {
  if (are_adjacent) {
    // e = (a, b), f = (b, c) or the other way round: a conflict iff collinear and folding back.
    const bool e_first = e.segment.target() == f.segment.source();
    const IPoint a = e_first ? e.segment.source() : f.segment.source();
    const IPoint b = e_first ? e.segment.target() : f.segment.target();
    const IPoint c = e_first ? f.segment.target() : e.segment.target();
    if (CGAL::orientation(a, b, c) != CGAL::COLLINEAR) return std::nullopt;
    if (CGAL::angle(a, b, c) != CGAL::ACUTE) return std::nullopt;  // straight on: fine
    return Contact{&e, &f, "overlap", b.x(), b.y()};
  }
  if (!CGAL::do_intersect(e.segment, f.segment)) return std::nullopt;
  Contact c{&e, &f, "cross", 0.0, 0.0};
  const auto result = CGAL::intersection(e.segment, f.segment);
  if (const auto* p = boost::get<IPoint>(&*result)) {
    c.x = p->x();
    c.y = p->y();
    const auto ends = {e.segment.source(), e.segment.target(), f.segment.source(),
                       f.segment.target()};
    for (const auto& q : ends) {
      if (CGAL::squared_distance(q, *p) == 0) c.how = "touch";
    }
  } else if (const auto* s = boost::get<ISegment>(&*result)) {
    c.how = "overlap";
    c.x = s->source().x();
    c.y = s->source().y();
  }
  return c;
}

// The first contact between two edges accepted by `consider`, found by a sweep over the
// edges' bounding boxes in x (near-linear for ordinary polygons). Sizes: ring sizes by ring id,
// for adjacency.
template <typename Consider>
std::optional<Contact> first_contact(std::vector<Edge>& edges, const std::vector<int>& sizes,
                                     Consider consider) {
  std::sort(edges.begin(), edges.end(), [](const Edge& e, const Edge& f) {
    if (e.box.xmin() != f.box.xmin()) return e.box.xmin() < f.box.xmin();
    if (e.ring != f.ring) return e.ring < f.ring;
    return e.index < f.index;
  });
  std::optional<Contact> best;
  auto rank = [](const Contact& c) {
    return std::make_tuple(std::min(c.first->ring, c.second->ring), std::max(c.first->ring, c.second->ring),
                           std::min(c.first->index, c.second->index),
                           std::max(c.first->index, c.second->index));
  };
  for (std::size_t i = 0; i < edges.size(); ++i) {
    for (std::size_t j = i + 1; j < edges.size() && edges[j].box.xmin() <= edges[i].box.xmax(); ++j) {
      const Edge& e = edges[i];
      const Edge& f = edges[j];
      if (!consider(e, f)) continue;
      if (f.box.ymin() > e.box.ymax() || f.box.ymax() < e.box.ymin()) continue;
      auto c = contact(e, f, adjacent(e, f, sizes[e.ring]));
      // Report the contact of the lowest-numbered edges, so messages do not depend on the sweep.
      if (c && (!best || rank(*c) < rank(*best))) best = c;
    }
  }
  if (best && std::make_pair(best->first->ring, best->first->index) >
                  std::make_pair(best->second->ring, best->second->index)) {
    std::swap(best->first, best->second);
  }
  return best;
}

std::string ring_key(const std::string& key, int ring) {
  return ring == 0 ? key + ".vertices" : key + ".holes[" + std::to_string(ring - 1) + "]";
}

// Checks one ring on its own: finite, no repeated vertices, >= 3 vertices, simple, nonzero area.
void check_ring(const Ring& ring, const std::string& where, bool is_hole) {
  const char* noun = is_hole ? "a hole" : "a polygon";
  for (std::size_t i = 0; i < ring.size(); ++i) {
    TESSERA_CHECK(std::isfinite(ring[i][0]) && std::isfinite(ring[i][1]),
                  where << ": vertex " << i << " is not finite " << point_text(ring[i][0], ring[i][1])
                        << "; give finite coordinates");
  }
  TESSERA_CHECK(ring.size() >= 3, where << ": " << noun << " needs at least 3 vertices, got "
                                        << ring.size());
  const std::size_t n = ring.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = (i + 1) % n;
    if (ring[i] != ring[j]) continue;
    if (j == 0) {
      TESSERA_FAIL(where << ": the last vertex repeats the first " << point_text(ring[i][0], ring[i][1])
                         << "; rings close by themselves, remove the last vertex");
    }
    TESSERA_FAIL(where << ": vertices " << i << " and " << j << " are the same point "
                       << point_text(ring[i][0], ring[i][1]) << "; remove one of them");
  }
  const IPolygon polygon = to_cgal(ring);
  if (!polygon.is_simple()) {
    auto edges = ring_edges(ring, 0);
    const std::vector<int> sizes{static_cast<int>(n)};
    const auto c = first_contact(edges, sizes, [](const Edge&, const Edge&) { return true; });
    if (c) {
      const int i = c->first->index, j = c->second->index;
      TESSERA_FAIL(where << ": edges " << i << " and " << j << " (vertices " << i << "-" << (i + 1) % n
                         << " and " << j << "-" << (j + 1) % n << ") " << c->how << " at "
                         << point_text(c->x, c->y) << "; " << noun << " must not cross or touch itself");
    }
    TESSERA_FAIL(where << ": " << noun << " is not simple (its edges cross); "
                       << noun << " must not cross itself");
  }
  TESSERA_CHECK(polygon.area() != 0, where << ": " << noun << " has zero area; check the vertices");
}

void normalise_ring(Ring& ring, bool counterclockwise) {
  if ((ring_orientation(ring) == CGAL::COUNTERCLOCKWISE) != counterclockwise) {
    std::reverse(ring.begin() + 1, ring.end());  // keeps vertex 0 first
  }
}

// Converts a CGAL exact polygon back to doubles, dropping vertices that rounding made equal to
// their neighbour and vertices exactly on the straight line through their neighbours.
Ring to_ring(const EPolygon& polygon) {
  Ring ring;
  for (auto v = polygon.vertices_begin(); v != polygon.vertices_end(); ++v) {
    Point2 p{CGAL::to_double(v->x()), CGAL::to_double(v->y())};
    if (ring.empty() || ring.back() != p) ring.push_back(p);
  }
  while (ring.size() > 1 && ring.front() == ring.back()) ring.pop_back();
  bool changed = true;
  while (changed && ring.size() >= 3) {
    changed = false;
    for (std::size_t i = 0; i < ring.size() && ring.size() >= 3; ++i) {
      const auto& a = ring[(i + ring.size() - 1) % ring.size()];
      const auto& b = ring[i];
      const auto& c = ring[(i + 1) % ring.size()];
      const IPoint pa(a[0], a[1]), pb(b[0], b[1]), pc(c[0], c[1]);
      if (CGAL::collinear(pa, pb, pc) && CGAL::collinear_are_ordered_along_line(pa, pb, pc)) {
        ring.erase(ring.begin() + static_cast<std::ptrdiff_t>(i));
        changed = true;
        --i;
      }
    }
  }
  return ring;
}

EPolygon to_exact(const Ring& ring, bool counterclockwise) {
  EPolygon polygon;
  for (const auto& p : ring) polygon.push_back(Epeck::Point_2(p[0], p[1]));
  if ((polygon.orientation() == CGAL::COUNTERCLOCKWISE) != counterclockwise) polygon.reverse_orientation();
  return polygon;
}

EPolygonSet to_exact_set(const PolygonSet& region) {
  EPolygonSet set;
  for (const auto& p : region) {
    std::vector<EPolygon> holes;
    for (const auto& h : p.holes) holes.push_back(to_exact(h, false));
    // join, not insert: insert would require the pieces to be disjoint already.
    set.join(EPolygonWithHoles(to_exact(p.outer, true), holes.begin(), holes.end()));
  }
  return set;
}

}  // namespace

PolygonWithHoles checked_polygon(PolygonWithHoles polygon, const std::string& key) {
  const int rings = 1 + static_cast<int>(polygon.holes.size());
  auto ring_of = [&](int r) -> Ring& { return r == 0 ? polygon.outer : polygon.holes[r - 1]; };
  for (int r = 0; r < rings; ++r) check_ring(ring_of(r), ring_key(key, r), r > 0);
  normalise_ring(polygon.outer, true);
  for (auto& hole : polygon.holes) normalise_ring(hole, false);
  if (rings == 1) return polygon;

  // Rings against each other: no contacts at all, then nesting.
  std::vector<Edge> edges;
  std::vector<int> sizes;
  for (int r = 0; r < rings; ++r) {
    auto e = ring_edges(ring_of(r), r);
    edges.insert(edges.end(), e.begin(), e.end());
    sizes.push_back(static_cast<int>(ring_of(r).size()));
  }
  const auto c = first_contact(edges, sizes, [](const Edge& e, const Edge& f) { return e.ring != f.ring; });
  if (c) {
    const int a = c->first->ring, b = c->second->ring;
    const std::string where = point_text(c->x, c->y);
    if (a == 0) {
      TESSERA_FAIL(ring_key(key, b) << ": the hole " << (c->how == "cross" ? "crosses" : c->how == "touch" ? "touches" : "overlaps")
                                    << " the outer ring at " << where
                                    << "; a hole must lie strictly inside the polygon");
    }
    TESSERA_FAIL(ring_key(key, a) << " and " << ring_key(key, b) << ": the holes overlap or touch at "
                                  << where << "; holes must be disjoint (merge them into one hole)");
  }
  const IPolygon outer = to_cgal(polygon.outer);
  std::vector<IPolygon> holes;
  for (const auto& h : polygon.holes) holes.push_back(to_cgal(h));
  for (std::size_t j = 0; j < holes.size(); ++j) {
    const auto& v = holes[j].vertex(0);
    TESSERA_CHECK(outer.bounded_side(v) == CGAL::ON_BOUNDED_SIDE,
                  ring_key(key, static_cast<int>(j) + 1)
                      << ": the hole is not inside the polygon (vertex 0 " << point_text(v.x(), v.y())
                      << " lies outside " << key << ".vertices); a hole must lie strictly inside");
  }
  // No edges meet, so one vertex decides whether a hole lies inside another.
  for (std::size_t i = 0; i < holes.size(); ++i) {
    for (std::size_t j = 0; j < holes.size(); ++j) {
      if (i == j) continue;
      const auto bi = holes[i].bbox(), bj = holes[j].bbox();
      if (bi.xmin() < bj.xmin() || bi.xmax() > bj.xmax() || bi.ymin() < bj.ymin() || bi.ymax() > bj.ymax()) {
        continue;
      }
      TESSERA_CHECK(holes[j].bounded_side(holes[i].vertex(0)) != CGAL::ON_BOUNDED_SIDE,
                    ring_key(key, static_cast<int>(i) + 1)
                        << ": the hole lies inside " << ring_key(key, static_cast<int>(j) + 1)
                        << "; holes must not overlap (remove the inner one)");
    }
  }
  return polygon;
}

double area(const PolygonSet& region) {
  // Twice the signed areas, summed exactly: doubles convert exactly to rationals.
  CGAL::Exact_rational sum = 0;
  auto add_ring = [&](const Ring& ring, bool subtract) {
    CGAL::Exact_rational twice = 0;
    const std::size_t n = ring.size();
    for (std::size_t i = 0; i < n; ++i) {
      const auto& a = ring[i];
      const auto& b = ring[(i + 1) % n];
      twice += CGAL::Exact_rational(a[0]) * CGAL::Exact_rational(b[1]) -
               CGAL::Exact_rational(a[1]) * CGAL::Exact_rational(b[0]);
    }
    if (twice < 0) twice = -twice;
    sum += subtract ? -twice : twice;
  };
  for (const auto& p : region) {
    add_ring(p.outer, false);
    for (const auto& h : p.holes) add_ring(h, true);
  }
  return CGAL::to_double(sum) / 2.0;
}

PolygonSet boolean(const PolygonSet& a, const PolygonSet& b, BooleanOp op) {
  EPolygonSet result = to_exact_set(a);
  const EPolygonSet other = to_exact_set(b);
  switch (op) {
    case BooleanOp::union_: result.join(other); break;
    case BooleanOp::intersection: result.intersection(other); break;
    case BooleanOp::difference: result.difference(other); break;
  }
  std::vector<EPolygonWithHoles> pieces;
  result.polygons_with_holes(std::back_inserter(pieces));
  PolygonSet out;
  for (const auto& piece : pieces) {
    if (piece.is_unbounded()) continue;  // cannot happen for bounded inputs
    PolygonWithHoles p;
    p.outer = to_ring(piece.outer_boundary());
    if (p.outer.size() < 3) continue;  // rounding collapsed a sliver
    for (auto h = piece.holes_begin(); h != piece.holes_end(); ++h) {
      Ring hole = to_ring(*h);
      if (hole.size() >= 3) p.holes.push_back(std::move(hole));
    }
    normalise_ring(p.outer, true);
    for (auto& hole : p.holes) normalise_ring(hole, false);
    out.push_back(std::move(p));
  }
  return out;
}

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
      TESSERA_CHECK(v < points.size(), path << ": face " << f << " uses vertex " << v << " but the file has "
                                            << points.size() << " vertices");
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
      TESSERA_CHECK(count <= 2, path << ": the edge from " << point_text(vertices[a][0], vertices[a][1])
                                     << " to " << point_text(vertices[b][0], vertices[b][1])
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
    TESSERA_CHECK(next.size() == 2, path << ": " << next.size() << " boundary edges meet at "
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
  TESSERA_CHECK(fs::is_regular_file(path, error), path << ": not a regular file; give a polygon file");
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
  TESSERA_CHECK(ok, path << ": cannot read the file; check that it is a valid " << extension.substr(1)
                         << " file");
  TESSERA_CHECK(!faces.empty() && !points.empty(),
                path << ": the file has no faces; a polygon file needs faces covering the region");

  double extent = 0.0;
  for (int axis = 0; axis < 3; ++axis) {
    auto [lo, hi] = std::minmax_element(points.begin(), points.end(), [axis](const auto& p, const auto& q) {
      return p[axis] < q[axis];
    });
    extent = std::max(extent, (*hi)[axis] - (*lo)[axis]);
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    TESSERA_CHECK(std::isfinite(p.x()) && std::isfinite(p.y()) && std::isfinite(p.z()),
                  path << ": vertex " << i << " is not finite");
    TESSERA_CHECK(std::abs(p.z()) <= 1e-12 * extent,
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
    const auto c = first_contact(edges, sizes, [](const Edge& e, const Edge& f) { return e.ring != f.ring; });
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
  std::stable_sort(order.begin(), order.end(), [&](auto i, auto j) { return ring_area[i] > ring_area[j]; });
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
