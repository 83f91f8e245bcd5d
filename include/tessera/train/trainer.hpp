#pragma once
/// The training loop: sample -> derivatives -> losses -> exchange -> backward -> step, stage by
/// stage, for the subdomains this rank owns. Each subdomain has its own optimizer, and
/// neighbour data is detached, so a subdomain's trajectory does not depend on which rank owns
/// it. Global figures are reduced per subdomain slot and summed in subdomain order, so they are
/// bit-identical on any number of ranks.
#include <functional>
#include <memory>
#include <vector>

#include "tessera/parallel/environment.hpp"
#include "tessera/parallel/exchange.hpp"
#include "tessera/parallel/gradient_all_reduce.hpp"
#include "tessera/physics/shared_parameters.hpp"
#include "tessera/train/checkpoint_state.hpp"
#include "tessera/train/divergence_guard.hpp"
#include "tessera/train/interface_coupling.hpp"
#include "tessera/train/local_loss.hpp"
#include "tessera/train/log_record.hpp"
#include "tessera/train/loss_balancer.hpp"
#include "tessera/train/plan.hpp"
#include "tessera/train/slice_sums.hpp"
#include "tessera/train/subdomain_model.hpp"

namespace tessera::train {

struct TrainerCallbacks {
  /// Called on every rank at each log iteration and at the end.
  std::function<void(const LogRecord&)> on_log;
  /// Relative L2 error per field; called on every rank at log iterations. Collective.
  std::function<std::map<std::string, double>()> errors;
  /// Writes a checkpoint; called on every rank every `checkpoint_every` iterations (at log
  /// iterations), when the run stops early and at the end. Collective.
  std::function<void(CheckpointState&)> on_checkpoint;
  /// A warning on this rank (a divergence roll-back); the app shows it on standard error.
  std::function<void(const std::string&)> on_warning;
};

/// The DDP-style gradient sums: replicas of a subdomain and shared parameters.
struct GradientSync {
  /// Sums the owned networks' gradients over this rank's replica group each step (null: the
  /// group is this rank alone). Each replica's loss is its share of the global mean, so the
  /// sum is the gradient of the mean over every point.
  parallel::GradientAllReduce* replicas = nullptr;
  /// The shared trainable parameters (null: none); every rank holds and steps its own copy.
  const physics::SharedParameters* parameters = nullptr;
  /// Sums the parameters' gradients over the world each step (null on one rank).
  parallel::GradientAllReduce* parameter_sum = nullptr;
  /// L-BFGS runs per subdomain, so shared parameters can join it only when the job trains a
  /// single subdomain (ranks that own nothing then copy the owner's values after every chunk);
  /// otherwise they hold still during L-BFGS stages.
  bool parameters_in_lbfgs = false;
  /// The ranks of the group share the points out by slices (fbpinn): each evaluates its own
  /// slices and every sum over the group (gradients, loss figures, the balancing probes) runs
  /// slice by slice in order, in place of the two all-reduces above.
  SliceShare slices;
};

class Trainer {
 public:
  /// `term_names`: every loss term of the whole problem, identical on all ranks (a rank that
  /// owns no subdomain still takes part in the reductions). `subdomains`: how many exist in
  /// all. `exchange`: the interface channels of the owned subdomains (null without interfaces).
  Trainer(parallel::Communicator comm, std::vector<SubdomainModel*> owned, int subdomains,
          std::vector<std::string> term_names, TrainingPlan plan, TrainerCallbacks callbacks,
          parallel::InterfaceExchange* exchange = nullptr, GradientSync sync = {});

  /// Continues from a checkpoint instead of the start (before run()).
  void resume(RestoredCheckpoint checkpoint);
  /// Runs every stage (from the resumed position). Collective over comm.
  void run();
  /// Why training stopped before the end ("SIGTERM", "SIGUSR1", "time_limit"), or "".
  const std::string& stop_reason() const { return stop_reason_; }

  int64_t iterations_done() const { return iteration_; }
  /// Adam steps taken (each does one replica all-reduce and one parameter all-reduce).
  int64_t adam_steps() const { return adam_steps_; }
  double wall_seconds() const;
  /// The last global record (after run()).
  const LogRecord& last_record() const { return last_; }

