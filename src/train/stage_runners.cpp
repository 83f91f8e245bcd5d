// Which runner trains a stage: one entry per optimizer the case format names.
#include <algorithm>
#include <iterator>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/adam_runner.hpp"
#include "tessera/train/quasi_newton_runners.hpp"

namespace tessera::train {
namespace {

/// Whether any subdomain of the job has an interface across space and across time. Collective:
/// every rank asks both, in this order.
std::pair<bool, bool> coupling(const StageTools& tools) {
  const auto any = [&](bool in_time) {
    bool found = false;
    for (auto* s : tools.objective.owned())
      for (const auto& side : s->interfaces) found = found || side->across_time() == in_time;
    return tools.reduction.comm().any(found);
  };
  const bool in_space = any(false);
  const bool in_time = any(true);
  return {in_space, in_time};
}

std::unique_ptr<StageRunner> adam(const StagePlan&, const StageTools& tools) {
  return std::make_unique<AdamRunner>(tools);
}

/// The quasi-Newton methods: one problem over the subdomains cut in space; per subdomain where
/// a cut runs in time (time slabs train in order, each against its fixed past) or where there
/// is no interface. `limited`: on the last `history` curvature pairs instead of a dense matrix
/// (L-BFGS).
template <QuasiNewtonUpdate update, bool limited>
std::unique_ptr<StageRunner> quasi_newton(const StagePlan& stage, const StageTools& tools) {
  const auto [in_space, in_time] = coupling(tools);
  const int64_t memory = limited ? stage.history : 0;
  // A self-scaled history takes the SSBroyden rule's scaling (with the BFGS member).
  const auto rule = limited && (stage.self_scaled || stage.broyden_updates)
                        ? QuasiNewtonUpdate::ssbroyden
                        : update;
  if (in_space && !in_time) return std::make_unique<JointQuasiNewtonRunner>(tools, rule, memory);
  QuasiNewtonMethod method;
  method.make = [memory, rule](const StagePlan& stage, std::vector<torch::Tensor> parameters) {
    return std::make_unique<QuasiNewton>(std::move(parameters),
                                         QuasiNewtonOptions(rule)
                                             .lr(stage.lr)
                                             .tolerance_grad(stage.tolerance)
                                             .memory(memory)
                                             .whole_updates(stage.broyden_updates));
  };
  method.limit = [](torch::optim::Optimizer& optimizer, int64_t chunk) {
    static_cast<QuasiNewtonOptions&>(optimizer.param_groups()[0].options()).max_iter(chunk);
  };
  return std::make_unique<SubdomainQuasiNewtonRunner>(tools, method, in_space || in_time);
}

struct RunnerEntry {
  const char* optimizer;  ///< as the case format spells it
  std::unique_ptr<StageRunner> (*make)(const StagePlan&, const StageTools&);
};

const RunnerEntry runners[] = {
    {"adam", adam},
    {"lbfgs", quasi_newton<QuasiNewtonUpdate::bfgs, true>},
    {"bfgs", quasi_newton<QuasiNewtonUpdate::bfgs, false>},
    {"ssbroyden", quasi_newton<QuasiNewtonUpdate::ssbroyden, false>},
};

const RunnerEntry* find_runner(const std::string& optimizer) {
  const auto* it = std::find_if(std::begin(runners), std::end(runners),
                                [&](const RunnerEntry& e) { return optimizer == e.optimizer; });
  return it == std::end(runners) ? nullptr : it;
}

}  // namespace

std::vector<torch::optim::Optimizer*> StageRunner::optimizer_pointers() const {
  std::vector<torch::optim::Optimizer*> pointers;
  for (const auto& optimizer : optimizers_) pointers.push_back(optimizer.get());
  return pointers;
}

bool has_runner(const std::string& optimizer) { return find_runner(optimizer) != nullptr; }

std::unique_ptr<StageRunner> make_runner(const StagePlan& stage, const StageTools& tools) {
  const auto* entry = find_runner(stage.optimizer);
  TESSERA_ASSERT(entry, "no stage runner for optimizer '" << stage.optimizer << "'");
  return entry->make(stage, tools);
}

}  // namespace tessera::train
