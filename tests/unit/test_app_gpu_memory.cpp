// The memory estimate against a GPU's share: the free memory divided by the ranks on the GPU,
// refused before anything is allocated, with the limit's source named.
#include <doctest/doctest.h>

#include "tessera/app/memory_estimate.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/case.hpp"

using namespace tessera;

TEST_CASE("a rank's GPU memory is the device's free memory shared by the ranks on it") {
  const double gib = 1024.0 * 1024 * 1024;
  CHECK(app::gpu_memory_limit_bytes(80 * gib, 1) == 80 * gib);
  CHECK(app::gpu_memory_limit_bytes(80 * gib, 4) == 20 * gib);
  CHECK(app::gpu_memory_limit_bytes(80 * gib, 0) == 80 * gib);

  const auto c = io::load_case(TESSERA_SOURCE_DIR "/tests/cases/tiny.json", {});
  const geometry::Box space{{0.0}, {1.0}};
  // The tiny case fits a GPU's share; four kilobytes over four ranks do not.
  CHECK_NOTHROW(app::check_memory_estimate(c, 1, app::gpu_memory_limit_bytes(80 * gib, 4), space,
                                           "GPU 0's free memory"));
  CHECK_THROWS_WITH_AS(
      app::check_memory_estimate(c, 1, app::gpu_memory_limit_bytes(4e3, 4), space,
                                 "GPU 0's free memory shared by the 4 ranks on it"),
      doctest::Contains("(GPU 0's free memory shared by the 4 ranks on it)"), Error);
}