 private:
  /// Loss of one subdomain, its interface terms recomputed against the frozen `model.remote`
  /// (L-BFGS closures). Evaluated in parts (training.batch), each part is backpropagated here
  /// and only values come back; backpropagate_rest() then does nothing.
  LocalLoss subdomain_loss(SubdomainModel& model, bool create_graph);
  /// The parts of a pass over a subdomain's points: `count` in all, this rank evaluating
  /// [first, end).
  struct Parts {
    int count = 1, first = 0, end = 1;
    bool sliced = false;  ///< each part is backpropagated and recorded on its own, even one
    bool many() const { return count > 1 || sliced; }
  };
  /// Parts per pass of `model`'s points: 1, or with plan_.batch_points its largest point set
  /// over batch_points, rounded up; with slices, that many per slice, this rank's slices only.
  Parts parts_of(const SubdomainModel& model) const;
  /// With slices: keeps what `part` (just backpropagated when `create_graph`) adds to the sums
  /// and clears the gradients for the next part.
  void record_slice_part(const SubdomainModel& model, const LocalLoss& part, bool create_graph);
  /// With slices: the recorded parts of every rank summed in slice order into the gradients
  /// and a LocalLoss of the whole pass (the same on every rank of the group). Collective over
  /// the group.
  LocalLoss fold_slices(const SubdomainModel& model);
  /// Adds `terms` of `model` with their weights.
  void add_terms(LocalLoss& loss, const SubdomainModel& model,
                 const std::vector<physics::TermValue>& terms) const;
  /// group_terms of whole subdomains (no parts) with their fields evaluated together.
  std::vector<LocalLoss> group_terms_together(const std::vector<SubdomainModel*>& models,
                                              bool create_graph) const;
  /// The terms of `model`'s loss groups on part `chunk` of their points.
  LocalLoss group_terms(const SubdomainModel& model, bool create_graph,
                        const physics::Chunk& chunk) const;
  /// Lets `model`'s groups see every point before a pass in `chunks` parts (causal weights).
  void prepare_chunks(const SubdomainModel& model, int chunks) const;
  /// Backpropagates one part of a training pass (`create_graph`; after measuring its terms'
  /// gradients when balancing is due) and keeps only its values.
  void backpropagate_part(LocalLoss& part, bool create_graph);
  /// Backpropagates what a loss still holds a graph of (nothing when all parts are done).
  static void backpropagate_rest(const LocalLoss& loss);
  /// Throws, naming the subdomain, the iteration and the terms, when `loss` is not finite;
  /// checked every iteration so a diverged network never feeds NaN to its neighbours for long.
  void check_finite(const LocalLoss& loss, const SubdomainModel& model) const;
  /// All owned subdomains' losses with a fresh exchange overlapping the interior work. With
  /// `backward_interior`, the interior terms are also backpropagated before the wait (the
  /// costliest part overlaps the messages) and `total` holds only the interface terms left to
  /// backpropagate.
  /// With `stop_on_nonfinite` false (Adam: the divergence guard decides) a non-finite loss
  /// does not end the job here.
  /// `parts` (if given) receives, per owned subdomain, the weighted value of its own terms and
  /// of its interface terms.
  LocalLoss exchange_and_loss(bool create_graph, bool backward_interior = false,
                              bool stop_on_nonfinite = true,
                              std::vector<std::pair<double, double>>* parts = nullptr);

