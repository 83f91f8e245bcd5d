#pragma once
/// An axis-aligned box (an interval in 1-D) as a Shape. Its boundary parts are the 2 * dims faces
/// in the order lo[0], hi[0], lo[1], hi[1], ...; in 1-D the faces are the two end points
/// (measure 1 each).
#include <memory>

#include "tessera/geometry/shape.hpp"

namespace tessera::geometry {

class BoxShape final : public Shape {
 public:
  /// Throws unless the box is valid (validate_box); `key` names the case-file key.
  explicit BoxShape(Box box, const std::string& key = "geometry");

  int dims() const override { return box_.dims(); }
  Box bounding_box() const override { return box_; }
  double measure() const override { return box_.measure(); }
  torch::Tensor classify(const torch::Tensor& points) const override;
  torch::Tensor sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                core::Rng& rng) const override;
  const std::vector<BoundaryPart>& boundary_parts() const override { return parts_; }
  PartSample sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                         core::Rng& rng) const override;
  std::optional<Box> as_box() const override { return box_; }
  PolygonSet polygons(double max_edge) const override;
  TriangleSurface surface(double max_edge) const override;

  /// The index of the face on `axis` at the low (high = false) or high side.
  static int face_index(int axis, bool high) { return 2 * axis + (high ? 1 : 0); }

 private:
  Box box_;
  std::vector<BoundaryPart> parts_;
};

/// Convenience: a shared BoxShape.
std::shared_ptr<const Shape> make_box(Box box, const std::string& key = "geometry");
/// Convenience: the 1-D box [a, b].
std::shared_ptr<const Shape> make_interval(double a, double b, const std::string& key = "geometry");

}  // namespace tessera::geometry
