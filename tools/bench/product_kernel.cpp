// How close the forward engine's register-tiled products (src/autodiff/kernels/gemm.cpp) come to
// one core's floating-point peak, from one invocation: the peak of a loop of independent FMAs
// on the widest vectors the kernels use on this CPU, then the kernels at the whole-network CPU
// node's shapes with their operands in L1 (a block of 96 points, 4 streams, 50-wide layers, one
// row per neuron): W . h (forward), W^T . g (input gradient) and the lane-wise weight gradient.
// x86-64 with GCC only, like the kernels' instruction-set dispatch.
//
//   build/bench_product_kernel          (built with everything else by tools/build.sh)
//
// Best of 30 repeats each (other work on a shared machine only ever adds time). In place, inside
// a training iteration, the kernels run slower than here: their operands come from L2 and beyond.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "kernels/gemm.hpp"

namespace {

using tessera::autodiff::taylor::detail::gemm;
using tessera::autodiff::taylor::detail::gemm_lanes;
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

// 12 independent multiply-adds per step on one kind of vector: enough to cover the FMA latency
// on two pipes. Inlined into the target-specific callers below (no lambda, whose body would be
// compiled for the baseline); called only where the CPU has the instructions (main checks).
typedef float Avx2Vector __attribute__((vector_size(32)));
typedef float Avx512Vector __attribute__((vector_size(64)));

template <typename Vector>
inline __attribute__((always_inline)) double fma_peak_loop() {
  Vector sum[12];
  for (int i = 0; i < 12; ++i) sum[i] = Vector{} + 0.001f * static_cast<float>(i);
  Vector scale = Vector{} + 0.999f;
  const Vector shift = Vector{} + 0.0001f;
  constexpr long steps = 2000000;
  double best = 1e30;
  for (int repeat = 0; repeat < 30; ++repeat) {
    const auto start = std::chrono::steady_clock::now();
    for (long k = 0; k < steps; ++k) {
#pragma GCC unroll 12
      for (int i = 0; i < 12; ++i) sum[i] = sum[i] * scale + shift;
      asm volatile("" : "+v"(scale));  // keeps the loop from being folded away
    }
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    best = std::min(best, took.count());
  }
  float keep = 0;
  for (int i = 0; i < 12; ++i) keep += sum[i][0];
  asm volatile("" : : "v"(keep));
  return steps * 12.0 * (sizeof(Vector) / sizeof(float)) * 2 / best / 1e9;
}

__attribute__((target("arch=x86-64-v4"))) double fma_peak_avx512() {
  return fma_peak_loop<Avx512Vector>();
}
__attribute__((target("arch=x86-64-v3"))) double fma_peak_avx2() {
  return fma_peak_loop<Avx2Vector>();
}

// n copies of value, aligned to a cache line as the node's scratch and LibTorch's tensors are
// (src/autodiff/kernels/scratch.hpp): vectors that straddle two lines would cost the weight
// gradient a sixth of its speed and misstate what the node gets.
std::unique_ptr<float[], decltype(&std::free)> filled(int64_t n, float value) {
  const auto bytes = static_cast<std::size_t>((n * 4 + 63) / 64 * 64);
  std::unique_ptr<float[], decltype(&std::free)> data(
      static_cast<float*>(std::aligned_alloc(64, bytes)), &std::free);
  std::fill(data.get(), data.get() + n, value);
  return data;
}

}  // namespace

int main() {
  if (!__builtin_cpu_supports("x86-64-v3")) {
    std::printf(
        "this CPU lacks AVX2 + FMA: the kernels run their baseline version; no peak to compare\n");
    return 0;
  }
  const bool avx512 = __builtin_cpu_supports("x86-64-v4");
  constexpr int64_t points = 96, streams = 4, width = 50;
  const int64_t vectors = points / lanes<float>();
  const auto h = filled(streams * width * points, 0.5f), weights = filled(width * width, 0.01f);
  const auto z = filled(streams * width * points, 0.0f), bias = filled(width, 0.1f);
  const auto grad = filled(streams * width * points, 0.3f);
  const auto by_lane = filled(width * width * lanes<float>(), 0.0f);
  const double forward = best_seconds(200, [&] {
    for (int64_t k = 0; k < streams; ++k)
      gemm(width, vectors, width, weights.get(), width, 1, h.get() + k * width * points, points,
           z.get() + k * width * points, points, false, k == 0 ? bias.get() : nullptr);
  });
  const double input_gradient = best_seconds(200, [&] {
    for (int64_t k = 0; k < streams; ++k)
      gemm(width, vectors, width, weights.get(), 1, width, grad.get() + k * width * points, points,
           z.get() + k * width * points, points, false, static_cast<const float*>(nullptr));
  });
  const double weight_gradient = best_seconds(200, [&] {
    using tessera::autodiff::taylor::detail::contiguous;
    gemm_lanes(width, width, vectors, streams, contiguous<const float*>(grad.get(), width * points),
               points, contiguous<const float*>(h.get(), width * points), points, by_lane.get(),
               true);
  });
  const double peak = avx512 ? fma_peak_avx512() : fma_peak_avx2();
  const double flops = 2.0 * streams * points * width * width;  // each of the three products
  const auto show = [&](const char* name, double seconds) {
    std::printf("%-40s %6.1f GFLOP/s (%.0f %% of peak)\n", name, flops / seconds / 1e9,
                100 * flops / seconds / 1e9 / peak);
  };
  std::printf("FMA peak of one core (float32, %s): %6.1f GFLOP/s\n", avx512 ? "AVX-512" : "AVX2",
              peak);
  show("W . h, 4 streams x 50 x 50 x 96 points:", forward);
  show("W^T . g, the same shapes:", input_gradient);
  show("weight gradient, 50 x 50 over 4 x 96:", weight_gradient);
  return 0;
}
