#include "tessera/physics/residual_sampling.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"

namespace tessera::physics {

torch::Tensor residual_density(const torch::Tensor& magnitude, const ResidualSampling& rule) {
  const auto powered = magnitude.to(torch::kFloat64).abs().pow(rule.exponent);
  return residual_density(magnitude, rule,
                          powered.numel() > 0 ? core::read_double(powered.mean()) : 0.0);
}

torch::Tensor residual_density(const torch::Tensor& magnitude, const ResidualSampling& rule,
                               double mean_power) {
  const auto powered = magnitude.to(torch::kFloat64).abs().pow(rule.exponent);
  if (!(mean_power > 0) || !std::isfinite(mean_power)) return torch::ones_like(powered);
  return powered / mean_power + rule.constant;
}

std::vector<int64_t> share_points(int64_t total, const std::vector<double>& power,
                                  const std::vector<double>& measure,
                                  const std::vector<int64_t>& caps, double constant) {
  const std::size_t count = power.size();
  double power_sum = 0, measure_sum = 0;
  for (std::size_t s = 0; s < count; ++s) power_sum += power[s], measure_sum += measure[s];
  TESSERA_ASSERT(power_sum > 0 && measure_sum > 0,
                 "share_points: power " << power_sum << ", measure " << measure_sum);
  std::vector<double> share(count);
  for (std::size_t s = 0; s < count; ++s)
    share[s] = (power[s] / power_sum + constant * measure[s] / measure_sum) / (1 + constant);

  std::vector<int64_t> n(count, 0);
  std::vector<bool> open(count, false);
  int64_t left = total;
  for (std::size_t s = 0; s < count; ++s)
    if (measure[s] > 0 && caps[s] > 0) n[s] = 1, --left, open[s] = caps[s] > 1;
  const auto open_share = [&] {
    double sum = 0;
    for (std::size_t s = 0; s < count; ++s) sum += open[s] ? share[s] : 0.0;
    return sum;
  };
  // A subdomain whose share exceeds its cap takes the cap; the rest is shared again.
  for (bool capped = true; capped && left > 0;) {
    capped = false;
    const double sum = open_share();
    for (std::size_t s = 0; s < count && sum > 0; ++s)
      if (open[s] && n[s] + static_cast<double>(left) * share[s] / sum >= caps[s]) {
        left -= caps[s] - n[s];
        n[s] = caps[s];
        open[s] = false;
        capped = true;
      }
  }
  const double sum = open_share();
  if (left <= 0 || !(sum > 0)) return n;
  std::vector<std::pair<double, std::size_t>> remainders;
  int64_t given = 0;
  for (std::size_t s = 0; s < count; ++s) {
    if (!open[s]) continue;
    const double ideal = static_cast<double>(left) * share[s] / sum;
    const auto whole = static_cast<int64_t>(std::floor(ideal));
    n[s] += whole;
    given += whole;
    remainders.emplace_back(ideal - static_cast<double>(whole), s);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; i < remainders.size() && given < left; ++i)
    if (n[remainders[i].second] < caps[remainders[i].second]) ++n[remainders[i].second], ++given;
  return n;
}

torch::Tensor weighted_draw(const torch::Tensor& density, int64_t count, core::Rng& rng) {
  const int64_t m = density.numel();
  TESSERA_ASSERT(count <= m, "weighted_draw: " << count << " draws from " << m << " candidates");
  const auto weights = core::read_to_host(density, torch::kFloat64);
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
