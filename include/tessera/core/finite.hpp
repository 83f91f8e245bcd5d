#pragma once
/// Whether a CPU tensor holds only finite values, by a plain loop over its elements: the tensor
/// route (isfinite, all, item) is three operations and a temporary per call, a visible cost of
/// small-batch iterations that check every parameter's gradient (docs/benchmarks.md,
/// "Small-batch overheads").
#include "tessera/core/torch_pch.hpp"

namespace tessera::core {

/// `t` must be on the CPU; any floating dtype and layout.
bool finite_on_cpu(const torch::Tensor& t);

}  // namespace tessera::core
