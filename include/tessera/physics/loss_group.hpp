#pragma once
/// A loss group: a set of points and the named loss terms computed on them (the equations on
/// the collocation points, one condition on its boundary part, ...). Groups own and resample
/// their points; the trainer weights and sums their terms.
#include <torch/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tessera/physics/field_evaluator.hpp"

namespace tessera::physics {

/// One loss term on this rank: the mean of the squared residual over `count` points.
/// Global figures are formed from (mean * count, count) sums, never averages of averages.
struct TermValue {
  std::string name;
  torch::Tensor mean_square;  ///< 0-d, differentiable when evaluated for training
  int64_t count = 0;
};

/// Where and how points are placed: dtype/device of the network inputs.
struct PointOptions {
  torch::Dtype dtype = torch::kFloat32;
  torch::Device device = torch::kCPU;
};

class LossGroup {
 public:
  virtual ~LossGroup() = default;
  /// Draws new points (advancing the group's own random stream).
  virtual void resample() = 0;
  /// The terms on the current points; `create_graph` for training losses.
  virtual std::vector<TermValue> evaluate(const FieldEvaluator& fields, bool create_graph) const = 0;
  /// Names of the terms evaluate() returns, in order.
  virtual std::vector<std::string> term_names() const = 0;
  /// Points per resample (for `tessera check`).
  virtual int64_t point_count() const = 0;
  /// Every field derivative the terms read (for `tessera check`).
  virtual std::set<expr::DerivativeKey> derivatives() const = 0;
};

/// mean(r^2) over the rows of r ([n] or [n, k]); 0 for no points.
torch::Tensor mean_square(const torch::Tensor& residual);

}  // namespace tessera::physics
