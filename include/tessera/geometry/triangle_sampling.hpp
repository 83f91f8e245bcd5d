#pragma once
/// Uniform sampling of a union of triangles (in 2-D or 3-D) by area, from unit samples: the
/// interior of a triangulated polygon, the faces of a triangle surface. The first unit column
/// picks the triangle (inverse of the cumulative area) and, rescaled within that triangle's
/// interval, is reused with the second column for the position, so stratified samplers (lhs,
/// sobol) stay well spread over the whole set.
#include <torch/types.h>

namespace tessera::geometry {

class TriangleSampler {
 public:
  /// corners: float64 [m, 3, dims] (the triangles' vertices), m >= 1; degenerate triangles get
  /// no points.
  explicit TriangleSampler(torch::Tensor corners);

  /// Total area.
  double area() const { return area_; }
  int dims() const { return static_cast<int>(corners_.size(2)); }

  /// unit: float64 [n, >= 2] in [0, 1). Returns {points [n, dims], triangle index int64 [n]}.
  std::pair<torch::Tensor, torch::Tensor> map(const torch::Tensor& unit) const;

 private:
  torch::Tensor corners_;     ///< [m, 3, dims]
  torch::Tensor cumulative_;  ///< [m] cumulative area fraction, last == 1
  double area_ = 0.0;
};

}  // namespace tessera::geometry
