#pragma once
/// Residual-based adaptive distribution of the collocation points (RAD; Wu, Zhu, Tan, Kartha &
/// Lu 2023): draw a candidate set `candidates` times larger than the point count, and keep
/// points with probability proportional to |r|^k / mean(|r|^k) + c, so that most points go
/// where the residual is large while c keeps every region sampled.
#include <cstdint>

#include "tessera/core/rng.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

struct ResidualSampling {
  int64_t every = 1000;    ///< Adam iterations between two redistributions
  int64_t candidates = 8;  ///< candidate points per kept point
  double exponent = 1.0;   ///< k
  double constant = 1.0;   ///< c
};

/// The density |r|^k / mean(|r|^k) + c of each candidate from its residual magnitude
/// ([m], float64); uniform when every magnitude is 0.
torch::Tensor residual_density(const torch::Tensor& magnitude, const ResidualSampling& rule);

/// `count` distinct indices into `density` ([m], float64, CPU), each candidate kept with
/// probability proportional to its density (weighted sampling without replacement by
/// exponential keys, Efraimidis & Spirakis 2006), in increasing order. Uses m values of `rng`,
/// so the draw is the same wherever it runs.
torch::Tensor weighted_draw(const torch::Tensor& density, int64_t count, core::Rng& rng);

}  // namespace tessera::physics
