#pragma once
/// The training loop: sample -> derivatives -> losses -> backward -> step, stage by stage,
/// for the subdomains this rank owns. Loss figures are reduced over all ranks as (sum, count).
#include <functional>
#include <memory>
#include <vector>

#include "tessera/nn/mlp.hpp"
#include "tessera/parallel/environment.hpp"
#include "tessera/physics/loss_group.hpp"
#include "tessera/train/log_record.hpp"
#include "tessera/train/plan.hpp"

namespace tessera::train {

/// One subdomain's network and the loss groups that train it, on this rank.
struct SubdomainModel {
  int id = 0;
  nn::Mlp network{nullptr};
  std::unique_ptr<physics::FieldEvaluator> fields;
  std::vector<std::unique_ptr<physics::LossGroup>> groups;
};

struct TrainerCallbacks {
  /// Called on every rank at each log iteration and at the end (collective callers may reduce).
  std::function<void(const LogRecord&)> on_log;
  /// Relative L2 error per field; called on every rank at log iterations. Collective.
  std::function<std::map<std::string, double>()> errors;
};

class Trainer {
 public:
  /// `term_names`: every loss term of the whole problem, identical on all ranks (a rank that
  /// owns no subdomain still takes part in the reductions).
  Trainer(parallel::Communicator comm, std::vector<SubdomainModel*> owned,
          std::vector<std::string> term_names, TrainingPlan plan, TrainerCallbacks callbacks);

  /// Runs every stage. Collective over comm.
  void run();

  int64_t iterations_done() const { return iteration_; }
  double wall_seconds() const;
  /// The last global record (after run()).
  const LogRecord& last_record() const { return last_; }

 private:
  struct LocalLoss {
    torch::Tensor total;  ///< weighted sum over owned subdomains, differentiable
    /// term -> detached (mean * count) and count, for global means; read back only when logged
    /// so a GPU run does not synchronise every iteration.
    std::map<std::string, torch::Tensor> sums;
    std::map<std::string, double> counts;
    /// term -> differentiable sum of its means over owned subdomains (adaptive weighting).
    std::map<std::string, torch::Tensor> terms;
  };
  LocalLoss local_loss(bool create_graph);
  std::vector<torch::Tensor> parameters() const;
  void run_adam(const StagePlan& stage);
  void run_lbfgs(const StagePlan& stage);
  void apply_stage_points(const StagePlan& stage);
  void update_adaptive_weights();
  /// Reduces the local figures and reports. Collective over comm.
  LogRecord log(const LocalLoss& loss, const std::string& stage, double lr, bool final);
  bool time_is_up();

  parallel::Communicator comm_;
  std::vector<SubdomainModel*> owned_;
  std::vector<std::string> term_names_;
  TrainingPlan plan_;
  TrainerCallbacks callbacks_;
  std::map<std::string, double> weights_;
  int64_t iteration_ = 0;
  int64_t total_iterations_ = 0;
  double start_time_ = 0;
  double compute_s_ = 0, sync_s_ = 0;
  LogRecord last_;
  int64_t last_log_iteration_ = 0;
  double last_log_time_ = 0;
  bool stop_ = false;
};

}  // namespace tessera::train
