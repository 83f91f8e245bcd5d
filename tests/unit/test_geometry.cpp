#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "tessera/core/error.hpp"
#include "tessera/core/rng.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/geometry/box_shape.hpp"
#include "tessera/geometry/domain.hpp"
#include "tessera/geometry/sampler.hpp"
#include "tessera/geometry/sobol.hpp"

#include "geometry_test_support.hpp"

using namespace tessera;
using namespace tessera::geometry;
using namespace tessera::geometry::testing;

namespace {

Domain unit_square(std::map<std::string, std::string> tags = {}) {
  return Domain(make_box(Box{{0, 0}, {1, 1}}), {"x", "y"}, std::nullopt, "t", std::move(tags));
}

}  // namespace

TEST_CASE("sobol unshifted points match the known sequence") {
  const auto p = sobol_points(8, 3);
  const double expected[8][3] = {{0, 0, 0},
                                 {0.5, 0.5, 0.5},
                                 {0.75, 0.25, 0.25},
                                 {0.25, 0.75, 0.75},
                                 {0.375, 0.375, 0.625},
                                 {0.875, 0.875, 0.125},
                                 {0.625, 0.125, 0.875},
                                 {0.125, 0.625, 0.375}};
  for (int i = 0; i < 8; ++i) {
    for (int d = 0; d < 3; ++d) CHECK(p[i][d].item<double>() == expected[i][d]);
  }
  CHECK(sobol_max_dims() >= 8);
}

TEST_CASE("sobol points of a power-of-two count are a net: one point per dyadic stratum per dim") {
  const int n = 256;
  const auto p = sobol_points(n, sobol_max_dims());
  for (int d = 0; d < sobol_max_dims(); ++d) {
    auto strata = (p.select(1, d) * n).floor().to(torch::kLong);
    CHECK(std::get<0>(torch::_unique(strata)).numel() == n);
  }
}

TEST_CASE("shifted sobol samples stay in [0, 1) and differ between calls") {
  core::Rng rng(3, 0, "sobol");
  const auto a = unit_samples(SamplerKind::sobol, 1000, 8, rng);
  const auto b = unit_samples(SamplerKind::sobol, 1000, 8, rng);
  CHECK(a.min().item<double>() >= 0.0);
  CHECK(a.max().item<double>() < 1.0);
  CHECK(!torch::equal(a, b));
  // A digital shift keeps the net: still one point per stratum of width 1/1024 ... per 1/512 here.
  auto strata = (a.narrow(0, 0, 512).select(1, 5) * 512).floor().to(torch::kLong);
  CHECK(std::get<0>(torch::_unique(strata)).numel() == 512);
  CHECK_THROWS_AS(unit_samples(SamplerKind::sobol, 4, sobol_max_dims() + 1, rng), Error);
}

TEST_CASE("all samplers have mean 1/2 and variance 1/12 per dimension") {
  for (auto kind : all_kinds) {
    CAPTURE(sampler_name(kind));
    core::Rng rng(11, 0, "moments");
    const auto p = unit_samples(kind, 4096, 4, rng);
    REQUIRE(p.sizes() == torch::IntArrayRef({4096, 4}));
    CHECK(p.dtype() == torch::kFloat64);
    CHECK(p.device().is_cpu());
    CHECK(p.min().item<double>() >= 0.0);
    CHECK(p.max().item<double>() < 1.0);
    const auto mean = p.mean(0), var = p.var(0, /*unbiased=*/false);
    for (int d = 0; d < 4; ++d) {
      CHECK(mean[d].item<double>() == doctest::Approx(0.5).epsilon(0.03));
      CHECK(var[d].item<double>() == doctest::Approx(1.0 / 12).epsilon(0.03));
    }
    // Uniformity over a 4 x 4 grid of the first two dims: each cell holds about 1/16.
    const auto cell = (p.select(1, 0) * 4).floor() * 4 + (p.select(1, 1) * 4).floor();
    const auto counts = torch::bincount(cell.to(torch::kLong), {}, 16);
    CHECK(counts.min().item<int64_t>() > 4096 / 16 * 0.8);
    CHECK(counts.max().item<int64_t>() < 4096 / 16 * 1.2);
  }
}

