#pragma once
/// Turns a network into the values expressions read: field derivatives at points, the
/// trainable parameters, and per-point extras such as boundary normals.
#include <torch/types.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "tessera/autodiff/partial.hpp"
#include "tessera/expr/environment.hpp"
#include "tessera/physics/exact_conditions.hpp"
#include "tessera/physics/shared_parameters.hpp"

namespace tessera::physics {

/// Which derivative engine computes the partials.
using DerivativeEngine =
    std::function<autodiff::Partials(const autodiff::NetworkFunction&, const torch::Tensor&,
                                     const std::set<autodiff::Partial>&, bool)>;

class FieldEvaluator {
 public:
  /// `parameters`: the shared trainable parameters the expressions read (null: none).
  FieldEvaluator(autodiff::NetworkFunction network, DerivativeEngine engine,
                 std::shared_ptr<const SharedParameters> parameters = nullptr)
      : network_(std::move(network)),
        engine_(std::move(engine)),
        parameters_(std::move(parameters)) {}

  /// The environment at points x [n, inputs] (dtype/device of the network) holding every
  /// derivative in `keys`; `create_graph` keeps them differentiable for a training loss.
  expr::Environment evaluate(const torch::Tensor& x, const std::set<expr::DerivativeKey>& keys,
                             bool create_graph,
                             std::map<std::string, torch::Tensor> extra = {}) const;

  const autodiff::NetworkFunction& network() const { return network_; }

  /// Fields with exactly enforced conditions: evaluate() returns u = g + phi N for them.
  void set_exact(std::shared_ptr<const ExactConditions> exact) { exact_ = std::move(exact); }
  /// The fields' values [n, outputs] at x (exact conditions applied), without a graph.
  torch::Tensor values(const torch::Tensor& x, int outputs) const;

 private:
  autodiff::NetworkFunction network_;
  DerivativeEngine engine_;
  std::shared_ptr<const SharedParameters> parameters_;
  std::shared_ptr<const ExactConditions> exact_;  ///< null: every field is the network's output
};

}  // namespace tessera::physics
