#pragma once
/// The abstract spatial shape. BoxShape (box_shape.hpp) is the only implementation so far;
/// polygons, meshes and CSG (CGAL) implement the same interface later, and Domain, the samplers
/// and the partitioner use only this interface.
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/core/rng.hpp"
#include "tessera/geometry/box.hpp"
#include "tessera/geometry/sampler.hpp"

namespace tessera::geometry {

/// The axis-aligned plane x[axis] = value.
struct Plane {
  int axis = 0;
  double value = 0.0;
};

/// One piece of a shape's boundary that conditions can select: a face of a box, an edge (or a
/// group of collinear edges) of a polygon, a patch of a mesh.
struct BoundaryPart {
  /// Shown in messages when the part has no plane (e.g. "edge 3"); Domain names planar parts
  /// by their plane ("x=0").
  std::string label;
  /// Length, area, or 1 for a point (the end of an interval), used to share points between parts.
  double measure = 0.0;
  /// Set when the whole part lies in an axis-aligned plane; plane selectors ("x=0") match on it.
  std::optional<Plane> plane;
};

/// Points on a boundary part and what was drawn with them.
struct PartSample {
  torch::Tensor points;   ///< float64 CPU [n, dims]
  torch::Tensor normals;  ///< float64 CPU [n, dims], outward unit normals
  torch::Tensor extra;    ///< float64 CPU [n, extra_dims] in [0, 1), drawn jointly with the points
};

/// A spatial shape in 1 to 3 dimensions. Implementations are immutable after construction and
/// may be shared between threads and domains (hold them as std::shared_ptr<const Shape>).
class Shape {
 public:
  virtual ~Shape() = default;

  virtual int dims() const = 0;
  virtual Box bounding_box() const = 0;
  /// Length, area or volume.
  virtual double measure() const = 0;
  /// points: floating [n, dims] on any device -> bool [n] on the same device; the boundary
  /// counts as inside (within a round-off tolerance).
  virtual torch::Tensor contains(const torch::Tensor& points) const = 0;

  /// n points uniformly distributed in the shape, drawn with `kind`: float64 CPU
  /// [n, dims + extra_dims]. The last extra_dims columns are unit coordinates in [0, 1) drawn
  /// jointly with the spatial ones (Domain uses one for time, so space-time samples keep the
  /// sampler's low discrepancy).
  virtual torch::Tensor sample_interior(std::int64_t n, int extra_dims, SamplerKind kind,
                                        core::Rng& rng) const = 0;

  /// The selectable pieces of the boundary; indices into this list identify parts everywhere.
  virtual const std::vector<BoundaryPart>& boundary_parts() const = 0;

  /// n points uniformly distributed (by measure) on boundary part `part`, with outward unit
  /// normals, and extra_dims unit coordinates drawn jointly (see sample_interior).
  virtual PartSample sample_part(int part, std::int64_t n, int extra_dims, SamplerKind kind,
                                 core::Rng& rng) const = 0;

  /// Parts named by a shape-specific selector such as "inside(disk0)" (CSG), or nullopt when the
  /// shape does not recognise `text`. Plane selectors and tags are handled by Domain.
  virtual std::optional<std::vector<int>> select_parts(const std::string& text) const {
    return std::nullopt;
  }

  /// The box when the shape is exactly an axis-aligned box (periodic conditions need one).
  virtual std::optional<Box> as_box() const { return std::nullopt; }
};

}  // namespace tessera::geometry
