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

using tessera::parallel::device_kind_disagreement;
using tessera::parallel::RankDevice;
using tessera::parallel::ranks_on_same_gpu;
using tessera::parallel::shared_gpu_warning;

TEST_CASE("Ranks that train on different kinds of device are refused, naming them") {
  const std::vector<RankDevice> agree{{"n1", "0000:01:00.0"}, {"n1", "0000:02:00.0"}};
  CHECK(device_kind_disagreement(agree).empty());
  CHECK(device_kind_disagreement({{"n1", ""}, {"n2", ""}}).empty());
  // device "auto" on a node whose GPUs the launcher did not hand to rank 3.
  const std::vector<RankDevice> mixed{
      {"n1", "0000:01:00.0"}, {"n1", "0000:02:00.0"}, {"n1", "0000:03:00.0"}, {"n2", ""}};
  const std::string text = device_kind_disagreement(mixed);
  CHECK(text.find("ranks 0-2 train on a GPU and rank 3 on the CPU (host n2") != std::string::npos);
  CHECK(text.find("\"device\": \"cpu\"") != std::string::npos);
}

TEST_CASE("Ranks on one GPU are counted per host and device, and warned about once") {
  // Two nodes, each with two GPUs and three ranks: the third rank of each node shares GPU 0.
  const std::vector<RankDevice> ranks{{"a", "gpu0"}, {"a", "gpu1"}, {"a", "gpu0"},
                                      {"b", "gpu0"}, {"b", "gpu1"}, {"b", "gpu0"}};
  CHECK(ranks_on_same_gpu(ranks, 0) == 2);
  CHECK(ranks_on_same_gpu(ranks, 1) == 1);
  CHECK(ranks_on_same_gpu(ranks, 5) == 2);
  const std::string text = shared_gpu_warning(ranks);
  CHECK(text.find("4 ranks share 2 GPUs (up to 2 on one)") != std::string::npos);
  CHECK(text.find("MPS") != std::string::npos);
  // The same bus id on two hosts is two GPUs; CPU ranks share nothing.
  CHECK(shared_gpu_warning({{"a", "gpu0"}, {"b", "gpu0"}}).empty());
  CHECK(shared_gpu_warning({{"a", ""}, {"a", ""}}).empty());
  CHECK(ranks_on_same_gpu({{"a", ""}, {"a", ""}}, 0) == 1);
}
