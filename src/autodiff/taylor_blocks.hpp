#pragma once
// How the forward engine's CPU node cuts points into blocks, and its blocked layout: inside the
// node every [K, n, w] array is held as [K, padded, w] where block b's size * w elements of a
// stream hold that block's [w][size] transpose, one row per neuron and one column per point
// (see taylor_gemm.hpp). The last block's missing points are zero features, whose output nobody
// reads and whose gradient is zero.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <torch/types.h>

#include "taylor_gemm.hpp"

namespace tessera::autodiff::taylor::detail {

// Points per block (TESSERA_TAYLOR_BLOCK overrides, for tuning), in whole vectors of points:
// about 400 rows over all streams keep a layer's input, pre-activation, primitives and output
// within a 512 KiB L2 (docs/benchmarks.md, "Forward engine block size").
template <typename T>
int64_t block_points(int64_t streams) {
  static const int64_t forced = [] {
    const char* text = std::getenv("TESSERA_TAYLOR_BLOCK");
    return text ? std::max<int64_t>(std::atoll(text), 1) : int64_t{0};
  }();
  const int64_t wanted = forced > 0 ? forced : 400 / streams;
  return std::max<int64_t>((wanted + lanes<T>() / 2) / lanes<T>(), 1) * lanes<T>();
}

// Points per block for a tensor of `dtype` (float32 or float64) with `streams` streams.
inline int64_t block_points(torch::ScalarType dtype, int64_t streams) {
  return dtype == torch::kFloat64 ? block_points<double>(streams) : block_points<float>(streams);
}

// How the points are cut into blocks. With groups (networks stacked along the rows, each on
// its own consecutive rows), every group's rows are whole blocks: `group_first` holds the first
// block of every group, then the block count; without, it is empty (one group).
struct Blocks {
  int64_t streams = 0, points = 0, size = 0;
  std::vector<int64_t> group_first;
  int64_t count() const { return (points + size - 1) / size; }
  int64_t padded() const { return count() * size; }
  int64_t groups() const {
    return group_first.empty() ? 1 : static_cast<int64_t>(group_first.size()) - 1;
  }
  int64_t first_block(int64_t group) const {
    return group_first.empty() ? (group == 0 ? 0 : count()) : group_first[group];
  }
  int64_t group_of(int64_t block) const {
    if (group_first.empty()) return 0;
    return std::upper_bound(group_first.begin(), group_first.end() - 1, block) -
           group_first.begin() - 1;
  }
};

// Calls copy(p, at) for every point: p its row in a [K, n, w] stream, `at` where its w
// values start in the blocked layout (one every `size` elements). Walking block by block
// avoids a division per point, a measurable cost of the conversions (docs/benchmarks.md,
// "Blocked layout conversions").
template <typename Copy>
void for_each_point(const Blocks& blocks, int64_t w, const Copy& copy) {
  for (int64_t block = 0; block < blocks.count(); ++block) {
    const int64_t first = block * blocks.size, last = std::min(blocks.points, first + blocks.size);
    for (int64_t p = first; p < last; ++p) copy(p, first * w + (p - first));
  }
}

// [K, n, w] (one row per point) -> blocked [K, padded, w].
template <typename T>
torch::Tensor to_blocks(const torch::Tensor& rows, const Blocks& blocks) {
  const int64_t K = rows.size(0), n = rows.size(1), w = rows.size(2), size = blocks.size;
  auto out = torch::zeros({K, blocks.padded(), w}, rows.options());
  for (int64_t k = 0; k < K; ++k) {
    const T* from = rows.data_ptr<T>() + k * n * w;
    T* to = out.data_ptr<T>() + k * blocks.padded() * w;
    for_each_point(blocks, w, [&](int64_t p, int64_t at) {
      for (int64_t i = 0; i < w; ++i) to[at + i * size] = from[p * w + i];
    });
  }
  return out;
}

// Blocked [K, padded, w] -> [K, n, w].
template <typename T>
torch::Tensor from_blocks(const torch::Tensor& blocked, const Blocks& blocks) {
  const int64_t K = blocked.size(0), n = blocks.points, w = blocked.size(2), size = blocks.size;
  auto out = torch::empty({K, n, w}, blocked.options());
  for (int64_t k = 0; k < K; ++k) {
    const T* from = blocked.data_ptr<T>() + k * blocks.padded() * w;
    T* to = out.data_ptr<T>() + k * n * w;
    for_each_point(blocks, w, [&](int64_t p, int64_t at) {
      for (int64_t i = 0; i < w; ++i) to[p * w + i] = from[at + i * size];
    });
  }
  return out;
}

}  // namespace tessera::autodiff::taylor::detail
