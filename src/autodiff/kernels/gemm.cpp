// Register-tiled products for the forward engine's CPU path (see gemm.hpp). A tile of
// the output sits in R x C vector registers while the loop over the summed index streams
// operands through; its shape follows the CPU's register file, chosen once at run time:
//   AVX-512 (32 registers of 64 bytes): gemm 5 rows x 3 registers, gemm_lanes 5 x 5 vectors;
//   AVX2 (16 registers of 32 bytes): gemm 4 x 3, gemm_lanes 3 x 4;
//   otherwise (SSE2, NEON, other compilers; 16 bytes): gemm 4 x 3, gemm_lanes 3 x 3.
// Both AVX-512 shapes cover 50-wide layers and 96-point blocks with no remainder tile. With
// their operands in L1 both come close to one core's FMA peak, and gemm_lanes's 5 x 5 tile
// closer than a 4 x 5 one (build/bench_product_kernel; docs/benchmarks.md, "Register-tiled
// product kernels").
#include "gemm.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "tessera/core/error.hpp"
#include "vector_clones.hpp"

namespace tessera::autodiff::taylor::detail {

// The vector helpers below are always inlined, so the ABI of passing vectors by value, which
// GCC warns about for the narrower targets, never applies.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace {

// A native vector of `Bytes` (16, 32 or 64: one SSE2/NEON, AVX2 or AVX-512 register). The
// kernels' 64-byte vector is 64 / Bytes native ones, so each instruction set works in its own
// registers: a 64-byte GCC vector on AVX2 went through the stack and ran several times slower
// (docs/benchmarks.md, "Register width per instruction set").
template <typename T, int Bytes>
struct Native;

#define TESSERA_NATIVE_VECTOR(T, BYTES)                                                      \
  template <>                                                                                \
  struct Native<T, BYTES> {                                                                  \
    typedef T type __attribute__((vector_size(BYTES)));                                      \
    /* For loads and stores at element alignment, through any T buffer. */                   \
    typedef T unaligned __attribute__((vector_size(BYTES), aligned(alignof(T)), may_alias)); \
    static constexpr int64_t lanes = BYTES / static_cast<int64_t>(sizeof(T));                \
    static constexpr int64_t pieces = vector_bytes / BYTES; /* per kernel vector */          \
  };
TESSERA_NATIVE_VECTOR(float, 16)
TESSERA_NATIVE_VECTOR(float, 32)
TESSERA_NATIVE_VECTOR(float, 64)
TESSERA_NATIVE_VECTOR(double, 16)
TESSERA_NATIVE_VECTOR(double, 32)
TESSERA_NATIVE_VECTOR(double, 64)
#undef TESSERA_NATIVE_VECTOR

template <typename T, int Bytes>
TESSERA_INLINE typename Native<T, Bytes>::type load(const T* p) {
  return *reinterpret_cast<const typename Native<T, Bytes>::unaligned*>(p);
}

template <typename T, int Bytes>
TESSERA_INLINE void store(T* p, const typename Native<T, Bytes>::type& v) {
  *reinterpret_cast<typename Native<T, Bytes>::unaligned*>(p) = v;
}

#define TESSERA_UNROLL _Pragma("GCC unroll 8")

// Covers rows [i, rows) x columns [j, cols) with kernel.tile<R, C>(i, j) tiles, then the last
// band of rows and the last column of tiles with smaller compile-time shapes.
template <int R, int C, typename Kernel>
TESSERA_INLINE void tile_columns(const Kernel& kernel, int64_t i, int64_t j, int64_t cols) {
  for (; j + C <= cols; j += C) kernel.template tile<R, C>(i, j);
  if constexpr (C > 1) tile_columns<R, C - 1>(kernel, i, j, cols);
}

template <int R, int C, typename Kernel>
TESSERA_INLINE void tile_rows(const Kernel& kernel, int64_t i, int64_t rows, int64_t j,
                              int64_t cols) {
  for (; i + R <= rows; i += R) tile_columns<R, C>(kernel, i, j, cols);
  if constexpr (R > 1) tile_rows<R - 1, C>(kernel, i, rows, j, cols);
}

// gemm: c rows i, native vectors j (see gemm.hpp).
template <typename T, int Bytes>
struct Product {
  int64_t steps;
  const T* a;
  int64_t a_row, a_step;
  const T* b;
  int64_t ldb;
  T* c;
  int64_t ldc;
  bool accumulate;
  const T* row_bias;

