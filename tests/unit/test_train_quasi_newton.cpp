// The dense quasi-Newton optimizers and their line search on problems with known minimisers:
// a convex quadratic (the minimiser solves a linear system) and the Rosenbrock function
// (minimiser at all ones, reached through a curved valley), each to 1e-10 in float64.
#include <doctest/doctest.h>

#include <cmath>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/quasi_newton.hpp"
#include "tessera/train/strong_wolfe.hpp"

namespace {

using tessera::train::QuasiNewton;
using tessera::train::QuasiNewtonOptions;
using tessera::train::QuasiNewtonUpdate;

/// Minimises `loss(p)` from `start`; returns the final parameters.
template <typename Loss>
torch::Tensor minimise(QuasiNewtonUpdate update, const torch::Tensor& start, Loss loss,
                       int64_t iterations) {
  auto p = start.clone().set_requires_grad(true);
  QuasiNewton optimizer({p}, QuasiNewtonOptions(update).max_iter(iterations));
  optimizer.step([&] {
    optimizer.zero_grad();
    auto value = loss(p);
    value.backward();
    return value;
  });
  return p.detach();
}

double largest_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

torch::Tensor rosenbrock(const torch::Tensor& p) {
  const auto x = p.slice(0, 0, -1), y = p.slice(0, 1);
  return (100 * (y - x * x).pow(2) + (1 - x).pow(2)).sum();
}

/// (-1.2, 0, -1.2, 0, ...): far from the minimiser at all ones.
torch::Tensor rosenbrock_start(int64_t n) {
  auto start = torch::zeros({n}, torch::kFloat64);
  start.index_put_({torch::indexing::Slice(0, n, 2)}, -1.2);
  return start;
}

/// The 8-D Rosenbrock function's parameters as two blocks of 4, coupled through
/// (p4 - p3^2)^2, each with its own optimizer.
struct SplitRosenbrock {
  std::vector<torch::Tensor> parts;
  std::vector<std::unique_ptr<QuasiNewton>> blocks;
  explicit SplitRosenbrock(QuasiNewtonUpdate update) {
    const auto start = rosenbrock_start(8);
    parts = {start.slice(0, 0, 4).clone().set_requires_grad(true),
             start.slice(0, 4).clone().set_requires_grad(true)};
    for (auto& part : parts)
      blocks.push_back(std::make_unique<QuasiNewton>(std::vector<torch::Tensor>{part},
                                                     QuasiNewtonOptions(update)));
  }
  /// The value and each block's gradient at the blocks' current parameters.
  double evaluate(std::vector<torch::Tensor>& gradient) {
    for (auto& block : blocks) block->zero_grad();
    auto value = rosenbrock(torch::cat(parts));
    value.backward();
    gradient.clear();
    for (auto& block : blocks) gradient.push_back(block->flat_gradient());
    return value.item<double>();
  }
};

}  // namespace

TEST_CASE("BFGS and SSBroyden minimise a convex quadratic to 1e-10") {
  // 0.5 |M p - c|^2 with c = M p*: a least-squares problem whose Hessian M^T M has a condition
  // number of 1e4, and whose loss falls to zero so that line searches can resolve it.
  torch::manual_seed(3);
  const int64_t n = 30;
  const auto [q, r] = at::linalg_qr(torch::randn({n, n}, torch::kFloat64));
  const auto m = q.matmul(torch::diag(torch::logspace(-1, 1, n, 10, torch::kFloat64)));
  const auto solution = torch::randn({n}, torch::kFloat64);
  const auto c = m.mv(solution);
  const auto quadratic = [&](const torch::Tensor& p) { return 0.5 * (m.mv(p) - c).pow(2).sum(); };
  for (auto update : {QuasiNewtonUpdate::bfgs, QuasiNewtonUpdate::ssbroyden}) {
    CAPTURE(static_cast<int>(update));
    const auto p = minimise(update, torch::zeros({n}, torch::kFloat64), quadratic, 500);
    CHECK(largest_difference(p, solution) < 1e-10);
  }
}

TEST_CASE("BFGS and SSBroyden minimise the Rosenbrock function to 1e-10") {
  for (auto update : {QuasiNewtonUpdate::bfgs, QuasiNewtonUpdate::ssbroyden}) {
    CAPTURE(static_cast<int>(update));
    const auto two = minimise(update, torch::tensor({-1.2, 1.0}, torch::kFloat64), rosenbrock, 500);
    CHECK(largest_difference(two, torch::ones({2}, torch::kFloat64)) < 1e-10);
    const auto eight = minimise(update, rosenbrock_start(8), rosenbrock, 2000);
    CHECK(largest_difference(eight, torch::ones({8}, torch::kFloat64)) < 1e-10);
  }
}