TEST_CASE("lhs puts exactly one point in each stratum of each dimension") {
  core::Rng rng(5, 0, "lhs");
  for (int64_t n : {1, 7, 100, 1000}) {
    const auto p = unit_samples(SamplerKind::lhs, n, 3, rng);
    for (int d = 0; d < 3; ++d) {
      auto strata = (p.select(1, d) * static_cast<double>(n)).floor().to(torch::kLong);
      auto sorted = std::get<0>(strata.sort());
      CHECK(torch::equal(sorted, torch::arange(n, torch::kLong)));
    }
  }
}

TEST_CASE("samplers are deterministic given the rng state and advance it") {
  for (auto kind : all_kinds) {
    CAPTURE(sampler_name(kind));
    core::Rng a(42, 1, "collocation"), b(42, 1, "collocation");
    const auto first_a = unit_samples(kind, 64, 3, a);
    const auto first_b = unit_samples(kind, 64, 3, b);
    CHECK(torch::equal(first_a, first_b));
    const auto second_a = unit_samples(kind, 64, 3, a);
    CHECK(!torch::equal(first_a, second_a));
    core::Rng other(42, 2, "collocation");
    CHECK(!torch::equal(first_a, unit_samples(kind, 64, 3, other)));
  }
  core::Rng rng(1, 0, "empty");
  CHECK(unit_samples(SamplerKind::lhs, 0, 2, rng).sizes() == torch::IntArrayRef({0, 2}));
}

TEST_CASE("box shapes validate, measure and contain with the boundary inside") {
  const BoxShape box(Box{{0, -1, 2}, {2, 1, 3}});
  CHECK(box.dims() == 3);
  CHECK(box.measure() == doctest::Approx(4.0));
  CHECK(box.boundary_parts().size() == 6);
  CHECK(box.boundary_parts()[BoxShape::face_index(0, true)].measure == doctest::Approx(2.0));
  CHECK(box.boundary_parts()[BoxShape::face_index(2, false)].measure == doctest::Approx(4.0));
  const auto points =
      torch::tensor({0.0, -1.0, 2.0, 1.0, 0.0, 2.5, 2.0, 1.0, 3.0, 2.1, 0.0, 2.5}, torch::kFloat64)
          .reshape({4, 3});
  const auto inside = box.contains(points);
  CHECK(inside[0].item<bool>());
  CHECK(inside[1].item<bool>());
  CHECK(inside[2].item<bool>());
  CHECK(!inside[3].item<bool>());
  CHECK_THROWS_AS(BoxShape(Box{{0, 1}, {1, 1}}), Error);
  // Up to 8 dimensions (the case format's inputs); a 9-D box is refused.
  CHECK(BoxShape(Box{{0, 0, 0, 0, 0}, {1, 1, 1, 1, 2}}).measure() == doctest::Approx(2.0));
  CHECK_THROWS_AS(BoxShape(Box{std::vector<double>(9, 0.0), std::vector<double>(9, 1.0)}), Error);
  CHECK(contains_text(error_of([] {
                        BoxShape(Box{{1}, {0}}, "geometry.interval");
                      }),
                      "geometry.interval: dimension 0 needs lower < upper"));
}

TEST_CASE("interior samples lie in the box with the right volume fractions") {
  const Domain domain(make_box(Box{{-1, 0, 0}, {1, 2, 0.5}}), {"x", "y", "z"});
  for (auto kind : all_kinds) {
    CAPTURE(sampler_name(kind));
    core::Rng rng(9, 0, "interior");
    const auto p = domain.sample_interior(8192, kind, rng);
    REQUIRE(p.sizes() == torch::IntArrayRef({8192, 3}));
    CHECK(domain.contains(p).all().item<bool>());
    // Sub-box [-1, 0] x [0, 0.5] x [0, 0.5] holds 1/2 * 1/4 * 1 of the volume.
    const auto in_sub = (p.select(1, 0) <= 0) & (p.select(1, 1) <= 0.5);
    CHECK(in_sub.to(torch::kFloat64).mean().item<double>() == doctest::Approx(0.125).epsilon(0.1));
    const auto in_slab = p.select(1, 2) < 0.1;
    CHECK(in_slab.to(torch::kFloat64).mean().item<double>() == doctest::Approx(0.2).epsilon(0.1));
  }
}

