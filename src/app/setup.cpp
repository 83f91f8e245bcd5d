#include "tessera/app/setup.hpp"

#include <algorithm>
#include <set>

#include "tessera/app/memory_estimate.hpp"
#include "tessera/app/model.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::app {

io::Case load(const CommandLine& line) {
  return io::load_case(line.case_file, line.overrides, line.merges);
}

Setup prepare(io::Case input, int ranks, int local_rank) {
  Problem problem = build_problem(input, local_rank);
  check_memory_estimate(input, ranks, memory_limit_bytes(), problem.domain->shape().bounding_box());
  Decomposition decomposition = build_decomposition(input, problem, ranks);
  add_interface_terms(problem, input, decomposition);
  choose_planned_finish(input, problem, decomposition);
  train::TrainingPlan plan = training_plan(input, problem);
  plan_dense_hessians(input, problem, decomposition, plan);
  return Setup{std::move(input), std::move(problem), std::move(decomposition), std::move(plan)};
}

ModelSummary check_models(const Setup& setup) {
  const auto& p = setup.problem;
  const auto model = build_subdomain(setup.input, p, setup.decomposition, 0);
  ModelSummary summary;
  std::set<expr::DerivativeKey> keys;
  for (const auto& g : model->groups) {
    auto needed = g->derivatives();
    keys.insert(needed.begin(), needed.end());
    for (const auto& name : g->term_names()) summary.points[name] = g->point_count();
    summary.largest_set = std::max(summary.largest_set, g->point_count());
  }
  for (const auto& side : model->interfaces) {
    auto needed = side->derivatives();
    keys.insert(needed.begin(), needed.end());
    for (const auto& name : physics::interface_term_names(setup.decomposition.weights))
      summary.points[name] += side->point_count();
    summary.largest_set = std::max(summary.largest_set, side->point_count());
  }
  for (const auto& key : keys) summary.derivatives.push_back(expr::derivative_name(key, p.symbols));
  for (const auto& t : model->network->parameters()) summary.parameters += t.numel();
  return summary;
}

}  // namespace tessera::app
