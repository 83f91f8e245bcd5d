#pragma once
/// The 3-D ball |x - center| <= radius as a Shape. One boundary part, the sphere (label
/// "sphere", no plane, measure 4 pi r^2). Samples are exact (area- and volume-preserving maps of
/// the unit samples), not rejection.
#include <memory>
#include <string>

#include "tessera/geometry/shape.hpp"

namespace tessera::geometry {

class BallShape final : public Shape {
 public:
  /// Throws naming "<key>.center" / "<key>.radius" unless the center is finite and the radius a
  /// positive finite number.
  BallShape(const Point3& center, double radius, const std::string& key = "geometry.ball");

  int dims() const override { return 3; }
  Box bounding_box() const override;
  double measure() const override;
  /// Analytic: boundary within boundary_tolerance() of the sphere; computed in float64 on the
  /// input's device.
  torch::Tensor classify(const torch::Tensor& points) const override;
  /// r = R u0^(1/3); direction from (u1, u2): z = 1 - 2 u1, phi = 2 pi u2; extra columns after.
  torch::Tensor sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                core::Rng& rng) const override;
  const std::vector<BoundaryPart>& boundary_parts() const override { return parts_; }
  /// Direction from (u0, u1) as in sample_interior; the normal is radial.
  PartSample sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                         core::Rng& rng) const override;
  /// The inscribed icosphere with edges at most max_edge (sphere_surface).
  TriangleSurface surface(double max_edge) const override;

  const Point3& center() const { return center_; }
  double radius() const { return radius_; }

 private:
  Point3 center_;
  double radius_;
  std::vector<BoundaryPart> parts_;
};

/// Convenience: a shared BallShape.
std::shared_ptr<const Shape> make_ball(const Point3& center, double radius,
                                       const std::string& key = "geometry.ball");

}  // namespace tessera::geometry