  template <int R, int V>
  TESSERA_INLINE void tile(int64_t i, int64_t j) const {
    using Vector = typename Native<T, Bytes>::type;
    constexpr int64_t L = Native<T, Bytes>::lanes;
    Vector sum[R][V];
    TESSERA_UNROLL for (int r = 0; r < R; ++r) TESSERA_UNROLL for (int v = 0; v < V; ++v)
        sum[r][v] = Vector{};
    const T* a_tile = a + i * a_row;
    const T* b_tile = b + j * L;
    for (int64_t t = 0; t < steps; ++t) {
      Vector row[V];
      TESSERA_UNROLL for (int v = 0; v < V; ++v) row[v] = load<T, Bytes>(b_tile + t * ldb + v * L);
      TESSERA_UNROLL for (int r = 0; r < R; ++r) {
        const T s = a_tile[r * a_row + t * a_step];
        TESSERA_UNROLL for (int v = 0; v < V; ++v) sum[r][v] += s * row[v];
      }
    }
    // The stores may alias anything (see Native::unaligned): fields read after them are copied
    // first, or the compiler reloads them at every store.
    T* const out_tile = c + i * ldc + j * L;
    const int64_t out_row = ldc;
    const T* const bias_tile = row_bias ? row_bias + i : nullptr;
    const bool add_old = accumulate;
    TESSERA_UNROLL for (int r = 0; r < R; ++r) TESSERA_UNROLL for (int v = 0; v < V; ++v) {
      T* out = out_tile + r * out_row + v * L;
      Vector value = sum[r][v];
      if (bias_tile) value += bias_tile[r];
      if (add_old) value += load<T, Bytes>(out);
      store<T, Bytes>(out, value);
    }
  }
};

// gemm_lanes: partial sums for rows i of a and rows j of b (see gemm.hpp). Where a
// native vector is narrower than the kernels' vector, its pieces share one accumulator, which
// lands in the first native vector of the partial entry (the rest stays zero): the lanes of an
// entry are summed by the caller anyway, and one accumulator per pair of rows lets AVX2 hold a
// 3 x 4 tile in its 16 registers.
template <typename T, int Bytes>
struct LaneProduct {
  int64_t cols, vectors, sets;
  Streams<const T*> a;
  int64_t lda;
  Streams<const T*> b;
  int64_t ldb;
  T* partial;
  bool accumulate;

  template <int R, int C>
  TESSERA_INLINE void tile(int64_t i, int64_t j) const {
    using Vector = typename Native<T, Bytes>::type;
    constexpr int64_t L = Native<T, Bytes>::lanes;
    constexpr int64_t pieces = vectors_per_kernel_vector();
    Vector sum[R][C];
    TESSERA_UNROLL for (int r = 0; r < R; ++r) TESSERA_UNROLL for (int c = 0; c < C; ++c)
        sum[r][c] = Vector{};
    for (int64_t s = 0; s < sets; ++s) {
      const T* a_tile = a[s] + i * lda;
      const T* b_tile = b[s] + j * ldb;
      for (int64_t e = 0; e < vectors * pieces * L; e += L) {
        Vector x[R];
        TESSERA_UNROLL for (int r = 0; r < R; ++r) x[r] = load<T, Bytes>(a_tile + r * lda + e);
        TESSERA_UNROLL for (int c = 0; c < C; ++c) {
          const Vector y = load<T, Bytes>(b_tile + c * ldb + e);
          TESSERA_UNROLL for (int r = 0; r < R; ++r) sum[r][c] += x[r] * y;
        }
      }
    }
    // As in Product::tile: the fields the stores could alias are copied first.
    T* const out_tile = partial + (i * cols + j) * lanes<T>();
    const int64_t out_row = cols * lanes<T>();
    const bool add_old = accumulate;
    TESSERA_UNROLL for (int r = 0; r < R; ++r) TESSERA_UNROLL for (int c = 0; c < C; ++c) {
      T* out = out_tile + r * out_row + c * lanes<T>();
      if (add_old) {
        store<T, Bytes>(out, sum[r][c] + load<T, Bytes>(out));
      } else {
        store<T, Bytes>(out, sum[r][c]);
        for (int64_t q = 1; q < pieces; ++q) store<T, Bytes>(out + q * L, Vector{});
      }
    }
  }

