// The per-process settings of parallel::Environment: the BLAS library's own threads.
#include <dlfcn.h>
#include <doctest/doctest.h>

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
