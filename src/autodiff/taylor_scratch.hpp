#pragma once
// Memory the CPU node writes before it reads: left uninitialised in release builds, since
// zero-filling it was a visible cost of small-batch iterations (docs/benchmarks.md,
// "Uninitialised scratch buffers"). Debug builds (tools/sanitize.sh) fill it with NaN instead,
// so a read before the write poisons the results and the tests see it.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>

#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor::detail {

/// Storage for n values of T.
template <typename T>
std::unique_ptr<T[]> uninitialised(int64_t n) {
  std::unique_ptr<T[]> data(new T[static_cast<std::size_t>(n)]);
#ifndef NDEBUG
  std::fill(data.get(), data.get() + n, std::numeric_limits<T>::quiet_NaN());
#endif
  return data;
}

/// A tensor of `sizes`.
inline torch::Tensor unwritten(at::IntArrayRef sizes, const torch::TensorOptions& options) {
#ifndef NDEBUG
  return torch::full(sizes, std::numeric_limits<double>::quiet_NaN(), options);
#else
  return torch::empty(sizes, options);
#endif
}

/// `count` sets of `size` values each (block-local arrays, one set per thread).
template <typename T>
class Scratch {
 public:
  Scratch(int count, int64_t size) : data_(uninitialised<T>(count * size)), size_(size) {}
  T* operator[](int k) { return data_.get() + k * size_; }

 private:
  std::unique_ptr<T[]> data_;
  int64_t size_;
};

}  // namespace tessera::autodiff::taylor::detail
