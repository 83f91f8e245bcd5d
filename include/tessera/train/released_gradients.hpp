#pragma once
/// Gradients released at the start of an Adam iteration instead of zeroed. The first backward
/// pass then stores each gradient instead of adding it to zeros, which saves two operations per
/// parameter tensor and gives the same bits. What LibTorch 1.x's zero_grad did for a parameter
/// that no term reaches is kept: if it had a gradient it steps on zeros, if it never had one it
/// still has none (the optimizer skips it).
#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include <vector>

namespace tessera::train {

/// Drops the gradient of every parameter of `optimizer`; returns the parameters that had one.
std::vector<torch::Tensor> release_gradients(torch::optim::Optimizer& optimizer);

/// After the iteration's backward passes: zeros for each released parameter that none reached.
void zero_missing_gradients(const std::vector<torch::Tensor>& released);

}  // namespace tessera::train
