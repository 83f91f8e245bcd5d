#pragma once
// The small matrix products of the forward engine's CPU path, on rows padded to whole vectors.
// BLAS is built for large products: at this network's shapes (blocks of a few hundred rows,
// 50 x 50 weights) OpenBLAS spent a third of its time packing operands and zeroing outputs
// (sgemm_beta, sgemm_*copy), and the output of one call left the cache before the element-wise
// step read it. These register-tiled loops need neither; their operands are cache-resident.
#include <cstdint>

namespace tessera::autodiff::taylor::detail {

/// Bytes per vector register the kernels assume (AVX2); rows are padded to a multiple of it.
constexpr int64_t vector_bytes = 32;

/// Elements of type T per vector.
template <typename T>
constexpr int64_t lanes() {
  return vector_bytes / static_cast<int64_t>(sizeof(T));
}

/// `width` rounded up to whole vectors of T.
template <typename T>
constexpr int64_t padded_width(int64_t width) {
  return (width + lanes<T>() - 1) / lanes<T>() * lanes<T>();
}

/// For i < rows and the `vectors` * lanes columns j:
///   c[i * ldc + j] (+)= sum_{t < steps} a[i * a_row + t * a_step] * b[t * ldb + j]  (+ bias[j])
/// `accumulate` adds to c instead of overwriting it; `bias` (may be null) is added per row.
/// b, c and bias rows hold whole vectors (their padding columns are computed like the others);
/// a is read element by element, so it needs no padding. Both strides of a make the one kernel
/// serve a . W^T (a_step = 1) and the weight gradient a^T . h (a_row = 1).
void gemm(int64_t rows, int64_t vectors, int64_t steps, const float* a, int64_t a_row,
          int64_t a_step, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
          const float* bias);
void gemm(int64_t rows, int64_t vectors, int64_t steps, const double* a, int64_t a_row,
          int64_t a_step, const double* b, int64_t ldb, double* c, int64_t ldc, bool accumulate,
          const double* bias);

}  // namespace tessera::autodiff::taylor::detail
