#pragma once
/// The trainer: the stage loop, checkpoints and the stop agreement. Each stage is trained by its
/// optimizer's runner (stage_runner.hpp) over the objective (objective.hpp), with the sums over
/// ranks of the reduction strategy chosen once for the run (reduction.hpp). Each subdomain has
/// its own optimizer, and neighbour data is detached, so a subdomain's trajectory does not
/// depend on which rank owns it; global figures are reduced per subdomain slot and summed in
/// subdomain order, so they are bit-identical on any number of ranks.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tessera/parallel/exchange.hpp"
#include "tessera/train/checkpoint_state.hpp"
#include "tessera/train/log_record.hpp"
#include "tessera/train/stage_runner.hpp"

namespace tessera::train {

struct TrainerCallbacks {
  /// Called on every rank at each log iteration and at the end.
  std::function<void(const LogRecord&)> on_log;
  /// Relative L2 error per field; called on every rank at log iterations. Collective.
  std::function<RelativeErrors()> errors;
  /// Writes a checkpoint; called on every rank every `checkpoint_every` iterations (at log
  /// iterations), when the run stops early and at the end. Collective.
  std::function<void(CheckpointState&)> on_checkpoint;
  /// A warning on this rank (a divergence roll-back); the app shows it on standard error.
  std::function<void(const std::string&)> on_warning;
};

/// This rank's share of the job.
struct TrainingJob {
  parallel::Communicator comm = parallel::Communicator::self();
  std::vector<SubdomainModel*> owned;
  int subdomains = 1;  ///< in the whole job
  /// Every loss term of the whole problem, identical on all ranks (a rank that owns no
  /// subdomain still takes part in the reductions).
  std::vector<std::string> term_names;
  parallel::InterfaceExchange* exchange = nullptr;  ///< null without interfaces
  GradientSync sync;
};

class Trainer : private StageHost {
 public:
  Trainer(TrainingJob job, TrainingPlan plan, TrainerCallbacks callbacks);
  ~Trainer() override;

  /// Continues from a checkpoint instead of the start (before run()).
  void resume(RestoredCheckpoint checkpoint);
  /// Runs every stage (from the resumed position). Collective over the job.
  void run();
  /// Why training stopped before the end ("SIGTERM", "SIGUSR1", "time_limit"), or "".
  const std::string& stop_reason() const { return stop_reason_; }

  int64_t iterations_done() const { return iteration_; }
  /// Training time so far, over every run that led to this one (restarts).
  double training_seconds() const { return earlier_training_s_ + wall_seconds(); }
  /// Adam steps taken (each does one replica all-reduce and one parameter all-reduce).
  int64_t adam_steps() const { return adam_steps_; }
  const QuietIterationReads& quiet_reads() const { return times_.quiet; }
  double wall_seconds() const;
  /// The last global record (after run()).
  const LogRecord& last_record() const { return last_; }

 private:
  // StageHost
  int64_t iteration() const override { return iteration_; }
  bool stopping() const override { return stop_ || budget_spent_; }
  int64_t iterations_to_log() const override;
  bool iterations_done(int64_t n, int64_t stage_step, const LocalLoss& loss,
                       const std::string& stage, double lr) override;
  void skip(int64_t n) override { iteration_ += n; }
  void count_adam_step() override { ++adam_steps_; }
  void adopt(std::vector<torch::optim::Optimizer*> optimizers, bool shared_last) override;

  /// Agrees with every rank whether to stop (signal, time limit) and writes a checkpoint when
  /// one is due. Collective.
  void agree_and_checkpoint(int64_t stage_step);
  /// This rank's checkpoint at the current position.
  CheckpointState capture(int64_t stage_step) const;
  /// A checkpoint written at the end of a run whose last stage has since been given more
  /// iterations continues inside that stage, at the step it had reached.
  void extend_finished_run(CheckpointPosition& position) const;
  /// Reduces the local figures and reports. Collective.
  LogRecord log(const LocalLoss& loss, const std::string& stage, double lr, bool final);

  TrainingJob job_;
  TrainingPlan plan_;
  TrainerCallbacks callbacks_;
  TrainingTimes times_;
  int64_t iteration_ = 0;
  int64_t adam_steps_ = 0;
  int64_t total_iterations_ = 0;
  std::unique_ptr<Reduction> reduction_;
  Objective objective_;
  PointPlacement points_;
  DivergenceGuard guard_;  ///< one slot per owned subdomain
  std::size_t stage_index_ = 0;
  std::unique_ptr<StageRunner> runner_;  ///< the current stage's
  /// The current stage's optimizers: one per owned subdomain, then the shared parameters'.
  std::vector<torch::optim::Optimizer*> optimizers_;
  bool shared_optimizer_ = false;  ///< the last of optimizers_ moves the shared parameters
  std::optional<RestoredCheckpoint> resume_;
  int64_t last_checkpoint_ = -1;
  std::string stop_reason_;
  double start_time_ = 0;
  /// Training time of the runs before a restart, and of this run at its last log iteration.
  double earlier_training_s_ = 0;
  double last_log_s_ = 0;
  LogRecord last_;
  bool stop_ = false;
  /// The budget ended the last stage: the run is complete (not stopped).
  bool budget_spent_ = false;
};

}  // namespace tessera::train
