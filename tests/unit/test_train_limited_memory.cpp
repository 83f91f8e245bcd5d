// The limited-memory inverse Hessian (train/limited_memory.hpp): the two-loop recursion against
// the matrix its recursion defines, the secant condition, the memory bound, the pair scalars,
// pieces, and L-BFGS on a quadratic and across a checkpoint.
#include <doctest/doctest.h>

#include <sstream>

#include "quasi_newton_quadratic.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/limited_memory.hpp"
#include "tessera/train/quasi_newton.hpp"

using namespace tessera::train;

namespace {

constexpr int64_t kSize = 7;

/// Eigenvalues from 1 to 100.
torch::Tensor spd_matrix() { return testing::spd_matrix(kSize, 2, 3); }

/// The sum over blocks of one process (every block here).
std::vector<double> sum_blocks(const std::vector<std::vector<double>>& per_block,
                               std::size_t width) {
  std::vector<double> total(width, 0.0);
  for (const auto& figures : per_block)
    for (std::size_t j = 0; j < width; ++j) total[j] += figures[j];
  return total;
}

torch::Tensor times(const CurvatureHistory& history, const torch::Tensor& v) {
  return history_times(history.geometry(), {&history}, {v}, sum_blocks)[0];
}

/// Pairs of steps along random directions of the quadratic with Hessian `A`, pushed with their
/// scalars; `dense` receives the matrix the recursion defines.
CurvatureHistory history_of(const torch::Tensor& A, int pairs, int64_t memory,
                            torch::Tensor& dense) {
  CurvatureHistory history(memory);
  torch::manual_seed(5);
  dense = torch::eye(kSize, torch::kFloat64);
  const auto eye = torch::eye(kSize, torch::kFloat64);
  std::vector<std::pair<torch::Tensor, torch::Tensor>> kept;
  for (int k = 0; k < pairs; ++k) {
    const auto s = torch::randn({kSize}, torch::kFloat64);
    const auto y = A.mv(s);
    const auto figures = pair_figures(history, s, y);
    const std::size_t before = history.geometry().size();
    CHECK(figures[4 * before + 1] == doctest::Approx(s.dot(y).item<double>()));
    const auto scalars = pair_scalars(figures[4 * before + 1], figures[4 * before + 2]);
    REQUIRE(scalars);
    history.push(s, y, *scalars, figures);
    kept.emplace_back(s, y);
    if (static_cast<int64_t>(kept.size()) > memory) kept.erase(kept.begin());
    // The matrix of the recursion over the kept pairs, from gamma I.
    const auto& geometry = history.geometry();
    dense = eye * geometry.scalars(geometry.size() - 1).gamma;
    for (std::size_t i = 0; i < kept.size(); ++i) {
      const auto& [si, yi] = kept[i];
      const auto& scalars_i = geometry.scalars(i);
      const auto V = eye - scalars_i.rho * torch::outer(yi, si);
      dense = V.t().mm(dense).mm(V) + scalars_i.rho * torch::outer(si, si);
    }
  }
  return history;
}

}  // namespace

TEST_CASE("the two-loop recursion applies the matrix its pairs define") {
  const auto A = spd_matrix();
  {
    torch::Tensor dense;
    const auto history = history_of(A, 5, 10, dense);
    const auto v = torch::randn({kSize}, torch::kFloat64);
    CHECK(torch::allclose(times(history, v), dense.mv(v), 1e-12, 1e-12));
    // The secant condition holds for the newest pair: H y = s.
    const std::size_t newest = history.geometry().size() - 1;
    CHECK(torch::allclose(times(history, history.y(newest)), history.s(newest), 1e-10, 1e-12));
  }
}

TEST_CASE("the base follows the newest pair and the geometry survives its flat form") {
  const auto A = spd_matrix();
  torch::Tensor dense;
  const auto history = history_of(A, 6, 10, dense);
  const auto& geometry = history.geometry();
  const std::size_t newest = geometry.size() - 1;
  const double sy = history.s(newest).dot(history.y(newest)).item<double>();
  const double yy = history.y(newest).dot(history.y(newest)).item<double>();
  CHECK(geometry.scalars(newest).gamma == doctest::Approx(sy / yy));
  CHECK(geometry.scalars(newest).rho == doctest::Approx(1 / sy));
  PairGeometry copy(10);
  copy.set_flat(geometry.flat());
  CHECK(copy.flat() == geometry.flat());
}

