// The limits the memory estimate is held against: a GPU's share (its free memory divided by
// the ranks on it) and a job's control-group limit.
#include <doctest/doctest.h>

#include <optional>

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

TEST_CASE("a job's memory limit is read from its control group and every ancestor") {
  CHECK(app::cgroup_limit_value("max\n") == std::nullopt);
  CHECK(app::cgroup_limit_value("17179869184\n") == 17179869184.0);
  CHECK(app::cgroup_limit_value("9223372036854771712\n") == std::nullopt);  // v1: none
  CHECK(app::cgroup_limit_value("") == std::nullopt);
  // Slurm under cgroup v2: the task's group, the step's, the job's, up to the root.
  const auto v2 = app::cgroup_limit_files("0::/system.slice/slurmstepd.scope/job_7/step_0/user\n");
  REQUIRE(v2.size() == 6);
  CHECK(v2.front() == "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_0/user/memory.max");
  CHECK(v2[3] == "/sys/fs/cgroup/system.slice/slurmstepd.scope/memory.max");
  CHECK(v2.back() == "/sys/fs/cgroup/memory.max");
  // cgroup v1: only the memory controller's line counts.
  const auto v1 = app::cgroup_limit_files(
      "5:cpu,cpuacct:/slurm/uid_1/job_7\n"
      "4:memory:/slurm/uid_1/job_7\n");
  REQUIRE(v1.size() == 4);
  CHECK(v1.front() == "/sys/fs/cgroup/memory/slurm/uid_1/job_7/memory.limit_in_bytes");
  CHECK(v1.back() == "/sys/fs/cgroup/memory/memory.limit_in_bytes");
  CHECK(app::cgroup_limit_files("").empty());
}
