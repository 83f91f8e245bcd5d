#pragma once
/// The Sobol low-discrepancy sequence, unshifted. unit_samples(SamplerKind::sobol, ...) is the
/// entry point for sampling; this is exposed for tests and for callers that need the raw points.
#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace tessera::geometry {

/// Bits of resolution of the generated points (they are multiples of 2^-sobol_bits).
constexpr int sobol_bits = 52;

/// How many dimensions the built-in Joe-Kuo (new-joe-kuo-6.21201) direction numbers cover.
int sobol_max_dims();

/// The first n points of the Sobol sequence in Gray-code order (point 0 is the origin), as
/// integers in [0, 2^sobol_bits): row-major [n * dims]. `shift` (dims values, or empty for none)
/// is XORed into every point: a digital shift keeps the net properties of the sequence.
std::vector<std::uint64_t> sobol_integers(std::int64_t n, int dims,
                                          const std::vector<std::uint64_t>& shift = {});

/// The same points scaled to [0, 1): float64 CPU [n, dims].
torch::Tensor sobol_points(std::int64_t n, int dims, const std::vector<std::uint64_t>& shift = {});

}  // namespace tessera::geometry
