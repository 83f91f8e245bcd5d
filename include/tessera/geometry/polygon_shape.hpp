#pragma once
/// A 2-D region bounded by straight edges (polygons with holes) as a Shape: a case-file
/// "polygon", a 2-D "mesh" file, or the exact result of a CSG operation on polygonal shapes.
/// Its boundary parts are its edges, one part per edge, in ring order: polygon 0's outer ring,
/// then its holes, then polygon 1's rings, ...
#include <memory>
#include <string>

#include "tessera/geometry/shape.hpp"
#include "tessera/geometry/triangle_sampling.hpp"

namespace tessera::geometry {

class PlanarLocator;

class PolygonShape final : public Shape {
 public:
  /// `region`: non-empty, already valid and oriented (checked_polygon, read_polygon_file or
  /// boolean). `key` names the case-file key or file in messages.
  PolygonShape(PolygonSet region, std::string key);
  ~PolygonShape() override;

  int dims() const override { return 2; }
  Box bounding_box() const override { return box_; }
  /// Exact area (holes subtracted).
  double measure() const override { return area_; }
  torch::Tensor classify(const torch::Tensor& points) const override;
  /// Area-weighted over a triangulation of the region.
  torch::Tensor sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                core::Rng& rng) const override;
  /// One part per edge: labels "edge i" (one polygon, outer ring), "hole j edge i", and with
  /// several polygons "polygon p edge i" / "polygon p hole j edge i"; axis-aligned edges carry
  /// their plane (so "x=0" selects them).
  const std::vector<BoundaryPart>& boundary_parts() const override { return parts_; }
  PartSample sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                         core::Rng& rng) const override;
  /// The region itself (exact; max_edge is ignored).
  PolygonSet polygons(double max_edge) const override { return region_; }

  const std::string& key() const { return key_; }

 private:
  struct EdgeRef {
    Point2 a, b;
  };

  PolygonSet region_;
  std::string key_;
  Box box_;
  double area_ = 0.0;
  std::vector<BoundaryPart> parts_;
  std::vector<EdgeRef> edges_;  ///< parallel to parts_
  std::unique_ptr<const PlanarLocator> locator_;
  std::unique_ptr<const TriangleSampler> triangles_;
};

/// Checks `polygon` (checked_polygon, naming `key`) and makes it a shape.
std::shared_ptr<const Shape> make_polygon(PolygonWithHoles polygon, const std::string& key);
/// Reads a 2-D polygon file (read_polygon_file) and makes it a shape; messages name `path`.
std::shared_ptr<const Shape> make_polygon_file(const std::string& path);

}  // namespace tessera::geometry