TEST_CASE("boundary samples lie on the selected faces with counts proportional to face measure") {
  const Domain domain(make_box(Box{{0, 0}, {2, 1}}), {"x", "y"});
  const auto all = domain.parse_selector("boundary", "on");
  CHECK(domain.measure(all) == doctest::Approx(6.0));
  for (auto kind : all_kinds) {
    CAPTURE(sampler_name(kind));
    core::Rng rng(2, 0, "boundary");
    const auto s = domain.sample_boundary(all, 600, kind, rng);
    REQUIRE(s.points.sizes() == torch::IntArrayRef({600, 2}));
    REQUIRE(s.normals.sizes() == torch::IntArrayRef({600, 2}));
    const auto x = s.points.select(1, 0), y = s.points.select(1, 1);
    CHECK((x == 0).sum().item<int64_t>() == 100);
    CHECK((x == 2).sum().item<int64_t>() == 100);
    CHECK((y == 0).sum().item<int64_t>() == 200);
    CHECK((y == 1).sum().item<int64_t>() == 200);
    CHECK(domain.contains(s.points).all().item<bool>());
    // Unit, outward normals.
    CHECK(torch::allclose(s.normals.norm(2, 1), torch::ones({600}, torch::kFloat64)));
    const auto center = torch::tensor({1.0, 0.5}, torch::kFloat64);
    CHECK(((s.points - center) * s.normals).sum(1).min().item<double>() > 0);
    // Normal along the face axis: x faces have normal (+-1, 0).
    const auto on_x0 = x == 0;
    CHECK(torch::equal(s.normals.index({on_x0}),
                       torch::tensor({-1.0, 0.0}, torch::kFloat64).expand({100, 2})));
    // Points spread along each face: mean of y on the x=0 face near 1/2.
    CHECK(y.index({on_x0}).mean().item<double>() == doctest::Approx(0.5).epsilon(0.1));
  }
}

TEST_CASE("split_counts is a deterministic largest-remainder split giving every part a point") {
  CHECK(split_counts(10, {1, 1, 1}) == std::vector<int64_t>{4, 3, 3});
  CHECK(split_counts(600, {1, 1, 2, 2}) == std::vector<int64_t>{100, 100, 200, 200});
  CHECK(split_counts(3, {1000, 1, 1}) == std::vector<int64_t>{1, 1, 1});
  CHECK(split_counts(2, {1, 0, 1}) == std::vector<int64_t>{1, 0, 1});
  CHECK(split_counts(1, {1, 2}) == std::vector<int64_t>{0, 1});
  CHECK(split_counts(0, {1, 2}) == std::vector<int64_t>{0, 0});
  const auto counts = split_counts(1001, {0.3, 0.7, 1e-9, 2.0});
  CHECK(std::accumulate(counts.begin(), counts.end(), int64_t{0}) == 1001);
  CHECK(counts[2] == 1);
}

TEST_CASE("an interval's faces are its two end points") {
  const Domain domain(make_interval(-1, 3), {"x"});
  const auto ends = domain.parse_selector("boundary", "on");
  CHECK(domain.part_names(ends) == std::vector<std::string>{"x=-1", "x=3"});
  core::Rng rng(1, 0, "ends");
  const auto s = domain.sample_boundary(ends, 5, SamplerKind::sobol, rng);
  CHECK((s.points.select(1, 0) == -1).sum().item<int64_t>() == 3);
  CHECK((s.points.select(1, 0) == 3).sum().item<int64_t>() == 2);
  CHECK(((s.points.select(1, 0) - 1) * s.normals.select(1, 0)).min().item<double>() > 0);
  const auto right = domain.parse_selector("x=3", "on");
  CHECK(right.parts == std::vector<int>{1});
}

