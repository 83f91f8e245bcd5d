// The Adam stage: one optimizer per subdomain (gradient clipping and every statistic stay per
// network), the shared parameters' own, the divergence guard and the point redraws.
#include <cmath>
#include <sstream>

#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/adam_runner.hpp"
#include "tessera/train/fused_adam.hpp"
#include "tessera/train/released_gradients.hpp"

namespace tessera::train {
namespace {

/// Names of the terms whose sums are not finite in subdomain `s` (" poisson walls").
std::string nonfinite_terms(const LocalLoss& loss, int s) {
  std::ostringstream names;
  for (const auto& [name, per] : loss.sums)
    if (auto it = per.find(s); it != per.end() && !std::isfinite(it->second.item<double>()))
      names << " " << name;
  return names.str().empty() ? " (gradient only)" : names.str();
}

}  // namespace

void AdamRunner::run(const StagePlan& stage, int64_t first_step) {
  auto& objective = tools_.objective;
  objective.set_causal(true);
  optimizers_.clear();
  for (auto* s : objective.owned())
    optimizers_.push_back(
        std::make_unique<FusedAdam>(s->network->parameters(), torch::optim::AdamOptions(stage.lr)));
  // Shared parameters: the same summed gradient on every rank, so every copy takes the same step.
  const auto* shared = tools_.sync.parameters;
  const bool shared_optimizer = shared && !shared->empty();
  if (shared_optimizer)
    optimizers_.push_back(
        std::make_unique<FusedAdam>(shared->raw(), torch::optim::AdamOptions(stage.lr)));
  tools_.host.adopt(optimizer_pointers(), shared_optimizer);
  keep_good_states();
  for (int64_t k = first_step; k < stage.iterations && !tools_.host.stopping(); ++k) {
    const double lr = scheduled_lr(stage, k);
    LocalLoss loss;
    {
      core::ExclusiveTimer timer(tools_.times.compute_s, tools_.times.sync_s);
      loss = step(stage, k, lr);
    }
    tools_.host.count_adam_step();
    if (tools_.host.iterations_done(1, k + 1, loss, "adam", lr)) keep_good_states();
  }
}

LocalLoss AdamRunner::step(const StagePlan& stage, int64_t k, double lr) {
  auto& objective = tools_.objective;
  tools_.points.before_adam_step(k);
  std::vector<std::vector<torch::Tensor>> released;
  for (auto& optimizer : optimizers_) released.push_back(release_gradients(*optimizer));
  LocalLoss loss = objective.gradient_pass(objective.balancing_due(k));
  for (const auto& parameters : released) zero_missing_gradients(parameters);
  tools_.reduction.sum_gradients(objective.parameters());
  const auto may_step = guard_against_divergence(loss);
  const auto& owned = objective.owned();
  for (std::size_t i = 0; i < optimizers_.size(); ++i) {
    const bool network = i < owned.size();
    if (network && !may_step[i]) continue;
    // The shared parameters' summed gradient is the same on every rank: all skip alike.
    if (!network && !finite_gradients(tools_.sync.parameters->raw())) continue;
    if (stage.clip && network)
      torch::nn::utils::clip_grad_norm_(owned[i]->network->parameters(), *stage.clip);
    const double factor = network ? tools_.guard.lr_factor(i) : 1.0;
    for (auto& group : optimizers_[i]->param_groups()) group.options().set_lr(lr * factor);
    optimizers_[i]->step();
  }
  return loss;
}

void AdamRunner::keep_good_states() {
  const auto& owned = tools_.objective.owned();
  tools_.guard.resize(owned.size());
  for (std::size_t i = 0; i < owned.size(); ++i)
    tools_.guard.remember(i, owned[i]->network->parameters(), *optimizers_[i],
                          tools_.host.iteration());
}

std::vector<bool> AdamRunner::guard_against_divergence(LocalLoss& loss) {
  const auto& owned = tools_.objective.owned();
  const bool by_loss = tools_.reduction.loss_decides_divergence();
  std::vector<bool> may_step(owned.size(), true);
  for (std::size_t i = 0; i < owned.size(); ++i) {
    auto& model = *owned[i];
    const auto parameters = model.network->parameters();
    bool finite = finite_gradients(parameters);
    if (by_loss)
      for (const auto& [name, per] : loss.sums)
        if (auto it = per.find(model.id); it != per.end())
          finite = finite && std::isfinite(it->second.item<double>());
    if (finite) continue;
    may_step[i] = false;
    const std::string terms = nonfinite_terms(loss, model.id);
    loss.forget_subdomain(model.id);
    const std::string warning = tools_.guard.roll_back(i, model.id, tools_.host.iteration() + 1,
                                                       terms, parameters, *optimizers_[i]);
    if (tools_.warn) tools_.warn(warning);
  }
  return may_step;
}

}  // namespace tessera::train
