#pragma once
/// Causal training (Wang, Sankaran & Perdikaris 2022): the time range of a subdomain is cut into
/// chunks, and the residual of chunk k counts with weight w_k = exp(-tolerance * sum_{j<k} L_j),
/// L_j the (detached) mean squared residual of chunk j. Later times open only as earlier ones
/// converge, so the network cannot fit a late-time solution that the initial condition does
/// not lead to.
#include <cstdint>

#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

struct CausalWindow {
  int64_t chunks = 32;
  double tolerance = 1.0;
  int time_column = 0;  ///< the network input that is time
  double start = 0, end = 1;
};

/// The chunk of every row of x ([n, inputs]): int64 [n] in [0, chunks).
torch::Tensor time_chunks(const torch::Tensor& x, const CausalWindow& window);

/// Mean of `squares` ([n]) over the rows of each chunk: [chunks], 0 for an empty chunk.
torch::Tensor chunk_means(const torch::Tensor& squares, const torch::Tensor& chunk, int64_t chunks);

/// w_k = exp(-tolerance * sum_{j<k} L_j) for chunk losses L ([chunks]), detached: 1 for the
/// first chunk, non-increasing in k, and 1 everywhere once every L_j is 0.
torch::Tensor causal_weights(const torch::Tensor& chunk_losses, double tolerance);

}  // namespace tessera::physics
