#pragma once
/// Causal training (Wang, Sankaran & Perdikaris 2022): the time range of a subdomain is cut into
/// chunks, and the residual of chunk k counts with weight w_k = exp(-tolerance * sum_{j<k} L_j),
/// L_j the (detached) mean squared residual of chunk j, measured in units of max(1, mean_j L_j).
/// Later times open only as earlier ones converge, so the network cannot fit a late-time
/// solution that the initial condition does not lead to.
///
/// The weights belong to the whole sample of a subdomain. Where data-parallel replicas each hold
/// a slice of it, the per-chunk sums of every slice are added up (`ChunkSum`) before the weights
/// are formed, so that every replica weighs its rows as one rank holding every row would.
#include <cstdint>
#include <functional>
#include <vector>

#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

struct CausalWindow {
  int64_t chunks = 32;
  double tolerance = 1.0;
  int time_column = 0;  ///< the network input that is time
  double start = 0, end = 1;
};

/// Adds per-chunk figures ([m], detached, any dtype and device) of this rank's rows to those of
/// every other rank that holds rows of the same sample, and returns the sums (same dtype and
/// device). Collective over those ranks: each of them calls it at the same point of a pass, also
/// when it holds no rows. Unset where this rank holds the whole sample.
using ChunkSum = std::function<torch::Tensor(const torch::Tensor&)>;

/// What the causal loss of one pass takes from the whole sample: the chunks' weights and point
/// counts, and how many chunks hold points.
struct ChunkWeighting {
  torch::Tensor weights;  ///< [chunks] w_k, detached
  torch::Tensor counts;   ///< [chunks] n_k, points of the whole sample in chunk k
  torch::Tensor filled;   ///< K: the chunks with n_k > 0, a tensor of no dimensions (no read)

  /// The causal loss of the rows whose squared residuals add up to `sums` ([chunks]) per chunk:
  /// sum_k w_k sums_k / (n_k K). Over every row, (1/K) sum_k w_k L_k; over disjoint sets of rows,
  /// parts that add up to it. Differentiable through `sums`.
  torch::Tensor loss(const torch::Tensor& sums) const;
  /// Each row's factor w_k / (n_k K) for rows in the time chunks `chunk` (int64 [n]): the loss
  /// of those rows is the sum of factor * residual^2.
  torch::Tensor row_factors(const torch::Tensor& chunk) const;
  /// The same weighting on `device`.
  ChunkWeighting to(torch::Device device) const;
};

/// The chunk of every row of x ([n, inputs]): int64 [n] in [0, chunks).
torch::Tensor time_chunks(const torch::Tensor& x, const CausalWindow& window);

/// Sum of `squares` ([n]) over the rows of each chunk: [chunks], 0 for an empty chunk, on the
/// graph of `squares`.
torch::Tensor chunk_sums(const torch::Tensor& squares, const torch::Tensor& chunk, int64_t chunks);

/// Rows per chunk: [chunks] in `dtype`, on the device of `chunk`.
torch::Tensor chunk_counts(const torch::Tensor& chunk, int64_t chunks, torch::Dtype dtype);

/// w_k = exp(-tolerance * sum_{j<k} L_j) for chunk losses L ([chunks]), detached: 1 for the
/// first chunk, non-increasing in k, and 1 everywhere once every L_j is 0.
torch::Tensor causal_weights(const torch::Tensor& chunk_losses, double tolerance);

/// The weighting of a pass from this rank's rows: each equation's per-chunk sums of squared
/// residuals (`sums`, [chunks] each) and the rows' per-chunk `counts`, first added up over every
/// holder of the sample by `sum_over_holders` (collective; unset: this rank holds every row).
/// Chunk k's loss L_k is the sum over the equations of their sum_k / n_k; the weights are
/// causal_weights(L / max(1, mean of L over the chunks that hold points), tolerance).
ChunkWeighting weigh_chunks(const std::vector<torch::Tensor>& sums, const torch::Tensor& counts,
                            double tolerance, const ChunkSum& sum_over_holders);

}  // namespace tessera::physics
