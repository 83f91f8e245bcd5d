#pragma once
/// Deterministic random streams. Every stream is keyed by (seed, subdomain id, purpose), never
/// by rank, so a run gives the same numbers on any number of ranks (docs/architecture.md).
/// The generator is xoshiro256** seeded through splitmix64; it is ours rather than LibTorch's
/// so that results do not change between LibTorch versions or devices.
#include <array>
#include <cstdint>
#include <string_view>

namespace tessera::core {

class Rng {
 public:
  /// A stream for `purpose` (e.g. "collocation", "init", "boundary:walls") of `subdomain`.
  Rng(std::uint64_t seed, std::int64_t subdomain, std::string_view purpose);

  std::uint64_t next_u64();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Standard normal (Box-Muller; one value per call, the partner is cached).
  double normal();
  /// Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t n);

  /// The full state, for checkpoints.
  struct State {
    std::array<std::uint64_t, 4> s{};
    bool has_spare = false;
    double spare = 0.0;
  };
  State state() const { return state_; }
  void set_state(const State& state) { state_ = state; }

 private:
  State state_;
};

/// FNV-1a hash of a string, used to key streams by purpose.
std::uint64_t hash_string(std::string_view text);

}  // namespace tessera::core
