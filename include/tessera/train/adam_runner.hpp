#pragma once
/// The Adam stage runner. Each iteration: the redraws due, one gradient pass (measuring the
/// terms when balancing is due), the sums over ranks, the divergence guard, then one step per
/// subdomain at the scheduled rate (times the guard's factor) and one for the shared
/// parameters. A subdomain whose loss or gradient turns non-finite goes back to its last good
/// state (kept at every log iteration) instead of stepping.
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
  /// After backward and the sums: per owned subdomain, whether it may step (a non-finite one
  /// is rolled back instead; the third time ends the job naming the subdomain and terms).
  std::vector<bool> guard_against_divergence(LocalLoss& loss);

  StageTools tools_;
};

}  // namespace tessera::train
