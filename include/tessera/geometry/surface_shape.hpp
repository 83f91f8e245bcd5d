#pragma once
/// A closed 3-D triangle surface (the "mesh" geometry of a case file, or a CSG result) as a Shape.
///
/// Boundary parts: the faces lying in one axis-aligned plane (unit normal +-e_axis within 1e-9
/// and all three vertices at the same coordinate) form one part per (axis, value, side), with
/// `plane` set and labelled "plane x=0"; all other faces form one part labelled "surface"
/// (absent when empty). Order: planar parts sorted by (axis, value, side: -1 before +1), then
/// "surface". A part's measure is its area.
#include <memory>
#include <string>

#include "tessera/geometry/shape.hpp"
#include "tessera/geometry/surface.hpp"
#include "tessera/geometry/triangle_sampling.hpp"

namespace tessera::geometry {

class SurfaceShape final : public Shape {
 public:
  /// `checked`: a closed, outward-oriented surface (checked_surface or read_surface_file);
  /// `key` names the case-file key or file in messages.
  SurfaceShape(TriangleSurface checked, std::string key);
  ~SurfaceShape() override;

  int dims() const override { return 3; }
  Box bounding_box() const override { return box_; }
  /// The enclosed volume.
  double measure() const override { return volume_; }
  /// Point location with an AABB tree (computed on the CPU in float64; the result is on the
  /// input's device).
  torch::Tensor classify(const torch::Tensor& points) const override;
  /// Rejection sampling from the bounding box (sample_in_bounding_box): deterministic given the
  /// rng state.
  torch::Tensor sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                core::Rng& rng) const override;
  const std::vector<BoundaryPart>& boundary_parts() const override { return parts_; }
  PartSample sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                         core::Rng& rng) const override;
  /// The stored surface (exact: max_edge is ignored).
  TriangleSurface surface(double max_edge) const override { return surface_; }

 private:
  struct PartFaces {
    TriangleSampler sampler;  ///< the part's faces
    torch::Tensor normals;    ///< float64 [faces, 3], outward unit normals in sampler order
  };

  TriangleSurface surface_;
  std::string key_;
  Box box_;
  double volume_ = 0.0;
  std::vector<BoundaryPart> parts_;
  std::vector<PartFaces> part_faces_;
  std::unique_ptr<SurfaceLocator> locator_;
};

/// Reads, checks and wraps a surface file (OFF, OBJ or STL); errors name `path`.
std::shared_ptr<const Shape> make_surface_file(const std::string& path);
/// Checks (checked_surface) and wraps `surface`; errors name `key`.
std::shared_ptr<const Shape> make_surface(TriangleSurface surface, const std::string& key);

}  // namespace tessera::geometry
