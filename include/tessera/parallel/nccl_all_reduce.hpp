#pragma once
/// The NCCL path of GradientAllReduce: a communicator bootstrapped through MPI (rank 0 makes
/// the unique id and broadcasts it) with its own CUDA stream. Built only when CMake found CUDA
/// and NCCL (TESSERA_HAVE_NCCL); otherwise creating one throws.
#include <torch/types.h>

#include <string>

#include "tessera/parallel/environment.hpp"

namespace tessera::parallel {

class NcclAllReduce {
 public:
  /// Binds this rank to CUDA device `device` (the one its networks live on: see
  /// device_map.hpp) and creates the NCCL communicator over `comm`. Collective over comm.
  NcclAllReduce(const Communicator& comm, int device);
  ~NcclAllReduce();
  NcclAllReduce(const NcclAllReduce&) = delete;
  NcclAllReduce& operator=(const NcclAllReduce&) = delete;

  /// Sums a contiguous CUDA float32/float64 tensor in place over the communicator: waits for
  /// the work queued on the tensor's device, reduces on NCCL's own stream, waits for it.
  void sum_in_place(torch::Tensor& bucket);

 private:
  struct State;
  State* state_ = nullptr;
};

/// The number of CUDA devices the CUDA runtime sees (0 without a GPU or without NCCL support).
int cuda_device_count();

/// The PCI bus id of CUDA device `device` ("0000:19:00.0"): the same in every process on the
/// host that uses that GPU, whatever index CUDA_VISIBLE_DEVICES gives it. Empty where the CUDA
/// runtime cannot tell (or without NCCL support).
std::string cuda_device_bus_id(int device);

}  // namespace tessera::parallel
