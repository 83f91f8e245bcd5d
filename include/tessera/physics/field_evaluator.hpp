#pragma once
/// Turns a network into the values expressions read: field derivatives at points, the
/// trainable parameters, and per-point extras such as boundary normals.
#include <torch/types.h>

#include <map>
#include <set>
#include <string>

#include "tessera/autodiff/partial.hpp"
#include "tessera/expr/environment.hpp"

namespace tessera::physics {

/// Which derivative engine computes the partials.
using DerivativeEngine = std::function<autodiff::Partials(
    const autodiff::NetworkFunction&, const torch::Tensor&, const std::set<autodiff::Partial>&,
    bool)>;

class FieldEvaluator {
 public:
  FieldEvaluator(autodiff::NetworkFunction network, DerivativeEngine engine,
                 std::map<std::string, torch::Tensor> parameters)
      : network_(std::move(network)), engine_(std::move(engine)), parameters_(std::move(parameters)) {}

  /// The environment at points x [n, inputs] (dtype/device of the network) holding every
  /// derivative in `keys`; `create_graph` keeps them differentiable for a training loss.
  expr::Environment evaluate(const torch::Tensor& x, const std::set<expr::DerivativeKey>& keys,
                             bool create_graph,
                             std::map<std::string, torch::Tensor> extra = {}) const;

  const autodiff::NetworkFunction& network() const { return network_; }
  const std::map<std::string, torch::Tensor>& parameters() const { return parameters_; }

 private:
  autodiff::NetworkFunction network_;
  DerivativeEngine engine_;
  std::map<std::string, torch::Tensor> parameters_;
};

}  // namespace tessera::physics