  /// Sums gradients over the replica group and the shared parameters' over the world.
  void sum_gradients();
  /// Every trainable tensor of the owned networks.
  std::vector<torch::Tensor> owned_parameters() const;
  void run_adam(const StagePlan& stage, int64_t first_step);
  /// L-BFGS, BFGS or SSBroyden: one optimizer per subdomain, run in chunks between exchanges.
  void run_quasi_newton(const StagePlan& stage, int64_t first_step);
  /// BFGS or SSBroyden over subdomains coupled in space: one line search over the sum of all
  /// subdomains' losses, with a fresh exchange at every evaluation, and a block-diagonal
  /// inverse Hessian (one block per subdomain). Collective over comm.
  void run_joint_quasi_newton(const StagePlan& stage, int64_t first_step);
  /// Whether any subdomain of the job has an interface (`in_time`: one across time). Collective.
  bool coupled(bool in_time) const;
  /// The quasi-Newton optimizer of a stage over `parameters`.
  std::unique_ptr<torch::optim::Optimizer> quasi_newton(
      const StagePlan& stage, std::vector<torch::Tensor> parameters) const;
  /// Converts the owned networks, their points and the shared parameters to the stage's dtype,
  /// and sets how the networks' products run (the stage's precision).
  void set_precision(const StagePlan& stage);
  /// At a log iteration: agrees with every rank whether to stop (signal, time limit) and
  /// writes a checkpoint when one is due. Collective over comm.
  void after_log(int64_t stage_step);
  /// This rank's checkpoint at the current position. `optimizers` per owned subdomain (+ the
  /// shared parameters' optimizer last, when there is one in this stage).
  CheckpointState capture(int64_t stage_step) const;
  /// Loads the optimizers' state from the pending checkpoint (then forgets it).
  void restore_optimizers();
  /// A checkpoint written at the end of a run whose last stage has since been given more
  /// iterations continues inside that stage, at the step it had reached.
  void extend_finished_run(CheckpointPosition& position) const;

  /// Remembers every owned subdomain's current state as its last good one.
  void keep_good_states();
  /// After backward and the gradient sums: a subdomain whose gradient (or, without replicas,
  /// loss) is not finite goes back to its last good state with its learning rate halved and
  /// skips this step; the third time ends the job naming the subdomain, the terms and the
  /// iteration. Returns, per owned subdomain, whether it may step.
  std::vector<bool> guard_against_divergence(LocalLoss& loss);
  /// A stage's own point count, drawn at once (by the residual when that is on).
  void apply_stage_points(const StagePlan& stage);
  /// Redistributes every owned subdomain's collocation points by the residual; with several
  /// subdomains (and `across_subdomains`) their counts follow their share of the residual over
  /// the job, the total kept. Collective over comm.
  void adapt_points();
  /// `width` figures per owned subdomain -> the same figures of every subdomain of the job,
  /// subdomain s at [s * width, (s + 1) * width): filled by the subdomain's first replica and
  /// summed over ranks, so every rank gets the same numbers whichever rank owns what.
  /// Collective over comm.
  std::vector<double> subdomain_figures(const std::vector<std::vector<double>>& per_owned,
                                        std::size_t width);
  /// Gradient-norm balancing: the terms' gradient norms summed over ranks, then new weights.
  void update_adaptive_weights(const LocalLoss& loss);
  /// Causal weights on (Adam) or off (quasi-Newton) in every owned equation group.
  void set_causal(bool active);
  /// Every rank takes the shared parameters of the subdomain's first replica (L-BFGS moves them
  /// only where the subdomain is trained).
  void share_lbfgs_parameters();
  /// Reduces the local figures and reports. Collective over comm.
  LogRecord log(const LocalLoss& loss, const std::string& stage, double lr, bool final);

  parallel::Communicator comm_;
  std::vector<SubdomainModel*> owned_;
  int subdomains_;
  std::vector<std::string> term_names_;
  TrainingPlan plan_;
  TrainerCallbacks callbacks_;
  InterfaceCoupling coupling_;
  GradientSync sync_;
  int64_t adam_steps_ = 0;
  std::size_t stage_index_ = 0;
  /// The current stage's optimizers: one per owned subdomain, then the shared parameters'.
  std::vector<std::unique_ptr<torch::optim::Optimizer>> optimizers_;
  bool parameter_optimizer_ = false;  ///< the last of optimizers_ moves the shared parameters
  std::optional<RestoredCheckpoint> resume_;
  DivergenceGuard guard_;  ///< one slot per owned subdomain
  LossBalancer balancer_;
  /// While balancing is due in a pass evaluated in parts: each part's term gradients (probes)
  /// are taken before its graph goes, and summed here.
  bool measuring_terms_ = false;
  std::vector<torch::Tensor> part_term_gradients_;
  std::vector<SliceRecord> slice_records_;  ///< this pass's parts so far (with slices)
  int64_t last_checkpoint_ = -1;
  std::string stop_reason_;
  std::map<std::string, double> weights_;
  int64_t iteration_ = 0;
  int64_t total_iterations_ = 0;
  double start_time_ = 0;
  double compute_s_ = 0, sync_s_ = 0;
  LogRecord last_;
  bool stop_ = false;
};

}  // namespace tessera::train
