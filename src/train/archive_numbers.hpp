#pragma once
// Numbers in checkpoint archives: each is a 0-d float64 tensor under its key (private to train).
#include <string>

#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::train::detail {

inline torch::Tensor archived_number(double value) {
  return torch::full({}, value, torch::kFloat64);
}

inline double read_archived_number(torch::serialize::InputArchive& archive,
                                   const std::string& key) {
  torch::Tensor t;
  archive.read(key, t);
  return core::read_double(t);
}

}  // namespace tessera::train::detail