TEST_CASE("the history keeps its last pairs and refuses negative curvature") {
  const auto A = spd_matrix();
  torch::Tensor dense;
  const auto history = history_of(A, 9, 4, dense);
  CHECK(history.geometry().size() == 4);
  const auto v = torch::randn({kSize}, torch::kFloat64);
  CHECK(torch::allclose(times(history, v), dense.mv(v), 1e-12, 1e-12));
  // The products kept for the four pairs are those of their vectors.
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 4; ++j)
      CHECK(history.geometry().dot(i, true, j, false) ==
            doctest::Approx(history.y(i).dot(history.s(j)).item<double>()));
  CHECK_FALSE(pair_scalars(-1.0, 1.0));
  CHECK_FALSE(pair_scalars(0.0, 1.0));
  const auto scalars = pair_scalars(2.0, 4.0);
  REQUIRE(scalars);
  CHECK(scalars->rho == 0.5);
  CHECK(scalars->gamma == 0.5);
}

TEST_CASE("a vector cut into pieces gives the product of the whole, piece by piece") {
  const auto A = spd_matrix();
  torch::Tensor dense;
  const auto whole = history_of(A, 5, 10, dense);
  CurvatureHistory first(10), second(10);
  const auto flat = whole.geometry().flat();
  PairGeometry geometry(10);
  geometry.set_flat(flat);
  for (std::size_t i = 0; i < whole.geometry().size(); ++i) {
    // Each block's copy of the geometry is the whole vector's.
    std::vector<double> dots;
    for (std::size_t j = 0; j < i; ++j)
      for (bool a : {false, true})
        for (bool b : {false, true}) dots.push_back(geometry.dot(i, a, j, b));
    dots.insert(dots.end(), {geometry.dot(i, false, i, false), geometry.dot(i, false, i, true),
                             geometry.dot(i, true, i, true)});
    first.push(whole.s(i).slice(0, 0, 3), whole.y(i).slice(0, 0, 3), geometry.scalars(i), dots);
    second.push(whole.s(i).slice(0, 3), whole.y(i).slice(0, 3), geometry.scalars(i), dots);
  }
  CHECK(first.geometry().flat() == flat);
  const auto v = torch::randn({kSize}, torch::kFloat64);
  const auto pieces =
      history_times(geometry, {&first, &second}, {v.slice(0, 0, 3), v.slice(0, 3)}, sum_blocks);
  CHECK(torch::allclose(torch::cat(pieces), times(whole, v), 1e-13, 1e-13));
}

TEST_CASE("the limited-memory optimizer minimises a quadratic and continues from its state") {
  testing::check_continues_from_its_state(
      QuasiNewtonOptions(QuasiNewtonUpdate::bfgs).memory(5), spd_matrix(),
      torch::linspace(-1, 1, kSize, torch::kFloat64), 6, 60, 1e-8);
}

TEST_CASE("a self-scaled history applies the matrix of scaled updates, dropped pairs too") {
  const auto A = spd_matrix();
  const auto eye = torch::eye(kSize, torch::kFloat64);
  const int64_t memory = 3;
  CurvatureHistory history(memory);
  torch::manual_seed(9);
  // The dense matrix of the kept pairs' updates, from the base the dropped ones left.
  std::vector<std::tuple<torch::Tensor, torch::Tensor, PairScalars>> kept;
  double base = 1;
  const auto dense_of = [&] {
    auto H = eye * base;
    for (const auto& [s, y, scalars] : kept) {
      const auto V = eye - scalars.rho * torch::outer(y, s);
      H = V.t().mm(H / scalars.tau).mm(V) + scalars.rho * torch::outer(s, s);
    }
    return H;
  };
  for (int k = 0; k < 6; ++k) {
    const auto s = torch::randn({kSize}, torch::kFloat64);
    const auto y = A.mv(s);
    const auto figures = pair_figures(history, s, y);
    const double sBs = s.dot(A.mv(s)).item<double>() * 1.5;
    const auto scalars = self_scaled_pair_scalars(history.geometry(), figures, sBs, kSize);
    REQUIRE(scalars);
    CHECK(scalars->self_scaled);
    // tau from the rule with y.H y of the matrix before the pair.
    const auto H = dense_of();
    const double sy = s.dot(y).item<double>();
    const double yHy = y.dot(H.mv(y)).item<double>();
    const auto expected = self_scaled_broyden(yHy / sy, sBs / sy, kSize, k == 0);
    CHECK(scalars->tau == doctest::Approx(expected.tau).epsilon(1e-10));
    history.push(s, y, *scalars, figures);
    kept.emplace_back(s, y, *scalars);
    if (static_cast<int64_t>(kept.size()) > memory) {
      base /= std::get<2>(kept.front()).tau;
      kept.erase(kept.begin());
    }
    CHECK(history.geometry().base() == doctest::Approx(base).epsilon(1e-12));
    const auto v = torch::randn({kSize}, torch::kFloat64);
    CHECK(torch::allclose(times(history, v), dense_of().mv(v), 1e-10, 1e-12));
  }
  // A checkpoint keeps the scaling.
  PairGeometry copy(memory);
  copy.set_flat(history.geometry().flat());
  CHECK(copy.base() == history.geometry().base());
  CHECK(copy.self_scaled());
  CHECK(copy.scalars(1).tau == history.geometry().scalars(1).tau);
}
