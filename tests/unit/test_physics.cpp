#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <memory>

#include "tessera/autodiff/reverse.hpp"
#include "tessera/core/rng.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/expression.hpp"
#include "tessera/geometry/box_shape.hpp"
#include "tessera/geometry/domain.hpp"
#include "tessera/physics/condition_group.hpp"
#include "tessera/physics/equation_group.hpp"
#include "tessera/physics/field_evaluator.hpp"

using namespace tessera;
using namespace tessera::physics;

namespace {

constexpr double kExact = 1e-20;   // mean square on the exact solution (float64 round-off)
constexpr double kVisible = 1e-6;  // mean square for a perturbed function
constexpr int64_t kPoints = 256;
const PointOptions kFloat64{torch::kFloat64, torch::kCPU, Replica{}};

// Plane problem on [0,1]^2: u = sin(pi x) sin(pi y) + x y, perturbed by eps *
// (1 + x^2 + y^2). -lap(u) = 2 pi^2 sin(pi x) sin(pi y); u_x = pi cos(pi x)
// sin(pi y) + y; u_y = pi sin(pi x) cos(pi y) + x.
const char* kPlaneU = "(sin(pi*x)*sin(pi*y) + x*y)";
const char* kPlaneUx = "(pi*cos(pi*x)*sin(pi*y) + y)";
const char* kPlaneUy = "(pi*sin(pi*x)*cos(pi*y) + x)";

autodiff::NetworkFunction plane_network(double eps) {
  return [eps](const torch::Tensor& p) {
    const auto x = p.select(1, 0), y = p.select(1, 1);
    const auto u =
        torch::sin(M_PI * x) * torch::sin(M_PI * y) + x * y + eps * (1 + x.pow(2) + y.pow(2));
    return u.unsqueeze(1);
  };
}

// Periodic in x with period 1: u = sin(2 pi x) + y, perturbed by eps * x (not
// periodic).
autodiff::NetworkFunction periodic_network(double eps) {
  return [eps](const torch::Tensor& p) {
    const auto x = p.select(1, 0), y = p.select(1, 1);
    return (torch::sin(2 * M_PI * x) + y + eps * x).unsqueeze(1);
  };
}

// Space-time problem on x in [0,1], t in [0,1]: u = sin(pi x) exp(-t) (heat
// equation u_t = u_xx / pi^2), perturbed by eps * (1 + x^2 + t).
autodiff::NetworkFunction space_time_network(double eps) {
  return [eps](const torch::Tensor& p) {
    const auto x = p.select(1, 0), t = p.select(1, 1);
    return (torch::sin(M_PI * x) * torch::exp(-t) + eps * (1 + x.pow(2) + t)).unsqueeze(1);
  };
}

FieldEvaluator evaluator(autodiff::NetworkFunction network) {
  return FieldEvaluator(std::move(network), autodiff::reverse_partials);
}

std::shared_ptr<const geometry::Domain> unit_square() {
  return std::make_shared<const geometry::Domain>(geometry::make_box(geometry::Box{{0, 0}, {1, 1}}),
                                                  std::vector<std::string>{"x", "y"});
}

std::shared_ptr<const geometry::Domain> space_time_interval() {
  return std::make_shared<const geometry::Domain>(geometry::make_interval(0, 1),
                                                  std::vector<std::string>{"x"},
                                                  std::array<double, 2>{0, 1}, "t");
}

expr::SymbolTable symbols_of(const geometry::Domain& domain) {
  expr::SymbolTable s;
  s.spatial = domain.spatial_names();
  s.time = domain.has_time() ? domain.time_name() : "";
  s.fields = {"u"};
  s.extra = normal_names(domain.spatial_names());
  return s;
}

expr::Expression parse(const std::string& text, const geometry::Domain& domain) {
  return expr::Expression::parse(text, symbols_of(domain), "conditions[0].value");
}

/// The single term of a condition group on `domain`, evaluated for `network`.
double condition_loss(const Condition& condition,
                      const std::shared_ptr<const geometry::Domain>& domain,
                      const autodiff::NetworkFunction& network) {
  ConditionGroup group(condition, domain, kPoints, geometry::SamplerKind::uniform,
                       core::Rng(7, 0, "boundary:" + condition.name), kFloat64);
  const auto terms = group.evaluate(evaluator(network), /*create_graph=*/false);
  REQUIRE(terms.size() == 1);
  CHECK(terms[0].name == condition.name);
  CHECK(terms[0].count == kPoints);
  CHECK(terms[0].mean_square.dim() == 0);
  return terms[0].mean_square.item<double>();
}

/// Exact loss ~ 0 and perturbed loss clearly positive.
void check_condition(const Condition& condition,
                     const std::shared_ptr<const geometry::Domain>& domain,
                     autodiff::NetworkFunction (*network)(double)) {
  CAPTURE(condition.name);
  CHECK(condition_loss(condition, domain, network(0.0)) < kExact);
  CHECK(condition_loss(condition, domain, network(0.1)) > kVisible);
}

Condition make_condition(const std::string& name, ConditionType type, const std::string& on,
                         const geometry::Domain& domain) {
  Condition c;
  c.name = name;
  c.type = type;
  c.field = 0;
  c.on = domain.parse_selector(on, "conditions[0].on");
  return c;
}

}  // namespace

