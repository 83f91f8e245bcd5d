// The forward engine's element-wise step for the shapes most equations ask for, one element at a
// time with all its streams in registers. The strip loops (elementwise.cpp) make one pass
// per term of the chain rule and store and reload the value stream's gradient and sigma's
// derivatives at every term; here each element's pre-activations, gradients and outputs are
// read and written once.
//
// Each element's arithmetic is the strip loops' own, term by term in the same order. Where the
// strip loops store a partial sum before the next term adds to it, `keep_rounded` keeps the
// compiler from fusing that product into the next addition, so on x86-64 both give the same bits.
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "elementwise.hpp"
#include "gemm.hpp"
#include "vector_clones.hpp"

namespace tessera::autodiff::taylor::detail {

// The vector helpers below are always inlined, so the ABI of passing vectors by value never
// applies.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace {

// A vector of `Bytes` (16: SSE2/NEON, 32: AVX2, 64: AVX-512).
template <typename T, int Bytes>
struct Pack {
  typedef T type __attribute__((vector_size(Bytes)));
  static constexpr int64_t lanes = Bytes / static_cast<int64_t>(sizeof(T));
};

// Keeps a product rounded on its own, as a store to memory would: the compiler may not fuse it
// into a later addition. On x86-64 the value stays in its register; elsewhere it is only a
// hint, and fusing there changes a rounding, not the arithmetic.
template <typename V>
TESSERA_INLINE void keep_rounded(V& v) {
#if defined(__x86_64__) && defined(__GNUC__)
  if constexpr (sizeof(V) == 64)
    asm("" : "+v"(v));
  else
    asm("" : "+x"(v));
#endif
}

// The shape at compile time: F first-derivative streams, and a Laplacian (stream F + 1) over the
// first streams whose bits are set in `Summed` (none when 0).
template <int F, int Summed>
struct Shape {
  static constexpr int firsts = F;
  static constexpr bool laplacian = Summed != 0;
  static constexpr int64_t laplacian_stream = 1 + F;
  static constexpr bool sums(int a) { return (Summed >> a) & 1; }
};

enum class Pass { forward, backward, both };

// One call's arrays, as streams_backward_and_forward_range names them; t = tanh of the value
// stream's pre-activation (the first primitive).
template <typename T>
struct Arrays {
  const T* t;
  const T* z;
  int64_t z_plane;
  const T* g;
  T* gz;
  int64_t g_plane;
  T* h;
  int64_t h_plane;
  bool write_value;
};

// Every stream's first element for the shape S, resolved once per call: held in locals, the
// pointers stay in registers (the kernel's stores could alias the Arrays they came from).
template <typename S, typename T>
struct StreamPointers {
  static constexpr int count = S::firsts + (S::laplacian ? 2 : 1);
  const T* t;
  const T* z[count];
  const T* g[count];
  T* gz[count];
  T* h[count];  // h[0] null unless the value stream is written

