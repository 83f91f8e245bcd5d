#pragma once
// The weights and biases of a grouped call's networks stacked per layer (see
// taylor_partials_grouped and SharedStacks in tessera/autodiff/taylor.hpp).
#include <utility>
#include <vector>

#include "tessera/autodiff/taylor.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/nn/mlp.hpp"

namespace tessera::autodiff {

/// `weights` and `biases` ([layer][group], one group per network) stacked per layer: from the
/// innermost SharedStacks scope where it holds them already, else made here (and kept by the
/// scope when every tensor is a parameter itself).
std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> stacked(
    const std::vector<const nn::MlpImpl*>& networks,
    const std::vector<std::vector<torch::Tensor>>& weights,
    const std::vector<std::vector<torch::Tensor>>& biases);

}  // namespace tessera::autodiff
