#pragma once
/// Reproducible reductions on CUDA devices (the determinism rule of docs/architecture.md).
#include "tessera/core/torch_pch.hpp"

namespace tessera::core {

/// The cuBLAS workspace setting that makes its reductions reproducible, as LibTorch's
/// deterministic mode asks for it.
inline constexpr const char* kCublasWorkspace = ":4096:8";

/// For a CUDA device: turns on LibTorch's deterministic algorithms, so that index_add (the
/// causal chunk sums) and the backward of index_select add in a fixed order instead of by
/// atomics, and sets CUBLAS_WORKSPACE_CONFIG (unless the user set it) before the first cuBLAS
/// call. An operation without a deterministic version warns instead of failing. For the
/// CPU nothing changes: its operations already add in a fixed order, and turning the mode on
/// there would change which kernels run. Returns whether the mode is now on.
bool make_reductions_deterministic(const torch::Device& device);

}  // namespace tessera::core
