// The objective's set-up, its stage settings and the passes the stage runners ask for.
#include "tessera/train/objective.hpp"

#include "tessera/core/torch_pch.hpp"
#include "tessera/nn/mlp.hpp"
#include "tessera/physics/equation_group.hpp"

namespace tessera::train {
namespace {

/// Every equation group of the owned subdomains.
std::vector<physics::EquationGroup*> equation_groups(const std::vector<SubdomainModel*>& owned) {
  std::vector<physics::EquationGroup*> groups;
  for (auto* s : owned)
    for (auto& group : s->groups)
      if (auto* equations = dynamic_cast<physics::EquationGroup*>(group.get()))
        groups.push_back(equations);
  return groups;
}

/// Drops gradients of another dtype: backward would accumulate into them, rounding every
/// gradient of the new dtype to the old one.
void drop_stale_gradients(const std::vector<torch::Tensor>& parameters, torch::Dtype dtype) {
  for (auto p : parameters)
    if (p.grad().defined() && p.grad().scalar_type() != dtype) p.mutable_grad() = torch::Tensor();
}

}  // namespace

Objective::Objective(std::vector<SubdomainModel*> owned, std::vector<std::string> term_names,
                     const std::map<std::string, double>& weights, AdaptiveWeighting balancing,
                     parallel::InterfaceExchange* exchange, Reduction& reduction,
                     int64_t batch_points, const physics::SharedParameters* shared,
                     const int64_t& iteration)
    : owned_(std::move(owned)),
      term_names_(std::move(term_names)),
      balancer_(balancing, term_names_),
      coupling_(exchange),
      reduction_(reduction),
      batch_points_(batch_points),
      shared_(shared),
      iteration_(iteration) {
  for (const auto& name : term_names_) {
    auto it = weights.find(name);
    weights_[name] = it == weights.end() ? 1.0 : it->second;
  }
  // Causal weights of a replica's slice alone would differ from replica to replica.
  for (auto* equations : equation_groups(owned_)) equations->set_chunk_sum(reduction_.chunk_sum());
}

Objective::~Objective() {
  // The groups outlive the reduction strategy that the sums call.
  for (auto* equations : equation_groups(owned_)) equations->set_chunk_sum({});
}

std::vector<torch::Tensor> Objective::parameters() const {
  std::vector<torch::Tensor> params;
  for (auto* s : owned_)
    for (auto& p : s->network->parameters()) params.push_back(p);
  return params;
}

void Objective::restore_weights(const std::map<std::string, double>& weights) {
  for (const auto& [name, w] : weights)
    if (weights_.count(name)) weights_[name] = w;
}

void Objective::set_precision(const StagePlan& stage) {
  const torch::Dtype dtype = stage.dtype;
  nn::set_tf32_products(stage.products == Products::tf32);
  torch::NoGradGuard no_grad;
  for (auto* s : owned_) {
    s->network->set_bf16_products(stage.products == Products::bf16);
    s->network->to(dtype);
    drop_stale_gradients(s->network->parameters(), dtype);
    for (auto& group : s->groups) group->set_dtype(dtype);
    for (auto& side : s->interfaces) side->set_dtype(dtype);
  }
  if (shared_) {
    shared_->set_dtype(dtype);
    drop_stale_gradients(shared_->raw(), dtype);
  }
}

void Objective::set_causal(bool active) {
  for (auto* equations : equation_groups(owned_)) equations->set_causal(active);
}

LocalLoss Objective::gradient_pass(bool balance) {
  // Balancing needs every term's graph; otherwise the interior terms are backpropagated while
  // the neighbours' messages travel.
  term_gradients_.measuring = balance;
  LocalLoss loss = exchange_and_loss({/*create_graph=*/true, /*backward_interior=*/!balance,
                                      /*stop_on_nonfinite=*/false, /*values=*/nullptr});
  term_gradients_.measuring = false;
  if (balance) update_weights(loss);
  backpropagate_rest(loss);
  return loss;
}

LocalLoss Objective::checked_gradient_pass(SubdomainValues& values) {
  LocalLoss loss = exchange_and_loss({/*create_graph=*/true, /*backward_interior=*/true,
                                      /*stop_on_nonfinite=*/true, &values});
  backpropagate_rest(loss);
  return loss;
}

LocalLoss Objective::figures() {
  // Derivatives need autograd even here; create_graph=false keeps no second-order graph.
  return exchange_and_loss({/*create_graph=*/false, /*backward_interior=*/false,
                            /*stop_on_nonfinite=*/true, /*values=*/nullptr});
}

void Objective::freeze_neighbours() {
  coupling_.start(owned_, /*create_graph=*/false);
  coupling_.finish(owned_);
}

void Objective::update_weights(const LocalLoss& loss) {
  auto gradients = balancer_.term_gradients(loss.probes, parameters());
  // Parts already backpropagated left their probe gradients behind.
  for (std::size_t t = 0; t < term_gradients_.sums.size(); ++t)
    gradients[t] += term_gradients_.sums[t];
  term_gradients_.sums.clear();
  balancer_.rebalance(std::move(gradients), owned_, reduction_, weights_);
}

}  // namespace tessera::train
