#pragma once
/// Reads of tensor values into host memory. Off the CPU each one waits until the device has
/// finished everything queued before it, so a training loop that reads at every iteration
/// runs at the pace of its round trips. Training code reads only through these functions
/// (a test greps for any other read), and they count: run.json reports the reads of the Adam
/// iterations that neither log, redraw points nor balance, and tests assert that there are
/// none. The count does not depend on the device: a read on the CPU counts as it would on a GPU.
#include <cstdint>

#include "tessera/core/torch_pch.hpp"

namespace tessera::core {

/// What a read is for: a value the host decides with, or a message's copy to send over MPI.
enum class HostRead { value, message };

/// The single element of `t` (any dtype) as a double / integer / bool. One read.
double read_double(const torch::Tensor& t);
int64_t read_integer(const torch::Tensor& t);
bool read_bool(const torch::Tensor& t);
/// `t` as a contiguous CPU tensor of `dtype` (the tensor itself when nothing changes). One read
/// of kind `kind`.
torch::Tensor read_to_host(const torch::Tensor& t, torch::Dtype dtype,
                           HostRead kind = HostRead::value);
/// Whether every element of `t` is finite. One read.
bool all_finite(const torch::Tensor& t);

/// Reads of `kind` made by this process so far.
int64_t host_reads(HostRead kind = HostRead::value);

}  // namespace tessera::core
