#include "tessera/physics/residual_sampling.hpp"

#include <cmath>

#include "tessera/core/error.hpp"

namespace tessera::physics {

torch::Tensor residual_density(const torch::Tensor& magnitude, const ResidualSampling& rule) {
  const auto powered = magnitude.to(torch::kFloat64).abs().pow(rule.exponent);
  const double mean = powered.numel() > 0 ? powered.mean().item<double>() : 0.0;
  if (!(mean > 0) || !std::isfinite(mean)) return torch::ones_like(powered);
  return powered / mean + rule.constant;
}

torch::Tensor weighted_draw(const torch::Tensor& density, int64_t count, core::Rng& rng) {
  const int64_t m = density.numel();
  TESSERA_ASSERT(count <= m, "weighted_draw: " << count << " draws from " << m << " candidates");
  const auto weights = density.to(torch::kCPU, torch::kFloat64).contiguous();
  const double* w = weights.data_ptr<double>();
  // Key log(u) / w: the `count` largest keys are a weighted sample without replacement.
  auto keys = torch::empty({m}, torch::kFloat64);
  double* key = keys.data_ptr<double>();
  for (int64_t i = 0; i < m; ++i) {
    const double u = std::max(rng.uniform(), 1e-300);
    key[i] = w[i] > 0 ? std::log(u) / w[i] : -INFINITY;
  }
  const auto chosen = std::get<1>(keys.topk(count, 0, /*largest=*/true, /*sorted=*/false));
  return std::get<0>(chosen.sort());
}

}  // namespace tessera::physics