  explicit StreamPointers(const Arrays<T>& x) : t(x.t) {
    for (int k = 0; k < count; ++k) {
      z[k] = x.z + k * x.z_plane;
      g[k] = x.g ? x.g + k * x.g_plane : nullptr;
      gz[k] = x.gz ? x.gz + k * x.g_plane : nullptr;
      h[k] = x.h ? x.h + k * x.h_plane : nullptr;
    }
    if (!x.write_value) h[0] = nullptr;
  }
};

// Reads `count` (at most a vector's) elements from p into a zero-padded vector, and back.
template <typename V, typename T>
TESSERA_INLINE V load(const T* p, int64_t count) {
  V v{};
  std::memcpy(&v, p, sizeof(T) * count);
  return v;
}

template <typename V, typename T>
TESSERA_INLINE void store(T* p, const V& v, int64_t count) {
  std::memcpy(p, &v, sizeof(T) * count);
}

// Elements [i, i + count) of every stream, count <= V's lanes. Everything is loaded before
// anything is stored, so the loads need not wait for stores they might alias.
template <Pass P, typename S, typename V, typename T>
TESSERA_INLINE void elements(const StreamPointers<S, T>& p, int64_t i, int64_t count) {
  constexpr int F = S::firsts;
  constexpr int L = S::laplacian_stream;
  constexpr int streams = StreamPointers<S, T>::count;
  constexpr bool backward = P != Pass::forward;
  const V t = load<V>(p.t + i, count);
  V z[streams], g[streams];
  for (int k = 1; k < streams; ++k) z[k] = load<V>(p.z[k] + i, count);
  if constexpr (backward)
    for (int k = 0; k < streams; ++k) g[k] = load<V>(p.g[k] + i, count);

  // tanh's derivatives, as the strip loops form them (block_derivatives).
  const V u = 1 - t * t;
  const V d1 = u, d2 = -2 * t * u;

  if constexpr (P != Pass::backward) {
    if (p.h[0]) store(p.h[0] + i, t, count);
    for (int a = 1; a <= F; ++a) store(p.h[a] + i, V(d1 * z[a]), count);
    if constexpr (S::laplacian) {
      V hl = d1 * z[L];
      keep_rounded(hl);
      for (int a = 0; a < F; ++a)
        if (S::sums(a)) hl += d2 * z[1 + a] * z[1 + a];
      store(p.h[L] + i, hl, count);
    }
  }

  if constexpr (backward) {
    const V d3 = u * (6 * t * t - 2);
    V gz[streams];
    gz[0] = g[0] * d1;
    keep_rounded(gz[0]);
    for (int a = 1; a <= F; ++a) {
      gz[a] = g[a] * d1;
      keep_rounded(gz[a]);
      gz[0] += g[a] * d2 * z[a];
    }
    if constexpr (S::laplacian) {
      gz[L] = g[L] * d1;
      gz[0] += g[L] * d2 * z[L];
      for (int a = 0; a < F; ++a)
        if (S::sums(a)) {
          gz[0] += g[L] * d3 * z[1 + a] * z[1 + a];
          gz[1 + a] += 2 * g[L] * d2 * z[1 + a];
        }
    }
    for (int k = 0; k < streams; ++k) store(p.gz[k] + i, gz[k], count);
  }
}

template <Pass P, typename S, typename T, int Bytes>
TESSERA_INLINE void range(const Arrays<T>& x, int64_t count) {
  using V = typename Pack<T, Bytes>::type;
  constexpr int64_t lanes = Pack<T, Bytes>::lanes;
  const StreamPointers<S, T> p(x);
  int64_t i = 0;
  for (; i + lanes <= count; i += lanes) elements<P, S, V>(p, i, lanes);
  if (i < count) elements<P, S, V>(p, i, count - i);
}

// Every shape the kernels take: up to three first streams, each subset of them summed.
constexpr int most_firsts = 3;

template <Pass P, typename T, int Bytes>
TESSERA_INLINE void dispatch(int firsts, int summed, const Arrays<T>& x, int64_t count) {
  switch (firsts * 8 + summed) {
#define TESSERA_SHAPE(F, MASK)                    \
  case F * 8 + MASK:                              \
    range<P, Shape<F, MASK>, T, Bytes>(x, count); \
    return;
    TESSERA_SHAPE(0, 0)
    TESSERA_SHAPE(1, 0)
    TESSERA_SHAPE(1, 1)
    TESSERA_SHAPE(2, 0)
    TESSERA_SHAPE(2, 1)
    TESSERA_SHAPE(2, 2)
    TESSERA_SHAPE(2, 3)
    TESSERA_SHAPE(3, 0)
    TESSERA_SHAPE(3, 1)
    TESSERA_SHAPE(3, 2)
    TESSERA_SHAPE(3, 3)
    TESSERA_SHAPE(3, 4)
    TESSERA_SHAPE(3, 5)
    TESSERA_SHAPE(3, 6)
    TESSERA_SHAPE(3, 7)
#undef TESSERA_SHAPE
  }
}

// Each instruction set's version: AVX-512 where the kernel set is AVX-512 (as the products and
// tanh), else the strip loops' clone target where the CPU has it (AVX2, with FMA for GCC 12 and
// later), else the baseline.
#ifdef TESSERA_AVX512_VERSIONS
template <Pass P, typename T>
TESSERA_AVX512 void run_avx512(int firsts, int summed, const Arrays<T>& x, int64_t count) {
  dispatch<P, T, 64>(firsts, summed, x, count);
}
#endif
#ifdef TESSERA_AVX2
template <Pass P, typename T>
TESSERA_AVX2 void run_avx2(int firsts, int summed, const Arrays<T>& x, int64_t count) {
  dispatch<P, T, 32>(firsts, summed, x, count);
}
#endif
template <Pass P, typename T>
void run_baseline(int firsts, int summed, const Arrays<T>& x, int64_t count) {
  dispatch<P, T, 16>(firsts, summed, x, count);
}

template <Pass P, typename T>
void run(int firsts, int summed, const Arrays<T>& x, int64_t count) {
#ifdef TESSERA_AVX512_VERSIONS
  if (avx512_kernels()) return run_avx512<P>(firsts, summed, x, count);
#endif
#ifdef TESSERA_AVX2
  static const bool avx2 = __builtin_cpu_supports(TESSERA_AVX2_CPU);
  if (avx2) return run_avx2<P>(firsts, summed, x, count);
#endif
  run_baseline<P>(firsts, summed, x, count);
}

// The Laplacian's first streams as bits, or -1 where the kernels do not take the shape: another
// activation, second-derivative streams, more than one Laplacian or more first streams, or a
// Laplacian's axes not listed in ascending order (the strip loops add them in their listed
// order).
int summed_bits(nn::Activation activation, const StreamShape& shape) {
  if (activation != nn::Activation::tanh || !shape.pairs.empty() || shape.laplacians.size() > 1 ||
      shape.firsts > most_firsts)
    return -1;
  if (shape.laplacians.empty()) return 0;
  if (shape.laplacians[0].empty()) return -1;
  int bits = 0;
  int64_t previous = -1;
  for (int64_t a : shape.laplacians[0]) {
    if (a <= previous || a >= shape.firsts) return -1;
    bits |= 1 << a;
    previous = a;
  }
  return bits;
}

template <Pass P, typename T>
bool try_run(nn::Activation activation, const StreamShape& shape, const Arrays<T>& x,
             int64_t count) {
  const int bits = summed_bits(activation, shape);
  if (bits < 0) return false;
  run<P>(static_cast<int>(shape.firsts), bits, x, count);
  return true;
}

}  // namespace

