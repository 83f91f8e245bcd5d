// Cuts of an irregular domain: an interface that runs along a wall for part of its length is
// reported with the share that has the domain on both sides, and its points are drawn there.
#include <doctest/doctest.h>

#include "tessera/app/decomposition.hpp"
#include "tessera/app/problem.hpp"
#include "tessera/io/case.hpp"

using namespace tessera;

namespace {

io::Case backstep_case() {
  // The channel behind and over a step at x = 1, cut at the step.
  const auto document = nlohmann::json::parse(R"({
    "name": "backstep", "coordinates": ["x", "y"], "fields": ["u"],
    "geometry": {"polygon": {"vertices": [[0, 0.5], [1, 0.5], [1, 0], [3, 0], [3, 1], [0, 1]]}},
    "equations": [{"name": "poisson", "residual": "-lap(u) - 1"}],
    "conditions": [{"name": "walls", "type": "dirichlet", "on": "boundary", "field": "u",
                    "value": "0"}],
    "decomposition": {"method": "xpinn", "cuts": {"x": [1]}},
    "training": {"stages": [{"optimizer": "adam", "iterations": 10}]}
  })");
  return io::case_from_json(document, "backstep.json");
}

}  // namespace

TEST_CASE("a cut along a wall: half its facet counts, and its points lie above the step") {
  const auto c = backstep_case();
  const auto problem = app::build_problem(c);
  const auto d = app::build_decomposition(c, problem, 1);
  REQUIRE(d.partition.interfaces().size() == 1);
  REQUIRE(d.partial_interfaces.size() == 1);
  CHECK(d.partial_interfaces[0].interface == 0);
  CHECK(d.partial_interfaces[0].inside == doctest::Approx(0.5).epsilon(0.01));

  const auto& f = d.partition.interfaces()[0];
  core::Rng rng(1, f.id, "interface");
  const auto points =
      app::interface_points_in_domain(f, 512, geometry::SamplerKind::sobol, rng, *problem.domain);
  REQUIRE(points.size(0) == 512);
  // Every point has the domain on both sides: above the step's top (y = 0.5), on the cut.
  CHECK(points.select(1, 0).eq(1.0).all().item<bool>());
  CHECK(points.select(1, 1).gt(0.5).all().item<bool>());
}

TEST_CASE("a cut with the domain on both sides everywhere is not reported") {
  auto document = backstep_case().effective;
  document["decomposition"]["cuts"]["x"] = {2};
  const auto c = io::case_from_json(document, "backstep.json");
  const auto problem = app::build_problem(c);
  CHECK(app::build_decomposition(c, problem, 1).partial_interfaces.empty());
}
