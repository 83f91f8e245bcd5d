#pragma once
/// Constructive solid geometry: union, intersection or difference of shapes of one dimension
/// (docs/case-format.md "Geometry"). Works on any Shape through classify(): a point's class in
/// the result is the max (union), min (intersection) or min(first, -rest) (difference) of its
/// classes in the children. The boundary parts are the children's parts, each restricted to
/// where it lies on the result's boundary; a subtracted child's parts face the other way.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/geometry/shape.hpp"

namespace tessera::geometry {

class CsgShape final : public Shape {
 public:
  struct Child {
    std::shared_ptr<const Shape> shape;
    /// How selectors name it: "inside(<name>)" selects the parts it contributes. The case
    /// builder names children by kind and depth-first count ("disk0", "box1"); may be empty.
    std::string name;
  };

  /// `key` names the case-file key in messages. Throws when the children differ in dimension,
  /// a difference or intersection has fewer than 2 children, or the bounding boxes of an
  /// intersection do not overlap.
  CsgShape(BooleanOp op, std::vector<Child> children, std::string key);

  int dims() const override { return children_.front().shape->dims(); }
  Box bounding_box() const override { return box_; }
  /// Exact for polygons, boxes and triangle surfaces; disks and balls enter as inscribed
  /// polygons / icospheres with edges of 1/256 (2-D) or 1/48 (3-D) of the children's largest
  /// extent (relative area error ~1e-4, volume error ~2e-3 of the ball). Computed on first use.
  double measure() const override;
  torch::Tensor classify(const torch::Tensor& points) const override;
  /// Rejection from the bounding box, in rounds, until n points are inside (deterministic).
  torch::Tensor sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                core::Rng& rng) const override;
  const std::vector<BoundaryPart>& boundary_parts() const override { return parts_; }
  /// Samples the child's part and keeps the points on the result's boundary, in rounds.
  PartSample sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                         core::Rng& rng) const override;
  /// "inside(<child name>)": the parts a named child (at any depth) contributes.
  std::optional<std::vector<int>> select_parts(const std::string& text) const override;
  PolygonSet polygons(double max_edge) const override;
  TriangleSurface surface(double max_edge) const override;

  BooleanOp op() const { return op_; }
  const std::vector<Child>& children() const { return children_; }

 private:
  struct PartSource {
    int child = 0;
    int part = 0;       ///< index among the child's parts
    double sign = 1.0;  ///< -1 for a subtracted child: its outward normal points into the result
  };
  /// Fraction of a child's part that lies on this shape's boundary (quasi-random estimate with a
  /// fixed stream, 4096 points).
  double surviving_fraction(const PartSource& source) const;

  BooleanOp op_;
  std::vector<Child> children_;
  std::string key_;
  Box box_;
  std::vector<BoundaryPart> parts_;
  std::vector<PartSource> sources_;
  mutable std::once_flag measured_;
  mutable double measure_ = 0.0;
};

/// "union", "intersection", "difference".
std::string boolean_name(BooleanOp op);

}  // namespace tessera::geometry
