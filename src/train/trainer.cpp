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
  // Ranks finish their set-up at different times (rank 0 also prints and opens files); start
  // together so that skew is not booked as the first exchange's wait.
  comm_.barrier();
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
      for (auto& optimizer : optimizers) optimizer->zero_grad();
      const bool adapt = plan_.adaptive.enabled && k % plan_.adaptive.every == 0;
      // Adaptive weighting needs every term's graph; otherwise the interior terms are
      // backpropagated while the neighbours' messages travel.
      loss = exchange_and_loss(/*create_graph=*/true, /*backward_interior=*/!adapt);
      if (adapt) update_adaptive_weights(loss);
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
          last = subdomain_loss(*owned_[i], /*create_graph=*/true);
          check_finite(last, *owned_[i]);
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
  // Gradient-norm balancing (Wang et al., "An expert's guide to training PINNs", 2023):
  // lambda_hat_i = sum_j |grad L_j| / |grad L_i| over all terms, L2 norms over every network's
  // parameters (squares summed over ranks), then lambda_i <- alpha lambda_i + (1 - alpha)
  // lambda_hat_i. Each weighted term then pulls with the same gradient norm.
  std::vector<torch::Tensor> params;
  for (auto* s : owned_)
    for (auto& p : s->network->parameters()) params.push_back(p);
  std::vector<double> squares(term_names_.size(), 0.0);
  for (std::size_t i = 0; i < term_names_.size(); ++i) {
    auto it = loss.terms.find(term_names_[i]);
    if (it == loss.terms.end() || params.empty() || !it->second.requires_grad()) continue;
    for (auto& g : torch::autograd::grad({it->second}, params, {}, /*retain_graph=*/true,
                                         /*create_graph=*/false, /*allow_unused=*/true))
      if (g.defined()) squares[i] += g.pow(2).sum().item<double>();
  }
  {
    core::ScopedTimer timer(sync_s_);
    comm_.sum_in_place(squares);
  }
  double total = 0;
  for (double s : squares) total += std::sqrt(s);
  for (std::size_t i = 0; i < term_names_.size(); ++i) {
    const double norm = std::sqrt(squares[i]);
    if (norm <= 0 || !std::isfinite(total / norm)) continue;  // a term with no gradient keeps its weight
    double& w = weights_.at(term_names_[i]);
    w = plan_.adaptive.alpha * w + (1 - plan_.adaptive.alpha) * total / norm;
  }
}

}  // namespace tessera::train
