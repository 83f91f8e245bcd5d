#pragma once
/// DDP-style gradient sums: the gradients of many tensors flattened into one bucket and summed
/// over a communicator with a single all-reduce (never one call per parameter). CPU tensors go
/// through MPI. CUDA tensors go through NCCL when Tessera was built with it and every rank of the
/// communicator has a GPU of its own; otherwise (no NCCL, or ranks sharing a GPU, which NCCL
/// refuses) through MPI on host copies. The choice is made at the first CUDA bucket.
#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "tessera/parallel/environment.hpp"

namespace tessera::parallel {

class NcclAllReduce;

class GradientAllReduce {
 public:
  explicit GradientAllReduce(Communicator comm);
  ~GradientAllReduce();
  GradientAllReduce(const GradientAllReduce&) = delete;
  GradientAllReduce& operator=(const GradientAllReduce&) = delete;

  /// Replaces each tensor's .grad with its sum over the communicator (a tensor without a
  /// gradient contributes zeros and receives the sum); `extras` (e.g. loss values) ride in the
  /// same bucket and are summed too. All tensors share one dtype and device. One all-reduce.
  /// Collective over comm.
  void sum_gradients(const std::vector<torch::Tensor>& tensors,
                     std::vector<double>* extras = nullptr);

  /// All-reduce calls made so far (the test counts one per step).
  int64_t calls() const { return calls_; }
  const Communicator& communicator() const { return comm_; }
  /// Whether CUDA buckets are summed through NCCL (false before the first CUDA bucket, on one
  /// rank, and where they go through MPI on host copies).
  bool sums_through_nccl() const { return nccl_ != nullptr; }

 private:
  /// Sums `bucket` (contiguous) in place over comm.
  void all_reduce(torch::Tensor& bucket);
  /// Sums a contiguous CPU bucket in place through MPI.
  void mpi_sum(torch::Tensor& bucket);

  Communicator comm_;
  bool cuda_path_chosen_ = false;
  std::unique_ptr<NcclAllReduce> nccl_;  ///< created at the first CUDA bucket, where usable
  int64_t calls_ = 0;
};

/// True when this build has the NCCL backend.
bool have_nccl();

}  // namespace tessera::parallel
