// Point location against a closed triangle surface: an AABB tree of its faces answers "near the
// surface?" (boundary) and, through Side_of_triangle_mesh's ray casting, inside or outside.
#include <CGAL/AABB_face_graph_triangle_primitive.h>
#include <CGAL/AABB_traits.h>
#include <CGAL/AABB_tree.h>
#include <CGAL/Exact_predicates_inexact_constructions_kernel.h>
#include <CGAL/Side_of_triangle_mesh.h>
#include <CGAL/Surface_mesh.h>

#include <cmath>

#include "surface_mesh.hpp"
#include "tessera/core/error.hpp"
#include "tessera/geometry/surface.hpp"

namespace tessera::geometry {
namespace {

using cgal::CgalPoint;
using cgal::Kernel;
using cgal::Mesh;
using Primitive = CGAL::AABB_face_graph_triangle_primitive<Mesh>;
using Tree = CGAL::AABB_tree<CGAL::AABB_traits<Kernel, Primitive>>;
using Side = CGAL::Side_of_triangle_mesh<Mesh, Kernel, CGAL::Default, Tree>;

}  // namespace

struct SurfaceLocator::Impl {
  // Not movable once the tree exists: the tree refers to the mesh's faces.
  Mesh mesh;
  Tree tree;
  std::unique_ptr<Side> side;
  double tolerance = 0.0;
};

SurfaceLocator::SurfaceLocator(const TriangleSurface& surface, double tolerance)
    : impl_(std::make_unique<Impl>()) {
  TESSERA_CHECK(std::isfinite(tolerance) && tolerance >= 0.0,
                "SurfaceLocator: expected a tolerance >= 0, got " << tolerance);
  impl_->tolerance = tolerance;
  impl_->mesh = cgal::to_mesh(surface, "SurfaceLocator");
  auto& mesh = impl_->mesh;
  if (mesh.number_of_faces() == 0) return;  // an empty region: everything is outside
  TESSERA_CHECK(CGAL::is_closed(mesh), "SurfaceLocator: the surface is not closed");
  // Build everything now: const queries from many threads must not trigger lazy construction.
  impl_->tree.insert(faces(mesh).first, faces(mesh).second, mesh);
  impl_->tree.build();
  impl_->tree.accelerate_distance_queries();
  impl_->side = std::make_unique<Side>(impl_->tree);
}

SurfaceLocator::~SurfaceLocator() = default;

void SurfaceLocator::classify(const double* xyz, std::int64_t n, std::int8_t* out) const {
  const auto& tree = impl_->tree;
  const double tol = impl_->tolerance;
  // The box test is exact and cheap; it can only miss points farther than tol (L-infinity <= L2),
  // so the exact distance is computed only for points the padded box finds near a face.
  const double pad = 2.0 * tol;
  for (std::int64_t i = 0; i < n; ++i) {
    if (!impl_->side) {
      out[i] = PointClass::outside;
      continue;
    }
    const double x = xyz[3 * i], y = xyz[3 * i + 1], z = xyz[3 * i + 2];
    const CgalPoint p(x, y, z);
    const CGAL::Bbox_3 box(x - pad, y - pad, z - pad, x + pad, y + pad, z + pad);
    if (tree.do_intersect(box) && tree.squared_distance(p) <= tol * tol) {
      out[i] = PointClass::boundary;
      continue;
    }
    switch ((*impl_->side)(p)) {
      case CGAL::ON_BOUNDED_SIDE:
        out[i] = PointClass::inside;
        break;
      case CGAL::ON_BOUNDARY:
        out[i] = PointClass::boundary;
        break;
      case CGAL::ON_UNBOUNDED_SIDE:
        out[i] = PointClass::outside;
        break;
    }
  }
}

}  // namespace tessera::geometry
