// The per-process settings of parallel::Environment: the BLAS library's own threads.
#include <dlfcn.h>
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "tessera/parallel/environment.hpp"

TEST_CASE("the BLAS library's thread pool takes the rank's thread count") {
  using Getter = int (*)();
  auto* get = reinterpret_cast<Getter>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (!get) {
    MESSAGE("no OpenBLAS in this process; nothing to check");
    CHECK_FALSE(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
    return;
  }
  REQUIRE(tessera::parallel::limit_blas_threads(1));
  CHECK(get() == 1);
  tessera::parallel::limit_blas_threads(2);
  CHECK(get() == 2);
  tessera::parallel::limit_blas_threads(1);
  CHECK(get() == 1);
}

TEST_CASE("a process started by another MPI's launcher is told so") {
  std::map<std::string, std::string> env;
  const auto lookup = [&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  CHECK(tessera::parallel::foreign_launcher(1, lookup).empty());  // started without a launcher
  env["PMI_SIZE"] = "1";
  CHECK(tessera::parallel::foreign_launcher(1, lookup).empty());  // mpiexec -n 1
  env["OMPI_COMM_WORLD_SIZE"] = "4";
  const std::string text = tessera::parallel::foreign_launcher(1, lookup);
  CHECK(text.find("started 4 processes (OMPI_COMM_WORLD_SIZE=4)") != std::string::npos);
  CHECK(text.find("each runs alone") != std::string::npos);
  CHECK(tessera::parallel::foreign_launcher(4, lookup).empty());  // the launcher of this MPI
}