TEST_CASE(
    "equation residual loss is zero on the exact solution and positive "
    "when perturbed") {
  const auto domain = unit_square();
  const std::vector<Equation> equations{
      {"poisson", parse("-lap(u) - 2*pi^2*sin(pi*x)*sin(pi*y)", *domain)}};
  EquationGroup group(equations, domain, kPoints, geometry::SamplerKind::sobol,
                      core::Rng(7, 0, "collocation"), kFloat64);
  CHECK(group.points().size(0) == kPoints);
  CHECK((group.points().scalar_type() == torch::kFloat64));
  CHECK(group.term_names() == std::vector<std::string>{"poisson"});
  CHECK(group.derivatives() == std::set<expr::DerivativeKey>{{0, {0, 1}, /*laplacian=*/true}});

  const auto exact = group.evaluate(evaluator(plane_network(0.0)), /*create_graph=*/false);
  REQUIRE(exact.size() == 1);
  CHECK(exact[0].count == kPoints);
  CHECK(exact[0].mean_square.item<double>() < kExact);

  // -lap(eps (1 + x^2 + y^2)) = -4 eps everywhere: mean square 16 eps^2 = 0.16.
  const auto perturbed = group.evaluate(evaluator(plane_network(0.1)), /*create_graph=*/false);
  CHECK(perturbed[0].mean_square.item<double>() == doctest::Approx(0.16).epsilon(1e-10));
}

TEST_CASE("space-time equation residual loss is zero on the exact heat solution") {
  const auto domain = space_time_interval();
  const std::vector<Equation> equations{{"heat", parse("u_t - u_xx/pi^2", *domain)}};
  EquationGroup group(equations, domain, kPoints, geometry::SamplerKind::lhs,
                      core::Rng(7, 0, "collocation"), kFloat64);
  CHECK(group.evaluate(evaluator(space_time_network(0.0)), false)[0].mean_square.item<double>() <
        kExact);
  CHECK(group.evaluate(evaluator(space_time_network(0.1)), false)[0].mean_square.item<double>() >
        kVisible);
}

TEST_CASE(
    "dirichlet condition loss is zero on the exact solution and positive "
    "when perturbed") {
  const auto domain = unit_square();
  auto c = make_condition("walls", ConditionType::dirichlet, "boundary", *domain);
  c.value = parse(kPlaneU, *domain);
  check_condition(c, domain, plane_network);
}

TEST_CASE("a constant condition value gives the loss of the same value at every point") {
  // "0.5" is subtracted as a number and "0" not at all; "0.5 + 0*x" and "0*x" read a coordinate,
  // so they are evaluated at every point and subtracted as tensors. The losses agree exactly.
  const auto domain = unit_square();
  for (auto type : {ConditionType::dirichlet, ConditionType::neumann}) {
    for (const auto& [constant, per_point] :
         {std::pair{"0.5", "0.5 + 0*x"}, std::pair{"0", "0*x"}, std::pair{"-2", "-2 + 0*y"}}) {
      CAPTURE(constant);
      auto c = make_condition("walls", type, "boundary", *domain);
      c.value = parse(constant, *domain);
      REQUIRE(c.value->is_constant());
      const double folded = condition_loss(c, domain, plane_network(0.1));
      c.value = parse(per_point, *domain);
      REQUIRE_FALSE(c.value->is_constant());
      CHECK(folded == condition_loss(c, domain, plane_network(0.1)));
      CHECK(folded > 0);
    }
  }
}

