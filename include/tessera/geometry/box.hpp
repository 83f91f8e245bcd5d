#pragma once
/// Axis-aligned boxes: the bounding boxes of every shape, and the one shape implemented so far.
#include <string>
#include <vector>

namespace tessera::geometry {

/// The box [lo[0], hi[0]] x ... x [lo[d-1], hi[d-1]]. A plain value; see validate_box().
struct Box {
  std::vector<double> lo, hi;

  int dims() const { return static_cast<int>(lo.size()); }
  /// Product of the extents (length, area or volume); 1 for a zero-dimensional box.
  double measure() const;
  double extent(int axis) const { return hi[axis] - lo[axis]; }
  std::vector<double> center() const;
};

/// Throws unless lo and hi have the same size (1 to 8 when `spatial`) and lo < hi, all finite.
/// `key` names the case-file key in the message.
void validate_box(const Box& box, const std::string& key, bool spatial = true);

}  // namespace tessera::geometry
