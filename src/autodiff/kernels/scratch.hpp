#pragma once
// Memory the CPU node writes before it reads: left uninitialised in release builds, since
// zero-filling it was a visible cost of small-batch iterations (docs/benchmarks.md,
// "Uninitialised scratch buffers"). Debug builds (tools/sanitize.sh) fill it with NaN instead,
// so a read before the write poisons the results and the tests see it.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>

#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor::detail {

/// Alignment of scratch storage: one cache line, the kernels' vector. Rows of whole vectors
/// then start on a line and no vector load or store straddles two lines; malloc's 16-byte
/// alignment left most of them straddling, which slowed the weight gradient most
/// (docs/benchmarks.md, "Scratch aligned to cache lines").
constexpr std::size_t scratch_alignment = 64;

struct FreeScratch {
  void operator()(void* p) const { std::free(p); }
};

template <typename T>
using ScratchArray = std::unique_ptr<T[], FreeScratch>;

/// Storage for n values of T, aligned to scratch_alignment.
template <typename T>
ScratchArray<T> uninitialised(int64_t n) {
  static_assert(std::is_trivially_default_constructible_v<T>);
  const std::size_t bytes = static_cast<std::size_t>(std::max<int64_t>(n, 1)) * sizeof(T);
  const std::size_t rounded = (bytes + scratch_alignment - 1) / scratch_alignment *
                              scratch_alignment;  // aligned_alloc wants a multiple
  ScratchArray<T> data(static_cast<T*>(std::aligned_alloc(scratch_alignment, rounded)));
  if (!data) throw std::bad_alloc();
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
  ScratchArray<T> data_;
  int64_t size_;
};

}  // namespace tessera::autodiff::taylor::detail