#define TESSERA_REGISTER_RANGES(T)                                                                 \
  bool registers_forward_range(nn::Activation activation, const T* z, int64_t z_plane,             \
                               const std::vector<const T*>& prim, const StreamShape& shape,        \
                               int64_t count, T* h, int64_t h_plane, bool write_value) {           \
    return try_run<Pass::forward>(                                                                 \
        activation, shape,                                                                         \
        Arrays<T>{prim[0], z, z_plane, nullptr, nullptr, 0, h, h_plane, write_value}, count);      \
  }                                                                                                \
  bool registers_backward_range(nn::Activation activation, const T* z, int64_t z_plane,            \
                                const T* g, const std::vector<const T*>& prim,                     \
                                const StreamShape& shape, int64_t count, T* gz, int64_t g_plane) { \
    return try_run<Pass::backward>(                                                                \
        activation, shape, Arrays<T>{prim[0], z, z_plane, g, gz, g_plane, nullptr, 0, false},      \
        count);                                                                                    \
  }                                                                                                \
  bool registers_backward_and_forward_range(                                                       \
      nn::Activation activation, const T* z, int64_t z_plane, const T* g,                          \
      const std::vector<const T*>& prim, const StreamShape& shape, int64_t count, T* gz,           \
      int64_t g_plane, T* h, int64_t h_plane, bool write_value) {                                  \
    return try_run<Pass::both>(                                                                    \
        activation, shape,                                                                         \
        Arrays<T>{prim[0], z, z_plane, g, gz, g_plane, h, h_plane, write_value}, count);           \
  }
TESSERA_REGISTER_RANGES(float)
TESSERA_REGISTER_RANGES(double)
#undef TESSERA_REGISTER_RANGES

}  // namespace tessera::autodiff::taylor::detail