TEST_CASE("selectors: planes, tags and '|' pick the right faces") {
  const auto domain =
      unit_square({{"inlet", "x=0"}, {"walls", "y=0|y=1"}, {"most", "walls|inlet"}});
  CHECK(domain.parse_selector("x=0", "on").parts == std::vector<int>{0});
  CHECK(domain.parse_selector("x = 1.0", "on").parts == std::vector<int>{1});
  CHECK(domain.parse_selector("y=1e0", "on").parts == std::vector<int>{3});
  CHECK(domain.parse_selector("y=0.9999999", "on").parts ==
        std::vector<int>{3});  // within tolerance
  CHECK(domain.parse_selector("inlet", "on").parts == std::vector<int>{0});
  CHECK(domain.parse_selector("walls", "on").parts == std::vector<int>{2, 3});
  CHECK(domain.parse_selector("most", "on").parts == std::vector<int>{0, 2, 3});
  CHECK(domain.parse_selector("y=1 | x=0 | y=1", "on").parts == std::vector<int>{0, 3});
  CHECK(domain.parse_selector("boundary", "on").parts == std::vector<int>{0, 1, 2, 3});
  const auto walls = domain.parse_selector("walls", "on");
  CHECK(walls.text == "walls");
  CHECK(!walls.initial);
  core::Rng rng(4, 0, "walls");
  const auto s = domain.sample_boundary(walls, 100, SamplerKind::lhs, rng);
  const auto y = s.points.select(1, 1);
  CHECK(((y == 0) | (y == 1)).all().item<bool>());
}

TEST_CASE("selector errors name the key and list what is valid") {
  const auto domain = unit_square({{"inlet", "x=0"}});
  auto message = error_of([&] { domain.parse_selector("x=2", "conditions[1].on"); });
  CHECK(contains_text(message, "conditions[1].on: unknown boundary part 'x=2'"));
  CHECK(contains_text(message, "the faces are x=0, x=1, y=0, y=1"));
  CHECK(contains_text(message, "tags: inlet"));
  message = error_of([&] { domain.parse_selector("inlett", "conditions[0].on"); });
  CHECK(contains_text(message, "unknown boundary part 'inlett' (did you mean 'inlet'?)"));
  message = error_of([&] { domain.parse_selector("initial", "conditions[2].on"); });
  CHECK(contains_text(message, "conditions[2].on: 'initial' needs time"));
  message = error_of([&] { domain.parse_selector("z=0", "c.on"); });
  CHECK(contains_text(message, "c.on: unknown coordinate 'z'"));
  CHECK(contains_text(message, "the coordinates are x, y"));
  message = error_of([&] { domain.parse_selector("x=abc", "c.on"); });
  CHECK(contains_text(message, "cannot read the number in 'x=abc'"));
  message = error_of([&] { domain.parse_selector("x=0||y=0", "c.on"); });
  CHECK(contains_text(message, "c.on: empty part in 'x=0||y=0'"));
  CHECK(contains_text(error_of([&] { domain.parse_selector("  ", "c.on"); }),
                      "c.on: no boundary part given"));
  // Bad tags fail when the domain is made, naming the tag.
  message = error_of([] { unit_square({{"outlet", "x=3"}}); });
  CHECK(contains_text(message, "geometry.tags.outlet: unknown boundary part 'x=3'"));
  message = error_of([] { unit_square({{"a", "b"}, {"b", "a"}}); });
  CHECK(contains_text(message, "cycle"));
  CHECK_THROWS_AS(unit_square({{"boundary", "x=0"}}), Error);
  CHECK_THROWS_AS(Domain(make_box(Box{{0, 0}, {1, 1}}), {"x"}), Error);
}

