// Point location and triangle meshes of planar regions (planar.hpp).
#include <CGAL/Constrained_Delaunay_triangulation_2.h>
#include <CGAL/Delaunay_mesh_face_base_2.h>
#include <CGAL/Delaunay_mesh_size_criteria_2.h>
#include <CGAL/Delaunay_mesh_vertex_base_2.h>
#include <CGAL/Delaunay_mesher_2.h>
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Triangulation_face_base_with_info_2.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <unordered_map>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/geometry/planar.hpp"

namespace tessera::geometry {
namespace {

using K = CGAL::Exact_predicates_inexact_constructions_kernel;
using KPoint = K::Point_2;

// ---- point location ----------------------------------------------------------------------

struct Segment {
  double ax, ay, bx, by;
};

// Squared distance from (x, y) to the segment.
double squared_distance(const Segment& s, double x, double y) {
  const double dx = s.bx - s.ax, dy = s.by - s.ay;
  const double length2 = dx * dx + dy * dy;
  double t = length2 > 0 ? ((x - s.ax) * dx + (y - s.ay) * dy) / length2 : 0.0;
  t = std::clamp(t, 0.0, 1.0);
  const double ex = s.ax + t * dx - x, ey = s.ay + t * dy - y;
  return ex * ex + ey * ey;
}

// ---- triangulations ------------------------------------------------------------------------

// Nesting level of a face: 0 outside every ring, 1 inside an outer ring, 2 inside a hole, ...
// Odd levels are the region (CGAL's "triangulating a polygon with holes" example).
struct FaceInfo {
  int nesting_level = -1;
  bool in_domain() const { return nesting_level % 2 == 1; }
};

using Itag = CGAL::Exact_predicates_tag;
using Fb = CGAL::Constrained_triangulation_face_base_2<
    K, CGAL::Triangulation_face_base_with_info_2<FaceInfo, K>>;
using Cdt = CGAL::Constrained_Delaunay_triangulation_2<
    K, CGAL::Triangulation_data_structure_2<CGAL::Triangulation_vertex_base_2<K>, Fb>, Itag>;
using MeshFb = CGAL::Delaunay_mesh_face_base_2<K, Fb>;
using MeshCdt = CGAL::Constrained_Delaunay_triangulation_2<
    K, CGAL::Triangulation_data_structure_2<CGAL::Delaunay_mesh_vertex_base_2<K>, MeshFb>, Itag>;

template <typename Tr>
void insert_rings(Tr& tr, const PolygonSet& region) {
  auto insert = [&](const Ring& ring) {
    std::vector<KPoint> points;
    for (const auto& p : ring) points.emplace_back(p[0], p[1]);
    tr.insert_constraint(points.begin(), points.end(), /*close=*/true);
  };
  for (const auto& p : region) {
    insert(p.outer);
    for (const auto& h : p.holes) insert(h);
  }
}

// Floods nesting levels from the infinite face, crossing one constrained edge per level.
template <typename Tr>
void mark_nesting(Tr& tr) {
  using Face_handle = typename Tr::Face_handle;
  using Edge = typename Tr::Edge;
  for (auto f = tr.all_faces_begin(); f != tr.all_faces_end(); ++f) f->info().nesting_level = -1;
  std::deque<Edge> border;
  auto flood = [&](Face_handle start, int level) {
    std::deque<Face_handle> queue{start};
    while (!queue.empty()) {
      const Face_handle f = queue.front();
      queue.pop_front();
      if (f->info().nesting_level != -1) continue;
      f->info().nesting_level = level;
      for (int i = 0; i < 3; ++i) {
        const Face_handle n = f->neighbor(i);
        if (n->info().nesting_level != -1) continue;
        if (tr.is_constrained(Edge(f, i))) {
          border.push_back(Edge(f, i));
        } else {
          queue.push_back(n);
        }
      }
    }
  };
  flood(tr.infinite_face(), 0);
  while (!border.empty()) {
    const Edge e = border.front();
    border.pop_front();
    const Face_handle n = e.first->neighbor(e.second);
    if (n->info().nesting_level == -1) flood(n, e.first->info().nesting_level + 1);
  }
}

// The faces accepted by `in_domain` as a mesh with compactly numbered vertices, in the
// triangulation's (deterministic) face order.
template <typename Tr, typename InDomain>
SimplexMesh extract(const Tr& tr, InDomain in_domain) {
  SimplexMesh mesh;
  mesh.dims = 2;
  std::unordered_map<const void*, std::int64_t> index;
  for (auto f = tr.finite_faces_begin(); f != tr.finite_faces_end(); ++f) {
    if (!in_domain(f)) continue;
    for (int i = 0; i < 3; ++i) {
      const auto v = f->vertex(i);
      const auto [it, is_new] = index.emplace(&*v, static_cast<std::int64_t>(index.size()));
      if (is_new) {
        mesh.points.push_back(v->point().x());
        mesh.points.push_back(v->point().y());
      }
      mesh.cells.push_back(it->second);
    }
  }
  return mesh;
}

}  // namespace

struct PlanarLocator::Impl {
  std::vector<Segment> edges;
  double tolerance = 0.0;
  double xmin = 0, xmax = 0, ymin = 0, ymax = 0;
  // Horizontal slabs of height slab_height from ymin: the edges whose y-range (widened by the
  // tolerance) meets slab s are slab_edges[slab_start[s] .. slab_start[s + 1]).
  double slab_height = 1.0;
  std::vector<std::int64_t> slab_start;
  std::vector<std::int32_t> slab_edges;

