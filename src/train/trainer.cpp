#include "tessera/train/trainer.hpp"

#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/equation_group.hpp"

namespace tessera::train {

Trainer::Trainer(parallel::Communicator comm, std::vector<SubdomainModel*> owned,
                 std::vector<std::string> term_names, TrainingPlan plan,
                 TrainerCallbacks callbacks)
    : comm_(comm),
      owned_(std::move(owned)),
      term_names_(std::move(term_names)),
      plan_(std::move(plan)),
      callbacks_(std::move(callbacks)) {
  for (const auto& name : term_names_) {
    auto it = plan_.weights.find(name);
    weights_[name] = it == plan_.weights.end() ? 1.0 : it->second;
  }
  for (const auto& stage : plan_.stages) total_iterations_ += stage.iterations;
}

double Trainer::wall_seconds() const { return core::now_seconds() - start_time_; }

std::vector<torch::Tensor> Trainer::parameters() const {
  std::vector<torch::Tensor> params;
  for (auto* s : owned_)
    for (auto& p : s->network->parameters()) params.push_back(p);
  return params;
}

Trainer::LocalLoss Trainer::local_loss(bool create_graph) {
  LocalLoss loss;
  for (const auto& name : term_names_) loss.counts[name] = 0;
  auto accumulate = [](torch::Tensor& into, const torch::Tensor& value) {
    into = into.defined() ? into + value : value;
  };
  for (auto* s : owned_) {
    for (const auto& group : s->groups) {
      for (auto& term : group->evaluate(*s->fields, create_graph)) {
        TESSERA_CHECK(weights_.count(term.name), "internal: unknown loss term '" << term.name << "'");
        accumulate(loss.total, weights_.at(term.name) * term.mean_square);
        accumulate(loss.terms[term.name], term.mean_square);
        accumulate(loss.sums[term.name],
                   term.mean_square.detach() * static_cast<double>(term.count));
        loss.counts[term.name] += static_cast<double>(term.count);
      }
    }
  }
  return loss;
}

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

LogRecord Trainer::log(const LocalLoss& loss, const std::string& stage, double lr, bool final) {
  LogRecord record;
  {
    core::ScopedTimer timer(sync_s_);
    std::vector<double> figures;
    for (const auto& name : term_names_) {
      auto sum = loss.sums.find(name);
      figures.push_back(sum == loss.sums.end() ? 0.0 : sum->second.item<double>());
      figures.push_back(loss.counts.at(name));
    }
    comm_.sum_in_place(figures);
    record.loss = 0;
    for (std::size_t i = 0; i < term_names_.size(); ++i) {
      const double count = figures[2 * i + 1];
      const double mean = count > 0 ? figures[2 * i] / count : 0.0;
      record.terms[term_names_[i]] = mean;
      record.loss += weights_.at(term_names_[i]) * mean;
    }
  }
  record.iteration = iteration_;
  record.total_iterations = total_iterations_;
  record.stage = stage;
  record.lr = lr;
  record.weights = weights_;
  record.final = final;
  if (callbacks_.errors) record.rel_l2 = callbacks_.errors();
  record.wall_s = wall_seconds();
  record.time_s = {{"compute", compute_s_}, {"exchange", 0.0}, {"wait", 0.0}, {"sync", sync_s_}};
  TESSERA_CHECK(std::isfinite(record.loss),
                "non-finite loss at iteration " << iteration_ << " (" << [&] {
                  std::ostringstream terms;
                  for (const auto& [name, value] : record.terms) terms << name << "=" << value << " ";
                  return terms.str();
                }() << "); lower the learning rate or check the equations");
  if (callbacks_.on_log) callbacks_.on_log(record);
  last_ = record;
  return record;
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
  const LocalLoss final_loss = local_loss(/*create_graph=*/false);
  log(final_loss, plan_.stages.empty() ? "none" : optimizer_name(plan_.stages.back().optimizer),
      0.0, /*final=*/true);
}

namespace {

void resample_all(const std::vector<SubdomainModel*>& owned) {
  for (auto* s : owned)
    for (auto& group : s->groups) group->resample();
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

}  // namespace

void Trainer::run_adam(const StagePlan& stage) {
  const auto params = parameters();
  std::unique_ptr<torch::optim::Adam> optimizer;
  if (!params.empty())
    optimizer = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(stage.lr));
  for (int64_t k = 0; k < stage.iterations && !stop_; ++k) {
    const double lr = scheduled_lr(stage, k);
    LocalLoss loss;
    {
      core::ScopedTimer timer(compute_s_);
      if (plan_.resample_every > 0 && k > 0 && k % plan_.resample_every == 0) resample_all(owned_);
      if (plan_.adaptive.enabled && k % plan_.adaptive.every == 0) update_adaptive_weights();
      loss = local_loss(/*create_graph=*/true);
      if (optimizer) {
        set_lr(*optimizer, lr);
        optimizer->zero_grad();
        if (loss.total.defined()) loss.total.backward();
        if (stage.clip) torch::nn::utils::clip_grad_norm_(params, *stage.clip);
        optimizer->step();
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
  const auto params = parameters();
  std::unique_ptr<torch::optim::LBFGS> optimizer;
  if (!params.empty()) {
    optimizer = std::make_unique<torch::optim::LBFGS>(
        params, torch::optim::LBFGSOptions(stage.lr)
                    .history_size(stage.history)
                    .tolerance_grad(stage.tolerance)
                    .tolerance_change(1e-12)
                    .line_search_fn("strong_wolfe"));
  }
  int64_t done = 0;
  while (done < stage.iterations && !stop_) {
    // L-BFGS runs in chunks that end on log iterations; its history carries over between them.
    const int64_t to_log = plan_.log_every - iteration_ % plan_.log_every;
    const int64_t chunk = std::min(stage.iterations - done, to_log);
    LocalLoss loss;
    {
      core::ScopedTimer timer(compute_s_);
      if (optimizer) {
        static_cast<torch::optim::LBFGSOptions&>(optimizer->param_groups()[0].options())
            .max_iter(chunk)
            .max_eval(chunk * 5 / 4 + 1);
        auto closure = [&] {
          optimizer->zero_grad();
          loss = local_loss(/*create_graph=*/true);
          loss.total.backward();
          return loss.total;
        };
        optimizer->step(closure);
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

void Trainer::update_adaptive_weights() {
  // Gradient statistics of each term with respect to this rank's network parameters, reduced
  // over all ranks: max|grad L_eq| (max) and mean|grad L_i| (sum and count).
  const auto params = parameters();
  LocalLoss loss = local_loss(/*create_graph=*/true);
  auto gradient_of = [&](const torch::Tensor& value) {
    std::vector<torch::Tensor> grads;
    if (!value.defined() || params.empty()) return grads;
    for (auto& g : torch::autograd::grad({value}, params, {}, /*retain_graph=*/true,
                                         /*create_graph=*/false, /*allow_unused=*/true))
      if (g.defined()) grads.push_back(g.abs().flatten());
    return grads;
  };
  torch::Tensor equations;
  for (const auto& name : plan_.equation_terms)
    if (loss.terms.count(name))
      equations = equations.defined() ? equations + loss.terms[name] : loss.terms[name];
  std::vector<double> max_equation{0.0};
  for (auto& g : gradient_of(equations))
    max_equation[0] = std::max(max_equation[0], g.max().item<double>());
  std::vector<std::string> others;
  std::vector<double> sums;
  for (const auto& name : term_names_) {
    if (std::count(plan_.equation_terms.begin(), plan_.equation_terms.end(), name)) continue;
    others.push_back(name);
    double sum = 0, count = 0;
    auto it = loss.terms.find(name);
    if (it != loss.terms.end())
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
    const double target = max_equation[0] / mean;
    double& w = weights_.at(others[i]);
    w = (1 - plan_.adaptive.alpha) * w + plan_.adaptive.alpha * target;
  }
}

}  // namespace tessera::train
