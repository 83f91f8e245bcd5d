#pragma once
/// How the ranks add up what they computed: chosen once per run from how a subdomain's points
/// are held, so the training code asks the strategy instead of testing which mode is on.
///
/// - One rank per subdomain (owner): each job-wide figure slot has one contributor; gradients
///   need no sum.
/// - Data-parallel replicas (replica): every rank of a group holds a share of each term, so
///   gradients, probe gradients, the quasi-Newton values and the causal weights' per-chunk sums
///   are summed over the group, and only the group's first rank fills the job-wide slots.
/// - Points shared out by slices (slice, fbpinn): each part of a pass is recorded apart and the
///   parts are folded in slice order on every rank of the group, so the group's figures and
///   gradients are already whole and nothing is summed again.
///
/// Every job-wide figure lives in one slot per subdomain, filled by one rank and summed in
/// subdomain order, so every rank gets the same bits whichever rank owns what.
#include <memory>
#include <string>
#include <vector>

#include "tessera/parallel/environment.hpp"
#include "tessera/parallel/gradient_all_reduce.hpp"
#include "tessera/physics/causal_weights.hpp"
#include "tessera/physics/shared_parameters.hpp"
#include "tessera/train/local_loss.hpp"
#include "tessera/train/slice_sums.hpp"
#include "tessera/train/subdomain_model.hpp"

namespace tessera::train {

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
  /// A quasi-Newton stage run per subdomain can move shared parameters only when the job trains
  /// a single subdomain (ranks that own nothing then copy the owner's values after every chunk);
  /// otherwise they hold still during quasi-Newton stages.
  bool parameters_in_quasi_newton = false;
  /// The ranks of the group share the points out by slices (fbpinn): each evaluates its own
  /// slices and every sum over the group (gradients, loss figures, the balancing probes) runs
  /// slice by slice in order, in place of the two all-reduces above.
  SliceShare slices;
};

/// The parts of a pass over a subdomain's points: `count` in all, this rank evaluating
/// [first, end).
struct Parts {
  int count = 1, first = 0, end = 1;
  /// Each part is backpropagated and recorded on its own (even a single one).
  bool apart = false;
  /// One pass over every point, evaluated with the other whole subdomains.
  bool whole() const { return count == 1 && !apart; }
};

/// The balancing probes' gradients of a pass, per term (loss balancing measures them when due).
struct TermGradients {
  bool measuring = false;
  std::vector<torch::Tensor> sums;  ///< per term, flat float64 over the owned parameters
};

class Reduction {
 public:
  /// `owned`: the subdomains this rank trains. `sync_seconds` receives the time spent in sums
  /// over ranks.
  static std::unique_ptr<Reduction> choose(parallel::Communicator comm, int subdomains,
                                           std::vector<SubdomainModel*> owned,
                                           std::vector<std::string> term_names, GradientSync sync,
                                           double& sync_seconds);
  virtual ~Reduction() = default;

  /// Whether this rank gives its owned subdomains' figures (job-wide slots, checkpoints, the
  /// shared parameters after an L-BFGS chunk): the first rank of its group.
  virtual bool fills_slots() const = 0;
  /// Whether a subdomain's own non-finite loss rolls it back; otherwise the summed gradient,
  /// the same on every rank of the group, decides alone.
  virtual bool loss_decides_divergence() const = 0;
  /// The parts of a pass whose largest point set has `largest` points (`batch_points` <= 0: no
  /// gradient accumulation).
  virtual Parts parts(int64_t largest, int64_t batch_points) const = 0;

  /// Adam: sums the owned networks' gradients (`owned_parameters`) and the shared parameters'.
  virtual void sum_gradients(const std::vector<torch::Tensor>& owned_parameters) = 0;
  /// Per-subdomain quasi-Newton: the loss the optimizer sees for a subdomain whose own value is
  /// `total`, its `trained` tensors' gradients summed over the group first where needed.
  virtual torch::Tensor closure_value(const torch::Tensor& total,
                                      const std::vector<torch::Tensor>& trained) = 0;
  /// Joint quasi-Newton: the owned gradients and the per-subdomain `values` summed over the
  /// group where each rank holds a share.
  virtual void sum_shares(const std::vector<torch::Tensor>& owned_parameters,
                          std::vector<double>& values) = 0;
  /// Loss balancing: the probe gradients summed over the group where each rank holds a share.
  virtual void sum_term_gradients(std::vector<torch::Tensor>& gradients) = 0;
  /// The log's per-slot figures summed over the job.
  virtual void sum_log_figures(std::vector<double>& figures) = 0;
  /// Causal weights: how an owned equation group's per-chunk sums join those of the other ranks
  /// that hold rows of its sample (unset where every rank holds its samples whole).
  virtual physics::ChunkSum chunk_sum() { return {}; }

  /// Adds one part's probe gradients (`part_gradients`, per term) to `terms`; with slices each
  /// part's are kept apart until record_part() takes them.
  virtual void add_term_gradients(TermGradients& terms,
                                  std::vector<torch::Tensor> part_gradients) = 0;
  /// After a part of a pass over `model` was backpropagated (when `create_graph`): with slices,
  /// keeps what it adds to the sums (its gradients, figures and `terms`) and clears the
  /// gradients for the next part; otherwise nothing.
  virtual void record_part(const SubdomainModel& model, const LocalLoss& part, bool create_graph,
                           TermGradients& terms) = 0;
  /// After the last part of `model`'s pass: the pass's loss as the group holds it (`merged`: the
  /// parts this rank evaluated), its gradients in the parameters. Collective over the group with
  /// slices.
  virtual LocalLoss finish_parts(const SubdomainModel& model, LocalLoss merged,
                                 TermGradients& terms) = 0;

  /// `width` figures per owned subdomain -> the same figures of every subdomain of the job,
  /// subdomain s at [s * width, (s + 1) * width). Collective over the job.
  std::vector<double> subdomain_figures(const std::vector<std::vector<double>>& per_owned,
                                        std::size_t width);
  /// Every rank takes the shared parameters of the trained subdomain's first replica (one
  /// subdomain: L-BFGS moves them only where it is trained). Collective over the job.
  void share_parameters(const physics::SharedParameters& parameters);

  const parallel::Communicator& comm() const { return comm_; }
  int subdomains() const { return subdomains_; }

 protected:
  Reduction(parallel::Communicator comm, int subdomains, std::vector<SubdomainModel*> owned,
            GradientSync sync, double& sync_seconds)
      : comm_(comm),
        subdomains_(subdomains),
        owned_(std::move(owned)),
        sync_(sync),
        sync_s_(sync_seconds) {}

  /// The shared parameters' gradients summed over the job (a no-op without them).
  void sum_shared_gradients();

  parallel::Communicator comm_;
  int subdomains_;
  std::vector<SubdomainModel*> owned_;
  GradientSync sync_;
  double& sync_s_;
};

}  // namespace tessera::train
