// Adam's learning-rate schedule: a linear warm-up over the first `warmup` iterations, then step
// decay by `decay_rate` every `decay_every` iterations.
#include <doctest/doctest.h>

#include "tessera/train/plan.hpp"

using namespace tessera;

TEST_CASE("the rate ramps up linearly, then decays in steps") {
  train::StagePlan stage;
  stage.lr = 1e-2;
  stage.warmup = 4;
  stage.decay_rate = 0.5;
  stage.decay_every = 10;
  CHECK(train::scheduled_lr(stage, 0) == doctest::Approx(2.5e-3));
  CHECK(train::scheduled_lr(stage, 3) == doctest::Approx(1e-2));
  CHECK(train::scheduled_lr(stage, 9) == doctest::Approx(1e-2));
  CHECK(train::scheduled_lr(stage, 10) == doctest::Approx(5e-3));
  CHECK(train::scheduled_lr(stage, 25) == doctest::Approx(2.5e-3));
}

TEST_CASE("without warm-up or decay the rate is constant") {
  train::StagePlan stage;
  stage.lr = 3e-3;
  CHECK(train::scheduled_lr(stage, 0) == 3e-3);
  CHECK(train::scheduled_lr(stage, 100000) == 3e-3);
}
