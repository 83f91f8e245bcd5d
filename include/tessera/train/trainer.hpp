#pragma once
/// The training loop: sample -> derivatives -> losses -> exchange -> backward -> step, stage by
/// stage, for the subdomains this rank owns. Each subdomain has its own optimizer, and
/// neighbour data is detached, so a subdomain's trajectory does not depend on which rank owns
/// it. Global figures are reduced per subdomain slot and summed in subdomain order, so they are
/// bit-identical on any number of ranks.
#include <functional>
#include <memory>
#include <vector>

#include "tessera/nn/mlp.hpp"
#include "tessera/parallel/environment.hpp"
#include "tessera/parallel/exchange.hpp"
#include "tessera/physics/interface_side.hpp"
#include "tessera/physics/loss_group.hpp"
#include "tessera/train/log_record.hpp"
#include "tessera/train/plan.hpp"

namespace tessera::train {

/// One subdomain's network, loss groups and interface sides, on this rank.
struct SubdomainModel {
  int id = 0;
  nn::Mlp network{nullptr};
  std::unique_ptr<physics::FieldEvaluator> fields;
  std::vector<std::unique_ptr<physics::LossGroup>> groups;
  std::vector<std::unique_ptr<physics::InterfaceSide>> interfaces;
  /// The neighbour's values for each interface side (same order), from the last exchange.
  std::vector<torch::Tensor> remote;
};

struct TrainerCallbacks {
  /// Called on every rank at each log iteration and at the end.
  std::function<void(const LogRecord&)> on_log;
  /// Relative L2 error per field; called on every rank at log iterations. Collective.
  std::function<std::map<std::string, double>()> errors;
};

class Trainer {
 public:
  /// `term_names`: every loss term of the whole problem, identical on all ranks (a rank that
  /// owns no subdomain still takes part in the reductions). `subdomains`: how many exist in
  /// all. `exchange`: the interface channels of the owned subdomains (null without interfaces).
  Trainer(parallel::Communicator comm, std::vector<SubdomainModel*> owned, int subdomains,
          std::vector<std::string> term_names, TrainingPlan plan, TrainerCallbacks callbacks,
          parallel::InterfaceExchange* exchange = nullptr);

  /// Runs every stage. Collective over comm.
  void run();

  int64_t iterations_done() const { return iteration_; }
  double wall_seconds() const;
  /// The last global record (after run()).
  const LogRecord& last_record() const { return last_; }

  /// This rank's loss figures: one slot per subdomain so reductions never depend on the
  /// rank count.
  struct LocalLoss {
    torch::Tensor total;  ///< weighted sum over the included subdomains, differentiable
    std::map<std::string, std::map<int, torch::Tensor>> sums;  ///< term -> subdomain -> mean*count
    std::map<std::string, std::map<int, double>> counts;
    std::map<std::string, torch::Tensor> terms;  ///< term -> differentiable sum of means
    std::map<int, torch::Tensor> jump_sums;      ///< subdomain -> sum of squared field jumps
    std::map<int, double> jump_counts;
    void add(const physics::TermValue& term, int subdomain, double weight);
    void merge(LocalLoss&& other);
  };

 private:
  /// Loss of one subdomain, its interface terms recomputed against the frozen `model.remote`
  /// (L-BFGS closures).
  LocalLoss subdomain_loss(SubdomainModel& model, bool create_graph);
  /// Throws, naming the subdomain, the iteration and the terms, when `loss` is not finite;
  /// checked every iteration so a diverged network never feeds NaN to its neighbours for long.
  void check_finite(const LocalLoss& loss, const SubdomainModel& model) const;
  /// Adds interface side k's terms (and its jump, on the lower side) to `loss`.
  void add_interface_terms(LocalLoss& loss, const SubdomainModel& model, std::size_t k,
                           const torch::Tensor& local) const;
  /// Computes and sends every owned interface side's values; returns them (with graph when
  /// `create_graph`), indexed like owned_ then like model.interfaces.
  std::vector<std::vector<torch::Tensor>> start_exchange(bool create_graph);
  /// Waits for the neighbours' values and stores them in each model's `remote`.
  void finish_exchange();
  /// All owned subdomains' losses with a fresh exchange overlapping the interior work. With
  /// `backward_interior`, the interior terms are also backpropagated before the wait (the
  /// costliest part overlaps the messages) and `total` holds only the interface terms left to
  /// backpropagate.
  LocalLoss exchange_and_loss(bool create_graph, bool backward_interior = false);

  void run_adam(const StagePlan& stage);
  void run_lbfgs(const StagePlan& stage);
  void apply_stage_points(const StagePlan& stage);
  void update_adaptive_weights(const LocalLoss& loss);
  /// Reduces the local figures and reports. Collective over comm.
  LogRecord log(const LocalLoss& loss, const std::string& stage, double lr, bool final);
  bool time_is_up();

  parallel::Communicator comm_;
  std::vector<SubdomainModel*> owned_;
  int subdomains_;
  std::vector<std::string> term_names_;
  TrainingPlan plan_;
  TrainerCallbacks callbacks_;
  parallel::InterfaceExchange* exchange_;
  std::map<std::string, double> weights_;
  int64_t iteration_ = 0;
  int64_t total_iterations_ = 0;
  double start_time_ = 0;
  double compute_s_ = 0, sync_s_ = 0;
  LogRecord last_;
  bool stop_ = false;
};

}  // namespace tessera::train
