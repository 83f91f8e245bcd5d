// The operators on expressions (d, grad, div, dot, vector, lap of an expression) against their
// hand expansions, with field derivatives from both derivative engines, in float64.
#include <doctest/doctest.h>

#include "tessera/autodiff/reverse.hpp"
#include "tessera/autodiff/taylor.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/expression.hpp"
#include "tessera/physics/field_evaluator.hpp"

using namespace tessera;

namespace {

/// A float64 network of (x, y) or (x, y, t) with two outputs (u, v) and non-trivial weights.
nn::Mlp network(int inputs) {
  torch::manual_seed(7);
  nn::MlpOptions options;
  options.inputs = inputs;
  options.hidden = {12, 10};
  options.outputs = 2;
  options.lower = std::vector<double>(static_cast<std::size_t>(inputs), 0.0);
  options.upper = std::vector<double>(static_cast<std::size_t>(inputs), 1.0);
  nn::Mlp mlp(options);
  mlp->to(torch::kFloat64);
  torch::NoGradGuard no_grad;
  for (auto& p : mlp->parameters()) p.add_(0.3 * torch::randn_like(p));
  return mlp;
}

physics::FieldEvaluator fields(nn::Mlp mlp, bool forward) {
  physics::DerivativeEngine engine =
      forward ? physics::DerivativeEngine(
                    [mlp](const autodiff::NetworkFunction&, const torch::Tensor& x,
                          const std::set<autodiff::Partial>& requested, bool create_graph) {
                      return autodiff::taylor_partials(*mlp, x, requested, create_graph);
                    })
              : physics::DerivativeEngine(autodiff::reverse_partials);
  return physics::FieldEvaluator([mlp](const torch::Tensor& x) mutable { return mlp->forward(x); },
                                 engine);
}

expr::SymbolTable symbols(bool with_time) {
  expr::SymbolTable table;
  table.spatial = {"x", "y"};
  if (with_time) table.time = "t";
  table.fields = {"u", "v"};
  table.constants = {{"k", 0.7}};
  table.definitions = {
      {"a", "1 + 0.5*sin(pi*x)*y^2 + 0.2*u^2"}, {"flux", "a*u_x"}, {"speed", "vector(u, v)"}};
  return table;
}

/// Evaluates both expressions at random points through one engine; returns the largest
/// difference of the two.
double largest_difference(const std::string& written, const std::string& expanded, bool forward,
                          bool with_time = false) {
  const auto table = symbols(with_time);
  const auto a = expr::Expression::parse(written, table, "written");
  const auto b = expr::Expression::parse(expanded, table, "expanded");
  const int inputs = with_time ? 3 : 2;
  torch::manual_seed(3);
  const auto x = torch::rand({200, inputs}, torch::kFloat64);
  auto keys = a.derivatives();
  keys.insert(b.derivatives().begin(), b.derivatives().end());
  const auto env = fields(network(inputs), forward).evaluate(x, keys, false);
  const auto left = a.evaluate(env);
  const auto right = b.evaluate(env);
  REQUIRE(torch::isfinite(left).all().item<bool>());
  return (left - right).abs().max().item<double>() / (1.0 + right.abs().max().item<double>());
}

}  // namespace

TEST_CASE("div(a*grad(u)) equals its hand expansion in both engines") {
  // a = 1 + 0.5 sin(pi x) y^2 + 0.2 u^2
  const std::string expanded =
      "(1 + 0.5*sin(pi*x)*y^2 + 0.2*u^2)*(u_xx + u_yy)"
      " + (0.5*pi*cos(pi*x)*y^2 + 0.4*u*u_x)*u_x + (sin(pi*x)*y + 0.4*u*u_y)*u_y";
  for (const bool forward : {true, false}) {
    CAPTURE(forward);
    CHECK(largest_difference("div(a*grad(u))", expanded, forward) < 1e-12);
    CHECK(largest_difference("d(flux, x) + d(a*u_y, y)", expanded, forward) < 1e-12);
    CHECK(largest_difference("dot(grad(a), grad(u)) + a*lap(u)", expanded, forward) < 1e-12);
  }
}

TEST_CASE("the operators reach time, products, quotients, powers and functions") {
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"d(u, x)", "u_x"},
      {"d(u*v, t)", "u_t*v + u*v_t"},
      {"d(u/v, x)", "u_x/v - u*v_x/v^2"},
      {"d(u^3, y)", "3*u^2*u_y"},
      {"d(exp(u)*sin(k*x), x)", "exp(u)*u_x*sin(k*x) + exp(u)*k*cos(k*x)"},
      {"d(sqrt(1 + u^2), x)", "u*u_x/sqrt(1 + u^2)"},
      {"d(tanh(u) + atan(v) + log(2 + u^2), y)",
       "(1 - tanh(u)^2)*u_y + v_y/(1 + v^2) + 2*u*u_y/(2 + u^2)"},
      {"d(atan2(u, 2 + v), x)", "((2 + v)*u_x - u*v_x)/((2 + v)^2 + u^2)"},
      {"d((2 + u^2)^v, x)", "(2 + u^2)^v*(v_x*log(2 + u^2) + v*2*u*u_x/(2 + u^2))"},
      {"d(if(x < 0.5, u, v^2), x)", "if(x < 0.5, u_x, 2*v*v_x)"},
      {"d(max(u, v, 0.1), y)", "if(max(u, v) >= 0.1, if(u >= v, u_y, v_y), 0)"},
      {"lap(u*v)", "u_xx*v + 2*(u_x*v_x + u_y*v_y) + u*v_xx + u_yy*v + u*v_yy"},
      {"div(speed*u)", "2*u*u_x + v_y*u + v*u_y"},
      {"div(-grad(u)/2 + vector(v, y*t))", "-(u_xx + u_yy)/2 + v_x + t"},
  };
  for (const bool forward : {true, false}) {
    for (const auto& [written, expanded] : pairs) {
      CAPTURE(forward);
      CAPTURE(written);
      CHECK(largest_difference(written, expanded, forward, true) < 1e-12);
    }
  }
}

