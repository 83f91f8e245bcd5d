#include "tessera/geometry/sobol.hpp"

#include <array>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::geometry {
namespace {

// Joe and Kuo, new-joe-kuo-6.21201, dimensions 2 to 21: degree s, coefficients a, initial m_i.
// Dimension 1 is the van der Corput sequence (all m_i = 1).
struct DirectionNumbers {
  int s;
  unsigned a;
  std::array<std::uint64_t, 7> m;
};
constexpr DirectionNumbers joe_kuo[] = {
    {1, 0, {1}},
    {2, 1, {1, 3}},
    {3, 1, {1, 3, 1}},
    {3, 2, {1, 1, 1}},
    {4, 1, {1, 1, 3, 3}},
    {4, 4, {1, 3, 5, 13}},
    {5, 2, {1, 1, 5, 5, 17}},
    {5, 4, {1, 1, 5, 5, 5}},
    {5, 7, {1, 1, 7, 11, 19}},
    {5, 11, {1, 1, 5, 1, 1}},
    {5, 13, {1, 1, 1, 3, 11}},
    {5, 14, {1, 3, 5, 5, 31}},
    {6, 1, {1, 3, 3, 9, 7, 49}},
    {6, 13, {1, 1, 1, 15, 21, 21}},
    {6, 16, {1, 3, 1, 13, 27, 49}},
    {6, 19, {1, 1, 1, 15, 7, 5}},
    {6, 22, {1, 3, 1, 15, 13, 25}},
    {6, 25, {1, 1, 5, 5, 19, 61}},
    {7, 1, {1, 3, 7, 11, 23, 15, 103}},
    {7, 4, {1, 3, 7, 13, 13, 15, 69}},
};
constexpr int table_dims = static_cast<int>(sizeof(joe_kuo) / sizeof(joe_kuo[0])) + 1;

// v[k] for k = 1..sobol_bits (index 0 unused): the direction numbers scaled to sobol_bits bits.
std::array<std::uint64_t, sobol_bits + 1> direction_vector(int dim) {
  std::array<std::uint64_t, sobol_bits + 1> v{};
  if (dim == 0) {
    for (int k = 1; k <= sobol_bits; ++k) v[k] = std::uint64_t{1} << (sobol_bits - k);
    return v;
  }
  const DirectionNumbers& dn = joe_kuo[dim - 1];
  const int s = dn.s;
  for (int k = 1; k <= s && k <= sobol_bits; ++k) v[k] = dn.m[k - 1] << (sobol_bits - k);
  for (int k = s + 1; k <= sobol_bits; ++k) {
    v[k] = v[k - s] ^ (v[k - s] >> s);
    for (int j = 1; j < s; ++j) {
      if ((dn.a >> (s - 1 - j)) & 1U) v[k] ^= v[k - j];
    }
  }
  return v;
}

// 1-based position of the lowest zero bit of i.
int lowest_zero_bit(std::uint64_t i) {
  int c = 1;
  while (i & 1U) {
    i >>= 1;
    ++c;
  }
  return c;
}

}  // namespace

int sobol_max_dims() { return table_dims; }

std::vector<std::uint64_t> sobol_integers(std::int64_t n, int dims,
                                          const std::vector<std::uint64_t>& shift) {
  TESSERA_CHECK(n >= 0 && n < (std::int64_t{1} << sobol_bits),
                "sobol: point count out of range: " << n);
  TESSERA_CHECK(dims >= 0 && dims <= table_dims,
                "sobol: supports 0 to " << table_dims << " dimensions, got " << dims);
  TESSERA_CHECK(shift.empty() || shift.size() == static_cast<std::size_t>(dims),
                "sobol: shift needs " << dims << " values, got " << shift.size());
  std::vector<std::uint64_t> out(static_cast<std::size_t>(n) * dims);
  for (int d = 0; d < dims; ++d) {
    const auto v = direction_vector(d);
    const std::uint64_t s = shift.empty() ? 0 : shift[d];
    std::uint64_t x = 0;  // Gray-code order: point i differs from point i-1 in one direction number
    for (std::int64_t i = 0; i < n; ++i) {
      if (i > 0) x ^= v[lowest_zero_bit(static_cast<std::uint64_t>(i - 1))];
      out[static_cast<std::size_t>(i) * dims + d] = x ^ s;
    }
  }
  return out;
}

torch::Tensor sobol_points(std::int64_t n, int dims, const std::vector<std::uint64_t>& shift) {
  const auto ints = sobol_integers(n, dims, shift);
  auto out = torch::empty({n, dims}, torch::kFloat64);
  double* data = out.data_ptr<double>();
  const double scale = std::ldexp(1.0, -sobol_bits);
  for (std::size_t i = 0; i < ints.size(); ++i) data[i] = static_cast<double>(ints[i]) * scale;
  return out;
}

}  // namespace tessera::geometry
