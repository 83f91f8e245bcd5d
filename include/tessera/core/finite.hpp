#pragma once
/// Whether a tensor holds only finite values. On the CPU, for float32 and float64, a plain
/// loop over the elements: the tensor route (isfinite, all, item) is three operations and a
/// temporary per call, a visible cost of small-batch iterations that check every parameter and
/// every received interface value (docs/benchmarks.md, "Small-batch overheads").
#include "tessera/core/torch_pch.hpp"

namespace tessera::core {

bool all_finite(const torch::Tensor& t);

}  // namespace tessera::core