TEST_CASE(
    "neumann condition loss is zero for the exact normal derivative "
    "written with n_x, n_y") {
  const auto domain = unit_square();
  auto c = make_condition("flux", ConditionType::neumann, "boundary", *domain);
  c.value = parse(std::string("n_x*") + kPlaneUx + " + n_y*" + kPlaneUy, *domain);
  check_condition(c, domain, plane_network);
}

TEST_CASE("neumann condition on one face reads the outward normal of that face") {
  // On x=0 the outward normal is -x: du/dn = -u_x = -(pi sin(pi y) + y).
  const auto domain = unit_square();
  auto c = make_condition("left", ConditionType::neumann, "x=0", *domain);
  c.value = parse("-(pi*sin(pi*y) + y)", *domain);
  CHECK(condition_loss(c, domain, plane_network(0.0)) < kExact);
  // The same value with the inward sign is wrong.
  c.value = parse("pi*sin(pi*y) + y", *domain);
  CHECK(condition_loss(c, domain, plane_network(0.0)) > kVisible);
}

TEST_CASE(
    "robin condition loss is zero when a, b and value are consistent "
    "with the solution") {
  const auto domain = unit_square();
  auto c = make_condition("robin", ConditionType::robin, "boundary", *domain);
  c.a = parse("1 + x", *domain);
  c.b = parse("2", *domain);
  c.value = parse(
      std::string("(1 + x)*") + kPlaneU + " + 2*(n_x*" + kPlaneUx + " + n_y*" + kPlaneUy + ")",
      *domain);
  check_condition(c, domain, plane_network);
}

TEST_CASE(
    "initial condition loss is zero on the exact solution, for the value "
    "and for u_t") {
  const auto domain = space_time_interval();
  auto value = make_condition("initial", ConditionType::initial, "initial", *domain);
  value.value = parse("sin(pi*x)", *domain);
  check_condition(value, domain, space_time_network);

  auto velocity = make_condition("initial_velocity", ConditionType::initial, "initial", *domain);
  velocity.time_axis = domain->axis_index("t");
  REQUIRE(velocity.time_axis == 1);
  velocity.value = parse("-sin(pi*x)", *domain);
  check_condition(velocity, domain, space_time_network);
  CHECK(condition_derivatives(velocity, domain->spatial_dims()) ==
        std::set<expr::DerivativeKey>{{0, {1}}});
}

TEST_CASE(
    "space-time dirichlet condition on the spatial boundary holds at "
    "every time") {
  const auto domain = space_time_interval();
  auto c = make_condition("ends", ConditionType::dirichlet, "boundary", *domain);
  c.value = parse("0*t", *domain);
  check_condition(c, domain, space_time_network);
}

TEST_CASE(
    "residual condition loss is zero when the expression vanishes on the "
    "part") {
  const auto domain = unit_square();
  auto face = make_condition("top", ConditionType::residual, "x=1", *domain);
  face.expression = parse("u - y", *domain);  // u(1, y) = y
  check_condition(face, domain, plane_network);

  auto everywhere = make_condition("gradient", ConditionType::residual, "boundary", *domain);
  everywhere.expression = parse(std::string("u_x - ") + kPlaneUx, *domain);
  check_condition(everywhere, domain, plane_network);
}

TEST_CASE(
    "periodic loss is zero for a function periodic in x and positive "
    "otherwise") {
  const auto domain = unit_square();
  const auto faces = domain->periodic_faces("x", "conditions[0].axis");
  auto loss = [&](double eps) {
    PeriodicGroup group("periodic_x", faces, /*fields=*/1, domain, kPoints,
                        geometry::SamplerKind::uniform, core::Rng(7, 0, "periodic"), kFloat64);
    CHECK(group.term_names() == std::vector<std::string>{"periodic_x"});
    CHECK(group.derivatives() == std::set<expr::DerivativeKey>{{0, {}}, {0, {0}}, {0, {1}}});
    const auto terms = group.evaluate(evaluator(periodic_network(eps)),
                                      /*create_graph=*/false);
    REQUIRE(terms.size() == 1);
    CHECK(terms[0].count == kPoints);
    return terms[0].mean_square.item<double>();
  };
  CHECK(loss(0.0) < kExact);
  // eps x jumps by eps in value; its x-derivative matches: mean square eps^2 =
  // 0.01.
  CHECK(loss(0.1) == doctest::Approx(0.01).epsilon(1e-10));
}

