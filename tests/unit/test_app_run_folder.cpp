// Which case changes a checkpoint may be continued with: only keys that leave the trained past
// as it was.
#include <doctest/doctest.h>

#include "tessera/app/run_folder.hpp"

using nlohmann::json;
using tessera::app::case_differences;

namespace {

json two_stage_case() {
  return json::parse(R"({
    "name": "c", "seed": 1, "device": "auto",
    "network": {"hidden": [20, 20]},
    "training": {"log_every": 100,
                 "stages": [{"optimizer": "adam", "iterations": 1000, "lr": 1e-3},
                            {"optimizer": "lbfgs", "iterations": 500}]},
    "output": {"directory": "results/c", "grid": {"x": 11}}
  })");
}

}  // namespace

TEST_CASE("the same case has no differences and its hash is stable") {
  CHECK(case_differences(two_stage_case(), two_stage_case(), 0).empty());
  CHECK(tessera::app::case_hash(two_stage_case()) == tessera::app::case_hash(two_stage_case()));
  auto other = two_stage_case();
  other["seed"] = 2;
  CHECK(tessera::app::case_hash(other) != tessera::app::case_hash(two_stage_case()));
}

TEST_CASE("output, reporting, device, description and the last stage's length may change") {
  auto now = two_stage_case();
  now["description"] = {"a text for people", "changes nothing computed"};
  now["output"]["directory"] = "elsewhere";
  now["output"]["grid"]["x"] = 101;
  now["device"] = "cpu";
  now["training"]["log_every"] = 10;
  now["training"]["time_limit"] = 3600;
  now["training"]["stages"][1]["iterations"] = 2000;
  CHECK(case_differences(two_stage_case(), now, 2).empty());
}

TEST_CASE("the schedule of an open stage may change, of a finished one not") {
  auto now = two_stage_case();
  now["training"]["stages"][0]["lr"] = 1e-4;
  CHECK(case_differences(two_stage_case(), now, 0).empty());
  const auto refused = case_differences(two_stage_case(), now, 1);
  REQUIRE(refused.size() == 1);
  CHECK(refused[0] == "training.stages.0.lr: 0.001 -> 0.0001");
}

TEST_CASE("every other difference is listed with its path, old and new value") {
  auto now = two_stage_case();
  now["seed"] = 7;
  now["network"]["hidden"] = json::array({40, 40, 40});
  now["training"]["stages"][0]["points"] = 4096;
  now.erase("device");
  const auto listed = case_differences(two_stage_case(), now, 0);
  CHECK(listed == std::vector<std::string>{"network.hidden: [20,20] -> [40,40,40]", "seed: 1 -> 7",
                                           "training.stages.0.points: (absent) -> 4096"});
}

TEST_CASE("the open stage may be shortened only down to the steps it has already taken") {
  auto now = two_stage_case();
  now["training"]["stages"][0]["iterations"] = 600;
  CHECK(case_differences(two_stage_case(), now, 0, 600).empty());
  const auto refused = case_differences(two_stage_case(), now, 0, 700);
  REQUIRE(refused.size() == 1);
  CHECK(refused[0] ==
        "training.stages.0.iterations: 600 is below the 700 steps the checkpoint already took in "
        "that stage");
}
