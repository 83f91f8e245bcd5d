#include "tessera/app/shape_builder.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/ball_shape.hpp"
#include "tessera/geometry/box_shape.hpp"
#include "tessera/geometry/csg_shape.hpp"
#include "tessera/geometry/disk_shape.hpp"
#include "tessera/geometry/polygon_shape.hpp"
#include "tessera/geometry/surface_shape.hpp"

namespace tessera::app {
namespace {

geometry::Ring ring_of(const std::vector<std::array<double, 2>>& points) {
  return geometry::Ring(points.begin(), points.end());
}

std::shared_ptr<const geometry::Shape> build(const io::ShapeSpec& spec, int dims) {
  using io::ShapeKind;
  switch (spec.kind) {
    case ShapeKind::interval:
    case ShapeKind::box: {
      geometry::Box box;
      for (const auto& range : spec.box) {
        box.lo.push_back(range[0]);
        box.hi.push_back(range[1]);
      }
      return geometry::make_box(box, spec.key);
    }
    case ShapeKind::disk:
      return geometry::make_disk({spec.center[0], spec.center[1]}, spec.radius, spec.key);
    case ShapeKind::ball:
      return geometry::make_ball({spec.center[0], spec.center[1], spec.center[2]}, spec.radius,
                                 spec.key);
    case ShapeKind::polygon: {
      if (!spec.file.empty()) return geometry::make_polygon_file(spec.file);
      geometry::PolygonWithHoles polygon{ring_of(spec.vertices), {}};
      for (const auto& hole : spec.holes) polygon.holes.push_back(ring_of(hole));
      return geometry::make_polygon(polygon, spec.key);
    }
    case ShapeKind::mesh:
      return dims == 2 ? geometry::make_polygon_file(spec.file)
                       : geometry::make_surface_file(spec.file);
    case ShapeKind::union_:
    case ShapeKind::intersection:
    case ShapeKind::difference:
      break;
  }
  const geometry::BooleanOp op =
      spec.kind == io::ShapeKind::intersection ? geometry::BooleanOp::intersection
      : spec.kind == io::ShapeKind::difference ? geometry::BooleanOp::difference
                                               : geometry::BooleanOp::union_;
  std::vector<geometry::CsgShape::Child> children;
  for (const auto& child : spec.children) children.push_back({build(child, dims), child.name});
  return std::make_shared<const geometry::CsgShape>(op, std::move(children), spec.key);
}

}  // namespace

std::shared_ptr<const geometry::Shape> build_shape(const io::Case& c) {
  try {
    return build(c.geometry.shape, static_cast<int>(c.coordinates.size()));
  } catch (const Error& e) {
    throw Error(c.file + ": " + e.what());
  }
}

}  // namespace tessera::app
