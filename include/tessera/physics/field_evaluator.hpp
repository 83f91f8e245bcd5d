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
#include "tessera/nn/mlp.hpp"
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
  /// The exactly enforced conditions (null: none).
  const ExactConditions* exact() const { return exact_.get(); }
  /// The fields' values [n, outputs] at x (exact conditions applied), without a graph.
  torch::Tensor values(const torch::Tensor& x, int outputs) const;

  /// The network is a plain MLP on the forward engine: its fields may be evaluated together with
  /// other subdomains' (evaluate_together). Null: always on its own.
  void set_groupable(nn::Mlp network) { groupable_ = std::move(network); }
  const nn::Mlp& groupable() const { return groupable_; }
  /// The network partials that `keys` need (exact conditions read the network's own).
  std::set<autodiff::Partial> network_partials(const std::set<expr::DerivativeKey>& keys) const;
  /// The environment at x from the network partials computed for `keys`.
  expr::Environment environment(const torch::Tensor& x, const std::set<expr::DerivativeKey>& keys,
                                autodiff::Partials network_partials,
                                std::map<std::string, torch::Tensor> extra) const;

 private:
  autodiff::NetworkFunction network_;
  DerivativeEngine engine_;
  std::shared_ptr<const SharedParameters> parameters_;
  std::shared_ptr<const ExactConditions> exact_;  ///< null: every field is the network's output
  nn::Mlp groupable_{nullptr};
};

/// One evaluation asked of a subdomain's fields: as FieldEvaluator::evaluate(x, keys, ...).
struct FieldRequest {
  const FieldEvaluator* fields = nullptr;
  torch::Tensor x;
  std::set<expr::DerivativeKey> keys;
  std::map<std::string, torch::Tensor> extra;
};

/// Every request's environment, as each evaluator's evaluate() would give it. Requests whose
/// networks can be grouped (same plain MLP architecture, forward engine, CPU) and that need one
/// stream layout go through one grouped network call, a subdomain's requests together as one
/// group; the others are evaluated one by one. Whether a request is grouped, and with which of
/// its own subdomain's requests, does not depend on the other subdomains in the list, so a
/// subdomain's results are the same bits alone on a rank or beside others.
std::vector<expr::Environment> evaluate_together(const std::vector<FieldRequest>& requests,
                                                 bool create_graph);

}  // namespace tessera::physics
