#include "tessera/core/determinism.hpp"

#include <cstdlib>

#include <ATen/Context.h>

namespace tessera::core {

bool make_reductions_deterministic(const torch::Device& device) {
  if (!device.is_cuda()) return at::globalContext().deterministicAlgorithms();
  // Not overwritten: a user who set it knows what their cuBLAS needs.
  setenv("CUBLAS_WORKSPACE_CONFIG", kCublasWorkspace, /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  return true;
}

}  // namespace tessera::core
