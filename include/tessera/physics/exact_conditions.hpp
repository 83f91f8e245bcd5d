#pragma once
/// Conditions enforced exactly instead of through a loss term (Sukumar & Srivastava 2022): a
/// field with exact conditions is u = g + phi N, N the network's output, phi >= 0 a function
/// that vanishes exactly where the conditions hold (the product of each condition's distance),
/// and g an extension of their values into the domain. With several conditions on one field,
/// g = sum_i w_i g_i with w_i = prod_{j != i} d_j / sum_k prod_{j != k} d_k (transfinite
/// interpolation): w_i = 1 where d_i = 0. phi and g do not depend on the network, so their
/// derivatives come from autograd on the coordinates and u's from Leibniz's rule.
#include <functional>
#include <set>
#include <vector>

#include "tessera/autodiff/partial.hpp"
#include "tessera/expr/expression.hpp"

namespace tessera::physics {

/// sign (x[input] - origin) / length: one linear factor of a distance.
struct LinearFactor {
  int input = 0;
  double origin = 0.0;
  double sign = 1.0;
  double length = 1.0;
};

/// One exactly enforced condition on a field.
struct ExactPiece {
  /// d(x) the product of `factors`: 0 where the condition holds, > 0 elsewhere in the domain.
  std::vector<LinearFactor> factors;
  expr::Expression value;  ///< g_i, an expression of the coordinates and constants
  /// d at points [n, inputs]: [n].
  torch::Tensor distance(const torch::Tensor& x) const;
};

struct ExactField {
  int field = 0;
  std::vector<ExactPiece> pieces;
};

class ExactConditions {
 public:
  explicit ExactConditions(std::vector<ExactField> fields) : fields_(std::move(fields)) {}

  bool empty() const { return fields_.empty(); }
  const std::vector<ExactField>& fields() const { return fields_; }
  /// The network partials from which `requested` (partials of the constrained fields) follow.
  std::set<autodiff::Partial> network_partials(const std::set<autodiff::Partial>& requested) const;
  /// `requested` partials of the fields u, from the network's partials (which must include
  /// network_partials(requested)) at points x.
  autodiff::Partials apply(const torch::Tensor& x, const std::set<autodiff::Partial>& requested,
                           const autodiff::Partials& network) const;

 private:
  const ExactField* constrained(int field) const;
  std::vector<ExactField> fields_;
};

}  // namespace tessera::physics
