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

 private:
  bool fusable() const;
};

}  // namespace tessera::train