TEST_CASE(
    "a function periodic in x is not periodic in y, so the y-periodic "
    "loss is positive") {
  const auto domain = unit_square();
  PeriodicGroup group("periodic_y", domain->periodic_faces("y", "conditions[0].axis"), 1, domain,
                      kPoints, geometry::SamplerKind::uniform, core::Rng(7, 0, "periodic"),
                      kFloat64);
  CHECK(group.evaluate(evaluator(periodic_network(0.0)), false)[0].mean_square.item<double>() >
        kVisible);
}

TEST_CASE(
    "condition_derivatives of a neumann condition contains the field's "
    "spatial first "
    "derivatives") {
  const auto plane = unit_square();
  auto c = make_condition("flux", ConditionType::neumann, "boundary", *plane);
  c.value = parse("0", *plane);
  const auto keys = condition_derivatives(c, plane->spatial_dims());
  CHECK(keys.count({0, {0}}) == 1);
  CHECK(keys.count({0, {1}}) == 1);

  // Space-time: the normal derivative is spatial only, never the time
  // derivative.
  const auto st = space_time_interval();
  auto d = make_condition("flux", ConditionType::neumann, "boundary", *st);
  d.value = parse("u", *st);  // the value's own reads are included too
  const auto st_keys = condition_derivatives(d, st->spatial_dims());
  CHECK(st_keys == std::set<expr::DerivativeKey>{{0, {}}, {0, {0}}});

  // Robin also needs the value itself.
  auto r = make_condition("robin", ConditionType::robin, "boundary", *plane);
  r.a = parse("1", *plane);
  r.b = parse("1", *plane);
  r.value = parse("0", *plane);
  CHECK(condition_derivatives(r, 2) == std::set<expr::DerivativeKey>{{0, {}}, {0, {0}}, {0, {1}}});
}

TEST_CASE(
    "condition_residual evaluates the normal derivative from the named "
    "normal extras") {
  // Hand-built environment: u_x = 2, u_y = 3 at every point, normal (0.6, 0.8).
  const auto plane = unit_square();
  auto c = make_condition("flux", ConditionType::neumann, "boundary", *plane);
  c.value = parse("1", *plane);
  expr::Environment env;
  env.coordinates = torch::zeros({4, 2}, torch::kFloat64);
  env.derivatives[{0, {0}}] = torch::full({4}, 2.0, torch::kFloat64);
  env.derivatives[{0, {1}}] = torch::full({4}, 3.0, torch::kFloat64);
  env.extra["n_x"] = torch::full({4}, 0.6, torch::kFloat64);
  env.extra["n_y"] = torch::full({4}, 0.8, torch::kFloat64);
  const auto r = condition_residual(c, env, normal_names({"x", "y"}));
  CHECK(torch::allclose(r, torch::full({4}, 0.6 * 2 + 0.8 * 3 - 1, torch::kFloat64)));
}

TEST_CASE("condition loss evaluated for training is differentiable") {
  const auto domain = unit_square();
  auto c = make_condition("walls", ConditionType::neumann, "boundary", *domain);
  c.value = parse("0", *domain);
  auto scale = torch::full({}, 1.5, torch::dtype(torch::kFloat64).requires_grad(true));
  autodiff::NetworkFunction network = [scale](const torch::Tensor& p) {
    return (scale * p.select(1, 0) * p.select(1, 1)).unsqueeze(1);
  };
  ConditionGroup group(c, domain, 64, geometry::SamplerKind::uniform, core::Rng(7, 0, "b"),
                       kFloat64);
  const auto terms = group.evaluate(evaluator(network), /*create_graph=*/true);
  REQUIRE(terms[0].mean_square.requires_grad());
  terms[0].mean_square.backward();
  REQUIRE(scale.grad().defined());
  CHECK(scale.grad().item<double>() > 0);
}