TEST_CASE("The strong Wolfe line search returns a step that satisfies both conditions") {
  // f(t) = (t - 3)^2 from t = 0: the first trial 1 must extrapolate, and the result lie where
  // |f'(t)| <= 0.9 |f'(0)| with sufficient decrease.
  const auto f = [](double t) {
    return tessera::train::LineSample{t, (t - 3) * (t - 3), 2 * (t - 3)};
  };
  const auto found = tessera::train::strong_wolfe(f, f(0), 1.0);
  CHECK(found.wolfe);
  CHECK(found.accepted.value <= 9 + 1e-4 * found.accepted.t * -6);
  CHECK(std::abs(found.accepted.slope) <= 0.9 * 6);
  // A direction that only rises: no step is accepted.
  const auto rising = [](double t) { return tessera::train::LineSample{t, t, 1.0}; };
  const auto none = tessera::train::strong_wolfe(rising, {0, 0, -1.0}, 1.0);
  CHECK(none.accepted.t == 0);
}

TEST_CASE("Block quasi-Newton with one common line search minimises a coupled function") {
  // The way the trainer moves subdomains coupled through interfaces: each block keeps its own
  // inverse Hessian, one strong Wolfe search acts on the summed function. The 8-D Rosenbrock
  // function split 4 + 4 couples the blocks through (p4 - p3^2)^2.
  for (auto update : {QuasiNewtonUpdate::bfgs, QuasiNewtonUpdate::ssbroyden}) {
    CAPTURE(static_cast<int>(update));
    SplitRosenbrock split(update);
    auto& parts = split.parts;
    auto& blocks = split.blocks;
    const auto evaluate = [&](std::vector<torch::Tensor>& gradient) {
      return split.evaluate(gradient);
    };
    std::vector<torch::Tensor> gradient;
    double value = evaluate(gradient);
    for (int k = 0; k < 4000; ++k) {
      std::vector<torch::Tensor> x, direction;
      double slope = 0;
      for (std::size_t b = 0; b < 2; ++b) {
        x.push_back(blocks[b]->flat_parameters());
        direction.push_back(blocks[b]->block_direction(gradient[b]));
        slope += gradient[b].dot(direction[b]).item<double>();
      }
      std::vector<std::pair<double, std::vector<torch::Tensor>>> seen;
      const auto along = [&](double t) {
        for (std::size_t b = 0; b < 2; ++b) blocks[b]->set_parameters(x[b] + direction[b] * t);
        std::vector<torch::Tensor> g;
        const double f = evaluate(g);
        double s = 0;
        for (std::size_t b = 0; b < 2; ++b) s += g[b].dot(direction[b]).item<double>();
        seen.emplace_back(t, g);
        return tessera::train::LineSample{t, f, s};
      };
      const auto found = tessera::train::strong_wolfe(along, {0, value, slope}, 1.0);
      if (found.accepted.t == 0) {
        for (std::size_t b = 0; b < 2; ++b) blocks[b]->set_parameters(x[b]);
        if (blocks[0]->block_fresh() && blocks[1]->block_fresh()) break;
        for (auto& block : blocks) block->block_restart();
        continue;
      }
      std::vector<torch::Tensor> next;
      for (auto& [t, g] : seen)
        if (t == found.accepted.t) next = g;
      for (std::size_t b = 0; b < 2; ++b) {
        blocks[b]->set_parameters(x[b] + direction[b] * found.accepted.t);
        const auto s = blocks[b]->flat_parameters() - x[b];
        blocks[b]->block_update(s, next[b] - gradient[b], gradient[b], found.accepted.t);
      }
      gradient = next;
      value = found.accepted.value;
    }
    CHECK(largest_difference(torch::cat(parts).detach(), torch::ones({8}, torch::kFloat64)) <
          1e-10);
    CHECK(blocks[0]->iterations() > 0);
  }
}

