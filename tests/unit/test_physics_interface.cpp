#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tessera/autodiff/reverse.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/expression.hpp"
#include "tessera/physics/field_evaluator.hpp"
#include "tessera/physics/interface_side.hpp"

using namespace tessera;
using namespace tessera::physics;

namespace {

constexpr double kExact = 1e-20;   // mean square when both sides hold the same function
constexpr double kVisible = 1e-6;  // mean square when the neighbour's function differs
constexpr int64_t kPoints = 64;

// u = sin(pi x) sin(pi y) + x y plus a perturbation a + b x + c (x^2 + y^2) on the neighbour:
//  a changes the value only; b x also the x-derivative and the flux; c (x^2 + y^2) also the
// residual (-lap of it is -4c).
autodiff::NetworkFunction plane_network(double a = 0, double b = 0, double c = 0) {
  return [a, b, c](const torch::Tensor& p) {
    const auto x = p.select(1, 0), y = p.select(1, 1);
    return (torch::sin(M_PI * x) * torch::sin(M_PI * y) + x * y + a + b * x +
            c * (x.pow(2) + y.pow(2)))
        .unsqueeze(1);
  };
}

FieldEvaluator evaluator(autodiff::NetworkFunction network) {
  return FieldEvaluator(std::move(network), autodiff::reverse_partials);
}

expr::SymbolTable plane_symbols() {
  expr::SymbolTable s;
  s.spatial = {"x", "y"};
  s.fields = {"u"};
  return s;
}

std::vector<Equation> poisson(const expr::SymbolTable& s) {
  return {{"poisson", expr::Expression::parse("-lap(u) - 2*pi^2*sin(pi*x)*sin(pi*y)", s,
                                              "equations[0].residual")}};
}

/// Flux of -lap(u): F = -grad u, one expression per spatial axis.
std::vector<std::vector<expr::Expression>> poisson_flux(const expr::SymbolTable& s) {
  return {{expr::Expression::parse("-u_x", s, "equations[0].flux[0]"),
           expr::Expression::parse("-u_y", s, "equations[0].flux[1]")}};
}

/// Points on the cut x = 0.5 (axis 0) of the unit square.
torch::Tensor points_on_x_cut() {
  auto p = torch::empty({kPoints, 2}, torch::kFloat64);
  p.select(1, 0).fill_(0.5);
  p.select(1, 1).copy_(torch::linspace(0.01, 0.99, kPoints, torch::kFloat64));
  return p;
}

InterfaceSide plane_side(int side, const InterfaceWeights& weights) {
  const auto s = plane_symbols();
  return InterfaceSide(/*interface_id=*/0, side, /*axis=*/0, points_on_x_cut(), /*fields=*/1,
                       poisson(s), poisson_flux(s), weights, /*spatial_dims=*/2);
}

/// The single term of an interface that has only `term`'s weight, lower side holding u and the
/// upper side holding `neighbour`.
double single_term(const std::string& term, const autodiff::NetworkFunction& neighbour) {
  InterfaceWeights w;
  if (term == continuity_term) w.continuity = 1;
  if (term == residual_term) w.residual = 1;
  if (term == flux_term) w.flux = 1;
  if (term == gradient_term) w.gradient = 1;
  const auto lower = plane_side(0, w), upper = plane_side(1, w);
  const auto local = lower.local_values(evaluator(plane_network()), /*create_graph=*/false);
  const auto remote = upper.local_values(evaluator(neighbour), /*create_graph=*/false);
  CHECK(local.sizes().vec() == std::vector<int64_t>{kPoints, lower.quantities()});
  CHECK((local.scalar_type() == torch::kFloat64));
  const auto terms = lower.losses(local, remote.detach());
  REQUIRE(terms.size() == 1);
  CHECK(terms[0].name == term);
  CHECK(terms[0].count == kPoints);
  CHECK(terms[0].mean_square.dim() == 0);
  // The loss is symmetric: the upper side sees the same figure.
  CHECK(upper.losses(remote, local.detach())[0].mean_square.item<double>() ==
        doctest::Approx(terms[0].mean_square.item<double>()).epsilon(1e-12));
  return terms[0].mean_square.item<double>();
}

}  // namespace

TEST_CASE("each interface loss is zero when both sides hold the same function") {
  for (const char* term : {continuity_term, residual_term, flux_term, gradient_term}) {
    CAPTURE(term);
    CHECK(single_term(term, plane_network()) < kExact);
  }
}

TEST_CASE("each interface loss is positive when the neighbour's function differs") {
  // c (x^2 + y^2) changes value, residual, normal derivative and flux on x = 0.5.
  for (const char* term : {continuity_term, residual_term, flux_term, gradient_term}) {
    CAPTURE(term);
    CHECK(single_term(term, plane_network(0, 0, 0.1)) > kVisible);
  }
}

