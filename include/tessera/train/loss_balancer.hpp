#pragma once
/// Loss balancing (the "grad_norm" option): every `every` Adam iterations each term i gets
/// lambda_hat_i = sum_j s_j / s_i and lambda_i <- alpha lambda_i + (1 - alpha) lambda_hat_i,
/// with s_i = sqrt(q_i) and q_i the mean over the term's points of |grad r_i(x)|^2, the trace of
/// its neural tangent kernel per point (Wang, Yu & Perdikaris 2022). Ratios of traces (the
/// "ntk" weights of jaxpi) gave weights of 1e7 to a sparse gauge term and stalled the cavity
/// (docs/benchmarks.md, "Loss balancing"); ratios of their square roots did not.
///
/// The rule of "An expert's guide to training PINNs" (2023) takes s_i = |grad L_i| instead.
/// That norm vanishes as a term becomes satisfied (grad L_i = 2 mean(r grad r)), so the rule
/// raises the weight of every satisfied term without bound: a one-point pressure gauge or a
/// wall that is already still pulls as hard as the unsolved term that drives the flow, and
/// training settles on the trivial solution. s_i measures how stiff a term is, not how small
/// its residual already is, and stays finite as the residual goes to zero. It is estimated
/// from each term's probe (physics::Probe): one backward pass per term.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/loss_group.hpp"
#include "tessera/train/plan.hpp"
#include "tessera/train/reduction.hpp"

namespace tessera::train {

class LossBalancer {
 public:
  LossBalancer(AdaptiveWeighting settings, std::vector<std::string> term_names);

  bool enabled() const { return settings_.enabled; }
  /// Whether the weights are updated at iteration `stage_step` of an Adam stage.
  bool due(int64_t stage_step) const {
    return settings_.enabled && stage_step % settings_.every == 0;
  }

  /// Each term's probe gradient over `parameters` (the gradient of the sum of its parts'
  /// probes, in their order), flattened into one float64 vector (zeros for a term absent from
  /// `probes` or without a graph), in term_names order.
  std::vector<torch::Tensor> term_gradients(
      const std::map<std::string, std::vector<physics::Probe>>& probes,
      const std::vector<torch::Tensor>& parameters) const;

  /// The terms' probe `gradients` on this rank (per term, flat over `owned`'s parameters in
  /// order) summed over the job as `reduction` sums them, one slot per subdomain in subdomain
  /// order, then update() with them. Collective over the job.
  void rebalance(std::vector<torch::Tensor> gradients, const std::vector<SubdomainModel*>& owned,
                 Reduction& reduction, std::map<std::string, double>& weights) const;

  /// Moves `weights` toward the balancing weights of the terms' global q (the squared probe
  /// gradient norms summed over every network), in term_names order; a term with q = 0 keeps its
  /// weight.
  void update(const std::vector<double>& squared_norms,
              std::map<std::string, double>& weights) const;

 private:
  AdaptiveWeighting settings_;
  std::vector<std::string> term_names_;
};

}  // namespace tessera::train