  static constexpr int64_t vectors_per_kernel_vector() { return Native<T, Bytes>::pieces; }
};

// Runs a kernel over its rows and columns (for gemm: native vectors) in R x C tiles.
template <int R, int C, typename T, int Bytes>
TESSERA_INLINE void run(const Product<T, Bytes>& p, int64_t rows, int64_t vectors) {
  tile_rows<R, C>(p, 0, rows, 0, vectors * Native<T, Bytes>::pieces);
}

// Bytes of b's rows that one band of columns may take: half of a 48 KiB L1, leaving room for
// the tile's rows of a.
constexpr int64_t band_bytes = 24 * 1024;

// Every row tile passes over every column: in bands of columns whose rows of b fit in L1, so
// that b is read from L2 once per band rather than once per row tile. Each entry's sum runs in
// the same order whatever tile covers it, so the bands change no result.
template <int R, int C, typename T, int Bytes>
TESSERA_INLINE void run(const LaneProduct<T, Bytes>& p, int64_t rows, int64_t cols) {
  const int64_t row_bytes = p.sets * p.vectors * vector_bytes;
  const int64_t band = std::max<int64_t>(1, band_bytes / row_bytes / C) * C;
  for (int64_t j = 0; j < cols; j += band) tile_rows<R, C>(p, 0, rows, j, std::min(cols, j + band));
}

// Each instruction set's version of both kernels, with tile shapes for its register file.
#ifdef TESSERA_AVX512_VERSIONS
#define TESSERA_GEMM_DISPATCH 1

template <typename T>
TESSERA_AVX512 void products_v4(const Product<T, 64>& p, int64_t rows, int64_t vectors) {
  run<5, 3>(p, rows, vectors);
}
template <typename T>
TESSERA_AVX512 void products_v4(const LaneProduct<T, 64>& p, int64_t rows, int64_t cols) {
  run<5, 5>(p, rows, cols);
}
template <typename T>
__attribute__((target("arch=x86-64-v3"))) void products_v3(const Product<T, 32>& p, int64_t rows,
                                                           int64_t vectors) {
  run<4, 3>(p, rows, vectors);
}
template <typename T>
__attribute__((target("arch=x86-64-v3"))) void products_v3(const LaneProduct<T, 32>& p,
                                                           int64_t rows, int64_t cols) {
  run<3, 4>(p, rows, cols);
}

enum class Isa { baseline, v3, v4 };  // in order: each runs wherever the next one does

Isa best_isa() {
  return __builtin_cpu_supports("x86-64-v4")   ? Isa::v4
         : __builtin_cpu_supports("x86-64-v3") ? Isa::v3
                                               : Isa::baseline;
}

// The best the CPU has, or less where TESSERA_CPU_KERNELS asks for less (for tests and for
// comparing results across machines).
Isa isa() {
  static const Isa chosen = [] {
    const Isa best = best_isa();
    const char* asked = std::getenv("TESSERA_CPU_KERNELS");
    if (!asked || !*asked) return best;
    const std::string name = asked;
    Isa wanted;
    if (name == "avx512")
      wanted = Isa::v4;
    else if (name == "avx2")
      wanted = Isa::v3;
    else if (name == "baseline")
      wanted = Isa::baseline;
    else
      TESSERA_FAIL("TESSERA_CPU_KERNELS="
                   << name << " is not a kernel set: use avx512, avx2 or baseline (or unset it)");
    return std::min(wanted, best);
  }();
  return chosen;
}
#endif

template <typename T>
void products_baseline(const Product<T, 16>& p, int64_t rows, int64_t vectors) {
  run<4, 3>(p, rows, vectors);
}
template <typename T>
void products_baseline(const LaneProduct<T, 16>& p, int64_t rows, int64_t cols) {
  run<3, 3>(p, rows, cols);
}

// One call for every version: the same fields make the kernel for the chosen vector width.
template <template <typename, int> class Kernel, typename T, typename... Fields>
void products(int64_t rows, int64_t cols, const Fields&... fields) {
#ifdef TESSERA_GEMM_DISPATCH
  switch (isa()) {
    case Isa::v4:
      return products_v4(Kernel<T, 64>{fields...}, rows, cols);
    case Isa::v3:
      return products_v3(Kernel<T, 32>{fields...}, rows, cols);
    case Isa::baseline:
      break;
  }
#endif
  products_baseline(Kernel<T, 16>{fields...}, rows, cols);
}

}  // namespace

const char* cpu_kernels() {
#ifdef TESSERA_GEMM_DISPATCH
  switch (isa()) {
    case Isa::v4:
      return "avx512";
    case Isa::v3:
      return "avx2";
    case Isa::baseline:
      break;
  }
#endif
  return "baseline";
}

bool avx512_kernels() {
#ifdef TESSERA_GEMM_DISPATCH
  return isa() == Isa::v4;
#else
  return false;
#endif
}

#define TESSERA_GEMM_ENTRIES(T)                                                              \
  void gemm(int64_t rows, int64_t vectors, int64_t steps, const T* a, int64_t a_row,         \
            int64_t a_step, const T* b, int64_t ldb, T* c, int64_t ldc, bool accumulate,     \
            const T* row_bias) {                                                             \
    products<Product, T>(rows, vectors, steps, a, a_row, a_step, b, ldb, c, ldc, accumulate, \
                         row_bias);                                                          \
  }                                                                                          \
  void gemm_lanes(int64_t rows, int64_t cols, int64_t vectors, int64_t sets,                 \
                  const Streams<const T*>& a, int64_t lda, const Streams<const T*>& b,       \
                  int64_t ldb, T* partial, bool accumulate) {                                \
    products<LaneProduct, T>(rows, cols, cols, vectors, sets, a, lda, b, ldb, partial,       \
                             accumulate);                                                    \
  }
TESSERA_GEMM_ENTRIES(float)
TESSERA_GEMM_ENTRIES(double)
#undef TESSERA_GEMM_ENTRIES

}  // namespace tessera::autodiff::taylor::detail
