#pragma once
/// The training objective of this rank's subdomains: the weighted loss terms over their points
/// with the neighbour exchange, evaluated whole or in parts (gradient accumulation, slices), and
/// the loss balancing that moves the weights. Stage runners ask it for one pass of the kind they
/// need; how the ranks add up the figures is the reduction strategy's.
///
/// A subdomain whose points fit one pass is evaluated whole, with the other whole subdomains
/// (one network call per kind of point set) and its interface values sent with their graph. One
/// evaluated in parts sends its interface values without a graph and recomputes each part's with
/// one, so that no pass holds more than a part's graph.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tessera/train/interface_coupling.hpp"
#include "tessera/train/local_loss.hpp"
#include "tessera/train/loss_balancer.hpp"
#include "tessera/train/plan.hpp"
#include "tessera/train/reduction.hpp"
#include "tessera/train/subdomain_model.hpp"

namespace tessera::train {

/// Per owned subdomain: the weighted value of its own terms and of its interface terms.
using SubdomainValues = std::vector<std::pair<double, double>>;

class Objective {
 public:
  /// `term_names`: every loss term of the whole problem. `weights`: fixed weights (missing
  /// terms weigh 1). `iteration`: the trainer's count, named in error messages. The owned
  /// equation groups sum their causal weights' figures through `reduction` (chunk_sum()) while
  /// the objective lives.
  Objective(std::vector<SubdomainModel*> owned, std::vector<std::string> term_names,
            const std::map<std::string, double>& weights, AdaptiveWeighting balancing,
            parallel::InterfaceExchange* exchange, Reduction& reduction, int64_t batch_points,
            const physics::SharedParameters* shared, const int64_t& iteration);
  /// Sets the owned equation groups' causal sums over their replicas back to none.
  ~Objective();
  Objective(const Objective&) = delete;
  Objective& operator=(const Objective&) = delete;

  const std::vector<SubdomainModel*>& owned() const { return owned_; }
  /// Every trainable tensor of the owned networks, in owned order.
  std::vector<torch::Tensor> parameters() const;
  const std::vector<std::string>& term_names() const { return term_names_; }
  const std::map<std::string, double>& weights() const { return weights_; }
  /// Weights from a checkpoint (terms this problem lacks are ignored).
  void restore_weights(const std::map<std::string, double>& weights);
  /// Whether loss balancing measures the terms at iteration `stage_step` of an Adam stage.
  bool balancing_due(int64_t stage_step) const { return balancer_.due(stage_step); }

  /// Converts the owned networks, their points and the shared parameters to the stage's dtype
  /// and sets how the networks' products run (the stage's precision).
  void set_precision(const StagePlan& stage);
  /// Causal weights on (first-order stages) or off in every owned equation group.
  void set_causal(bool active);

  /// One training pass with a fresh exchange: every owned subdomain's loss, backpropagated into
  /// the gradients (not yet summed over ranks). With `balance`, the terms' probe gradients are
  /// measured and the weights updated before the rest is backpropagated. A non-finite loss does
  /// not stop the job here (the divergence guard decides). Collective.
  LocalLoss gradient_pass(bool balance);
  /// gradient_pass() without balancing that stops at a non-finite loss, and tells each owned
  /// subdomain's own and interface values (`values`). Collective.
  LocalLoss checked_gradient_pass(SubdomainValues& values);
  /// The figures at the current parameters, with a fresh exchange and no gradients. Collective.
  LocalLoss figures();

  /// Exchanges interface values without graph: the neighbours' values are then frozen for
  /// subdomain_pass(). Collective.
  void freeze_neighbours();
  /// Owned subdomain `i`'s loss against the frozen neighbour values, backpropagated; stops at a
  /// non-finite loss.
  LocalLoss subdomain_pass(std::size_t i);

  double exchange_seconds() const { return coupling_.exchange_seconds(); }
  double wait_seconds() const { return coupling_.wait_seconds(); }

 private:
  struct Pass {
    bool create_graph = false;
    bool backward_interior = false;  ///< backpropagate the interior terms before the wait
    bool stop_on_nonfinite = true;
    SubdomainValues* values = nullptr;  ///< receives each subdomain's own and interface values
  };
  /// Every owned subdomain's loss with a fresh exchange overlapping the interior work.
  LocalLoss exchange_and_loss(const Pass& pass);
  /// The interior terms of the owned subdomains (per owned index), the whole ones together.
  std::vector<LocalLoss> interior_terms(const Pass& pass, const std::vector<Parts>& layout);
  /// Backpropagates the interior terms as one sum (whole subdomains share network nodes).
  void backward_interior(std::vector<LocalLoss>& interior);
  /// Adds the interface terms to each interior loss and sums them up.
  LocalLoss add_interface_terms(const Pass& pass, const std::vector<Parts>& layout,
                                const std::vector<std::vector<torch::Tensor>>& locals,
                                std::vector<LocalLoss> interior);
  /// Subdomain `model`'s interface terms on every part of `parts`.
  LocalLoss interface_parts(const Pass& pass, const SubdomainModel& model, const Parts& parts,
                            bool sent_with_graph, const std::vector<torch::Tensor>& locals);

  Parts parts_of(const SubdomainModel& model) const;
  void add_terms(LocalLoss& loss, const SubdomainModel& model,
                 const std::vector<physics::TermValue>& terms) const;
  std::vector<LocalLoss> group_terms_together(const std::vector<SubdomainModel*>& models,
                                              bool create_graph) const;
  LocalLoss group_terms(const SubdomainModel& model, bool create_graph,
                        const physics::Chunk& chunk) const;
  void prepare_chunks(const SubdomainModel& model, int chunks) const;
  /// Backpropagates one part (after taking its probe gradients when measuring) and keeps only
  /// its values.
  void backpropagate_part(LocalLoss& part, bool create_graph);
  /// Throws, naming the subdomain, the iteration and the terms, when `loss` is not finite;
  /// checked every pass so a diverged network never feeds NaN to its neighbours for long.
  void check_finite(const LocalLoss& loss, const SubdomainModel& model) const;
  /// Gradient-norm balancing: the terms' probe gradient norms summed over ranks, then new
  /// weights.
  void update_weights(const LocalLoss& loss);

  std::vector<SubdomainModel*> owned_;
  std::vector<std::string> term_names_;
  std::map<std::string, double> weights_;
  LossBalancer balancer_;
  InterfaceCoupling coupling_;
  Reduction& reduction_;
  int64_t batch_points_;
  const physics::SharedParameters* shared_;
  const int64_t& iteration_;
  TermGradients term_gradients_;  ///< a pass's probe gradients while balancing measures them
};

/// Backpropagates what a loss still holds a graph of (nothing when all parts are done).
void backpropagate_rest(const LocalLoss& loss);

}  // namespace tessera::train
