#pragma once
// tanh on raw CPU arrays, vectorised: the forward engine's value streams need tanh of every
// pre-activation, and LibTorch's (Sleef's u10 tanhf8) was a visible cost of a CPU training
// iteration (docs/benchmarks.md, "Vectorised tanh").
#include <cstdint>

namespace tessera::autodiff::taylor::detail {

/// out[i] = tanh(z[i]) for i < count; within 4 ulp of std::tanh in float32 and float64 (3 measured;
/// tested). z and out may be the same array. An AVX-512 version runs where the kernel set is
/// AVX-512 (cpu_kernels in gemm.hpp), otherwise the AVX2 or baseline clone the CPU supports
/// (TESSERA_CPU_KERNELS=baseline does not force the baseline clone; the results are the same).
void tanh_into(const float* z, float* out, int64_t count);
void tanh_into(const double* z, double* out, int64_t count);

}  // namespace tessera::autodiff::taylor::detail
