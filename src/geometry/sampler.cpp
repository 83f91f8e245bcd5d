#include "tessera/geometry/sampler.hpp"

#include <numeric>

#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/sobol.hpp"

namespace tessera::geometry {
namespace {

void fill_uniform(double* out, std::int64_t count, core::Rng& rng) {
  for (std::int64_t i = 0; i < count; ++i) out[i] = rng.uniform();
}

// One column at a time: a Fisher-Yates permutation of the strata, jittered inside each stratum.
void fill_lhs(double* out, std::int64_t n, int dims, core::Rng& rng) {
  std::vector<std::int64_t> strata(static_cast<std::size_t>(n));
  const double width = 1.0 / static_cast<double>(n);
  for (int d = 0; d < dims; ++d) {
    std::iota(strata.begin(), strata.end(), std::int64_t{0});
    for (std::int64_t i = n - 1; i > 0; --i) {
      const auto j = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(i + 1)));
      std::swap(strata[i], strata[j]);
    }
    for (std::int64_t i = 0; i < n; ++i) {
      double x = (static_cast<double>(strata[i]) + rng.uniform()) * width;
      // (k + u) / n can round up to the next stratum's edge; keep the point in its own stratum.
      const double upper = static_cast<double>(strata[i] + 1) * width;
      if (x >= upper) x = std::nextafter(upper, 0.0);
      out[i * dims + d] = x;
    }
  }
}

}  // namespace

std::string sampler_name(SamplerKind kind) {
  switch (kind) {
    case SamplerKind::uniform:
      return "uniform";
    case SamplerKind::lhs:
      return "lhs";
    case SamplerKind::sobol:
      return "sobol";
  }
  return "?";
}

torch::Tensor unit_samples(SamplerKind kind, std::int64_t n, int dims, core::Rng& rng) {
  TESSERA_CHECK(n >= 0, "unit_samples: point count must not be negative, got " << n);
  TESSERA_CHECK(dims >= 0, "unit_samples: dims must not be negative, got " << dims);
  if (n == 0 || dims == 0) return torch::zeros({n, dims}, torch::kFloat64);
  if (kind == SamplerKind::sobol) {
    TESSERA_CHECK(dims <= sobol_max_dims(), "the sobol sampler supports at most "
                                                << sobol_max_dims() << " dimensions, got " << dims
                                                << "; use lhs or uniform");
    std::vector<std::uint64_t> shift(static_cast<std::size_t>(dims));
    for (auto& s : shift) s = rng.next_u64() >> (64 - sobol_bits);
    return sobol_points(n, dims, shift);
  }
  auto out = torch::empty({n, dims}, torch::kFloat64);
  double* data = out.data_ptr<double>();
  if (kind == SamplerKind::lhs) {
    fill_lhs(data, n, dims, rng);
  } else {
    fill_uniform(data, n * dims, rng);
  }
  return out;
}

}  // namespace tessera::geometry
