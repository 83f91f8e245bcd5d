#include "tessera/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <csignal>

#include "tessera/core/error.hpp"
#include "tessera/core/stop_signal.hpp"
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/loss_figures.hpp"
#include "tessera/train/optimizer_state.hpp"
#include "tessera/train/subdomain_archive.hpp"

namespace tessera::train {

Trainer::Trainer(TrainingJob job, TrainingPlan plan, TrainerCallbacks callbacks)
    : job_(std::move(job)),
      plan_(std::move(plan)),
      callbacks_(std::move(callbacks)),
      reduction_(Reduction::choose(job_.comm, job_.subdomains, job_.owned, job_.term_names,
                                   job_.sync, times_.sync_s)),
      objective_(job_.owned, job_.term_names, plan_.weights, plan_.adaptive, job_.exchange,
                 *reduction_, plan_.batch_points, job_.sync.parameters, iteration_),
      points_(job_.owned, plan_, *reduction_) {
  for (const auto& stage : plan_.stages) total_iterations_ += stage.iterations;
  TESSERA_CHECK(plan_.log_every > 0, "training.log_every must be positive");
}

Trainer::~Trainer() = default;

double Trainer::wall_seconds() const { return core::now_seconds() - start_time_; }

void Trainer::run() {
  // Ranks finish their set-up at different times (rank 0 also prints and opens files); start
  // together so that skew is not booked as the first exchange's wait.
  job_.comm.barrier();
  start_time_ = core::now_seconds();
  const std::size_t first = resume_ ? static_cast<std::size_t>(resume_->position.stage) : 0;
  const StageTools tools{objective_, *reduction_, *this,  points_,
                         guard_,     job_.sync,   times_, callbacks_.on_warning};
  for (stage_index_ = first; stage_index_ < plan_.stages.size() && !stop_; ++stage_index_) {
    const auto& stage = plan_.stages[stage_index_];
    const bool resuming =
        resume_ && static_cast<std::size_t>(resume_->position.stage) == stage_index_;
    // A resumed stage already has its points (redrawn from the checkpoint).
    if (!resuming) points_.apply_stage_points(stage);
    objective_.set_precision(stage);
    runner_ = make_runner(stage, tools);
    runner_->run(stage, resuming ? resume_->position.stage_step : 0);
  }
  resume_.reset();
  // Training is over: the final checkpoint and figures are written next, signal or not.
  core::set_run_phase(core::RunPhase::finishing);
  if (!stop_ && callbacks_.on_checkpoint && last_checkpoint_ != iteration_) {
    auto state = capture(0);  // stage_index_ == stage count: nothing left to train
    callbacks_.on_checkpoint(state);
  }
  const LocalLoss final_loss = objective_.figures();
  log(final_loss, plan_.stages.empty() ? "none" : plan_.stages.back().optimizer, 0.0,
      /*final=*/true);
}

int64_t Trainer::iterations_to_log() const {
  return plan_.log_every - iteration_ % plan_.log_every;
}

bool Trainer::iterations_done(int64_t n, int64_t stage_step, const LocalLoss& loss,
                              const std::string& stage, double lr) {
  iteration_ += n;
  if (iteration_ % plan_.log_every != 0) return false;
  log(loss, stage, lr, /*final=*/false);
  agree_and_checkpoint(stage_step);
  return true;
}

void Trainer::agree_and_checkpoint(int64_t stage_step) {
  // Nothing left to train: the run is complete, whatever arrived at the last moment.
  if (iteration_ < total_iterations_) {
    const int signal = core::stop_signal();
    const bool late = plan_.time_limit && wall_seconds() > *plan_.time_limit;
    // A budget ends the last stage before the next log interval (as long as the last one)
    // would pass it.
    const double now = wall_seconds();
    const bool spent = plan_.budget_s && stage_index_ + 1 == plan_.stages.size() &&
                       earlier_training_s_ + now + (now - last_log_s_) > *plan_.budget_s;
    last_log_s_ = now;
    // Every rank must stop at the same iteration, or the next collective would hang; and every
    // rank names the same reason, whichever rank saw it (clocks and signals differ per rank).
    std::vector<double> seen{signal == SIGTERM ? 1.0 : 0.0, signal == SIGUSR1 ? 1.0 : 0.0,
                             late ? 1.0 : 0.0, spent ? 1.0 : 0.0};
    job_.comm.max_in_place(seen);
    stop_ = seen[0] + seen[1] + seen[2] > 0;
    // The run is complete where the budget ends it; the final checkpoint follows the stage.
    if (!stop_ && seen[3] > 0) {
      budget_spent_ = true;
      total_iterations_ = iteration_;
      return;
    }
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

void Trainer::adopt(std::vector<torch::optim::Optimizer*> optimizers, bool shared_last) {
  optimizers_ = std::move(optimizers);
  shared_optimizer_ = shared_last;
  if (!resume_ || static_cast<std::size_t>(resume_->position.stage) != stage_index_) return;
  for (std::size_t i = 0; i < job_.owned.size() && i < optimizers_.size(); ++i)
    load_subdomain_optimizer(*resume_->subdomains.at(job_.owned[i]->id), *optimizers_[i]);
  if (shared_optimizer_ && resume_->shared)
    load_subdomain_optimizer(*resume_->shared, *optimizers_.back());
}

CheckpointState Trainer::capture(int64_t stage_step) const {
  CheckpointState state;
  state.position = {iteration_,         static_cast<int64_t>(stage_index_),
                    stage_step,         adam_steps_,
                    training_seconds(), objective_.weights()};
  // The replicas hold the same state: the first of each group writes it.
  for (std::size_t i = 0; i < job_.owned.size() && reduction_->fills_slots(); ++i)
    state.subdomains[job_.owned[i]->id] = save_subdomain(
        *job_.owned[i], i < optimizers_.size() ? optimizers_[i] : nullptr, guard_, i);
  const auto* shared = job_.sync.parameters;
  if (shared && !shared->empty() && job_.comm.rank() == 0) {
    state.shared = std::make_shared<torch::serialize::OutputArchive>();
    const auto& raw = shared->raw();
    for (std::size_t k = 0; k < raw.size(); ++k)
      state.shared->write("raw" + std::to_string(k), raw[k].detach());
    if (shared_optimizer_) {
      torch::serialize::OutputArchive optimizer;
      save_optimizer(*optimizers_.back(), optimizer);
      state.shared->write("optimizer", optimizer);
    }
  }
  return state;
}

void Trainer::resume(RestoredCheckpoint checkpoint) {
  auto& position = checkpoint.position;
  TESSERA_CHECK(position.stage >= 0 && position.stage <= static_cast<int64_t>(plan_.stages.size()),
                "checkpoint: stage " << position.stage << " does not exist in this case's "
                                     << plan_.stages.size() << " stage(s)");
  extend_finished_run(position);
  iteration_ = position.iteration;
  adam_steps_ = position.adam_steps;
  earlier_training_s_ = position.training_s;
  objective_.restore_weights(position.weights);
  last_checkpoint_ = iteration_;
  // The saved tensors are in the dtype of the stage they were saved in.
  if (!plan_.stages.empty())
    objective_.set_precision(
        plan_.stages[std::min(static_cast<std::size_t>(position.stage), plan_.stages.size() - 1)]);
  guard_.resize(job_.owned.size());
  for (std::size_t i = 0; i < job_.owned.size(); ++i) {
    auto* model = job_.owned[i];
    auto it = checkpoint.subdomains.find(model->id);
    TESSERA_CHECK(it != checkpoint.subdomains.end(),
                  "checkpoint: no state for subdomain " << model->id);
    load_subdomain(*it->second, *model, guard_, i);
  }
  if (checkpoint.shared && job_.sync.parameters)
    load_shared_parameters(*checkpoint.shared, job_.sync.parameters->raw());
  resume_ = std::move(checkpoint);
}

void Trainer::extend_finished_run(CheckpointPosition& position) const {
  const auto stages = static_cast<int64_t>(plan_.stages.size());
  // A budget's last stage has a bound, not a length: the budget ended it.
  if (position.stage != stages || stages == 0 || plan_.budget_s) return;
  int64_t before_last = 0;
  for (int64_t s = 0; s + 1 < stages; ++s) before_last += plan_.stages[s].iterations;
  const int64_t done_in_last = position.iteration - before_last;
  if (done_in_last < 0 || done_in_last >= plan_.stages.back().iterations) return;
  position.stage = stages - 1;
  position.stage_step = done_in_last;
}

LogRecord Trainer::log(const LocalLoss& loss, const std::string& stage, double lr, bool final) {
  LogRecord record;
  {
    core::ScopedTimer timer(times_.sync_s);
    reduce_loss_figures(loss, job_.term_names, objective_.weights(), *reduction_, record);
  }
  record.iteration = iteration_;
  record.total_iterations = total_iterations_;
  record.stage = stage;
  record.lr = lr;
  record.weights = objective_.weights();
  record.final = final;
  if (callbacks_.errors) {
    auto errors = callbacks_.errors();
    record.rel_l2 = std::move(errors.fields);
    record.rel_l2_stacked = errors.stacked;
  }
  if (job_.sync.parameters) record.parameters = job_.sync.parameters->current();
  record.wall_s = wall_seconds();
  // The compute timer encloses the exchange and the wait (not the sync, which it leaves out);
  // report the phases as disjoint shares.
  const double exchange_s = objective_.exchange_seconds();
  const double wait_s = objective_.wait_seconds();
  record.time_s = {{"compute", times_.compute_s - exchange_s - wait_s},
                   {"exchange", exchange_s},
                   {"wait", wait_s},
                   {"sync", times_.sync_s}};
  // The objective stops a diverging subdomain at once; this catches what only shows after the
  // reduction (a global sum that overflows).
  if (!std::isfinite(record.loss)) {
    std::ostringstream detail;
    for (const auto& [name, value] : record.terms)
      if (!std::isfinite(value)) detail << " " << name;
    TESSERA_FAIL("non-finite global loss at iteration "
                 << iteration_ << " in term(s)" << detail.str()
                 << "; lower the learning rate or check the equations");
  }
  if (callbacks_.on_log) callbacks_.on_log(record);
  last_ = record;
  return record;
}

}  // namespace tessera::train
