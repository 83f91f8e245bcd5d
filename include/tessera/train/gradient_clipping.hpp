#pragma once
/// Gradient clipping for the Adam stages (`clip`), without reading the norm back to the host.
#include <vector>

#include "tessera/core/torch_pch.hpp"

namespace tessera::train {

/// LibTorch's clip_grad_norm_ with the 2-norm, the same operations and bits, but the norm stays
/// on the device: the defined gradients of `parameters` are scaled by
/// min(1, max_norm / (norm + 1e-6)), norm the 2-norm of all of them together.
void clip_gradient_norm(const std::vector<torch::Tensor>& parameters, double max_norm);

}  // namespace tessera::train
