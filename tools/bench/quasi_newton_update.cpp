// One iteration's work on a dense inverse Hessian: the SSBroyden update followed by the next
// search direction's product H g, as two passes over the matrix (update, then a separate
// matrix-vector product) against one (the product computed row by row during the update), from
// one invocation. The two alternate call by call, so load from other tenants of a shared
// machine falls on both alike; the median of the per-pair ratios is the figure to quote.
//
//   build/bench_quasi_newton_update [rows] [columns] [pairs]   (defaults 4000 12000 20)
//
// rows x columns is the block of the matrix one subdomain holds in the joint layout (its
// parameters x all parameters); the matrix is rows x columns doubles (384 MB by default).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/quasi_newton.hpp"

namespace {

using tessera::train::QuasiNewtonUpdate;
using tessera::train::update_rows;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 4000;
  const int64_t columns = argc > 2 ? std::atoll(argv[2]) : 12000;
  const int pairs = argc > 3 ? std::atoi(argv[3]) : 20;
  if (rows < 1 || columns < rows || pairs < 1) {
    std::fprintf(stderr, "usage: bench_quasi_newton_update [rows] [columns >= rows] [pairs]\n");
    return 2;
  }
  torch::manual_seed(1);
  const auto options = torch::TensorOptions().dtype(torch::kFloat64);
  // A small symmetric positive definite start: the rows of 1e-3 I + a small perturbation.
  auto H = tessera::train::identity_rows(rows, columns, 0, options) * 1e-3;
  const auto s = torch::randn({columns}, options) * 1e-3;
  const auto y = s * 2 + torch::randn({columns}, options) * 1e-5;  // s.y > 0
  const auto Hy = y * 1e-3;
  const auto g = torch::randn({columns}, options);
  const double sBs = 0.5 * s.dot(y).item<double>();

  std::vector<double> two_passes, one_pass, ratios;
  for (int k = 0; k < pairs; ++k) {
    auto start = std::chrono::steady_clock::now();
    update_rows(H, 0, QuasiNewtonUpdate::ssbroyden, false, s, y, Hy, sBs);
    const auto separate = H.mv(g);
    two_passes.push_back(seconds_since(start));
    start = std::chrono::steady_clock::now();
    const auto fused = update_rows(H, 0, QuasiNewtonUpdate::ssbroyden, false, s, y, Hy, sBs, g);
    one_pass.push_back(seconds_since(start));
    ratios.push_back(two_passes.back() / one_pass.back());
    if (!fused || !separate.defined()) return 1;
  }
  const double gigabytes = 8e-9 * static_cast<double>(rows) * static_cast<double>(columns);
  std::printf("inverse-Hessian rows %lld x %lld (%.2f GB), %d pairs, %d thread(s)\n",
              static_cast<long long>(rows), static_cast<long long>(columns), gigabytes, pairs,
              torch::get_num_threads());
  std::printf("update, then H g:         median %.4f s\n", median(two_passes));
  std::printf("update with H g fused:    median %.4f s\n", median(one_pass));
  std::printf("speed-up (median of per-pair ratios): %.2fx\n", median(ratios));
  return 0;
}
