#include "tessera/train/trainer.hpp"

#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/equation_group.hpp"

namespace tessera::train {

Trainer::Trainer(parallel::Communicator comm, std::vector<SubdomainModel*> owned, int subdomains,
                 std::vector<std::string> term_names, TrainingPlan plan,
                 TrainerCallbacks callbacks, parallel::InterfaceExchange* exchange)
    : comm_(comm),
      owned_(std::move(owned)),
      subdomains_(subdomains),
      term_names_(std::move(term_names)),
      plan_(std::move(plan)),
      callbacks_(std::move(callbacks)),
      exchange_(exchange) {
  for (const auto& name : term_names_) {
    auto it = plan_.weights.find(name);
    weights_[name] = it == plan_.weights.end() ? 1.0 : it->second;
  }
  for (const auto& stage : plan_.stages) total_iterations_ += stage.iterations;
  TESSERA_CHECK(plan_.log_every > 0, "training.log_every must be positive");
}

double Trainer::wall_seconds() const { return core::now_seconds() - start_time_; }

void Trainer::apply_stage_points(const StagePlan& stage) {
  if (!stage.points) return;
  // Only the collocation (equation) groups follow a stage's point count.
  for (auto* s : owned_)
    for (auto& group : s->groups)
      if (auto* equations = dynamic_cast<physics::EquationGroup*>(group.get())) {
        equations->set_point_count(*stage.points);
        group->resample();
      }
}

bool Trainer::time_is_up() {
  if (!plan_.time_limit) return false;
  // Every rank must stop at the same iteration, or the next collective would hang.
  return comm_.any(wall_seconds() > *plan_.time_limit);
}

void Trainer::run() {
  start_time_ = core::now_seconds();
  for (const auto& stage : plan_.stages) {
    if (stop_) break;
    apply_stage_points(stage);
    if (stage.optimizer == OptimizerKind::adam)
      run_adam(stage);
    else
      run_lbfgs(stage);
  }
  // Derivatives need autograd even here; create_graph=false keeps no second-order graph.
  const LocalLoss final_loss = exchange_and_loss(/*create_graph=*/false);
  log(final_loss, plan_.stages.empty() ? "none" : optimizer_name(plan_.stages.back().optimizer),
      0.0, /*final=*/true);
}

namespace {

void resample_all(const std::vector<SubdomainModel*>& owned) {
  for (auto* s : owned)
    for (auto& group : s->groups) group->resample();
}

}  // namespace

void Trainer::run_adam(const StagePlan& stage) {
  // One optimizer per subdomain: gradient clipping and every statistic stay per network.
  std::vector<std::unique_ptr<torch::optim::Adam>> optimizers;
  for (auto* s : owned_)
    optimizers.push_back(std::make_unique<torch::optim::Adam>(
        s->network->parameters(), torch::optim::AdamOptions(stage.lr)));
  for (int64_t k = 0; k < stage.iterations && !stop_; ++k) {
    const double lr = scheduled_lr(stage, k);
    LocalLoss loss;
    {
      core::ScopedTimer timer(compute_s_);
      if (plan_.resample_every > 0 && k > 0 && k % plan_.resample_every == 0) resample_all(owned_);
      loss = exchange_and_loss(/*create_graph=*/true);
      if (plan_.adaptive.enabled && k % plan_.adaptive.every == 0) update_adaptive_weights(loss);
      for (auto& optimizer : optimizers) optimizer->zero_grad();
      if (loss.total.defined()) loss.total.backward();
      for (std::size_t i = 0; i < owned_.size(); ++i) {
        if (stage.clip) torch::nn::utils::clip_grad_norm_(owned_[i]->network->parameters(), *stage.clip);
        for (auto& group : optimizers[i]->param_groups()) group.options().set_lr(lr);
        optimizers[i]->step();
      }
    }
    ++iteration_;
    if (iteration_ % plan_.log_every == 0) {
      log(loss, "adam", lr, false);
      stop_ = time_is_up();
    }
  }
}

void Trainer::run_lbfgs(const StagePlan& stage) {
  std::vector<std::unique_ptr<torch::optim::LBFGS>> optimizers;
  for (auto* s : owned_)
    optimizers.push_back(std::make_unique<torch::optim::LBFGS>(
        s->network->parameters(), torch::optim::LBFGSOptions(stage.lr)
                                      .history_size(stage.history)
                                      .tolerance_grad(stage.tolerance)
                                      .tolerance_change(1e-12)
                                      .line_search_fn("strong_wolfe")));
  int64_t done = 0;
  while (done < stage.iterations && !stop_) {
    // L-BFGS runs in chunks that end on log iterations; its history carries over between them.
    // Neighbour data is exchanged at the start of a chunk and frozen during it.
    const int64_t to_log = plan_.log_every - iteration_ % plan_.log_every;
    const int64_t chunk = std::min(stage.iterations - done, to_log);
    LocalLoss loss;
    {
      core::ScopedTimer timer(compute_s_);
      start_exchange(/*create_graph=*/false);
      finish_exchange();
      for (std::size_t i = 0; i < owned_.size(); ++i) {
        auto& optimizer = *optimizers[i];
        static_cast<torch::optim::LBFGSOptions&>(optimizer.param_groups()[0].options())
            .max_iter(chunk)
            .max_eval(chunk * 5 / 4 + 1);
        LocalLoss last;
        auto closure = [&] {
          optimizer.zero_grad();
          last = subdomain_loss(*owned_[i], /*create_graph=*/true, nullptr);
          last.total.backward();
          return last.total;
        };
        optimizer.step(closure);
        loss.merge(std::move(last));
      }
    }
    done += chunk;
    iteration_ += chunk;
    if (iteration_ % plan_.log_every == 0) {
      log(loss, "lbfgs", stage.lr, false);
      stop_ = time_is_up();
    }
  }
}

void Trainer::update_adaptive_weights(const LocalLoss& loss) {
  // Gradient statistics of each term with respect to this rank's network parameters, reduced
  // over all ranks: max|grad L_eq| (max) and mean|grad L_i| (sum and count).
  std::vector<torch::Tensor> params;
  for (auto* s : owned_)
    for (auto& p : s->network->parameters()) params.push_back(p);
  auto gradient_of = [&](const torch::Tensor& value) {
    std::vector<torch::Tensor> grads;
    if (!value.defined() || params.empty() || !value.requires_grad()) return grads;
    for (auto& g : torch::autograd::grad({value}, params, {}, /*retain_graph=*/true,
                                         /*create_graph=*/false, /*allow_unused=*/true))
      if (g.defined()) grads.push_back(g.abs().flatten());
    return grads;
  };
  torch::Tensor equations;
  for (const auto& name : plan_.equation_terms)
    if (auto it = loss.terms.find(name); it != loss.terms.end())
      equations = equations.defined() ? equations + it->second : it->second;
  std::vector<double> max_equation{0.0};
  for (auto& g : gradient_of(equations))
    max_equation[0] = std::max(max_equation[0], g.max().item<double>());
  std::vector<std::string> others;
  std::vector<double> sums;
  for (const auto& name : term_names_) {
    if (std::count(plan_.equation_terms.begin(), plan_.equation_terms.end(), name)) continue;
    others.push_back(name);
    double sum = 0, count = 0;
    if (auto it = loss.terms.find(name); it != loss.terms.end())
      for (auto& g : gradient_of(it->second)) {
        sum += g.sum().item<double>();
        count += static_cast<double>(g.numel());
      }
    sums.push_back(sum);
    sums.push_back(count);
  }
  {
    core::ScopedTimer timer(sync_s_);
    comm_.max_in_place(max_equation);
    comm_.sum_in_place(sums);
  }
  for (std::size_t i = 0; i < others.size(); ++i) {
    const double mean = sums[2 * i + 1] > 0 ? sums[2 * i] / sums[2 * i + 1] : 0.0;
    if (mean <= 0 || max_equation[0] <= 0) continue;
    double& w = weights_.at(others[i]);
    w = (1 - plan_.adaptive.alpha) * w + plan_.adaptive.alpha * max_equation[0] / mean;
  }
}

}  // namespace tessera::train
