// How close the forward engine's register-tiled product (src/autodiff/taylor_gemm.cpp) comes to
// one core's floating-point peak, from one invocation: the peak of a loop of independent FMAs,
// then the kernel at the whole-network CPU node's shapes with its operands in L1 (a block of 80
// points, 4 streams, 50-wide layers padded to 56 columns): a . W^T (forward and input gradient)
// and the weight gradient a^T . h. x86-64 with GCC or Clang only, like the kernel's clones.
//
//   build/bench_product_kernel          (built with everything else by tools/build.sh)
//
// Best of 30 repeats each (other work on a shared machine only ever adds time). In place, inside
// a training iteration, the kernel runs slower than here: its operands come from L2 and beyond.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "taylor_gemm.hpp"

namespace {

using tessera::autodiff::taylor::detail::gemm;
using tessera::autodiff::taylor::detail::lanes;

template <typename F>
double best_seconds(int calls, const F& body) {
  double best = 1e30;
  for (int repeat = 0; repeat < 30; ++repeat) {
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < calls; ++k) body();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count() / calls);
  }
  return best;
}

// 12 independent multiply-adds per step: enough to cover the FMA latency on two pipes.
// AVX2 + FMA only (the kernel's fast clone); main() checks the CPU has them.
__attribute__((target("avx2,fma"))) double fma_peak_gflops() {
  typedef float Vector __attribute__((vector_size(32)));
  Vector sum[12];
  for (int i = 0; i < 12; ++i) sum[i] = Vector{} + 0.001f * static_cast<float>(i);
  Vector scale = Vector{} + 0.999f;
  const Vector shift = Vector{} + 0.0001f;
  constexpr long steps = 2000000;
  const double seconds = best_seconds(1, [&] {
    for (long k = 0; k < steps; ++k) {
#pragma GCC unroll 12
      for (int i = 0; i < 12; ++i) sum[i] = sum[i] * scale + shift;
      asm volatile("" : "+x"(scale));  // keeps the loop from being folded away
    }
  });
  float keep = 0;
  for (int i = 0; i < 12; ++i) keep += sum[i][0];
  asm volatile("" : : "x"(keep));
  return steps * 12.0 * 8 * 2 / seconds / 1e9;
}

}  // namespace

int main() {
  constexpr int64_t points = 80, streams = 4, width = 50, padded = 56;
  std::vector<float> h(streams * points * padded, 0.5f), weights(width * padded, 0.01f);
  std::vector<float> z(streams * points * padded), bias(padded, 0.1f);
  std::vector<float> grad(streams * points * padded, 0.3f), weight_grad(width * padded);
  const double forward = best_seconds(200, [&] {
    for (int64_t k = 0; k < streams; ++k)
      gemm(points, padded / lanes<float>(), width, h.data() + k * points * padded, padded, 1,
           weights.data(), padded, z.data() + k * points * padded, padded, false,
           k == 0 ? bias.data() : nullptr);
  });
  const double weight_gradient = best_seconds(200, [&] {
    for (int64_t k = 0; k < streams; ++k)
      gemm(width, padded / lanes<float>(), points, grad.data() + k * points * padded, 1, padded,
           h.data() + k * points * padded, padded, weight_grad.data(), padded, true,
           static_cast<const float*>(nullptr));
  });
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
    std::printf("this CPU lacks AVX2 + FMA: the kernel runs its baseline clone; no peak to compare\n");
    return 0;
  }
  const double peak = fma_peak_gflops();
  const double useful = 2.0 * streams * points * width * width;  // flops without the padding
  const double counted = useful * padded / width;                 // flops the kernel executes
  std::printf("FMA peak of one core (float32):   %6.1f GFLOP/s\n", peak);
  std::printf("a . W^T, 4 x 80 x 50 -> 56:         %6.1f GFLOP/s useful, %6.1f with padding (%.0f %% of peak)\n",
              useful / forward / 1e9, counted / forward / 1e9, 100 * counted / forward / 1e9 / peak);
  std::printf("weight gradient, 50 x 56 over 320:  %6.1f GFLOP/s useful, %6.1f with padding (%.0f %% of peak)\n",
              useful / weight_gradient / 1e9, counted / weight_gradient / 1e9,
              100 * counted / weight_gradient / 1e9 / peak);
  return 0;
}
