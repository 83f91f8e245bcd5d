#pragma once
/// Values at scattered points written by rank 0: `output.points` at the end of a run and
/// `tessera evaluate`.
#include <functional>
#include <string>
#include <vector>

#include "tessera/core/torch_pch.hpp"
#include "tessera/io/point_files.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::app {

/// The columns of `values` [n, names.size()] float64, named.
io::PointValues named_columns(const torch::Tensor& values, const std::vector<std::string>& names);

/// Runs `write` on rank 0; when it throws, every rank throws io::WriteError with its message
/// (the others would otherwise wait for rank 0 forever). Collective over comm.
void write_on_root(const parallel::Communicator& comm, const std::function<void()>& write);

}  // namespace tessera::app
