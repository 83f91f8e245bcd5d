#pragma once
/// A stage runner trains one stage with its optimizer: Adam, the quasi-Newton methods per
/// subdomain (L-BFGS, or BFGS/SSBroyden in a time-sliced job), or BFGS/SSBroyden over the
/// subdomains coupled in space as one problem. Each asks the objective for its passes, the
/// reduction strategy for the sums over ranks, and the trainer (StageHost) for the position,
/// the log and the stop agreement. Adding an optimizer is its row in the case format's table
/// (io/optimizers.hpp) and its runner here, listed in stage_runners.cpp.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/train/divergence_guard.hpp"
#include "tessera/train/objective.hpp"
#include "tessera/train/plan.hpp"
#include "tessera/train/point_placement.hpp"
#include "tessera/train/reduction.hpp"

namespace tessera::train {

/// Reads from the device (core/host_reads.hpp) in the Adam iterations that neither log, redraw
/// points, balance nor end their stage: the round trips of an iteration when nothing is due.
struct QuietIterationReads {
  int64_t iterations = 0;
  int64_t values = 0;    ///< values the host decides with
  int64_t messages = 0;  ///< interface messages copied to the host for MPI
};

/// Time spent computing and in sums over ranks (the compute figure encloses the exchange).
struct TrainingTimes {
  double compute_s = 0;
  double sync_s = 0;
  QuietIterationReads quiet;
};

/// What a runner needs of the trainer.
class StageHost {
 public:
  virtual ~StageHost() = default;
  /// Iterations done in the whole run so far.
  virtual int64_t iteration() const = 0;
  /// Whether every rank agreed to stop (signal, time limit).
  virtual bool stopping() const = 0;
  /// Iterations from here to the next log iteration (1 to log_every).
  virtual int64_t iterations_to_log() const = 0;
  /// Counts `n` iterations done, the stage then at step `stage_step`. At a log iteration it
  /// reports `loss` (stage `stage`, rate `lr`), agrees with every rank whether to stop and
  /// writes a checkpoint when one is due, and returns true. Collective at log iterations.
  virtual bool iterations_done(int64_t n, int64_t stage_step, const LocalLoss& loss,
                               const std::string& stage, double lr) = 0;
  /// Counts the iterations a converged stage leaves out (they are not logged).
  virtual void skip(int64_t n) = 0;
  /// Counts one Adam step.
  virtual void count_adam_step() = 0;
  /// The stage's optimizers, one per owned subdomain then the shared parameters' when
  /// `shared_last`: checkpoints save them, and a continued stage loads their state now.
  virtual void adopt(std::vector<torch::optim::Optimizer*> optimizers, bool shared_last) = 0;
};

/// The trainer's parts a runner works with.
struct StageTools {
  Objective& objective;
  Reduction& reduction;
  StageHost& host;
  PointPlacement& points;
  DivergenceGuard& guard;
  const GradientSync& sync;
  TrainingTimes& times;
  /// A warning of this rank (a divergence roll-back) for the app to show.
  std::function<void(const std::string&)> warn;
};

class StageRunner {
 public:
  virtual ~StageRunner() = default;
  /// Trains `stage` from its step `first_step` (0, or where a checkpoint stopped) to its end or
  /// a stop. Collective.
  virtual void run(const StagePlan& stage, int64_t first_step) = 0;

 protected:
  /// Keeps the optimizers alive until the next stage replaces the runner: the final checkpoint
  /// saves their state.
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers_;
  std::vector<torch::optim::Optimizer*> optimizer_pointers() const;
};

/// The runner of `stage.optimizer`. Collective (a quasi-Newton stage asks every rank whether
/// the subdomains are coupled). Throws for an optimizer without a runner.
std::unique_ptr<StageRunner> make_runner(const StagePlan& stage, const StageTools& tools);
/// Whether `optimizer` (a case-format name) has a runner.
bool has_runner(const std::string& optimizer);

}  // namespace tessera::train
