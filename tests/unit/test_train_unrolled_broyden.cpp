// The SSBroyden inverse Hessian kept as its last updates (train/unrolled_broyden.hpp): the dense
// SSBroyden matrix while every update is kept, the oldest update's terms gone beyond the memory,
// and the optimizer on a quadratic across a checkpoint.
#include <doctest/doctest.h>

#include <tuple>
#include <vector>

#include "quasi_newton_quadratic.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/quasi_newton.hpp"
#include "tessera/train/unrolled_broyden.hpp"

using namespace tessera::train;

namespace {

constexpr int64_t kSize = 6;

/// Eigenvalues from 1 to 1000.
torch::Tensor spd_matrix() { return testing::spd_matrix(kSize, 3, 5); }

/// Steps along random directions of the quadratic with Hessian `A`, with s.B s of the current
/// approximation overstated by half (as a line search along -H g reports it, not exactly).
struct Step {
  torch::Tensor s, y;
  double sBs;
};

std::vector<Step> steps(const torch::Tensor& A, int count) {
  std::vector<Step> out;
  for (int k = 0; k < count; ++k) {
    const auto s = torch::randn({kSize}, torch::kFloat64);
    out.push_back({s, A.mv(s), 1.5 * s.dot(A.mv(s)).item<double>()});
  }
  return out;
}

torch::Tensor times_matrix(const UnrolledBroyden& H) {
  std::vector<torch::Tensor> columns;
  const auto identity = torch::eye(kSize, torch::kFloat64);
  for (int64_t j = 0; j < kSize; ++j) columns.push_back(H.times(identity[j]));
  return torch::stack(columns, 1);
}

}  // namespace

TEST_CASE("every update kept gives the dense SSBroyden matrix") {
  const auto A = spd_matrix();
  UnrolledBroyden unrolled(/*memory=*/10);
  auto dense = torch::eye(kSize, torch::kFloat64);
  bool first = true;
  for (const auto& [s, y, sBs] : steps(A, 8)) {
    const auto Hy = dense.mv(y);
    REQUIRE(update_rows(dense, 0, QuasiNewtonUpdate::ssbroyden, first, s, y, Hy, sBs, {}));
    REQUIRE(unrolled.update(s, y, sBs));
    first = false;
    CHECK(torch::allclose(times_matrix(unrolled), dense, 1e-9, 1e-12));
  }
  CHECK(unrolled.size() == 8);
}

TEST_CASE("beyond the memory the oldest update's terms go and its scaling stays") {
  const auto A = spd_matrix();
  const auto all = steps(A, 5);
  UnrolledBroyden kept_all(10), kept_three(3);
  for (const auto& [s, y, sBs] : all) {
    REQUIRE(kept_all.update(s, y, sBs));
    REQUIRE(kept_three.update(s, y, sBs));
  }
  CHECK(kept_three.size() == 3);
  // Each update corrects the matrix it found, so both meet the secant condition on the newest
  // step.
  const auto& newest = all.back();
  CHECK(torch::allclose(kept_all.times(newest.y), newest.s, 1e-9, 1e-12));
  CHECK(torch::allclose(kept_three.times(newest.y), newest.s, 1e-9, 1e-12));
  // Elsewhere they differ by the two dropped updates' terms.
  CHECK_FALSE(torch::allclose(times_matrix(kept_all), times_matrix(kept_three), 1e-6, 1e-9));
  // No positive curvature along the step: no update.
  const auto s = torch::ones({kSize}, torch::kFloat64);
  CHECK_FALSE(kept_three.update(s, -s, 1.0));
  CHECK(kept_three.size() == 3);
}

TEST_CASE("the optimizer on whole updates minimises a quadratic and continues from its state") {
  // Condition number 1000 on 3 kept updates: the loss's rounding stops it near 1e-7.
  testing::check_continues_from_its_state(
      QuasiNewtonOptions(QuasiNewtonUpdate::ssbroyden).memory(3).whole_updates(true), spd_matrix(),
      torch::linspace(-1, 1, kSize, torch::kFloat64), 6, 200, 1e-6);
}
