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

/// One exactly enforced condition on a field.
struct ExactPiece {
  /// d(x) [n] from points [n, inputs]: 0 where the condition holds, > 0 elsewhere in the domain.
  std::function<torch::Tensor(const torch::Tensor&)> distance;
  expr::Expression value;  ///< g_i, an expression of the coordinates and constants
};

struct ExactField {
  int field = 0;
  std::vector<ExactPiece> pieces;
};

class ExactConditions {
 public:
  explicit ExactConditions(std::vector<ExactField> fields) : fields_(std::move(fields)) {}

  bool empty() const { return fields_.empty(); }
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
