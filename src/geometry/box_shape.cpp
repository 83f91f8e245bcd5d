#include "tessera/geometry/box_shape.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::geometry {
namespace {

// Maps unit columns [n, >= dims] onto the box, column by column, in place for the first dims.
void scale_columns(torch::Tensor& points, const Box& box, int first_column) {
  for (int d = 0; d < box.dims(); ++d) {
    auto column = points.select(1, first_column + d);
    column.mul_(box.extent(d)).add_(box.lo[d]);
  }
}

}  // namespace

BoxShape::BoxShape(Box box, const std::string& key) : box_(std::move(box)) {
  validate_box(box_, key);
  const int dims = box_.dims();
  for (int axis = 0; axis < dims; ++axis) {
    double face_measure = 1.0;  // a point face (1-D) weighs 1
    for (int d = 0; d < dims; ++d) {
      if (d != axis) face_measure *= box_.extent(d);
    }
    for (bool high : {false, true}) {
      BoundaryPart part;
      part.measure = face_measure;
      part.plane = Plane{axis, high ? box_.hi[axis] : box_.lo[axis]};
      part.label = std::string(high ? "upper" : "lower") + " face of axis " + std::to_string(axis);
      parts_.push_back(part);
    }
  }
}

torch::Tensor BoxShape::classify(const torch::Tensor& points) const {
  TESSERA_CHECK(
      points.dim() == 2 && points.size(1) == dims(),
      "BoxShape::classify: expected points [n, " << dims() << "], got " << points.sizes());
  const double tol = boundary_tolerance();
  auto inside = torch::ones({points.size(0)}, points.options().dtype(torch::kBool));
  auto outside = torch::zeros({points.size(0)}, points.options().dtype(torch::kBool));
  for (int d = 0; d < dims(); ++d) {
    const auto column = points.select(1, d);
    inside = inside.logical_and(column > box_.lo[d] + tol).logical_and(column < box_.hi[d] - tol);
    outside = outside.logical_or(column < box_.lo[d] - tol).logical_or(column > box_.hi[d] + tol);
  }
  return inside.to(torch::kInt8) - outside.to(torch::kInt8);
}

PolygonSet BoxShape::polygons(double) const {
  TESSERA_CHECK(dims() == 2, "a " << dims() << "-D box has no polygon outline");
  const auto& lo = box_.lo;
  const auto& hi = box_.hi;
  return {PolygonWithHoles{{{lo[0], lo[1]}, {hi[0], lo[1]}, {hi[0], hi[1]}, {lo[0], hi[1]}}, {}}};
}

TriangleSurface BoxShape::surface(double) const {
  TESSERA_CHECK(dims() == 3, "a " << dims() << "-D box has no triangle surface");
  TriangleSurface s;
  for (int corner = 0; corner < 8; ++corner) {  // bit d set: the high side along axis d
    s.vertices.push_back({corner & 1 ? box_.hi[0] : box_.lo[0],
                          corner & 2 ? box_.hi[1] : box_.lo[1],
                          corner & 4 ? box_.hi[2] : box_.lo[2]});
  }
  // Two triangles per face, counterclockwise seen from outside.
  const std::int64_t quads[6][4] = {{0, 4, 6, 2}, {1, 3, 7, 5}, {0, 1, 5, 4},
                                    {2, 6, 7, 3}, {0, 2, 3, 1}, {4, 5, 7, 6}};
  for (const auto& q : quads) {
    s.triangles.push_back({q[0], q[1], q[2]});
    s.triangles.push_back({q[0], q[2], q[3]});
  }
  return s;
}

torch::Tensor BoxShape::sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                        core::Rng& rng) const {
  TESSERA_CHECK(extra_dims >= 0, "BoxShape::sample_interior: extra_dims < 0");
  auto points = unit_samples(kind, n, dims() + extra_dims, rng);
  scale_columns(points, box_, 0);
  return points;
}

PartSample BoxShape::sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                                 core::Rng& rng) const {
  TESSERA_CHECK(part >= 0 && part < static_cast<int>(parts_.size()),
                "BoxShape::sample_part: no part " << part << " (a " << dims() << "-D box has "
                                                  << parts_.size() << ")");
  TESSERA_CHECK(extra_dims >= 0, "BoxShape::sample_part: extra_dims < 0");
  const int axis = part / 2;
  const bool high = part % 2 == 1;
  // The face is a (dims - 1)-box: draw its coordinates and the extra ones jointly.
  auto unit = unit_samples(kind, n, dims() - 1 + extra_dims, rng);
  auto points = torch::empty({n, dims()}, torch::kFloat64);
  int source = 0;
  for (int d = 0; d < dims(); ++d) {
    auto column = points.select(1, d);
    if (d == axis) {
      column.fill_(high ? box_.hi[d] : box_.lo[d]);
    } else {
      column.copy_(unit.select(1, source++) * box_.extent(d) + box_.lo[d]);
    }
  }
  auto normals = torch::zeros({n, dims()}, torch::kFloat64);
  normals.select(1, axis).fill_(high ? 1.0 : -1.0);
  auto extra = unit.narrow(1, dims() - 1, extra_dims).contiguous();
  return {points, normals, extra};
}

std::shared_ptr<const Shape> make_box(Box box, const std::string& key) {
  return std::make_shared<const BoxShape>(std::move(box), key);
}

std::shared_ptr<const Shape> make_interval(double a, double b, const std::string& key) {
  return make_box(Box{{a}, {b}}, key);
}

}  // namespace tessera::geometry
