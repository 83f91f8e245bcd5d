// Tetrahedral meshing of the region a closed triangle surface bounds (CGAL Mesh_3). Kept alone in
// this file: Mesh_3 is by far the most expensive CGAL package to compile.
//
// The domain detects the surface's sharp edges and protects them, and facets keep their vertices
// on one surface patch, so polyhedral regions (boxes, CSG results) are meshed exactly: the
// tetrahedra fill the region without cutting its corners or edges.

// Boost.Graph (feature detection) trips GCC's -Wmaybe-uninitialized when inlined at -O3: a
// false positive in library code, silenced so real warnings stay visible.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Mesh_complex_3_in_triangulation_3.h>
#include <CGAL/Mesh_criteria_3.h>
#include <CGAL/Mesh_triangulation_3.h>
#include <CGAL/Polyhedral_mesh_domain_with_features_3.h>
#include <CGAL/Random.h>
#include <CGAL/Surface_mesh.h>
#include <CGAL/make_mesh_3.h>

#include <cmath>
#include <map>

#include "surface_mesh.hpp"
#include "tessera/core/error.hpp"
#include "tessera/geometry/surface.hpp"

namespace tessera::geometry {
namespace {

using cgal::CgalPoint;
using cgal::Kernel;
using cgal::Mesh;
using Domain = CGAL::Polyhedral_mesh_domain_with_features_3<Kernel, Mesh>;
using Tr = CGAL::Mesh_triangulation_3<Domain, CGAL::Default, CGAL::Sequential_tag>::type;
using C3t3 = CGAL::Mesh_complex_3_in_triangulation_3<Tr, Domain::Corner_index, Domain::Curve_index>;
using Criteria = CGAL::Mesh_criteria_3<Tr>;

// Restores CGAL's default random generator (thread-local) after meshing, so seeding it for
// determinism does not change anyone else's stream.
class DefaultRandomScope {
 public:
  explicit DefaultRandomScope(unsigned int seed) : saved_(CGAL::get_default_random()) {
    CGAL::get_default_random() = CGAL::Random(seed);
  }
  ~DefaultRandomScope() { CGAL::get_default_random() = saved_; }
  DefaultRandomScope(const DefaultRandomScope&) = delete;
  DefaultRandomScope& operator=(const DefaultRandomScope&) = delete;

 private:
  CGAL::Random saved_;
};

}  // namespace

SimplexMesh mesh_volume(const TriangleSurface& surface, double max_cell_size) {
  TESSERA_CHECK(std::isfinite(max_cell_size) && max_cell_size > 0.0,
                "mesh_volume: expected a positive max_cell_size, got " << max_cell_size);
  TESSERA_CHECK(!surface.triangles.empty(), "mesh_volume: the surface has no triangles");
  Mesh mesh = cgal::to_mesh(surface, "mesh_volume");
  TESSERA_CHECK(CGAL::is_closed(mesh), "mesh_volume: the surface is not closed");

  // Mesh_3 draws random points (initial points, and rays in the domain's inside test) from the
  // domain's generator and from CGAL::get_default_random(); both are seeded for determinism.
  DefaultRandomScope default_random(0);
  CGAL::Random domain_random(0);
  Domain domain(mesh, &domain_random);
  domain.detect_features();

  const double h = max_cell_size;
  Criteria::Edge_criteria edges(h);
  Criteria::Facet_criteria facets(/*angle_bound=*/25.0, /*radius_bound=*/h,
                                  /*distance_bound=*/h / 50,
                                  CGAL::FACET_VERTICES_ON_SAME_SURFACE_PATCH);
  Criteria::Cell_criteria cells(/*radius_edge_bound=*/3.0, /*radius_bound=*/h);
  const Criteria criteria(edges, facets, cells);
  const C3t3 c3t3 = CGAL::make_mesh_3<C3t3>(domain, criteria, CGAL::parameters::no_perturb(),
                                            CGAL::parameters::no_exude());

  SimplexMesh result;
  result.dims = 3;
  std::map<Tr::Vertex_handle, std::int64_t> index;
  for (auto c = c3t3.cells_in_complex_begin(); c != c3t3.cells_in_complex_end(); ++c) {
    std::array<std::int64_t, 4> cell{};
    std::array<std::array<double, 3>, 4> corner{};
    for (int i = 0; i < 4; ++i) {
      const auto v = c->vertex(i);
      const auto& p = v->point();
      corner[i] = {CGAL::to_double(p.x()), CGAL::to_double(p.y()), CGAL::to_double(p.z())};
      auto found = index.find(v);
      if (found == index.end()) {
        found = index.emplace(v, static_cast<std::int64_t>(index.size())).first;
        result.points.insert(result.points.end(), corner[i].begin(), corner[i].end());
      }
      cell[i] = found->second;
    }
    // Triangulation cells are positively oriented; keep that promise even after rounding.
    double e[3][3];
    for (int i = 0; i < 3; ++i) {
      for (int d = 0; d < 3; ++d) e[i][d] = corner[i + 1][d] - corner[0][d];
    }
    const double det = e[0][0] * (e[1][1] * e[2][2] - e[1][2] * e[2][1]) -
                       e[0][1] * (e[1][0] * e[2][2] - e[1][2] * e[2][0]) +
                       e[0][2] * (e[1][0] * e[2][1] - e[1][1] * e[2][0]);
    if (det < 0.0) std::swap(cell[2], cell[3]);
    result.cells.insert(result.cells.end(), cell.begin(), cell.end());
  }
  TESSERA_CHECK(result.cell_count() > 0, "mesh_volume: CGAL produced no tetrahedra (max_cell_size "
                                             << max_cell_size << " may be too large)");
  return result;
}

}  // namespace tessera::geometry
