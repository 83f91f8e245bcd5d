// Residual-based redistribution of the collocation points (RAD): points go where the residual
// is large, the draw is deterministic for a given stream, and the weighted draw itself follows
// its densities.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "tessera/autodiff/reverse.hpp"
#include "tessera/core/rng.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/expression.hpp"
#include "tessera/geometry/box_shape.hpp"
#include "tessera/geometry/domain.hpp"
#include "tessera/physics/equation_group.hpp"
#include "tessera/physics/field_evaluator.hpp"
#include "tessera/physics/residual_sampling.hpp"

using namespace tessera;
using namespace tessera::physics;

namespace {

constexpr int64_t kPoints = 1024;

/// On the unit square with u = 0, the residual u - exp(-100 |x - (0.8, 0.2)|^2) is a bump.
EquationGroup bump_group(torch::Dtype dtype = torch::kFloat64) {
  auto domain = std::make_shared<const geometry::Domain>(
      geometry::make_box(geometry::Box{{0, 0}, {1, 1}}), std::vector<std::string>{"x", "y"});
  expr::SymbolTable symbols;
  symbols.spatial = {"x", "y"};
  symbols.fields = {"u"};
  const std::vector<Equation> equations{
      {"bump", expr::Expression::parse("u - exp(-100*((x-0.8)^2 + (y-0.2)^2))", symbols,
                                       "equations[0].residual")}};
  return EquationGroup(equations, domain, kPoints, geometry::SamplerKind::sobol,
                       core::Rng(7, 0, "collocation"), PointOptions{dtype, torch::kCPU, Replica{}});
}

FieldEvaluator zero_field() {
  return FieldEvaluator(
      [](const torch::Tensor& x) {
        return torch::zeros({x.size(0), 1}, x.options()) * x.sum();
      },
      autodiff::reverse_partials);
}

/// Share of the points within 0.15 of the bump's centre (about 0.07 for uniform points).
double share_near_bump(const torch::Tensor& points) {
  const auto p = points.to(torch::kFloat64);
  const auto d2 = (p.select(1, 0) - 0.8).pow(2) + (p.select(1, 1) - 0.2).pow(2);
  return d2.lt(0.15 * 0.15).to(torch::kFloat64).mean().item<double>();
}

}  // namespace

TEST_CASE("RAD moves the collocation points to where the residual is large") {
  auto group = bump_group();
  const double uniform = share_near_bump(group.points());
  CHECK(uniform < 0.1);
  group.adapt(zero_field(), ResidualSampling{});
  CHECK(group.points().size(0) == kPoints);
  CHECK(group.adapted_points().defined());
  const double adapted = share_near_bump(group.points());
  MESSAGE("share near the bump: uniform " << uniform << ", after RAD " << adapted);
  CHECK(adapted > 4 * uniform);
  // c keeps every region sampled: points remain far from the bump.
  CHECK(adapted < 0.9);
  // Distinct points (a draw without replacement).
  CHECK(std::get<0>(at::_unique(group.points().select(1, 0))).numel() == kPoints);
}

TEST_CASE("RAD is deterministic for a stream and survives a dtype change and a uniform redraw") {
  auto a = bump_group(), b = bump_group();
  a.adapt(zero_field(), ResidualSampling{});
  b.adapt(zero_field(), ResidualSampling{});
  CHECK(torch::equal(a.points(), b.points()));
  // The stream stands at the same place afterwards.
  CHECK(a.rng().state().s == b.rng().state().s);

  const auto before = a.adapted_points().clone();
  a.set_dtype(torch::kFloat32);
  CHECK((a.points().scalar_type() == torch::kFloat32));
  CHECK(torch::equal(a.points(), before.to(torch::kFloat32)));

  // A checkpoint's whole sample comes back as it was.
  auto c = bump_group();
  c.set_adapted_points(before);
  CHECK(torch::equal(c.points(), b.points()));

  a.resample();  // a uniform redraw forgets the adapted sample
  CHECK_FALSE(a.adapted_points().defined());
}

