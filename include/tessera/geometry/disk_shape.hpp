#pragma once
/// A 2-D disk as a Shape: classified analytically, sampled by the area-preserving polar map.
/// One boundary part, the circle (label "circle", no plane).
#include <memory>
#include <string>

#include "tessera/geometry/shape.hpp"

namespace tessera::geometry {

class DiskShape final : public Shape {
 public:
  /// Throws unless the center is finite and the radius positive and finite; `key` names the
  /// case-file key ("geometry.disk" gives "geometry.disk.radius: ...").
  DiskShape(Point2 center, double radius, const std::string& key = "geometry.disk");

  int dims() const override { return 2; }
  Box bounding_box() const override;
  double measure() const override;
  torch::Tensor classify(const torch::Tensor& points) const override;
  /// Radius R sqrt(u0), angle 2 pi u1; the extra columns follow the 2 spatial ones.
  torch::Tensor sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                core::Rng& rng) const override;
  const std::vector<BoundaryPart>& boundary_parts() const override { return parts_; }
  /// Angle 2 pi u0, radial normals.
  PartSample sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                         core::Rng& rng) const override;
  /// The inscribed regular polygon with max(16, ceil(2 pi r / max_edge)) vertices,
  /// counterclockwise, vertex 0 at angle 0 (its edges are shorter than max_edge).
  PolygonSet polygons(double max_edge) const override;

  Point2 center() const { return center_; }
  double radius() const { return radius_; }

 private:
  Point2 center_;
  double radius_;
  std::vector<BoundaryPart> parts_;
};

/// Convenience: a shared DiskShape.
std::shared_ptr<const Shape> make_disk(Point2 center, double radius,
                                       const std::string& key = "geometry.disk");

}  // namespace tessera::geometry
