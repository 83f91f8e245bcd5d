// tanh(x) = -m / (m + 2) with m = expm1(-2 |x|) and the sign of x restored. expm1 is computed
// without cancellation near 0: with y = k ln2 + r, |r| <= ln2 / 2, expm1(y) = 2^k p + (2^k - 1)
// where p = expm1(r) is its Taylor polynomial (degree 7 for float, 13 for double: truncation
// below half an ulp). k is rounded with the 1.5 * 2^mantissa trick, whose bits also give 2^k.
#include "tanh.hpp"

#include <cstring>

#include "gemm.hpp"
#include "vector_clones.hpp"

namespace tessera::autodiff::taylor::detail {

// The vector helpers below are always inlined, so the ABI of passing AVX vectors by value,
// which GCC warns about for the baseline clone, never applies.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace {

template <typename To, typename From>
TESSERA_INLINE To bits_as(const From& from) {
  static_assert(sizeof(To) == sizeof(From));
  To to;
  std::memcpy(&to, &from, sizeof to);
  return to;
}

// Vectors of `Bytes`: 32 (AVX2, or two SSE2/NEON registers) or 64 (AVX-512 only).
template <typename T, int Bytes>
struct TanhConstants;

template <int Bytes>
struct TanhConstants<float, Bytes> {
  typedef float Vector __attribute__((vector_size(Bytes)));
  typedef int32_t Bits __attribute__((vector_size(Bytes)));
  static constexpr int degree = 7, mantissa = 23, exponent_bias = 127;
  static constexpr float magic = 12582912.0f;  // 1.5 * 2^23
  static constexpr float ln2_hi = 0.693145751953125f, ln2_lo = 1.428606765330187e-06f;
  static constexpr float lowest = -87.0f;  // exp(-87) is still a normal float
};

template <int Bytes>
struct TanhConstants<double, Bytes> {
  typedef double Vector __attribute__((vector_size(Bytes)));
  typedef int64_t Bits __attribute__((vector_size(Bytes)));
  static constexpr int degree = 13, mantissa = 52, exponent_bias = 1023;
  static constexpr double magic = 6755399441055744.0;  // 1.5 * 2^52
  static constexpr double ln2_hi = 0.6931471803691238, ln2_lo = 1.9082149292705877e-10;
  static constexpr double lowest = -708.0;
};

template <typename T, int Bytes>
TESSERA_INLINE typename TanhConstants<T, Bytes>::Vector tanh_vector(
    typename TanhConstants<T, Bytes>::Vector x) {
  using C = TanhConstants<T, Bytes>;
  using Vector = typename C::Vector;
  using Bits = typename C::Bits;
  const Vector magnitude = x < 0 ? -x : x;
  Vector y = T(-2) * magnitude;
  y = y < C::lowest ? Vector{} + C::lowest : y;
  const Vector shifted = y * T(1.4426950408889634) + C::magic;
  const Vector k = shifted - C::magic;
  const Vector r = (y - k * C::ln2_hi) - k * C::ln2_lo;
  // p = expm1(r) = r (1 + r / 2! (1 + r / 3 (1 + ...))), nested from the highest term.
  Vector p = Vector{} + T(1);
  for (int n = C::degree; n >= 2; --n) p = T(1) + p * r * (T(1) / T(n));
  p = p * r;
  const Vector magic = Vector{} + C::magic;
  const Bits k_int = bits_as<Bits>(shifted) - bits_as<Bits>(magic);
  const Vector two_k = bits_as<Vector>((k_int + C::exponent_bias) << C::mantissa);
  const Vector m = two_k * p + (two_k - T(1));
  const Vector t = -m / (m + T(2));
  return x < 0 ? -t : t;
}

template <typename T, int Bytes>
TESSERA_INLINE void tanh_array(const T* z, T* out, int64_t count) {
  using Vector = typename TanhConstants<T, Bytes>::Vector;
  constexpr int64_t lanes = sizeof(Vector) / sizeof(T);
  int64_t i = 0;
  for (; i + lanes <= count; i += lanes) {
    Vector x;
    std::memcpy(&x, z + i, sizeof x);
    const Vector t = tanh_vector<T, Bytes>(x);
    std::memcpy(out + i, &t, sizeof t);
  }
  if (i < count) {  // the tail through a zero-padded vector
    Vector x{};
    std::memcpy(&x, z + i, sizeof(T) * (count - i));
    const Vector t = tanh_vector<T, Bytes>(x);
    std::memcpy(out + i, &t, sizeof(T) * (count - i));
  }
}

// Not templates: target_clones on plain functions is what every supported GCC handles.
TESSERA_VECTOR_CLONES void tanh_clones(const float* z, float* out, int64_t count) {
  tanh_array<float, 32>(z, out, count);
}
TESSERA_VECTOR_CLONES void tanh_clones(const double* z, double* out, int64_t count) {
  tanh_array<double, 32>(z, out, count);
}

#ifdef TESSERA_AVX512_VERSIONS
// One AVX-512 register per vector: with AVX2, tanh was a visible cost of a seed-problem
// iteration, and this version made the whole-network node faster (docs/benchmarks.md,
// "Vectorised tanh").
template <typename T>
TESSERA_AVX512 void tanh_avx512(const T* z, T* out, int64_t count) {
  tanh_array<T, 64>(z, out, count);
}
#endif

template <typename T>
void tanh_any(const T* z, T* out, int64_t count) {
#ifdef TESSERA_AVX512_VERSIONS
  if (avx512_kernels()) return tanh_avx512(z, out, count);
#endif
  tanh_clones(z, out, count);
}

}  // namespace

void tanh_into(const float* z, float* out, int64_t count) { tanh_any(z, out, count); }
void tanh_into(const double* z, double* out, int64_t count) { tanh_any(z, out, count); }

}  // namespace tessera::autodiff::taylor::detail
