#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/core/rng.hpp"
#include "tessera/core/text.hpp"
#include "tessera/core/timer.hpp"

using namespace tessera;

TEST_CASE("rng streams are keyed by seed, subdomain and purpose") {
  core::Rng a(1, 0, "collocation"), b(1, 0, "collocation"), c(1, 1, "collocation"),
      d(1, 0, "boundary");
  const auto first = a.next_u64();
  CHECK(first == b.next_u64());
  CHECK(first != c.next_u64());
  CHECK(first != d.next_u64());
}

TEST_CASE("rng uniform and normal have the right moments") {
  core::Rng rng(7, 0, "moments");
  double sum = 0, sum_sq = 0, nsum = 0, nsum_sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double u = rng.uniform();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
    sum += u;
    sum_sq += u * u;
    const double z = rng.normal();
    nsum += z;
    nsum_sq += z * z;
  }
  CHECK(sum / n == doctest::Approx(0.5).epsilon(0.01));
  CHECK(sum_sq / n - (sum / n) * (sum / n) == doctest::Approx(1.0 / 12).epsilon(0.01));
  CHECK(std::abs(nsum / n) < 0.01);
  CHECK(nsum_sq / n == doctest::Approx(1.0).epsilon(0.01));
}

TEST_CASE("rng state round-trips for checkpoints") {
  core::Rng a(3, 2, "x");
  a.normal();
  const auto saved = a.state();
  const double next = a.normal();
  core::Rng b(0, 0, "other");
  b.set_state(saved);
  CHECK(b.normal() == next);
}

TEST_CASE("did_you_mean suggests near misses only") {
  CHECK(core::did_you_mean("uxx", {"u", "u_xx", "x"}) == " (did you mean 'u_xx'?)");
  CHECK(core::did_you_mean("iteratons", {"iterations", "lr"}) == " (did you mean 'iterations'?)");
  CHECK(core::did_you_mean("zzzzzz", {"iterations", "lr"}).empty());
}

TEST_CASE("TESSERA_CHECK throws tessera::Error with the streamed message") {
  try {
    TESSERA_CHECK(1 + 1 == 3, "arithmetic says " << 2);
    FAIL("no throw");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "arithmetic says 2");
  }
}

TEST_CASE("an exclusive timer leaves out the nested phase's time") {
  // A 30 ms phase with a 20 ms phase timed inside it: the outer total gets only its own part,
  // so the two add up to the elapsed time instead of counting the inner one twice.
  double outer = 0, inner = 0;
  const double start = core::now_seconds();
  {
    core::ExclusiveTimer timer(outer, inner);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    {
      core::ScopedTimer nested(inner);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  const double elapsed = core::now_seconds() - start;
  CHECK(inner >= 0.020);
  CHECK(outer >= 0.010);
  CHECK(outer + inner <= elapsed);
}

TEST_CASE("every read to the host counts, by its kind") {
  using tessera::core::HostRead;
  const auto values = tessera::core::host_reads(),
             messages = tessera::core::host_reads(HostRead::message);
  const auto t = torch::tensor({1.5, 2.5}, torch::kFloat64);
  CHECK(tessera::core::read_double(t[1]) == 2.5);
  CHECK(tessera::core::read_integer(torch::tensor(7)) == 7);
  CHECK(tessera::core::read_bool(t.gt(2).any()));
  CHECK(tessera::core::all_finite(t));
  const bool converted =
      tessera::core::read_to_host(t, torch::kFloat32).scalar_type() == torch::kFloat32;
  CHECK(converted);
  CHECK(tessera::core::host_reads() == values + 5);
  tessera::core::read_to_host(t, torch::kFloat64, HostRead::message);
  CHECK(tessera::core::host_reads(HostRead::message) == messages + 1);
  CHECK(tessera::core::host_reads() == values + 5);
}

TEST_CASE("all_finite finds a NaN or an infinity in float32, float64 and strided tensors") {
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    CAPTURE(dtype);
    auto t = torch::linspace(-1e30, 1e30, 301, dtype);
    CHECK(tessera::core::all_finite(t));
    CHECK(tessera::core::all_finite(torch::empty({0}, dtype)));
    for (double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
      auto u = t.clone();
      u[300] = bad;  // the last element: a loop that stopped early would miss it
      CHECK_FALSE(tessera::core::all_finite(u));
      // Every second element: not contiguous, so the tensor route.
      CHECK_FALSE(tessera::core::all_finite(u.reshape({-1, 1}).expand({301, 2}).t()));
      CHECK(tessera::core::all_finite(u.narrow(0, 0, 300).reshape({-1, 2}).t()));
    }
  }
}
