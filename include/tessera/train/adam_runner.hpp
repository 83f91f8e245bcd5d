#pragma once
/// The Adam stage runner. Each iteration: the redraws due, one gradient pass (measuring the
/// terms when balancing is due), the sums over ranks, the divergence guard, then one step per
/// subdomain at the scheduled rate (times the guard's factor) and one for the shared
/// parameters. A subdomain whose loss or gradient turns non-finite does not step, and before
/// the next log iteration (or the stage's end) goes back to its last good state (kept at every
/// log iteration). Between those, nothing is read from the device.
#include "tessera/train/stage_runner.hpp"

namespace tessera::train {

class AdamRunner : public StageRunner {
 public:
  explicit AdamRunner(const StageTools& tools) : tools_(tools) {}
  void run(const StagePlan& stage, int64_t first_step) override;

 private:
  /// Iteration `k` of the stage at rate `lr`; returns its loss figures.
  LocalLoss step(const StagePlan& stage, int64_t k, double lr);
  /// Remembers every owned subdomain's current state as its last good one.
  void keep_good_states();
  /// After backward and the sums: per owned subdomain whether its gradient (and, where this
  /// rank holds it whole, its loss) is finite, as a [subdomains] bool tensor on the device.
  torch::Tensor finite_subdomains(const LocalLoss& loss) const;
  /// Rolls back every subdomain that failed since the last call (one read); the third time
  /// ends the job naming the subdomain and terms. Drops their figures from `loss`.
  void settle_divergence(LocalLoss& loss);

  StageTools tools_;
};

}  // namespace tessera::train
