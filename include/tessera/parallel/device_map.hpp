#pragma once
/// Which GPU a rank trains on. On a node with several GPUs, ranks take devices by their
/// node-local rank, so that four ranks on a four-GPU node use four GPUs instead of all landing
/// on the current device.
#include "tessera/parallel/environment.hpp"

namespace tessera::parallel {

/// This rank's index among the ranks of `comm` on its node (MPI_COMM_TYPE_SHARED). Collective.
int node_local_rank(const Communicator& comm);

/// The CUDA device index of a rank with node-local rank `local_rank` that sees `visible`
/// devices (> 0; CUDA_VISIBLE_DEVICES has already narrowed them, so one visible device is 0):
/// `pinned` when it is >= 0 (the case's "cuda:N"), otherwise the local rank modulo `visible`.
/// Throws when `pinned` is not below `visible`.
int cuda_device_for(int local_rank, int visible, int pinned = -1);

}  // namespace tessera::parallel
