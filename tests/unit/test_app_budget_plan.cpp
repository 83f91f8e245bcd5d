// The plan of a case with training.budget: each stage's share of the budget at the measured
// speeds, and the plan a checkpoint records.
#include <doctest/doctest.h>

#include "tessera/app/budget_plan.hpp"

using namespace tessera;

TEST_CASE("a budget is shared between Adam and the finish at the measured speeds") {
  const auto planned = app::plan_iterations(100, {0.01, 0.1});
  // 30 s of Adam and 70 s of finish, each 85 % planned; the finish's iterations are a bound
  // (the budget ends it), ten times the prediction.
  CHECK(planned.adam == 2550);
  CHECK(planned.finish == 10 * 595);
  // Twice as slow: half the iterations.
  const auto slower = app::plan_iterations(100, {0.02, 0.2});
  CHECK(slower.adam == 1275);
  CHECK(slower.finish == 10 * 297);
  // A budget smaller than one iteration still trains one of each.
  const auto tiny = app::plan_iterations(0.001, {1, 10});
  CHECK(tiny.adam == 1);
  CHECK(tiny.finish == 10);
}

TEST_CASE("a checkpoint's plan is read back, and one without a plan is named") {
  const nlohmann::json manifest = {{"run",
                                    {{"plan",
                                      {{"stages",
                                        {{{"optimizer", "adam"}, {"iterations", 1234}},
                                         {{"optimizer", "ssbroyden"}, {"iterations", 56}}}}}}}}};
  const auto planned = app::recorded_plan(manifest, "ckpt");
  CHECK(planned.adam == 1234);
  CHECK(planned.finish == 56);
  const nlohmann::json staged = {{"run", {{"case", nlohmann::json::object()}}}};
  CHECK_THROWS_WITH_AS(app::recorded_plan(staged, "checkpoints/iter_100"),
                       doctest::Contains("checkpoints/iter_100"), std::exception);
}
