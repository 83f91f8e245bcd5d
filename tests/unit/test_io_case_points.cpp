// Conditions given at points ("on": {"points": ...}) and the free-form "description" key.
#include <doctest/doctest.h>

#include "io_test_support.hpp"
#include "tessera/io/case.hpp"

using namespace tessera;
using io::testing::case_error;
using nlohmann::json;

namespace {

json minimal() {
  return json::parse(R"({
    "name": "p", "coordinates": ["x", "y"], "fields": ["u"],
    "geometry": {"box": [[0, 1], [0, 2]]},
    "equations": [{"residual": "-lap(u) - 1"}],
    "conditions": [{"type": "dirichlet", "field": "u", "value": "0"}],
    "training": {"stages": [{"optimizer": "adam", "iterations": 10}]}
  })");
}

}  // namespace

TEST_CASE("a dirichlet condition at points keeps the points and counts them") {
  json doc = minimal();
  doc["conditions"][0]["on"] = {{"points", {{0, 0}, {1, 0.5}}}};
  const auto c = io::case_from_json(doc, "p.json");
  REQUIRE(c.conditions[0].at_points.size() == 2);
  CHECK(c.conditions[0].at_points[1] == std::vector<double>{1, 0.5});
  CHECK(c.conditions[0].on.empty());
  CHECK(c.conditions[0].points == 2);
}

TEST_CASE("a point must list every input, time included") {
  json doc = minimal();
  doc["time"] = {{"range", {0, 1}}};
  doc["conditions"][0]["on"] = {{"points", {{0, 0}}}};
  CHECK(case_error(doc) ==
        "cases/p.json: conditions[0].on.points[0]: a point needs one number per input ('x', "
        "'y', 't'): expected 3, got 2");
}

TEST_CASE("points are refused where a normal is needed, with a point count or enforced") {
  json doc = minimal();
  doc["conditions"][0]["type"] = "neumann";
  doc["conditions"][0]["on"] = {{"points", {{0, 0}}}};
  CHECK(case_error(doc).find("conditions[0].on: points are taken by dirichlet and residual "
                             "conditions only (a point has no outward normal)") !=
        std::string::npos);

  doc = minimal();
  doc["conditions"][0]["on"] = {{"points", {{0, 0}}}};
  doc["conditions"][0]["points"] = 4;
  CHECK(case_error(doc) ==
        "cases/p.json: conditions[0].points: a condition at given points holds at exactly "
        "those points; remove 'points'");

  doc = minimal();
  doc["conditions"][0]["on"] = {{"points", {{0, 0}}}};
  doc["conditions"][0]["enforce"] = "exact";
  CHECK(case_error(doc).find("conditions[0].enforce: a condition at points is a penalty only") !=
        std::string::npos);

  doc = minimal();
  doc["conditions"][0]["on"] = {{"point", {{0, 0}}}};
  CHECK(case_error(doc).find("conditions[0].on.point") != std::string::npos);
}

TEST_CASE("a description is a string or a list of lines, kept in the effective case") {
  json doc = minimal();
  doc["description"] = "one line";
  auto c = io::case_from_json(doc, "p.json");
  CHECK(c.description == std::vector<std::string>{"one line"});
  CHECK(c.effective["description"] == "one line");

  doc["description"] = {"first", "second"};
  c = io::case_from_json(doc, "p.json");
  CHECK(c.description == std::vector<std::string>{"first", "second"});

  doc["description"] = 3;
  CHECK(case_error(doc).find("cases/p.json: description: expected a string") != std::string::npos);
}