TEST_CASE("space-time: boundary covers the time range, initial is the shape at the start time") {
  const Domain domain(make_box(Box{{0, 0}, {1, 2}}), {"x", "y"}, std::array<double, 2>{0.5, 1.5},
                      "t");
  CHECK(domain.dims() == 3);
  CHECK(domain.spatial_dims() == 2);
  CHECK(domain.has_time());
  CHECK(domain.measure() == doctest::Approx(2.0));
  CHECK(domain.bounding_box().hi == std::vector<double>{1, 2, 1.5});
  CHECK(domain.input_names() == std::vector<std::string>{"x", "y", "t"});

  core::Rng rng(6, 0, "space-time");
  const auto interior = domain.sample_interior(4096, SamplerKind::sobol, rng);
  CHECK(domain.contains(interior).all().item<bool>());
  CHECK(interior.select(1, 2).mean().item<double>() == doctest::Approx(1.0).epsilon(0.02));

  const auto walls = domain.parse_selector("boundary", "on");
  CHECK(!walls.initial);
  const auto s = domain.sample_boundary(walls, 1200, SamplerKind::lhs, rng);
  REQUIRE(s.points.sizes() == torch::IntArrayRef({1200, 3}));
  REQUIRE(s.normals.sizes() == torch::IntArrayRef({1200, 2}));
  const auto t = s.points.select(1, 2);
  CHECK(t.min().item<double>() >= 0.5);
  CHECK(t.max().item<double>() <= 1.5);
  CHECK(t.min().item<double>() < 0.51);
  CHECK(t.max().item<double>() > 1.49);
  CHECK(t.mean().item<double>() == doctest::Approx(1.0).epsilon(0.02));
  CHECK((s.points.select(1, 0) == 0).sum().item<int64_t>() == 400);  // face measure 2 * 1 of 6
  CHECK(torch::allclose(s.normals.norm(2, 1), torch::ones({1200}, torch::kFloat64)));

  const auto initial = domain.parse_selector("initial", "on");
  CHECK(initial.initial);
  CHECK(initial.parts.empty());
  CHECK(domain.parse_selector("t=0.5", "on").initial);
  CHECK(domain.parse_selector("t=1.5", "on").terminal);
  const auto start = domain.sample_boundary(initial, 256, SamplerKind::sobol, rng);
  CHECK((start.points.select(1, 2) == 0.5).all().item<bool>());
  CHECK((start.normals == 0).all().item<bool>());
  CHECK(start.points.select(1, 1).mean().item<double>() == doctest::Approx(1.0).epsilon(0.05));

  // "x=0|initial": the face (measure 2 * 1) and the cap (measure 2) share points equally.
  const auto both = domain.parse_selector("x=0|initial", "on");
  const auto mixed = domain.sample_boundary(both, 100, SamplerKind::uniform, rng);
  CHECK((mixed.points.select(1, 2) == 0.5).sum().item<int64_t>() == 50);
  CHECK(domain.part_names(both) == std::vector<std::string>{"x=0", "initial"});

  const auto message = error_of([&] { domain.parse_selector("t=1", "c.on"); });
  CHECK(contains_text(message, "c.on: 't=1' is not at the start or end of the time range"));
  CHECK(contains_text(error_of([&] { domain.parse_selector("y=3", "c.on"); }), "t=0.5, t=1.5"));
}

TEST_CASE("periodic faces pair points on opposite faces of a box") {
  const Domain domain(make_box(Box{{0, -1}, {2, 1}}), {"x", "y"}, std::array<double, 2>{0, 1});
  const auto faces = domain.periodic_faces("x", "conditions[0].axis");
  CHECK(faces.first.parts == std::vector<int>{0});
  CHECK(faces.second.parts == std::vector<int>{1});
  CHECK(faces.first.text == "x=0");
  CHECK(faces.second.text == "x=2");
  core::Rng rng(8, 0, "periodic");
  const auto [low, high] = domain.sample_periodic(faces, 64, SamplerKind::sobol, rng);
  CHECK((low.points.select(1, 0) == 0).all().item<bool>());
  CHECK((high.points.select(1, 0) == 2).all().item<bool>());
  CHECK(torch::equal(low.points.narrow(1, 1, 2), high.points.narrow(1, 1, 2)));
  CHECK((high.normals.select(1, 0) == 1).all().item<bool>());
  CHECK(contains_text(error_of([&] { domain.periodic_faces("t", "c.axis"); }),
                      "c.axis: periodic conditions need a spatial axis"));
  CHECK(contains_text(error_of([&] { domain.periodic_faces("xx", "c.axis"); }),
                      "c.axis: unknown axis 'xx' (did you mean 'x'?)"));
}
