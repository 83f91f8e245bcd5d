// Validating polygons with holes, exact areas and Boolean operations (planar.hpp).
// Predicates use CGAL's exact-predicates kernel on the input doubles, so "is this simple",
// "is this hole inside" never suffer from round-off; Boolean operations construct exactly and
// round once at the end.
#include <CGAL/Boolean_set_operations_2.h>
#include <CGAL/Exact_predicates_exact_constructions_kernel.h>
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Exact_rational.h>
#include <CGAL/Polygon_2.h>
#include <CGAL/Polygon_set_2.h>
#include <CGAL/Polygon_with_holes_2.h>
#include <CGAL/version.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "planar_rings.hpp"
#include "tessera/core/error.hpp"
#include "tessera/geometry/planar.hpp"

namespace tessera::geometry {
namespace cgal {

/// The alternative T of an intersection result, or null: CGAL 6 returns std::variant where
/// CGAL 5 returned boost::variant.
template <class T, class Variant>
const T* alternative(const Variant& result) {
#if CGAL_VERSION_NR >= 1060000000
  return std::get_if<T>(&result);
#else
  return boost::get<T>(&result);
#endif
}

IPolygon to_cgal(const Ring& ring) {
  IPolygon polygon;
  for (const auto& p : ring) polygon.push_back(IPoint(p[0], p[1]));
  return polygon;
}

// Exact orientation of a simple ring.
CGAL::Orientation ring_orientation(const Ring& ring) { return to_cgal(ring).orientation(); }

std::string point_text(double x, double y) {
  std::ostringstream s;
  s << "(" << x << ", " << y << ")";
  return s.str();
}

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

namespace {

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
  if (const auto* p = alternative<IPoint>(*result)) {
    c.x = p->x();
    c.y = p->y();
    const auto ends = {e.segment.source(), e.segment.target(), f.segment.source(),
                       f.segment.target()};
    for (const auto& q : ends) {
      if (CGAL::squared_distance(q, *p) == 0) c.how = "touch";
    }
  } else if (const auto* s = alternative<ISegment>(*result)) {
    c.how = "overlap";
    c.x = s->source().x();
    c.y = s->source().y();
  }
  return c;
}

}  // namespace

// The first contact between two edges accepted by `consider`, found by a sweep over the
// edges' bounding boxes in x (near-linear for ordinary polygons). Sizes: ring sizes by ring id,
// for adjacency.
std::optional<Contact> first_contact(
    std::vector<Edge>& edges, const std::vector<int>& sizes,
    const std::function<bool(const Edge&, const Edge&)>& consider) {
  std::sort(edges.begin(), edges.end(), [](const Edge& e, const Edge& f) {
    if (e.box.xmin() != f.box.xmin()) return e.box.xmin() < f.box.xmin();
    if (e.ring != f.ring) return e.ring < f.ring;
    return e.index < f.index;
  });
  std::optional<Contact> best;
  auto rank = [](const Contact& c) {
    return std::make_tuple(
        std::min(c.first->ring, c.second->ring), std::max(c.first->ring, c.second->ring),
        std::min(c.first->index, c.second->index), std::max(c.first->index, c.second->index));
  };
  for (std::size_t i = 0; i < edges.size(); ++i) {
    for (std::size_t j = i + 1; j < edges.size() && edges[j].box.xmin() <= edges[i].box.xmax();
         ++j) {
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

}  // namespace cgal

namespace {

using namespace cgal;
using Epeck = CGAL::Exact_predicates_exact_constructions_kernel;
using EPolygon = CGAL::Polygon_2<Epeck>;
using EPolygonWithHoles = CGAL::Polygon_with_holes_2<Epeck>;
using EPolygonSet = CGAL::Polygon_set_2<Epeck>;

std::string ring_key(const std::string& key, int ring) {
  return ring == 0 ? key + ".vertices" : key + ".holes[" + std::to_string(ring - 1) + "]";
}

// Checks one ring on its own: finite, no repeated vertices, >= 3 vertices, simple, nonzero area.
void check_ring(const Ring& ring, const std::string& where, bool is_hole) {
  const char* noun = is_hole ? "a hole" : "a polygon";
  for (std::size_t i = 0; i < ring.size(); ++i) {
    TESSERA_CHECK(std::isfinite(ring[i][0]) && std::isfinite(ring[i][1]),
                  where << ": vertex " << i << " is not finite "
                        << point_text(ring[i][0], ring[i][1]) << "; give finite coordinates");
  }
  TESSERA_CHECK(ring.size() >= 3,
                where << ": " << noun << " needs at least 3 vertices, got " << ring.size());
  const std::size_t n = ring.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = (i + 1) % n;
    if (ring[i] != ring[j]) continue;
    if (j == 0) {
      TESSERA_FAIL(where << ": the last vertex repeats the first "
                         << point_text(ring[i][0], ring[i][1])
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
      TESSERA_FAIL(where << ": edges " << i << " and " << j << " (vertices " << i << "-"
                         << (i + 1) % n << " and " << j << "-" << (j + 1) % n << ") " << c->how
                         << " at " << point_text(c->x, c->y) << "; " << noun
                         << " must not cross or touch itself");
    }
    TESSERA_FAIL(where << ": " << noun << " is not simple (its edges cross); " << noun
                       << " must not cross itself");
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
  if ((polygon.orientation() == CGAL::COUNTERCLOCKWISE) != counterclockwise)
    polygon.reverse_orientation();
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
  const auto c =
      first_contact(edges, sizes, [](const Edge& e, const Edge& f) { return e.ring != f.ring; });
  if (c) {
    const int a = c->first->ring, b = c->second->ring;
    const std::string where = point_text(c->x, c->y);
    if (a == 0) {
      TESSERA_FAIL(ring_key(key, b) << ": the hole "
                                    << (c->how == "cross"   ? "crosses"
                                        : c->how == "touch" ? "touches"
                                                            : "overlaps")
                                    << " the outer ring at " << where
                                    << "; a hole must lie strictly inside the polygon");
    }
    TESSERA_FAIL(ring_key(key, a) << " and " << ring_key(key, b)
                                  << ": the holes overlap or touch at " << where
                                  << "; holes must be disjoint (merge them into one hole)");
  }
  const IPolygon outer = to_cgal(polygon.outer);
  std::vector<IPolygon> holes;
  for (const auto& h : polygon.holes) holes.push_back(to_cgal(h));
  for (std::size_t j = 0; j < holes.size(); ++j) {
    const auto& v = holes[j].vertex(0);
    TESSERA_CHECK(outer.bounded_side(v) == CGAL::ON_BOUNDED_SIDE,
                  ring_key(key, static_cast<int>(j) + 1)
                      << ": the hole is not inside the polygon (vertex 0 "
                      << point_text(v.x(), v.y()) << " lies outside " << key
                      << ".vertices); a hole must lie strictly inside");
  }
  // No edges meet, so one vertex decides whether a hole lies inside another.
  for (std::size_t i = 0; i < holes.size(); ++i) {
    for (std::size_t j = 0; j < holes.size(); ++j) {
      if (i == j) continue;
      const auto bi = holes[i].bbox(), bj = holes[j].bbox();
      if (bi.xmin() < bj.xmin() || bi.xmax() > bj.xmax() || bi.ymin() < bj.ymin() ||
          bi.ymax() > bj.ymax()) {
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
    case BooleanOp::union_:
      result.join(other);
      break;
    case BooleanOp::intersection:
      result.intersection(other);
      break;
    case BooleanOp::difference:
      result.difference(other);
      break;
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

}  // namespace tessera::geometry
