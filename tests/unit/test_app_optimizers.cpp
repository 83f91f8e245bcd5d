// The optimizer table of the case format (io/optimizers.hpp) and the trainer's runners agree:
// every optimizer a case may name is trained by a runner of its own.
#include <doctest/doctest.h>

#include "tessera/io/optimizers.hpp"
#include "tessera/train/stage_runner.hpp"

using namespace tessera;

TEST_CASE("every optimizer the case format names has a stage runner") {
  REQUIRE_FALSE(io::optimizers().empty());
  for (const auto& row : io::optimizers()) {
    CHECK_MESSAGE(train::has_runner(row.name), row.name);
    // Each row's own keys are keys of the stage object, and every row takes the common ones.
    for (const char* key : {"optimizer", "iterations", "lr", "points", "dtype", "precision"})
      CHECK_MESSAGE(row.takes(key), row.name << " lacks " << key);
    CHECK(row.lr > 0);
  }
  CHECK_FALSE(train::has_runner("sgd"));
  CHECK(io::find_optimizer("sgd") == nullptr);
  CHECK(io::find_optimizer("lbfgs")->float64);
  CHECK_FALSE(io::find_optimizer("lbfgs")->dense_hessian);
  CHECK(io::find_optimizer("ssbroyden")->dense_hessian);
  CHECK(io::find_optimizer("adam")->first_order);
}
