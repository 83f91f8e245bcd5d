// The GPU of each rank: node-local rank modulo the visible devices, or the pinned index.
#include <doctest/doctest.h>

#include "tessera/core/error.hpp"
#include "tessera/parallel/device_map.hpp"

using tessera::parallel::cuda_device_for;

TEST_CASE("Ranks on a node spread over the visible devices") {
  // Four ranks, four GPUs: one each. Eight ranks, four GPUs: two per GPU, in turn.
  for (int rank = 0; rank < 4; ++rank) CHECK(cuda_device_for(rank, 4) == rank);
  for (int rank = 4; rank < 8; ++rank) CHECK(cuda_device_for(rank, 4) == rank - 4);
  // The launcher gave each rank one device through CUDA_VISIBLE_DEVICES: it is device 0.
  for (int rank = 0; rank < 4; ++rank) CHECK(cuda_device_for(rank, 1) == 0);
}

TEST_CASE("A pinned device wins, and must exist") {
  CHECK(cuda_device_for(3, 4, 1) == 1);
  CHECK(cuda_device_for(0, 2, 0) == 0);
  CHECK_THROWS_WITH_AS(cuda_device_for(0, 2, 2), doctest::Contains("sees 2 CUDA device(s)"),
                       tessera::Error);
  CHECK_THROWS_AS(cuda_device_for(0, 0), tessera::Error);
}
