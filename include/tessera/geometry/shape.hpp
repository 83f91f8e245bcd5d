#pragma once
/// The abstract spatial shape. Implementations: BoxShape, PolygonShape, DiskShape, BallShape,
/// SurfaceShape (closed 3-D triangle surfaces), CsgShape (union, intersection, difference).
/// Domain, the samplers, the partitioner and the output use only this interface.
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/core/rng.hpp"
#include "tessera/geometry/box.hpp"
#include "tessera/geometry/polygonal.hpp"
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
  /// points: floating [n, dims] on any device -> int8 PointClass [n] on the same device:
  /// inside 1, on the boundary 0 (within boundary_tolerance()), outside -1.
  virtual torch::Tensor classify(const torch::Tensor& points) const = 0;
  /// points: floating [n, dims] on any device -> bool [n]; the boundary counts as inside.
  torch::Tensor contains(const torch::Tensor& points) const { return classify(points) >= 0; }
  /// Distance from the boundary within which classify() says `boundary`: round-off relative to
  /// the bounding box, so points computed on the boundary (sampled, or on a shared face) count.
  double boundary_tolerance() const;

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

  /// 2-D shapes: the region as polygons with holes whose curved edges are chords no longer
  /// than max_edge (exact for polygonal shapes). Used for exact CSG areas and triangle meshes.
  /// Throws for other dimensions.
  virtual PolygonSet polygons(double max_edge) const;
  /// 3-D shapes: a closed, outward-oriented triangle surface with curved parts approximated by
  /// triangles whose edges are at most max_edge long (exact for polyhedral shapes). Used for
  /// CSG volumes and tetrahedral meshes. Throws for other dimensions.
  virtual TriangleSurface surface(double max_edge) const;
};

}  // namespace tessera::geometry
