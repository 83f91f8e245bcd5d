// Quasi-Newton stages run per subdomain, in chunks between neighbour exchanges.
#include <algorithm>

#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/quasi_newton_runners.hpp"

namespace tessera::train {
namespace {

// Iterations between two neighbour exchanges of coupled subdomains: frozen interface values
// for longer let each side converge to the other's stale ones.
constexpr int64_t exchange_every = 10;

}  // namespace

void SubdomainQuasiNewtonRunner::run(const StagePlan& stage, int64_t first_step) {
  auto& objective = tools_.objective;
  objective.set_causal(false);
  optimizers_.clear();
  // Shared parameters, if any, ride in the subdomain's optimizer when the job trains one
  // subdomain; otherwise they hold still.
  const auto* shared = tools_.sync.parameters;
  const bool with_shared = tools_.sync.parameters_in_quasi_newton && shared;
  std::vector<std::vector<torch::Tensor>> trained;  // per owned subdomain
  for (auto* s : objective.owned()) {
    trained.push_back(s->network->parameters());
    if (with_shared)
      for (const auto& p : shared->raw()) trained.back().push_back(p);
  }
  for (const auto& tensors : trained) optimizers_.push_back(method_.make(stage, tensors));
  tools_.host.adopt(optimizer_pointers(), /*shared_last=*/false);
  int64_t done = first_step;
  while (done < stage.iterations && !tools_.host.stopping()) {
    const int64_t to_log = tools_.host.iterations_to_log();
    const int64_t to_exchange = exchange_every - tools_.host.iteration() % exchange_every;
    const int64_t length =
        std::min({stage.iterations - done, to_log, exchanges_ ? to_exchange : to_log});
    LocalLoss loss;
    {
      core::ExclusiveTimer timer(tools_.times.compute_s, tools_.times.sync_s);
      loss = chunk(length, trained);
    }
    if (with_shared && !shared->empty()) tools_.reduction.share_parameters(*shared);
    done += length;
    tools_.host.iterations_done(length, done, loss, stage.optimizer, stage.lr);
  }
}

LocalLoss SubdomainQuasiNewtonRunner::chunk(
    int64_t length, const std::vector<std::vector<torch::Tensor>>& trained) {
  auto& objective = tools_.objective;
  objective.freeze_neighbours();
  LocalLoss loss;
  for (std::size_t i = 0; i < objective.owned().size(); ++i) {
    auto& optimizer = *optimizers_[i];
    method_.limit(optimizer, length);
    LocalLoss last;
    auto closure = [&] {
      optimizer.zero_grad();
      last = objective.subdomain_pass(i);
      return tools_.reduction.closure_value(last.total, trained[i]);
    };
    optimizer.step(closure);
    loss.merge(std::move(last));
  }
  return loss;
}

}  // namespace tessera::train
