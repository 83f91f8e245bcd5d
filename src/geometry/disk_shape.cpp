#include "tessera/geometry/disk_shape.hpp"

#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::geometry {

DiskShape::DiskShape(Point2 center, double radius, const std::string& key)
    : center_(center), radius_(radius) {
  TESSERA_CHECK(
      std::isfinite(center[0]) && std::isfinite(center[1]),
      key << ".center: expected finite numbers, got [" << center[0] << ", " << center[1] << "]");
  TESSERA_CHECK(std::isfinite(radius) && radius > 0,
                key << ".radius: expected a positive number, got " << radius);
  BoundaryPart circle;
  circle.label = "circle";
  circle.measure = 2.0 * M_PI * radius_;
  parts_.push_back(circle);
}

Box DiskShape::bounding_box() const {
  return Box{{center_[0] - radius_, center_[1] - radius_},
             {center_[0] + radius_, center_[1] + radius_}};
}

double DiskShape::measure() const { return M_PI * radius_ * radius_; }

torch::Tensor DiskShape::classify(const torch::Tensor& points) const {
  TESSERA_CHECK(points.dim() == 2 && points.size(1) == 2,
                "DiskShape::classify: expected points [n, 2], got " << points.sizes());
  const auto p = points.to(torch::kFloat64);
  const auto distance = torch::hypot(p.select(1, 0) - center_[0], p.select(1, 1) - center_[1]);
  const double tol = boundary_tolerance();
  const auto inside = distance < radius_ - tol;
  const auto outside = (distance > radius_ + tol).logical_or(distance.isnan());
  return inside.to(torch::kInt8) - outside.to(torch::kInt8);
}

torch::Tensor DiskShape::sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                         core::Rng& rng) const {
  TESSERA_CHECK(extra_dims >= 0, "DiskShape::sample_interior: extra_dims < 0");
  auto unit = unit_samples(kind, n, 2 + extra_dims, rng);
  const auto r = unit.select(1, 0).sqrt() * radius_;
  const auto angle = unit.select(1, 1) * (2.0 * M_PI);
  auto points = torch::stack({r * angle.cos() + center_[0], r * angle.sin() + center_[1]}, 1);
  return torch::cat({points, unit.narrow(1, 2, extra_dims)}, 1).contiguous();
}

PartSample DiskShape::sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                                  core::Rng& rng) const {
  TESSERA_CHECK(part == 0, "DiskShape::sample_part: no part " << part << " (a disk has 1)");
  TESSERA_CHECK(extra_dims >= 0, "DiskShape::sample_part: extra_dims < 0");
  auto unit = unit_samples(kind, n, 1 + extra_dims, rng);
  const auto angle = unit.select(1, 0) * (2.0 * M_PI);
  auto normals = torch::stack({angle.cos(), angle.sin()}, 1);
  auto points = normals * radius_;
  points.select(1, 0).add_(center_[0]);
  points.select(1, 1).add_(center_[1]);
  return {points, normals, unit.narrow(1, 1, extra_dims).contiguous()};
}

PolygonSet DiskShape::polygons(double max_edge) const {
  TESSERA_CHECK(max_edge > 0,
                "DiskShape::polygons: expected a positive max_edge, got " << max_edge);
  const double wanted = std::ceil(2.0 * M_PI * radius_ / max_edge);
  TESSERA_CHECK(wanted <= 1e7, "DiskShape::polygons: max_edge " << max_edge << " would need "
                                                                << wanted << " vertices for radius "
                                                                << radius_
                                                                << "; use a larger max_edge");
  const int count = std::max(16, static_cast<int>(wanted));
  Ring ring;
  ring.reserve(count);
  for (int k = 0; k < count; ++k) {
    const double angle = 2.0 * M_PI * k / count;
    ring.push_back(
        {center_[0] + radius_ * std::cos(angle), center_[1] + radius_ * std::sin(angle)});
  }
  return {PolygonWithHoles{std::move(ring), {}}};
}

std::shared_ptr<const Shape> make_disk(Point2 center, double radius, const std::string& key) {
  return std::make_shared<const DiskShape>(center, radius, key);
}

}  // namespace tessera::geometry