TEST_CASE("interface losses see exactly the jump they measure") {
  // A constant offset a: only the value jumps; continuity is |a/2|^2 (solution average).
  CHECK(single_term(continuity_term, plane_network(0.2)) == doctest::Approx(0.01).epsilon(1e-10));
  CHECK(single_term(residual_term, plane_network(0.2)) < kExact);
  CHECK(single_term(flux_term, plane_network(0.2)) < kExact);
  CHECK(single_term(gradient_term, plane_network(0.2)) < kExact);
  // b x: u_x and the flux -u_x jump by b, the residual does not.
  CHECK(single_term(gradient_term, plane_network(0, 0.3)) == doctest::Approx(0.09).epsilon(1e-10));
  CHECK(single_term(flux_term, plane_network(0, 0.3)) == doctest::Approx(0.09).epsilon(1e-10));
  CHECK(single_term(residual_term, plane_network(0, 0.3)) < kExact);
  // c (x^2 + y^2): the residual jumps by -4c.
  CHECK(single_term(residual_term, plane_network(0, 0, 0.1)) ==
        doctest::Approx(0.16).epsilon(1e-10));
}

TEST_CASE("quantities count fields, residuals, fluxes and gradients for the terms present") {
  const auto s = plane_symbols();
  auto equations = poisson(s);
  equations.push_back({"second", expr::Expression::parse("u - x*y", s, "equations[1].residual")});
  auto fluxes = poisson_flux(s);
  fluxes.push_back({expr::Expression::parse("u", s, "f"), expr::Expression::parse("u", s, "f")});
  auto side = [&](InterfaceWeights w) {
    return InterfaceSide(3, 1, 1, points_on_x_cut(), 1, equations, fluxes, w, 2);
  };
  InterfaceWeights all{1, 1, 1, 1};
  CHECK(side(all).quantities() == 1 + 2 + 2 + 1);
  CHECK(interface_term_names(all) ==
        std::vector<std::string>{"continuity", "residual_jump", "flux", "gradient"});
  CHECK(side(InterfaceWeights{1, 0, 0, 0}).quantities() == 1);
  CHECK(side(InterfaceWeights{0, 1, 0, 0}).quantities() == 1 + 2);
  CHECK(side(InterfaceWeights{1, 0, 1, 0}).quantities() == 1 + 2);
  CHECK(side(InterfaceWeights{1, 0, 0, 1}).quantities() == 1 + 1);
  CHECK(interface_term_names(InterfaceWeights{20, 1, 0, 0}) ==
        std::vector<std::string>{"continuity", "residual_jump"});
  const auto sd = side(all);
  CHECK(sd.interface_id() == 3);
  CHECK(sd.side() == 1);
  CHECK(sd.point_count() == kPoints);
  const auto values = sd.local_values(evaluator(plane_network()), false);
  CHECK(values.sizes().vec() == std::vector<int64_t>{kPoints, 6});
  const auto terms = sd.losses(values, values.detach());
  REQUIRE(terms.size() == 4);
  for (const auto& t : terms) CHECK(t.mean_square.item<double>() == 0.0);
}

TEST_CASE("local values for training are differentiable with respect to the network") {
  auto scale = torch::full({}, 1.5, torch::dtype(torch::kFloat64).requires_grad(true));
  autodiff::NetworkFunction network = [scale](const torch::Tensor& p) {
    return (scale * p.select(1, 0) * p.select(1, 1)).unsqueeze(1);
  };
  const auto side = plane_side(0, InterfaceWeights{1, 1, 0, 1});
  const auto local = side.local_values(evaluator(network), /*create_graph=*/true);
  const auto remote = side.local_values(evaluator(plane_network()), false).detach();
  auto total = torch::zeros({}, torch::kFloat64);
  for (const auto& t : side.losses(local, remote)) total = total + t.mean_square;
  REQUIRE(total.requires_grad());
  total.backward();
  REQUIRE(scale.grad().defined());
  CHECK(std::isfinite(scale.grad().item<double>()));
  CHECK(scale.grad().item<double>() != 0.0);
}