  int slab_of(double y) const {
    const double s = std::floor((y - ymin) / slab_height);
    const int last = static_cast<int>(slab_start.size()) - 2;
    return s < 0 ? 0 : (s > last ? last : static_cast<int>(s));
  }

  std::int8_t classify(double x, double y) const {
    if (!(x >= xmin - tolerance && x <= xmax + tolerance && y >= ymin - tolerance &&
          y <= ymax + tolerance)) {
      return PointClass::outside;  // also NaN
    }
    const int s = slab_of(y);
    bool inside = false;  // even-odd over all rings: the region of nested rings
    const double tolerance2 = tolerance * tolerance;
    for (auto k = slab_start[s]; k < slab_start[s + 1]; ++k) {
      const Segment& e = edges[slab_edges[k]];
      if (squared_distance(e, x, y) <= tolerance2) return PointClass::boundary;
      if ((e.ay > y) == (e.by > y)) continue;
      // The edge spans y: it crosses the ray to +x iff the point is on its left going up.
      const auto turn = CGAL::orientation(KPoint(e.ax, e.ay), KPoint(e.bx, e.by), KPoint(x, y));
      if (turn == (e.by > e.ay ? CGAL::LEFT_TURN : CGAL::RIGHT_TURN)) inside = !inside;
    }
    return inside ? PointClass::inside : PointClass::outside;
  }
};

PlanarLocator::PlanarLocator(const PolygonSet& region, double tolerance)
    : impl_(std::make_unique<Impl>()) {
  TESSERA_CHECK(std::isfinite(tolerance) && tolerance >= 0,
                "PlanarLocator: expected a finite tolerance >= 0, got " << tolerance);
  Impl& m = *impl_;
  m.tolerance = tolerance;
  bool first = true;
  auto add_ring = [&](const Ring& ring) {
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const auto& a = ring[i];
      const auto& b = ring[(i + 1) % ring.size()];
      m.edges.push_back({a[0], a[1], b[0], b[1]});
      m.xmin = first ? a[0] : std::min(m.xmin, a[0]);
      m.xmax = first ? a[0] : std::max(m.xmax, a[0]);
      m.ymin = first ? a[1] : std::min(m.ymin, a[1]);
      m.ymax = first ? a[1] : std::max(m.ymax, a[1]);
      first = false;
    }
  };
  for (const auto& p : region) {
    add_ring(p.outer);
    for (const auto& h : p.holes) add_ring(h);
  }
  const int slabs = static_cast<int>(std::clamp<std::size_t>(m.edges.size() / 2, 1, 4096));
  if (m.ymax > m.ymin) m.slab_height = (m.ymax - m.ymin) / slabs;
  m.slab_start.assign(slabs + 1, 0);
  auto for_slabs = [&](const Segment& e, auto&& f) {
    const int lo = m.slab_of(std::min(e.ay, e.by) - tolerance);
    const int hi = m.slab_of(std::max(e.ay, e.by) + tolerance);
    for (int s = lo; s <= hi; ++s) f(s);
  };
  for (const auto& e : m.edges) for_slabs(e, [&](int s) { ++m.slab_start[s + 1]; });
  for (int s = 0; s < slabs; ++s) m.slab_start[s + 1] += m.slab_start[s];
  m.slab_edges.resize(m.slab_start[slabs]);
  std::vector<std::int64_t> fill(m.slab_start.begin(), m.slab_start.end() - 1);
  for (std::size_t k = 0; k < m.edges.size(); ++k) {
    for_slabs(m.edges[k], [&](int s) { m.slab_edges[fill[s]++] = static_cast<std::int32_t>(k); });
  }
}

PlanarLocator::~PlanarLocator() = default;

void PlanarLocator::classify(const double* xy, std::int64_t n, std::int8_t* out) const {
  if (impl_->edges.empty()) {
    std::fill(out, out + n, static_cast<std::int8_t>(PointClass::outside));
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) out[i] = impl_->classify(xy[2 * i], xy[2 * i + 1]);
}

SimplexMesh triangulate(const PolygonSet& region) {
  Cdt cdt;
  insert_rings(cdt, region);
  mark_nesting(cdt);
  return extract(cdt, [](auto f) { return f->info().in_domain(); });
}

SimplexMesh mesh_region(const PolygonSet& region, double max_cell_size) {
  TESSERA_CHECK(std::isfinite(max_cell_size) && max_cell_size > 0,
                "mesh_region: expected a positive max_cell_size, got " << max_cell_size);
  MeshCdt cdt;
  insert_rings(cdt, region);
  mark_nesting(cdt);
  // Mark the region ourselves (odd nesting levels) instead of seeding the holes: a seed point
  // inside a hole could land in a polygon nested inside that hole.
  double region_area = 0.0;
  for (auto f = cdt.all_faces_begin(); f != cdt.all_faces_end(); ++f) {
    const bool in = !cdt.is_infinite(f) && f->info().in_domain();
    f->set_in_domain(in);
    if (in) region_area += std::abs(cdt.triangle(f).area());
  }
  // An equilateral triangle of side max_cell_size has area 0.433 h^2; refuse absurd requests
  // before spending hours in the mesher.
  const double estimate = region_area / (0.433 * max_cell_size * max_cell_size);
  TESSERA_CHECK(estimate < 5e7, "mesh_region: max_cell_size "
                                    << max_cell_size << " would make about " << estimate
                                    << " triangles; use a larger cell size");
  using Criteria = CGAL::Delaunay_mesh_size_criteria_2<MeshCdt>;
  CGAL::refine_Delaunay_mesh_2(cdt, Criteria(0.125, max_cell_size), /*domain_specified=*/true);
  return extract(cdt, [](auto f) { return f->is_in_domain(); });
}

}  // namespace tessera::geometry
