#pragma once
// Shared by the quasi-Newton unit tests: an optimizer on a quadratic, continued from a copy of
// its saved state.
#include <doctest/doctest.h>

#include <cstdint>
#include <sstream>
#include <tuple>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/quasi_newton.hpp"

namespace tessera::train::testing {

/// A symmetric positive definite `size` x `size` matrix with eigenvalues spaced evenly in the
/// logarithm from 1 to 10^`decades`, in random axes drawn from `seed`.
inline torch::Tensor spd_matrix(int64_t size, double decades, uint64_t seed) {
  torch::manual_seed(seed);
  const auto q = std::get<0>(torch::linalg_qr(torch::randn({size, size}, torch::kFloat64)));
  return q.mm(torch::diag(torch::logspace(0, decades, size, 10, torch::kFloat64))).mm(q.t());
}

/// Minimises 0.5 x.A x - b.x from x = 0 with `options`: `first` iterations, then a save; a copy
/// restored from it and the original each take `rest` more. Both must end on the same bits,
/// within `tolerance` of the solution.
inline void check_continues_from_its_state(const QuasiNewtonOptions& options,
                                           const torch::Tensor& A, const torch::Tensor& b,
                                           int64_t first, int64_t rest, double tolerance) {
  const auto solution = torch::linalg_solve(A, b, true);
  const auto run = [&](QuasiNewton& optimizer, torch::Tensor& x) {
    optimizer.step([&] {
      optimizer.zero_grad();
      auto loss = 0.5 * x.dot(A.mv(x)) - b.dot(x);
      loss.backward();
      return loss;
    });
  };
  auto x = torch::zeros({A.size(0)}, torch::kFloat64).requires_grad_();
  QuasiNewton optimizer({x}, QuasiNewtonOptions(options).max_iter(first));
  run(optimizer, x);
  std::stringstream bytes;
  torch::serialize::OutputArchive saved;
  optimizer.save(saved);
  saved.save_to(bytes);
  auto copy = x.detach().clone().requires_grad_();
  QuasiNewton restored({copy}, QuasiNewtonOptions(options).max_iter(rest));
  torch::serialize::InputArchive loaded;
  loaded.load_from(bytes);
  restored.load(loaded);
  run(restored, copy);
  static_cast<QuasiNewtonOptions&>(optimizer.param_groups()[0].options()).max_iter(rest);
  run(optimizer, x);
  CHECK(torch::equal(x.detach(), copy.detach()));
  CHECK(torch::allclose(x.detach(), solution, tolerance, tolerance));
}

}  // namespace tessera::train::testing