TEST_CASE("a time-axis interface drops the flux term and couples one way, forward in time") {
  expr::SymbolTable s;
  s.spatial = {"x"};
  s.time = "t";
  s.fields = {"u"};
  const std::vector<Equation> heat{
      {"heat", expr::Expression::parse("u_t - u_xx/pi^2", s, "equations[0].residual")}};
  auto points = torch::empty({kPoints, 2}, torch::kFloat64);
  points.select(1, 0).copy_(torch::linspace(0, 1, kPoints, torch::kFloat64));
  points.select(1, 1).fill_(0.5);
  const InterfaceWeights all{1, 1, 1, 1};
  // No fluxes given at all: a time cut must not need them. The later (upper) side.
  InterfaceSide side(0, 1, /*axis=*/1, points, 1, heat, {}, all, /*spatial_dims=*/1);
  CHECK(side.quantities() == 1 + 1 + 0 + 1);
  auto heat_network = [](double eps) -> autodiff::NetworkFunction {
    return [eps](const torch::Tensor& p) {
      const auto x = p.select(1, 0), t = p.select(1, 1);
      return (torch::sin(M_PI * x) * torch::exp(-t) + eps * t).unsqueeze(1);
    };
  };
  const auto local = side.local_values(evaluator(heat_network(0)), false);
  CHECK(local.size(1) == 3);
  const auto same = side.losses(local, side.local_values(evaluator(heat_network(0)), false));
  std::vector<std::string> names;
  for (const auto& t : same) {
    names.push_back(t.name);
    CHECK(t.mean_square.item<double>() < kExact);
  }
  CHECK(names == std::vector<std::string>{"continuity", "residual_jump", "gradient"});
  // eps t: the value jumps by 0.5 eps at t = 0.5 (the full jump across time, not half of it);
  // u_t (the normal derivative) by eps.
  const auto other = side.losses(local, side.local_values(evaluator(heat_network(0.2)), false));
  CHECK(other[0].mean_square.item<double>() == doctest::Approx(0.01).epsilon(1e-10));
  CHECK(other[1].mean_square.item<double>() == doctest::Approx(0.04).epsilon(1e-10));
  CHECK(other[2].mean_square.item<double>() == doctest::Approx(0.04).epsilon(1e-10));

  // The earlier (lower) side does not feel the later one.
  InterfaceSide earlier(0, 0, /*axis=*/1, points, 1, heat, {}, all, /*spatial_dims=*/1);
  const auto mine = earlier.local_values(evaluator(heat_network(0)), false);
  CHECK(earlier.losses(mine, local).empty());

  // A spatial cut of the same problem keeps flux (and then needs the fluxes).
  CHECK_THROWS_AS(InterfaceSide(0, 0, /*axis=*/0, points, 1, heat, {}, all, 1), Error);
}

TEST_CASE("squared_jump sums the squared field jump over the points") {
  const auto side = plane_side(0, InterfaceWeights{1, 1, 0, 0});
  const auto local = side.local_values(evaluator(plane_network()), false);
  const auto remote = side.local_values(evaluator(plane_network(0.5)), false);
  CHECK(side.squared_jump(local, remote).item<double>() ==
        doctest::Approx(kPoints * 0.25).epsilon(1e-10));
  CHECK(side.squared_jump(local, local).item<double>() == 0.0);
}

TEST_CASE(
    "both sides of an interface redraw the same new points, and a checkpoint's origin "
    "draws them again") {
  InterfaceWeights w;
  w.continuity = 1;
  const InterfaceSide::PointDraw draw = [](core::Rng& rng) {
    auto p = torch::empty({kPoints, 2}, torch::kFloat64);
    p.select(1, 0).fill_(0.5);
    for (int64_t i = 0; i < kPoints; ++i) p[i][1] = rng.uniform();
    return p;
  };
  const core::Rng stream(/*seed=*/7, /*subdomain=*/0, "interface");
  auto lower = plane_side(0, w), upper = plane_side(1, w);
  lower.set_redraw(draw, stream);
  upper.set_redraw(draw, stream);
  const auto fields = evaluator(plane_network());
  auto values = [&](const InterfaceSide& side) { return side.local_values(fields, false); };
  const auto first = values(lower);
  CHECK(torch::equal(first, values(upper)));

  const auto origin = lower.sample_origin();
  REQUIRE(origin.has_value());
  lower.resample();
  upper.resample();
  const auto second = values(lower);
  CHECK(torch::equal(second, values(upper)));
  CHECK_FALSE(torch::allclose(first, second));

  lower.resample();
  CHECK_FALSE(torch::allclose(values(lower), second));
  auto restarted = plane_side(0, w);
  restarted.set_redraw(draw, stream);
  restarted.resample_from(*lower.sample_origin());
  CHECK(torch::equal(values(restarted), values(lower)));
  restarted.resample_from(*origin);
  CHECK(torch::equal(values(restarted), first));
}

TEST_CASE("an interface without a redraw keeps its points") {
  InterfaceWeights w;
  w.continuity = 1;
  auto side = plane_side(0, w);
  const auto fields = evaluator(plane_network());
  const auto before = side.local_values(fields, false);
  side.resample();
  CHECK(torch::equal(before, side.local_values(fields, false)));
  CHECK_FALSE(side.sample_origin().has_value());
}