TEST_CASE("third derivatives through the operators match in the reverse engine") {
  // the forward engine stops at order two; a run takes the reverse engine beyond
  CHECK(largest_difference("d(u_x, y, t)", "u_xyt", false, true) < 1e-12);
  CHECK(largest_difference("d(lap(u), x)", "u_xxx + u_xyy", false, true) < 1e-12);
  CHECK(largest_difference("div(grad(lap(u)))", "u_xxxx + 2*u_xxyy + u_yyyy", false) < 1e-12);
}

TEST_CASE("operators on coordinates only fold into ordinary expressions") {
  const auto table = symbols(false);
  const auto e = expr::Expression::parse("d(x^2*sin(y), x, y)", table, "k");
  CHECK(e.derivatives().empty());
  const auto x = torch::tensor({{0.3, 0.4}, {0.9, 0.1}}, torch::kFloat64);
  const auto value = e.evaluate({x, {}, {}, {}});
  CHECK(value[0].item<double>() == doctest::Approx(2 * 0.3 * std::cos(0.4)).epsilon(1e-14));
  // a derivative reads only the field derivatives it needs
  const auto flux = expr::Expression::parse("div(u*grad(u))", table, "k");
  CHECK(flux.derivatives() ==
        std::set<expr::DerivativeKey>{{0, {}}, {0, {0}}, {0, {1}}, {0, {0, 0}}, {0, {1, 1}}});
}

TEST_CASE("misused operators are reported with the key and column") {
  const auto table = symbols(false);
  auto error_of = [&](const std::string& text) {
    try {
      expr::Expression::parse(text, table, "equations[0].residual");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of("grad(u)") ==
        "equations[0].residual: the expression is a vector where a number is needed at column 1 "
        "(make a number of it with div(...) or dot(..., ...))");
  CHECK(error_of("grad(u)*grad(v)").find("the product of two vectors is dot(a, b)") !=
        std::string::npos);
  CHECK(error_of("grad(u) + u").find("'+' cannot take a vector and a number") != std::string::npos);
  CHECK(error_of("div(u)").find("div() takes vectors, not numbers at column 5") !=
        std::string::npos);
  CHECK(error_of("sin(grad(u))").find("an argument of 'sin' is a vector") != std::string::npos);
  CHECK(error_of("d(u)").find("d() needs an expression and at least one coordinate") !=
        std::string::npos);
  CHECK(error_of("d(u, t)").find("unknown coordinate 't' in d()") != std::string::npos);
  CHECK(error_of("d(u, 2)").find("d() expects a coordinate, not") != std::string::npos);
  CHECK(error_of("vector(u)").find("wrong number of arguments to 'vector'") != std::string::npos);
  expr::SymbolTable normals = table;
  normals.extra = {"n_x", "n_y"};
  CHECK_THROWS_WITH_AS(expr::Expression::parse("d(n_x*u, x)", normals, "k"),
                       doctest::Contains("cannot differentiate per-point value 'n_x'"), Error);
  expr::SymbolTable named_d = table;
  named_d.constants["div"] = 1.0;
  CHECK_THROWS_WITH_AS(expr::Expression::parse("u", named_d, "k"),
                       doctest::Contains("may not be named like a function"), Error);
}

TEST_CASE("an exponent constant in space stays finite where the base is zero") {
  expr::SymbolTable table = symbols(false);
  table.parameters = {"p"};
  const auto e = expr::Expression::parse("d(u^p, x)", table, "k");
  const auto x = torch::tensor({{0.5, 0.5}, {0.2, 0.3}}, torch::kFloat64);
  expr::Environment env{x, {}, {{"p", torch::tensor(2.5, torch::kFloat64)}}, {}};
  env.derivatives[{0, {}}] = torch::tensor({0.0, 2.0}, torch::kFloat64);
  env.derivatives[{0, {0}}] = torch::tensor({1.0, 1.0}, torch::kFloat64);
  const auto value = e.evaluate(env);
  CHECK(value[0].item<double>() == 0.0);
  CHECK(value[1].item<double>() == doctest::Approx(2.5 * std::pow(2.0, 1.5)).epsilon(1e-14));
}