TEST_CASE("the weighted draw follows its densities and the RAD density formula") {
  // Candidates 0..9 have density 9, the other 90 density 1: each of the first ten is 9 times
  // as likely to be kept at every draw.
  auto density = torch::ones({100}, torch::kFloat64);
  density.slice(0, 0, 10).fill_(9.0);
  core::Rng rng(3, 0, "draw");
  int64_t heavy = 0;
  const int trials = 200;
  for (int trial = 0; trial < trials; ++trial) {
    const auto kept = weighted_draw(density, 10, rng);
    CHECK(kept.numel() == 10);
    CHECK(torch::equal(kept, std::get<0>(kept.sort())));
    heavy += kept.lt(10).sum().item<int64_t>();
  }
  // Without replacement the expected share of heavy ones is well above the 10 % of uniform
  // draws and below 100 %.
  const double share = static_cast<double>(heavy) / (10.0 * trials);
  MESSAGE("share of heavy candidates kept: " << share);
  CHECK(share > 0.35);
  CHECK(share < 0.8);

  const auto magnitude = torch::tensor({0.0, 1.0, 3.0}, torch::kFloat64);
  const auto d = residual_density(magnitude, ResidualSampling{1000, 8, 1.0, 1.0});
  // |r| / mean(|r|) + 1 with mean 4/3.
  CHECK(d[0].item<double>() == doctest::Approx(1.0));
  CHECK(d[1].item<double>() == doctest::Approx(1.75));
  CHECK(d[2].item<double>() == doctest::Approx(3.25));
  CHECK(torch::equal(residual_density(torch::zeros({4}, torch::kFloat64), ResidualSampling{}),
                     torch::ones({4}, torch::kFloat64)));
}

TEST_CASE("adapt() is the two-step draw with the group's own density and count") {
  auto a = bump_group(), b = bump_group();
  a.adapt(zero_field(), ResidualSampling{});
  const auto drawn = b.candidates(zero_field(), ResidualSampling{});
  CHECK(drawn.points.size(0) == 8 * kPoints);
  CHECK(drawn.magnitude.size(0) == 8 * kPoints);
  b.keep(drawn, residual_density(drawn.magnitude, ResidualSampling{}), kPoints);
  CHECK(torch::equal(a.points(), b.points()));
  // Another count is kept as asked, and the term's whole sample follows it.
  auto c = bump_group();
  const auto more = c.candidates(zero_field(), ResidualSampling{});
  c.keep(more, residual_density(more.magnitude, ResidualSampling{}, 0.5), 3 * kPoints);
  CHECK(c.point_count() == 3 * kPoints);
  CHECK(c.configured_points() == kPoints);
}

TEST_CASE("subdomains share the points as the density over the whole domain would") {
  // Two halves of equal measure, all of the residual in the first: with c = 1 it gets
  // (1 + 1/2) / 2 = 3/4 of the points.
  CHECK(share_points(1000, {2.0, 0.0}, {0.5, 0.5}, {8000, 8000}, 1.0) ==
        std::vector<int64_t>{750, 250});
  // Equal residual per measure: the counts follow the measures.
  CHECK(share_points(900, {1.0, 2.0}, {1.0, 2.0}, {8000, 8000}, 1.0) ==
        std::vector<int64_t>{300, 600});
  // c = 0: by the residual alone, but every subdomain keeps at least one point.
  CHECK(share_points(100, {1.0, 0.0, 0.0}, {1, 1, 1}, {800, 800, 800}, 0.0) ==
        std::vector<int64_t>{98, 1, 1});
  // A cap (the candidates drawn) holds, and the rest goes to the others.
  CHECK(share_points(1000, {3.0, 1.0, 0.0}, {1, 1, 1}, {400, 8000, 8000}, 0.0) ==
        std::vector<int64_t>{400, 599, 1});
  // Rounding keeps the total: thirds of 100 by largest remainder, ties to the lower index.
  const auto thirds = share_points(100, {1, 1, 1}, {1, 1, 1}, {800, 800, 800}, 1.0);
  CHECK(thirds == std::vector<int64_t>{34, 33, 33});
  // No measure (a subdomain without collocation points) gets none.
  CHECK(share_points(10, {1, 0}, {1, 0}, {80, 0}, 1.0) == std::vector<int64_t>{10, 0});
}
