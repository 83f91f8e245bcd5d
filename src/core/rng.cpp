#include "tessera/core/rng.hpp"

#include <cmath>

namespace tessera::core {
namespace {

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

std::uint64_t hash_string(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

Rng::Rng(std::uint64_t seed, std::int64_t subdomain, std::string_view purpose) {
  std::uint64_t x = seed;
  x ^= splitmix64(x) + static_cast<std::uint64_t>(subdomain) * 0x9e3779b97f4a7c15ULL;
  x ^= hash_string(purpose);
  for (auto& word : state_.s) word = splitmix64(x);
}

std::uint64_t Rng::next_u64() {
  auto& s = state_.s;
  const std::uint64_t result = rotl(s[1] * 5, 7) * 9;
  const std::uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  if (state_.has_spare) {
    state_.has_spare = false;
    return state_.spare;
  }
  double u1 = uniform();
  while (u1 <= 0.0) u1 = uniform();
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double angle = 2.0 * M_PI * u2;
  state_.spare = r * std::sin(angle);
  state_.has_spare = true;
  return r * std::cos(angle);
}

std::uint64_t Rng::below(std::uint64_t n) {
  // Lemire's multiply-shift is enough here: n is far below 2^32 in practice.
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next_u64()) * n) >> 64);
}

}  // namespace tessera::core
