#pragma once
/// The problem domain: a spatial shape times an optional time interval, with the coordinate
/// names of the case, and the boundary selectors that conditions use (docs/case-format.md
/// "Geometry", "Conditions"). Input coordinate order everywhere: spatial, then time.
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tessera/core/rng.hpp"
#include "tessera/geometry/box.hpp"
#include "tessera/geometry/sampler.hpp"
#include "tessera/geometry/shape.hpp"

namespace tessera::geometry {

/// The boundary parts a condition applies to, resolved from its `on` string by
/// Domain::parse_selector. Valid only for the Domain that made it.
struct Selector {
  std::string text;  ///< the `on` string as given, for messages
  std::vector<int>
      parts;  ///< spatial boundary parts (indices into Shape::boundary_parts()), sorted, unique
  bool initial = false;   ///< the spatial shape at the start time
  bool terminal = false;  ///< the spatial shape at the end time ("t=<end>")

  bool empty() const { return parts.empty() && !initial && !terminal; }
};

/// Points on selected boundary parts.
struct BoundarySample {
  torch::Tensor points;  ///< float64 CPU [n, dims()], time column included
  torch::Tensor
      normals;  ///< float64 CPU [n, spatial_dims()], outward unit; zeros on time caps ("initial")
};

class Domain {
 public:
  /// `spatial_names` has one name per shape dimension; `time_range` {start, end} with start < end
  /// makes it a space-time problem with time coordinate `time_name`. `tags` maps a tag name to a
  /// selector text ("x=0", "x=0|y=1", another tag ...); every tag is checked here, so a bad tag
  /// fails when the case loads, naming "geometry.tags.<name>".
  Domain(std::shared_ptr<const Shape> shape, std::vector<std::string> spatial_names,
         std::optional<std::array<double, 2>> time_range = std::nullopt,
         std::string time_name = "t", std::map<std::string, std::string> tags = {});

  int dims() const { return spatial_dims() + (has_time() ? 1 : 0); }
  int spatial_dims() const { return shape_->dims(); }
  bool has_time() const { return time_range_.has_value(); }

  const Shape& shape() const { return *shape_; }
  std::shared_ptr<const Shape> shape_ptr() const { return shape_; }
  const std::vector<std::string>& spatial_names() const { return spatial_names_; }
  /// Spatial names, then the time name when there is time.
  std::vector<std::string> input_names() const;
  const std::string& time_name() const { return time_name_; }
  /// {start, end}; throws when there is no time.
  std::array<double, 2> time_range() const;
  const std::map<std::string, std::string>& tags() const { return tags_; }
  /// Column of coordinate `name` among the inputs (time last), or -1.
  int axis_index(const std::string& name) const;

  /// Over all inputs, time included.
  Box bounding_box() const;
  /// Space-time measure (spatial measure times duration).
  double measure() const;
  /// points: floating [n, dims()] on any device -> bool [n]; the boundary counts as inside.
  torch::Tensor contains(const torch::Tensor& points) const;
  /// n points uniformly in the domain (space-time), float64 CPU [n, dims()].
  torch::Tensor sample_interior(std::int64_t n, SamplerKind kind, core::Rng& rng) const;

  /// Parses a condition's `on`: "boundary", "initial", plane selectors "x=0" / "y=1" / "t=1" (the
  /// value must lie on a face, within 1e-6 of that axis's extent), tag names, several joined by
  /// '|'. Errors name `key` and list what is valid, e.g. "conditions[0].on: unknown boundary part
  /// 'x=2' (the faces are x=0, x=1, y=0, y=1; tags: inlet; ...)".
  Selector parse_selector(const std::string& on, const std::string& key) const;

  /// The measure of each selected part, in the order sample_boundary uses: spatial parts (times
  /// the duration in space-time), then the initial cap, then the terminal cap.
  std::vector<double> part_measures(const Selector& selector) const;
  /// Total measure of the selected parts.
  double measure(const Selector& selector) const;
  /// Names of the selected parts in the same order ("x=0", ..., "initial", "t=1").
  std::vector<std::string> part_names(const Selector& selector) const;

  /// n points on the selected parts, shared among them in proportion to their measure
  /// (split_counts), each part sampled with `kind`. "boundary" in a space-time problem is the
  /// spatial boundary times the time range; "initial" is the spatial shape times {t_start}.
  BoundarySample sample_boundary(const Selector& selector, std::int64_t n, SamplerKind kind,
                                 core::Rng& rng) const;

  /// For periodic conditions: the low and high faces along spatial axis `axis`. Throws (naming
  /// `key`) when the axis is unknown or time, or the shape is not a box.
  std::pair<Selector, Selector> periodic_faces(const std::string& axis,
                                               const std::string& key) const;
  /// n matched pairs for a periodic condition: points on the low face and the same points moved
  /// to the high face (same other coordinates and time). `faces` comes from periodic_faces.
  std::pair<BoundarySample, BoundarySample> sample_periodic(
      const std::pair<Selector, Selector>& faces, std::int64_t n, SamplerKind kind,
      core::Rng& rng) const;

  /// The name a plane selector for part `part` would use ("x=0"), or the part's label.
  std::string part_name(int part) const;

 private:
  void parse_into(const std::string& on, const std::string& key, Selector& out,
                  std::vector<std::string>& visiting) const;
  void parse_term(const std::string& term, const std::string& on, const std::string& key,
                  Selector& out, std::vector<std::string>& visiting) const;
  [[noreturn]] void fail_unknown(const std::string& term, const std::string& key) const;

  std::shared_ptr<const Shape> shape_;
  std::vector<std::string> spatial_names_;
  std::optional<std::array<double, 2>> time_range_;
  std::string time_name_;
  std::map<std::string, std::string> tags_;
};

/// Shares n points among parts in proportion to `measures` by largest remainder (ties go to the
/// earlier part); when n >= the number of parts with nonzero measure, each of them gets >= 1.
/// Deterministic; the counts sum to n (0 when every measure is 0).
std::vector<std::int64_t> split_counts(std::int64_t n, const std::vector<double>& measures);

/// "0.5", "1", "-2", "0.333333333333": how plane values are printed in names and messages.
std::string format_value(double value);

}  // namespace tessera::geometry
