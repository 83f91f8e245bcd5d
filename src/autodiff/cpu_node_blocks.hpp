#pragma once
// How the forward engine's CPU node cuts points into blocks, and its blocked layout: inside the
// node every [K, n, w] array is held as [K, padded, w] where block b's rows * w elements of a
// stream hold that block's [w][rows] transpose, one row per neuron and one column per point
// (see kernels/gemm.hpp). A block's rows past its points are zero features, whose output nobody
// reads and whose gradient is zero.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include <torch/types.h>

#include "kernels/gemm.hpp"

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

// How the points are cut into blocks. Block b holds points [first_point[b], first_point[b + 1])
// in rows [start[b], start[b + 1]) of the blocked layout: whole vectors of rows, the rows past
// its points zero. Without groups every block has the same rows (the last may hold fewer
// points). With groups (networks stacked along the points, each on its own consecutive points)
// every group is cut into its own blocks, so a group's results and gradient sums depend on its
// own points only. `group_first` holds the first block of every group, then the block count.
// `order` (null: the identity) maps the blocks' points to rows of the [K, n, w] arrays: point p
// is row order[p], so groups need not be consecutive rows there.
struct Blocks {
  int64_t streams = 0, points = 0, largest = 0;
  std::vector<int64_t> start{0}, first_point{0}, group_first{0};
  const int64_t* order = nullptr;

  int64_t count() const { return static_cast<int64_t>(start.size()) - 1; }
  int64_t padded() const { return start.back(); }
  int64_t rows(int64_t block) const { return start[block + 1] - start[block]; }
  int64_t groups() const { return static_cast<int64_t>(group_first.size()) - 1; }
  int64_t first_block(int64_t group) const { return group_first[group]; }
  int64_t group_of(int64_t block) const {
    return std::upper_bound(group_first.begin(), group_first.end() - 1, block) -
           group_first.begin() - 1;
  }
  // A block of `rows` rows holding the next `held` points.
  void add_block(int64_t rows, int64_t held) {
    start.push_back(start.back() + rows);
    first_point.push_back(first_point.back() + held);
    largest = std::max(largest, rows);
  }
  void end_group() { group_first.push_back(count()); }
};

// One group of `points` points in blocks of about `size` rows (a whole number of vectors of
// `lanes`): the group's vectors spread evenly over the nearest whole number of blocks, so a
// group a little larger than a block takes one slightly larger block rather than a nearly
// empty second one, and no group is padded by more than a vector's rows. A lone network
// (`even` false) keeps blocks of exactly `size` rows.
inline void add_group(Blocks& blocks, int64_t points, int64_t size, int64_t lanes, bool even) {
  if (!even) {
    for (int64_t first = 0; first < points; first += size)
      blocks.add_block(size, std::min(size, points - first));
    blocks.end_group();
    return;
  }
  const int64_t vectors = (points + lanes - 1) / lanes, per_block = size / lanes;
  const int64_t count =
      vectors == 0 ? 0 : std::max<int64_t>(1, (vectors + per_block / 2) / per_block);
  int64_t left = points;
  for (int64_t b = 0; b < count; ++b) {
    const int64_t rows = (vectors / count + (b < vectors % count ? 1 : 0)) * lanes;
    blocks.add_block(rows, std::min(rows, left));
    left -= std::min(rows, left);
  }
  blocks.end_group();
}

// Calls copy(row, at, rows) for every point: `row` its row in a [K, n, w] stream, `at` where its
// w values start in the blocked layout (one every `rows` elements, its block's rows). Walking
// block by block avoids a division per point, a measurable cost of the conversions
// (docs/benchmarks.md, "Blocked layout conversions").
template <typename Copy>
void for_each_point(const Blocks& blocks, int64_t w, const Copy& copy) {
  for (int64_t block = 0; block < blocks.count(); ++block) {
    const int64_t first = blocks.first_point[block], at = blocks.start[block] * w;
    const int64_t rows = blocks.rows(block);
    for (int64_t p = first; p < blocks.first_point[block + 1]; ++p)
      copy(blocks.order ? blocks.order[p] : p, at + (p - first), rows);
  }
}

// [K, n, w] (one row per point) -> blocked [K, padded, w].
template <typename T>
torch::Tensor to_blocks(const torch::Tensor& rows, const Blocks& blocks) {
  const int64_t K = rows.size(0), n = rows.size(1), w = rows.size(2);
  auto out = torch::zeros({K, blocks.padded(), w}, rows.options());
  for (int64_t k = 0; k < K; ++k) {
    const T* from = rows.data_ptr<T>() + k * n * w;
    T* to = out.data_ptr<T>() + k * blocks.padded() * w;
    for_each_point(blocks, w, [&](int64_t p, int64_t at, int64_t size) {
      for (int64_t i = 0; i < w; ++i) to[at + i * size] = from[p * w + i];
    });
  }
  return out;
}

// Blocked [K, padded, w] -> [K, n, w].
template <typename T>
torch::Tensor from_blocks(const torch::Tensor& blocked, const Blocks& blocks) {
  const int64_t K = blocked.size(0), n = blocks.points, w = blocked.size(2);
  auto out = torch::empty({K, n, w}, blocked.options());
  for (int64_t k = 0; k < K; ++k) {
    const T* from = blocked.data_ptr<T>() + k * blocks.padded() * w;
    T* to = out.data_ptr<T>() + k * n * w;
    for_each_point(blocks, w, [&](int64_t p, int64_t at, int64_t size) {
      for (int64_t i = 0; i < w; ++i) to[p * w + i] = from[at + i * size];
    });
  }
  return out;
}

}  // namespace tessera::autodiff::taylor::detail
