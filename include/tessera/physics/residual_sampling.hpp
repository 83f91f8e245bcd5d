#pragma once
/// Residual-based adaptive distribution of the collocation points (RAD; Wu, Zhu, Tan, Kartha &
/// Lu 2023): draw a candidate set `candidates` times larger than the point count, and keep
/// points with probability proportional to |r|^k / mean(|r|^k) + c, so that most points go
/// where the residual is large while c keeps every region sampled.
#include <cstdint>
#include <vector>

#include "tessera/core/rng.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

struct ResidualSampling {
  int64_t every = 1000;    ///< Adam iterations between two redistributions
  int64_t candidates = 8;  ///< candidate points per kept point
  double exponent = 1.0;   ///< k
  double constant = 1.0;   ///< c
  /// With several subdomains: their point counts follow their share of the residual (the
  /// share the density would give them over the whole domain), the total kept.
  bool across_subdomains = true;
};

/// Candidate points of a residual-based draw and the summed residual magnitude at each.
struct ResidualCandidates {
  torch::Tensor points;     ///< [m, inputs], float64 CPU
  torch::Tensor magnitude;  ///< [m], float64 CPU
};

/// The density |r|^k / mean(|r|^k) + c of each candidate from its residual magnitude
/// ([m], float64); uniform when every magnitude is 0.
torch::Tensor residual_density(const torch::Tensor& magnitude, const ResidualSampling& rule);

/// The same density with mean(|r|^k) given (over the whole domain, not these candidates).
torch::Tensor residual_density(const torch::Tensor& magnitude, const ResidualSampling& rule,
                               double mean_power);

/// Point counts of subdomains whose counts add up to `total`: subdomain s gets the share
/// (power_s / sum power + c measure_s / sum measure) / (1 + c), the expected share of the
/// density's draw over the whole domain (power_s: the integral of |r|^k over the subdomain).
/// At most `caps[s]`, at least 1 where the measure is positive; rounded by largest remainder
/// (ties to the lower index), so every rank computes the same counts.
std::vector<int64_t> share_points(int64_t total, const std::vector<double>& power,
                                  const std::vector<double>& measure,
                                  const std::vector<int64_t>& caps, double constant);

/// `count` distinct indices into `density` ([m], float64, CPU), each candidate kept with
/// probability proportional to its density (weighted sampling without replacement by
/// exponential keys, Efraimidis & Spirakis 2006), in increasing order. Uses m values of `rng`,
/// so the draw is the same wherever it runs.
torch::Tensor weighted_draw(const torch::Tensor& density, int64_t count, core::Rng& rng);

}  // namespace tessera::physics
