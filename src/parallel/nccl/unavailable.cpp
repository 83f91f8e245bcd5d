// Without NCCL (TESSERA_HAVE_NCCL unset) the CUDA path of GradientAllReduce explains itself.
// With NCCL, CMake compiles nccl_all_reduce.cpp (next to this file) instead of this file.
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/gradient_all_reduce.hpp"
#include "tessera/parallel/nccl_all_reduce.hpp"

namespace tessera::parallel {

struct NcclAllReduce::State {};

NcclAllReduce::NcclAllReduce(const Communicator&, int) {
  TESSERA_FAIL(
      "gradients on a CUDA device need the NCCL backend, but this build has none "
      "(CMake found no CUDA toolkit with NCCL); rebuild with NCCL or set \"device\": \"cpu\"");
}

NcclAllReduce::~NcclAllReduce() = default;

void NcclAllReduce::sum_in_place(torch::Tensor&) {}

int cuda_device_count() { return 0; }

bool have_nccl() { return false; }

}  // namespace tessera::parallel
