// The Adam stage: one optimizer per subdomain (gradient clipping and every statistic stay per
// network), the shared parameters' own, the divergence guard and the point redraws.
#include <cmath>
#include <sstream>

#include "tessera/core/host_reads.hpp"
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/adam_runner.hpp"
#include "tessera/train/fused_adam.hpp"
#include "tessera/train/gradient_clipping.hpp"
#include "tessera/train/released_gradients.hpp"

namespace tessera::train {
namespace {

/// Names of the terms whose sums are not finite in subdomain `s` (" poisson walls").
std::string nonfinite_terms(const LocalLoss& loss, int s) {
  std::ostringstream names;
  for (const auto& [name, per] : loss.sums)
    if (auto it = per.find(s); it != per.end() && !std::isfinite(core::read_double(it->second)))
      names << " " << name;
  return names.str().empty() ? " (gradient only)" : names.str();
}

/// Reads made so far, of both kinds.
std::pair<int64_t, int64_t> reads_so_far() {
  return {core::host_reads(core::HostRead::value), core::host_reads(core::HostRead::message)};
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
    // Reads are due where the log, the redraws, the balancing or the stage's end come.
    const bool settles = tools_.host.iterations_to_log() == 1 || k + 1 == stage.iterations;
    const bool quiet = !settles && !tools_.points.redraws_at(k) && !objective.balancing_due(k);
    const auto [values_before, messages_before] = reads_so_far();
    LocalLoss loss;
    {
      core::ExclusiveTimer timer(tools_.times.compute_s, tools_.times.sync_s);
      loss = step(stage, k, lr);
    }
    if (settles) settle_divergence(loss);
    tools_.host.count_adam_step();
    if (tools_.host.iterations_done(1, k + 1, loss, "adam", lr)) keep_good_states();
    if (quiet) {
      const auto [values, messages] = reads_so_far();
      auto& counts = tools_.times.quiet;
      ++counts.iterations;
      counts.values += values - values_before;
      counts.messages += messages - messages_before;
    }
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
  const auto& owned = objective.owned();
  const auto finite = finite_subdomains(loss);
  if (!owned.empty()) tools_.guard.watch(finite, tools_.host.iteration() + 1);
  for (std::size_t i = 0; i < optimizers_.size(); ++i) {
    const bool network = i < owned.size();
    if (stage.clip && network) clip_gradient_norm(owned[i]->network->parameters(), *stage.clip);
    const double factor = network ? tools_.guard.lr_factor(i) : 1.0;
    for (auto& group : optimizers_[i]->param_groups()) group.options().set_lr(lr * factor);
    // The shared parameters' summed gradient is the same on every rank: all skip alike.
    const auto may_step =
        network ? finite[static_cast<int64_t>(i)] : finite_gradients(tools_.sync.parameters->raw());
    static_cast<FusedAdam&>(*optimizers_[i]).step_where(may_step);
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

torch::Tensor AdamRunner::finite_subdomains(const LocalLoss& loss) const {
  const auto& owned = tools_.objective.owned();
  const bool by_loss = tools_.reduction.loss_decides_divergence();
  std::vector<torch::Tensor> flags;
  for (const auto* model : owned) {
    std::vector<torch::Tensor> checked;
    for (const auto& p : model->network->parameters()) checked.push_back(p.grad());
    if (by_loss)
      for (const auto& [name, per] : loss.sums)
        if (auto it = per.find(model->id); it != per.end()) checked.push_back(it->second);
    flags.push_back(finite_flag(checked));
  }
  if (flags.empty()) return torch::ones({0}, torch::kBool);
  return torch::stack(flags);
}

void AdamRunner::settle_divergence(LocalLoss& loss) {
  const auto& owned = tools_.objective.owned();
  if (owned.empty()) return;
  const auto first_failures = tools_.guard.take_failures();
  for (std::size_t i = 0; i < owned.size(); ++i) {
    if (first_failures[i] < 0) continue;
    auto& model = *owned[i];
    const std::string terms = nonfinite_terms(loss, model.id);
    loss.forget_subdomain(model.id);
    const std::string warning = tools_.guard.roll_back(
        i, model.id, first_failures[i], terms, model.network->parameters(), *optimizers_[i]);
    if (tools_.warn) tools_.warn(warning);
  }
}

}  // namespace tessera::train
