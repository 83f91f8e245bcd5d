#pragma once
/// Which GPU a rank trains on. On a node with several GPUs, ranks take devices by their
/// node-local rank, so that four ranks on a four-GPU node use four GPUs instead of all landing
/// on the current device.
#include <optional>
#include <string>
#include <vector>

#include "tessera/parallel/environment.hpp"

namespace tessera::parallel {

/// This rank's index among the ranks of `comm` on its node (MPI_COMM_TYPE_SHARED). Collective.
int node_local_rank(const Communicator& comm);

/// The CUDA device index of a rank with node-local rank `local_rank` that sees `visible`
/// devices (> 0; CUDA_VISIBLE_DEVICES has already narrowed them, so one visible device is 0):
/// `pinned` when it is >= 0 (the case's "cuda:N"), otherwise the local rank modulo `visible`.
/// Throws when `pinned` is not below `visible`.
int cuda_device_for(int local_rank, int visible, int pinned = -1);

/// Where one rank trains: its host, and the GPU it trains on ("" for the CPU) named so that two
/// ranks on one host name the same GPU alike whatever CUDA_VISIBLE_DEVICES shows each of them
/// (its PCI bus id where the CUDA runtime is built in, else "cuda:<index>").
struct RankDevice {
  std::string host;
  std::string gpu;
};

/// CUDA device `index` as RankDevice::gpu names it.
std::string gpu_name(int index);

/// This rank's RankDevice for CUDA device `cuda_index` (-1: the CPU).
RankDevice this_rank_device(int cuda_index);

/// Every rank's RankDevice, in rank order, on every rank. Collective.
std::vector<RankDevice> gather_devices(const Communicator& comm, const RankDevice& own);

/// "" when every rank trains on the same kind of device; else one line that names the ranks on
/// GPUs and on CPUs and the fix. The ranks must agree: the gradient all-reduce of GPU ranks
/// (NCCL) and of CPU ranks (MPI) are different collectives, and a job that mixes them hangs.
std::string device_kind_disagreement(const std::vector<RankDevice>& ranks);

/// How many ranks train on the GPU that rank `rank` trains on (1 on a CPU).
int ranks_on_same_gpu(const std::vector<RankDevice>& ranks, int rank);

/// "" when no two ranks train on one GPU; else one warning line: how many GPUs are shared by
/// how many ranks, and what it costs (ranks on one GPU take turns unless MPS runs).
std::string shared_gpu_warning(const std::vector<RankDevice>& ranks);

/// Free bytes on CUDA device `index` (cudaMemGetInfo), or nullopt where this build has no CUDA
/// runtime.
std::optional<double> free_gpu_memory(int index);

}  // namespace tessera::parallel
