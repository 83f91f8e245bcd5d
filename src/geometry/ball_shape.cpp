#include "tessera/geometry/ball_shape.hpp"

#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/surface.hpp"

namespace tessera::geometry {
namespace {

// Unit directions [n, 3] from two unit columns, area-preserving: z = 1 - 2 u, phi = 2 pi v.
torch::Tensor directions(const torch::Tensor& u, const torch::Tensor& v) {
  const auto z = 1.0 - 2.0 * u;
  const auto rho = (1.0 - z * z).clamp_min(0.0).sqrt();
  const auto phi = (2.0 * M_PI) * v;
  return torch::stack({rho * phi.cos(), rho * phi.sin(), z}, 1);
}

}  // namespace

BallShape::BallShape(const Point3& center, double radius, const std::string& key)
    : center_(center), radius_(radius) {
  TESSERA_CHECK(std::isfinite(center[0]) && std::isfinite(center[1]) && std::isfinite(center[2]),
                key << ".center: expected 3 finite numbers, got [" << center[0] << ", " << center[1]
                    << ", " << center[2] << "]");
  TESSERA_CHECK(std::isfinite(radius) && radius > 0.0,
                key << ".radius: expected a positive number, got " << radius);
  BoundaryPart sphere;
  sphere.label = "sphere";
  sphere.measure = 4.0 * M_PI * radius * radius;
  parts_.push_back(sphere);
}

Box BallShape::bounding_box() const {
  Box box;
  for (int d = 0; d < 3; ++d) {
    box.lo.push_back(center_[d] - radius_);
    box.hi.push_back(center_[d] + radius_);
  }
  return box;
}

double BallShape::measure() const { return 4.0 / 3.0 * M_PI * radius_ * radius_ * radius_; }

torch::Tensor BallShape::classify(const torch::Tensor& points) const {
  TESSERA_CHECK(points.dim() == 2 && points.size(1) == 3,
                "BallShape::classify: expected points [n, 3], got " << points.sizes());
  const double tol = boundary_tolerance();
  const auto p = points.to(torch::kFloat64);
  const auto center = torch::tensor({center_[0], center_[1], center_[2]}, p.options());
  const auto distance = (p - center).norm(2, 1);
  const auto inside = distance < radius_ - tol;
  const auto outside = distance > radius_ + tol;
  return inside.to(torch::kInt8) - outside.to(torch::kInt8);
}

torch::Tensor BallShape::sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                         core::Rng& rng) const {
  TESSERA_CHECK(extra_dims >= 0, "BallShape::sample_interior: extra_dims < 0");
  const auto unit = unit_samples(kind, n, 3 + extra_dims, rng);
  const auto r = radius_ * unit.select(1, 0).pow(1.0 / 3.0);
  const auto center = torch::tensor({center_[0], center_[1], center_[2]}, torch::kFloat64);
  const auto points = center + r.unsqueeze(1) * directions(unit.select(1, 1), unit.select(1, 2));
  return torch::cat({points, unit.narrow(1, 3, extra_dims)}, 1).contiguous();
}

PartSample BallShape::sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                                  core::Rng& rng) const {
  TESSERA_CHECK(part == 0, "BallShape::sample_part: no part " << part << " (a ball has 1)");
  TESSERA_CHECK(extra_dims >= 0, "BallShape::sample_part: extra_dims < 0");
  const auto unit = unit_samples(kind, n, 2 + extra_dims, rng);
  auto normals = directions(unit.select(1, 0), unit.select(1, 1)).contiguous();
  const auto center = torch::tensor({center_[0], center_[1], center_[2]}, torch::kFloat64);
  auto points = (center + radius_ * normals).contiguous();
  return {points, normals, unit.narrow(1, 2, extra_dims).contiguous()};
}

TriangleSurface BallShape::surface(double max_edge) const {
  return sphere_surface(center_, radius_, max_edge);
}

std::shared_ptr<const Shape> make_ball(const Point3& center, double radius,
                                       const std::string& key) {
  return std::make_shared<const BallShape>(center, radius, key);
}

}  // namespace tessera::geometry
