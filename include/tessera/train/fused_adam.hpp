#pragma once
/// Adam whose step is one loop per parameter on the CPU.
#include <torch/optim/adam.h>

namespace tessera::train {

/// torch::optim::Adam with the same update, options and state (AdamParamState, so checkpoints
/// and the divergence guard's saved states are unchanged), but for CPU float32/float64
/// parameters without weight decay or AMSGrad the moments and the parameter are updated in one
/// pass per parameter instead of ten tensor operations, whose overhead is visible in
/// small-batch iterations (docs/benchmarks.md, "Fused Adam"). Anything else takes LibTorch's
/// step.
class FusedAdam : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;
  /// One step where `ok` (a bool tensor of no dimensions, on the parameters' device) holds and
  /// none where it does not, without reading `ok` on the host: on the CPU the fused loop reads
  /// it as a kernel would; elsewhere every update is computed and kept where `ok` holds. There
  /// the step count advances either way (the divergence guard's roll-back that follows a
  /// skipped step restores it).
  void step_where(const torch::Tensor& ok);

 private:
  bool fusable() const;
  /// `p`'s moments (zeros at its first step), its step count advanced by one.
  torch::optim::AdamParamState& advance(const torch::Tensor& p);
};

}  // namespace tessera::train
