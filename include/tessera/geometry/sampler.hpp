#pragma once
/// Point samplers on the unit cube: the one source of randomness for geometry sampling.
/// Shapes map these unit samples onto themselves, so every shape gets every sampler.
#include <torch/types.h>

#include <cstdint>
#include <string>

#include "tessera/core/rng.hpp"

namespace tessera::geometry {

enum class SamplerKind { uniform, lhs, sobol };

/// The case-file spelling of `kind`.
std::string sampler_name(SamplerKind kind);

/// n points in [0, 1)^dims: float64 CPU [n, dims]. Deterministic given the rng state; each call
/// advances `rng`, so calling again gives new points.
///  - uniform: independent uniform numbers, row by row.
///  - lhs: Latin hypercube; each dimension has exactly one point in each of the n strata
///    [k/n, (k+1)/n), in an independent random permutation.
///  - sobol: the first n points of the Sobol sequence (Joe-Kuo direction numbers, Gray-code order)
///    XORed with a random digital shift drawn from `rng` per call; at most sobol_max_dims() dims.
/// dims == 0 gives [n, 0] and draws nothing.
torch::Tensor unit_samples(SamplerKind kind, std::int64_t n, int dims, core::Rng& rng);

}  // namespace tessera::geometry
