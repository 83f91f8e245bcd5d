// Without NCCL (TESSERA_HAVE_NCCL unset) GradientAllReduce sums CUDA buckets through MPI on
// host copies and never creates an NcclAllReduce. With NCCL, CMake compiles nccl_all_reduce.cpp
// (next to this file) instead of this file.
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/gradient_all_reduce.hpp"
#include "tessera/parallel/nccl_all_reduce.hpp"

namespace tessera::parallel {

struct NcclAllReduce::State {};

NcclAllReduce::NcclAllReduce(const Communicator&, int) {
  TESSERA_ASSERT(false, "an NCCL communicator was asked for in a build without NCCL");
}

NcclAllReduce::~NcclAllReduce() = default;

void NcclAllReduce::sum_in_place(torch::Tensor&) {}

int cuda_device_count() { return 0; }

std::string cuda_device_bus_id(int) { return {}; }

bool have_nccl() { return false; }

}  // namespace tessera::parallel
