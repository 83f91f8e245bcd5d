#pragma once
// The small matrix products of the forward engine's CPU path. The whole-network node keeps a
// block's streams points-minor: one row per neuron, one column per point of the block, so a
// row is whole vectors (blocks hold whole vectors of points) and no neuron is padded. BLAS is
// built for large products: at this network's shapes (50 x 50 weights, blocks of ~100 points)
// OpenBLAS spent a large share of its time packing operands and zeroing outputs
// (docs/benchmarks.md, "Whole-network node against the per-layer path"), and the output of one
// call left the cache before the element-wise step read it. These register-tiled loops need
// neither; their operands are cache-resident.
#include <cstdint>

namespace tessera::autodiff::taylor::detail {

/// Bytes of the kernels' vector: one AVX-512 register, two AVX2 or four SSE2/NEON registers
/// (the compiler splits it where the CPU's registers are narrower).
constexpr int64_t vector_bytes = 64;

/// Elements of type T per vector.
template <typename T>
constexpr int64_t lanes() {
  return vector_bytes / static_cast<int64_t>(sizeof(T));
}

/// For i < rows and the `vectors` * lanes columns j:
///   c[i * ldc + j] (+)= sum_{t < steps} a[i * a_row + t * a_step] * b[t * ldb + j]  (+
///   row_bias[i])
/// `accumulate` adds to c instead of overwriting it; `row_bias` (may be null) is added to row i.
/// b and c rows hold whole vectors; a is read element by element, so its two strides make the
/// one kernel serve W . h (a_row = in, a_step = 1) and W^T . g (a_row = 1, a_step = in).
void gemm(int64_t rows, int64_t vectors, int64_t steps, const float* a, int64_t a_row,
          int64_t a_step, const float* b, int64_t ldb, float* c, int64_t ldc, bool accumulate,
          const float* row_bias);
void gemm(int64_t rows, int64_t vectors, int64_t steps, const double* a, int64_t a_row,
          int64_t a_step, const double* b, int64_t ldb, double* c, int64_t ldc, bool accumulate,
          const double* row_bias);

/// A block's streams as the kernels address them: stream 0 at `value`, stream k >= 1 at
/// rest + k * plane. The value stream may live apart from the others (in the whole-network node
/// a hidden layer's output value is its saved activation, the rest sits in scratch).
template <typename Pointer>
struct Streams {
  Pointer value, rest;
  int64_t plane;
  Pointer operator[](int64_t k) const { return k == 0 ? value : rest + k * plane; }
};

/// Streams one plane apart from `base`.
template <typename Pointer>
Streams<Pointer> contiguous(Pointer base, int64_t plane) {
  return {base, base, plane};
}

/// The products a . b^T over rows of whole vectors, summed over the first `sets` streams of a
/// and b but left spread over the lanes of one vector per result: for i < rows and j < cols,
/// the `lanes` elements from partial + (i * cols + j) * lanes sum to
///   sum_{s < sets} sum_{e < vectors * lanes} a[s][i * lda + e] * b[s][j * ldb + e]
/// (how the terms spread over the lanes depends on the instruction set). `accumulate` adds to
/// the entries instead of overwriting them. Summing the lanes is left to the caller, who can
/// add many calls (the weight gradient of many blocks) with one horizontal sum at the end.
void gemm_lanes(int64_t rows, int64_t cols, int64_t vectors, int64_t sets,
                const Streams<const float*>& a, int64_t lda, const Streams<const float*>& b,
                int64_t ldb, float* partial, bool accumulate);
void gemm_lanes(int64_t rows, int64_t cols, int64_t vectors, int64_t sets,
                const Streams<const double*>& a, int64_t lda, const Streams<const double*>& b,
                int64_t ldb, double* partial, bool accumulate);

/// The kernel set the products run: "avx512", "avx2" or "baseline", the best the CPU has unless
/// the environment variable TESSERA_CPU_KERNELS asks for a lower one (x86-64 GCC builds; other
/// builds always say "baseline": one version, compiled for the build's target). An unknown
/// value throws tessera::Error at the first product. By construction AVX-512 and AVX2 sum gemm's
/// terms in the same order (with FMA); gemm_lanes spreads its sums over the lanes differently, so
/// weight gradients differ in rounding between them, and the baseline (no FMA) rounds differently
/// throughout.
const char* cpu_kernels();

/// Whether that set is AVX-512: tanh_into's AVX-512 version runs only then.
bool avx512_kernels();

}  // namespace tessera::autodiff::taylor::detail
