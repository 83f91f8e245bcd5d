#include "tessera/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>

#include "tessera/core/error.hpp"
#include "tessera/core/stop_signal.hpp"
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/nn/mlp.hpp"
#include "tessera/physics/equation_group.hpp"
#include "tessera/train/fused_adam.hpp"
#include "tessera/train/quasi_newton.hpp"
#include "tessera/train/released_gradients.hpp"

namespace tessera::train {

namespace {

// L-BFGS iterations between two neighbour exchanges of coupled subdomains (docs/benchmarks.md,
// "L-BFGS across subdomains").
constexpr int64_t lbfgs_exchange_every = 10;

}  // namespace

Trainer::Trainer(parallel::Communicator comm, std::vector<SubdomainModel*> owned, int subdomains,
                 std::vector<std::string> term_names, TrainingPlan plan, TrainerCallbacks callbacks,
                 parallel::InterfaceExchange* exchange, GradientSync sync)
    : comm_(comm),
      owned_(std::move(owned)),
      subdomains_(subdomains),
      term_names_(std::move(term_names)),
      plan_(std::move(plan)),
      callbacks_(std::move(callbacks)),
      coupling_(exchange),
      sync_(sync),
      balancer_(plan_.adaptive, term_names_) {
  for (const auto& name : term_names_) {
    auto it = plan_.weights.find(name);
    weights_[name] = it == plan_.weights.end() ? 1.0 : it->second;
  }
  for (const auto& stage : plan_.stages) total_iterations_ += stage.iterations;
  TESSERA_CHECK(plan_.log_every > 0, "training.log_every must be positive");
}

double Trainer::wall_seconds() const { return core::now_seconds() - start_time_; }

namespace {

/// Drops gradients of another dtype: backward would accumulate into them, rounding every
/// gradient of the new dtype to the old one.
void drop_stale_gradients(const std::vector<torch::Tensor>& parameters, torch::Dtype dtype) {
  for (auto p : parameters)
    if (p.grad().defined() && p.grad().scalar_type() != dtype) p.mutable_grad() = torch::Tensor();
}

}  // namespace

void Trainer::set_precision(const StagePlan& stage) {
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
  if (sync_.parameters) {
    sync_.parameters->set_dtype(dtype);
    drop_stale_gradients(sync_.parameters->raw(), dtype);
  }
}

void Trainer::set_causal(bool active) {
  for (auto* s : owned_)
    for (auto& group : s->groups)
      if (auto* equations = dynamic_cast<physics::EquationGroup*>(group.get()))
        equations->set_causal(active);
}

void Trainer::run() {
  // Ranks finish their set-up at different times (rank 0 also prints and opens files); start
  // together so that skew is not booked as the first exchange's wait.
  comm_.barrier();
  start_time_ = core::now_seconds();
  const std::size_t first = resume_ ? static_cast<std::size_t>(resume_->position.stage) : 0;
  for (stage_index_ = first; stage_index_ < plan_.stages.size() && !stop_; ++stage_index_) {
    const auto& stage = plan_.stages[stage_index_];
    const bool resuming =
        resume_ && static_cast<std::size_t>(resume_->position.stage) == stage_index_;
    const int64_t first_step = resuming ? resume_->position.stage_step : 0;
    // A resumed stage already has its points (redrawn from the checkpoint).
    if (!resuming) apply_stage_points(stage);
    set_precision(stage);
    set_causal(stage.optimizer == OptimizerKind::adam);
    if (stage.optimizer == OptimizerKind::adam)
      run_adam(stage, first_step);
    else
      run_quasi_newton(stage, first_step);
  }
  resume_.reset();
  // Training is over: the final checkpoint and figures are written next, signal or not.
  core::set_run_phase(core::RunPhase::finishing);
  if (!stop_ && callbacks_.on_checkpoint && last_checkpoint_ != iteration_) {
    auto state = capture(0);  // stage_index_ == stage count: nothing left to train
    callbacks_.on_checkpoint(state);
  }
  // Derivatives need autograd even here; create_graph=false keeps no second-order graph.
  const LocalLoss final_loss = exchange_and_loss(/*create_graph=*/false);
  log(final_loss, plan_.stages.empty() ? "none" : optimizer_name(plan_.stages.back().optimizer),
      0.0, /*final=*/true);
}

void Trainer::after_log(int64_t stage_step) {
  // Nothing left to train: the run is complete, whatever arrived at the last moment.
  if (iteration_ < total_iterations_) {
    const int signal = core::stop_signal();
    const bool late = plan_.time_limit && wall_seconds() > *plan_.time_limit;
    // Every rank must stop at the same iteration, or the next collective would hang; and every
    // rank names the same reason, whichever rank saw it (clocks and signals differ per rank).
    std::vector<double> seen{signal == SIGTERM ? 1.0 : 0.0, signal == SIGUSR1 ? 1.0 : 0.0,
                             late ? 1.0 : 0.0};
    comm_.max_in_place(seen);
    stop_ = seen[0] + seen[1] + seen[2] > 0;
    if (stop_) stop_reason_ = seen[0] > 0 ? "SIGTERM" : seen[1] > 0 ? "SIGUSR1" : "time_limit";
    // Agreed: the checkpoint and the output are written next, so the watchdog must wait.
    if (stop_) core::set_run_phase(core::RunPhase::finishing);
  }
  const bool due = plan_.checkpoint_every > 0 && iteration_ % plan_.checkpoint_every == 0;
  if ((stop_ || due) && callbacks_.on_checkpoint) {
    auto state = capture(stage_step);
    callbacks_.on_checkpoint(state);
    last_checkpoint_ = iteration_;
  }
}

namespace {

/// Uniform redraws of every group (`equations` false: but the equation groups, whose points
/// are redistributed by their residual instead) and of the interface points: fixed interface
/// points would let neighbours agree at those points only.
void resample_all(const std::vector<SubdomainModel*>& owned, bool equations) {
  for (auto* s : owned) {
    for (auto& group : s->groups)
      if (equations || !dynamic_cast<physics::EquationGroup*>(group.get())) group->resample();
    for (auto& side : s->interfaces) side->resample();
  }
}

}  // namespace

std::vector<torch::Tensor> Trainer::owned_parameters() const {
  std::vector<torch::Tensor> params;
  for (auto* s : owned_)
    for (auto& p : s->network->parameters()) params.push_back(p);
  return params;
}

void Trainer::sum_gradients() {
  // With slices the parts were already summed over the group, shared parameters included.
  if (sync_.slices.on()) return;
  core::ScopedTimer timer(sync_s_);
  // Every replica of a group owns the same subdomains, so all of them call this or none.
  if (sync_.replicas && !owned_.empty()) sync_.replicas->sum_gradients(owned_parameters());
  if (sync_.parameter_sum) sync_.parameter_sum->sum_gradients(sync_.parameters->raw());
}

void Trainer::run_adam(const StagePlan& stage, int64_t first_step) {
  // One optimizer per subdomain: gradient clipping and every statistic stay per network.
  auto& optimizers = optimizers_;
  optimizers.clear();
  for (auto* s : owned_)
    optimizers.push_back(
        std::make_unique<FusedAdam>(s->network->parameters(), torch::optim::AdamOptions(stage.lr)));
  // Shared parameters: the same summed gradient on every rank, so every copy takes the same step.
  parameter_optimizer_ = sync_.parameters && !sync_.parameters->empty();
  if (parameter_optimizer_)
    optimizers.push_back(
        std::make_unique<FusedAdam>(sync_.parameters->raw(), torch::optim::AdamOptions(stage.lr)));
  restore_optimizers();
  keep_good_states();
  for (int64_t k = first_step; k < stage.iterations && !stop_; ++k) {
    const double lr = scheduled_lr(stage, k);
    LocalLoss loss;
    {
      core::ExclusiveTimer timer(compute_s_, sync_s_);
      const auto& adaptive = plan_.adaptive_points;
      if (plan_.resample_every > 0 && k > 0 && k % plan_.resample_every == 0)
        resample_all(owned_, /*equations=*/!adaptive);
      if (adaptive && k > 0 && k % adaptive->every == 0) adapt_points();
      std::vector<std::vector<torch::Tensor>> released;
      for (auto& optimizer : optimizers) released.push_back(release_gradients(*optimizer));
      const bool adapt = balancer_.due(k);
      // Adaptive weighting needs every term's graph; otherwise the interior terms are
      // backpropagated while the neighbours' messages travel.
      measuring_terms_ = adapt;
      loss = exchange_and_loss(/*create_graph=*/true, /*backward_interior=*/!adapt,
                               /*stop_on_nonfinite=*/false);
      measuring_terms_ = false;
      if (adapt) update_adaptive_weights(loss);
      backpropagate_rest(loss);
      for (const auto& parameters : released) zero_missing_gradients(parameters);
      sum_gradients();
      const auto may_step = guard_against_divergence(loss);
      for (std::size_t i = 0; i < optimizers.size(); ++i) {
        const bool network = i < owned_.size();
        if (network && !may_step[i]) continue;
        // The shared parameters' summed gradient is the same on every rank: all skip alike.
        if (!network && !finite_gradients(sync_.parameters->raw())) continue;
        if (stage.clip && network)
          torch::nn::utils::clip_grad_norm_(owned_[i]->network->parameters(), *stage.clip);
        const double factor = network ? guard_.lr_factor(i) : 1.0;
        for (auto& group : optimizers[i]->param_groups()) group.options().set_lr(lr * factor);
        optimizers[i]->step();
      }
    }
    ++iteration_;
    ++adam_steps_;
    if (iteration_ % plan_.log_every == 0) {
      log(loss, "adam", lr, false);
      keep_good_states();
      after_log(k + 1);
    }
  }
}

std::unique_ptr<torch::optim::Optimizer> Trainer::quasi_newton(
    const StagePlan& stage, std::vector<torch::Tensor> parameters) const {
  if (stage.optimizer == OptimizerKind::lbfgs)
    return std::make_unique<torch::optim::LBFGS>(std::move(parameters),
                                                 torch::optim::LBFGSOptions(stage.lr)
                                                     .history_size(stage.history)
                                                     .tolerance_grad(stage.tolerance)
                                                     .tolerance_change(1e-12)
                                                     .line_search_fn("strong_wolfe"));
  const auto update = stage.optimizer == OptimizerKind::bfgs ? QuasiNewtonUpdate::bfgs
                                                             : QuasiNewtonUpdate::ssbroyden;
  return std::make_unique<QuasiNewton>(
      std::move(parameters),
      QuasiNewtonOptions(update).lr(stage.lr).tolerance_grad(stage.tolerance));
}

void Trainer::run_quasi_newton(const StagePlan& stage, int64_t first_step) {
  // Both questions are collective: every rank asks them, in this order.
  const bool in_space = coupled(/*in_time=*/false), in_time = coupled(/*in_time=*/true);
  if (stage.optimizer != OptimizerKind::lbfgs && in_space && !in_time)
    return run_joint_quasi_newton(stage, first_step);
  auto& optimizers = optimizers_;
  optimizers.clear();
  parameter_optimizer_ = false;  // shared parameters, if any, ride in the subdomain's L-BFGS
  std::vector<std::vector<torch::Tensor>> trained;  // per owned subdomain
  for (auto* s : owned_) {
    trained.push_back(s->network->parameters());
    if (sync_.parameters_in_lbfgs && sync_.parameters)
      for (const auto& p : sync_.parameters->raw()) trained.back().push_back(p);
  }
  for (const auto& tensors : trained) optimizers.push_back(quasi_newton(stage, tensors));
  restore_optimizers();
  const bool exchanges = in_space || in_time;
  int64_t done = first_step;
  while (done < stage.iterations && !stop_) {
    // The optimizer runs in chunks that end on log iterations; its history (or inverse Hessian)
    // carries over between them.
    // Neighbour data is exchanged at the start of a chunk and frozen during it, so coupled
    // subdomains also end a chunk every few iterations: frozen for a whole log interval, each
    // side converges to the other's stale interface values instead of to a common solution.
    const int64_t to_log = plan_.log_every - iteration_ % plan_.log_every;
    const int64_t to_exchange = lbfgs_exchange_every - iteration_ % lbfgs_exchange_every;
    const int64_t chunk =
        std::min({stage.iterations - done, to_log, exchanges ? to_exchange : to_log});
    LocalLoss loss;
    {
      core::ExclusiveTimer timer(compute_s_, sync_s_);
      coupling_.start(owned_, /*create_graph=*/false);
      coupling_.finish(owned_);
      for (std::size_t i = 0; i < owned_.size(); ++i) {
        auto& optimizer = *optimizers[i];
        auto& options = optimizer.param_groups()[0].options();
        if (auto* lbfgs = dynamic_cast<torch::optim::LBFGSOptions*>(&options))
          lbfgs->max_iter(chunk).max_eval(chunk * 5 / 4 + 1);
        else
          static_cast<QuasiNewtonOptions&>(options).max_iter(chunk);
        LocalLoss last;
        auto closure = [&] {
          optimizer.zero_grad();
          last = subdomain_loss(*owned_[i], /*create_graph=*/true);
          check_finite(last, *owned_[i]);
          backpropagate_rest(last);
          // With slices the loss and gradient are already the group's, folded in slice order.
          if (!sync_.replicas || sync_.slices.on()) return last.total;
          // Replicas: the group's summed loss and gradient, identical on every member, so
          // every replica's L-BFGS takes the same decisions. One all-reduce per evaluation.
          std::vector<double> value{last.total.item<double>()};
          {
            core::ScopedTimer timer(sync_s_);
            sync_.replicas->sum_gradients(trained[i], &value);
          }
          return torch::full({}, value[0], last.total.options());
        };
        optimizer.step(closure);
        loss.merge(std::move(last));
      }
    }
    if (sync_.parameters_in_lbfgs && sync_.parameters && !sync_.parameters->empty())
      share_lbfgs_parameters();
    done += chunk;
    iteration_ += chunk;
    if (iteration_ % plan_.log_every == 0) {
      log(loss, optimizer_name(stage.optimizer), stage.lr, false);
      after_log(done);
    }
  }
}

void Trainer::share_lbfgs_parameters() {
  const auto& raw = sync_.parameters->raw();
  const bool source =
      !owned_.empty() && (!sync_.replicas || sync_.replicas->communicator().rank() == 0);
  std::vector<double> values(raw.size(), 0.0);
  if (source)
    for (std::size_t i = 0; i < raw.size(); ++i) values[i] = raw[i].item<double>();
  {
    core::ScopedTimer timer(sync_s_);
    comm_.sum_in_place(values);  // one contributor: exact
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i].fill_(values[i]);
}

void Trainer::update_adaptive_weights(const LocalLoss& loss) {
  auto gradients = balancer_.term_gradients(loss.probes, owned_parameters());
  for (std::size_t t = 0; t < part_term_gradients_.size(); ++t)
    gradients[t] += part_term_gradients_[t];
  part_term_gradients_.clear();
  const bool replicas = sync_.replicas && !owned_.empty();
  if (replicas && !sync_.slices.on()) {
    // Each replica holds a slice of every term: the probe's gradient is the group's sum.
    core::ScopedTimer timer(sync_s_);
    auto bucket = torch::cat(gradients);
    std::vector<double> values(bucket.data_ptr<double>(),
                               bucket.data_ptr<double>() + bucket.numel());
    sync_.replicas->communicator().sum_in_place(values);
    gradients = torch::tensor(values, torch::kFloat64).split(gradients.front().numel());
  }
  // One slot per term and subdomain, as in log(), filled by the subdomain's first replica: each
  // slot has one contributor, so the sums do not depend on which rank owns which subdomain.
  const std::size_t terms = term_names_.size(), slots = static_cast<std::size_t>(subdomains_);
  std::vector<double> figures(terms * slots, 0.0);
  const bool first_replica = !replicas || sync_.replicas->communicator().rank() == 0;
  int64_t offset = 0;
  for (auto* model : owned_) {
    int64_t size = 0;
    for (const auto& p : model->network->parameters()) size += p.numel();
    for (std::size_t t = 0; t < terms && first_replica; ++t)
      figures[t * slots + model->id] =
          gradients[t].slice(0, offset, offset + size).pow(2).sum().item<double>();
    offset += size;
  }
  {
    core::ScopedTimer timer(sync_s_);
    comm_.sum_in_place(figures);
  }
  std::vector<double> squared_norms(terms, 0.0);
  for (std::size_t t = 0; t < terms; ++t)
    for (std::size_t s = 0; s < slots; ++s) squared_norms[t] += figures[t * slots + s];
  balancer_.update(squared_norms, weights_);
}

}  // namespace tessera::train