TEST_CASE("Rows of the inverse Hessian updated apart make the whole matrix's update") {
  // How the trainer keeps one matrix over subdomains on several ranks: each holds its rows and
  // sees the whole vectors. Row by row, the update is the same arithmetic as the whole one.
  torch::manual_seed(5);
  const int64_t n = 10, split = 4;
  const auto a = torch::randn({n, n}, torch::kFloat64);
  const auto H = a.mm(a.t()) + torch::eye(n, torch::kFloat64);
  const auto s = torch::randn({n}, torch::kFloat64);
  const auto y = s * 2 + torch::randn({n}, torch::kFloat64) * 0.1;  // s.y > 0
  const double sBs = 1.7;
  for (auto method : {QuasiNewtonUpdate::bfgs, QuasiNewtonUpdate::ssbroyden}) {
    for (bool first : {true, false}) {
      CAPTURE(static_cast<int>(method));
      CAPTURE(first);
      auto whole = H.clone();
      const auto Hy = H.mv(y);
      const auto times = torch::randn({n}, torch::kFloat64);
      const auto whole_product =
          tessera::train::update_rows(whole, 0, method, first, s, y, Hy, sBs, times);
      REQUIRE(whole_product);
      auto top = H.slice(0, 0, split).clone(), bottom = H.slice(0, split).clone();
      const auto top_product =
          tessera::train::update_rows(top, 0, method, first, s, y, Hy, sBs, times);
      const auto bottom_product =
          tessera::train::update_rows(bottom, split, method, first, s, y, Hy, sBs, times);
      REQUIRE(top_product);
      REQUIRE(bottom_product);
      CHECK(torch::equal(torch::cat({top, bottom}), whole));
      CHECK(largest_difference(whole, whole.t()) < 1e-12);  // still symmetric
      // The product computed during the update is the updated matrix's, row by row.
      CHECK(torch::equal(torch::cat({*top_product, *bottom_product}), *whole_product));
      CHECK(largest_difference(*whole_product, whole.mv(times)) < 1e-12);
    }
  }
  // No positive curvature: nothing changes.
  auto kept = H.clone();
  CHECK_FALSE(tessera::train::update_rows(kept, 0, QuasiNewtonUpdate::ssbroyden, false, s, -y,
                                          H.mv(-y), sBs));
  CHECK(torch::equal(kept, H));
}

TEST_CASE("One inverse Hessian held as rows by two blocks minimises a coupled function") {
  // The trainer's joint layout: blocks hold the rows of their parameters, the whole gradient,
  // step, gradient change and H y are assembled from the blocks' pieces, and one strong Wolfe
  // search acts on the sum. The 8-D Rosenbrock function split 4 + 4.
  for (auto update : {QuasiNewtonUpdate::bfgs, QuasiNewtonUpdate::ssbroyden}) {
    CAPTURE(static_cast<int>(update));
    SplitRosenbrock split(update);
    auto& parts = split.parts;
    auto& blocks = split.blocks;
    const std::vector<int64_t> offsets{0, 4};
    std::vector<torch::Tensor> gradient;
    const auto evaluate = [&] { return split.evaluate(gradient); };
    double value = evaluate();
    bool fresh = true;
    int iterations = 0;
    for (; iterations < 2000; ++iterations) {
      const auto g = torch::cat(gradient);
      if (g.abs().max().item<double>() <= 1e-12) break;
      std::vector<torch::Tensor> x, direction;
      for (std::size_t b = 0; b < 2; ++b) {
        x.push_back(blocks[b]->flat_parameters());
        direction.push_back(-blocks[b]->rows_times(g, offsets[b]));
      }
      const auto d = torch::cat(direction);
      const double t0 = fresh ? std::min(1.0, 1 / g.abs().sum().item<double>()) : 1.0;
      std::vector<std::pair<double, torch::Tensor>> seen;
      const auto along = [&](double t) {
        for (std::size_t b = 0; b < 2; ++b) blocks[b]->set_parameters(x[b] + direction[b] * t);
        const double f = evaluate();
        seen.emplace_back(t, torch::cat(gradient));
        return tessera::train::LineSample{t, f, seen.back().second.dot(d).item<double>()};
      };
      const auto found =
          tessera::train::strong_wolfe(along, {0, value, g.dot(d).item<double>()}, t0);
      REQUIRE(found.accepted.t > 0);
      torch::Tensor next;
      for (auto& [t, seen_gradient] : seen)
        if (t == found.accepted.t) next = seen_gradient;
      for (std::size_t b = 0; b < 2; ++b)
        blocks[b]->set_parameters(x[b] + direction[b] * found.accepted.t);
      const auto s =
          torch::cat({blocks[0]->flat_parameters(), blocks[1]->flat_parameters()}) - torch::cat(x);
      const auto y = next - g;
      const auto Hy = torch::cat({blocks[0]->rows_times(y, 0), blocks[1]->rows_times(y, 4)});
      const double sBs = -found.accepted.t * s.dot(g).item<double>();
      for (std::size_t b = 0; b < 2; ++b)
        blocks[b]->rows_update(s, y, Hy, sBs, offsets[b], fresh, next);
      fresh = blocks[0]->block_fresh();
      value = evaluate();
    }
    CHECK(largest_difference(torch::cat(parts).detach(), torch::ones({8}, torch::kFloat64)) <
          1e-10);
    // A dense matrix over both blocks needs far fewer iterations than the 4,000 allowed to the
    // block-diagonal one above.
    CHECK(iterations < 500);
  }
}
