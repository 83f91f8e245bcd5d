#include <doctest/doctest.h>

#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/coordinate_cache.hpp"
#include "tessera/expr/evaluate.hpp"
#include "tessera/expr/expression.hpp"

using namespace tessera;
using namespace tessera::expr;

namespace {

const std::string kKey = "equations[0].residual";

SymbolTable plane() {
  SymbolTable s;
  s.spatial = {"x", "y"};
  s.fields = {"u", "v"};
  s.constants = {{"k", 2.5}};
  s.parameters = {"nu"};
  s.extra = {"n_x", "n_y"};
  return s;
}

SymbolTable space_time() {
  SymbolTable s;
  s.spatial = {"x"};
  s.time = "t";
  s.fields = {"u"};
  return s;
}

Expression parse(const std::string& text, const SymbolTable& symbols = plane()) {
  return Expression::parse(text, symbols, kKey);
}

/// The message parse() throws, or "" when it parses.
std::string parse_error(const std::string& text, const SymbolTable& symbols = plane()) {
  try {
    Expression::parse(text, symbols, kKey);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// Five points in float64: x in [-0.8, 0.8], y in [0.1, 0.9]; u = 10*x + y and every
/// derivative used in the tests given distinct values.
Environment environment() {
  Environment env;
  const auto options = torch::TensorOptions().dtype(torch::kFloat64);
  const auto x = torch::linspace(-0.8, 0.8, 5, options);
  const auto y = torch::linspace(0.1, 0.9, 5, options);
  env.coordinates = torch::stack({x, y}, 1);
  env.derivatives[{0, {}}] = 10 * x + y;
  env.derivatives[{0, {0}}] = torch::full({5}, 10.0, options);
  env.derivatives[{0, {0, 0}}] = torch::full({5}, 3.0, options);
  env.derivatives[{0, {1, 1}}] = torch::full({5}, 4.0, options);
  env.derivatives[{0, {0, 1}}] = torch::full({5}, 7.0, options);
  env.derivatives[{0, {0, 1}, /*laplacian=*/true}] = torch::full({5}, 7.0, options);  // 3 + 4
  env.derivatives[{1, {}}] = x * y;
  env.parameters["nu"] = torch::scalar_tensor(0.25, options);
  env.extra["n_x"] = torch::full({5}, 0.6, options);
  env.extra["n_y"] = torch::full({5}, 0.8, options);
  return env;
}

/// Checks expression(text) on environment() against f(x, y) at every point.
template <class F>
void check_pointwise(const std::string& text, F f) {
  CAPTURE(text);
  const Environment env = environment();
  const torch::Tensor result = parse(text).evaluate(env);
  REQUIRE(result.sizes() == torch::IntArrayRef{5});
  REQUIRE((result.scalar_type() == torch::kFloat64));
  for (int i = 0; i < 5; ++i) {
    const double x = env.coordinates[i][0].item<double>();
    const double y = env.coordinates[i][1].item<double>();
    const double expected = f(x, y);
    const double got = result[i].item<double>();
    if (std::isnan(expected))
      CHECK(std::isnan(got));
    else if (std::isinf(expected))
      CHECK(got == expected);
    else
      CHECK(got == doctest::Approx(expected).epsilon(1e-14));
  }
}

double constant(const std::string& text) { return parse(text).evaluate_constant(); }

}  // namespace

TEST_CASE("numbers and built-in constants read as written") {
  CHECK(constant("1") == 1.0);
  CHECK(constant("1.5") == 1.5);
  CHECK(constant("1e-3") == 1e-3);
  CHECK(constant("2.5E+2") == 250.0);
  CHECK(constant(".5") == 0.5);
  CHECK(constant("5.") == 5.0);
  CHECK(constant("pi") == M_PI);
  CHECK(constant("e") == M_E);
  CHECK(constant("k") == 2.5);
  CHECK(constant("  k\t* 2 ") == 5.0);
}

TEST_CASE("operators on tensors match double arithmetic") {
  check_pointwise("x + y", [](double x, double y) { return x + y; });
  check_pointwise("x - y", [](double x, double y) { return x - y; });
  check_pointwise("x * y", [](double x, double y) { return x * y; });
  check_pointwise("x / y", [](double x, double y) { return x / y; });
  check_pointwise("y ^ x", [](double x, double y) { return std::pow(y, x); });
  check_pointwise("x ^ 2", [](double x, double y) { return x * x; });
  check_pointwise("-x", [](double x, double y) { return -x; });
  check_pointwise("+x", [](double x, double y) { return x; });
  check_pointwise("x < 0", [](double x, double y) { return x < 0 ? 1.0 : 0.0; });
  check_pointwise("x <= 0", [](double x, double y) { return x <= 0 ? 1.0 : 0.0; });
  check_pointwise("x > 0", [](double x, double y) { return x > 0 ? 1.0 : 0.0; });
  check_pointwise("x >= 0", [](double x, double y) { return x >= 0 ? 1.0 : 0.0; });
  check_pointwise("x == 0", [](double x, double y) { return x == 0 ? 1.0 : 0.0; });
  check_pointwise("x != 0", [](double x, double y) { return x != 0 ? 1.0 : 0.0; });
}

TEST_CASE("functions on tensors match the std:: functions") {
  check_pointwise("sin(x)", [](double x, double y) { return std::sin(x); });
  check_pointwise("cos(x)", [](double x, double y) { return std::cos(x); });
  check_pointwise("tan(x)", [](double x, double y) { return std::tan(x); });
  check_pointwise("asin(x)", [](double x, double y) { return std::asin(x); });
  check_pointwise("acos(x)", [](double x, double y) { return std::acos(x); });
  check_pointwise("atan(x)", [](double x, double y) { return std::atan(x); });
  check_pointwise("atan2(y, x)", [](double x, double y) { return std::atan2(y, x); });
  check_pointwise("sinh(x)", [](double x, double y) { return std::sinh(x); });
  check_pointwise("cosh(x)", [](double x, double y) { return std::cosh(x); });
  check_pointwise("tanh(x)", [](double x, double y) { return std::tanh(x); });
  check_pointwise("exp(x)", [](double x, double y) { return std::exp(x); });
  check_pointwise("log(y)", [](double x, double y) { return std::log(y); });
  check_pointwise("log(x)", [](double x, double y) { return std::log(x); });  // NaN for x < 0
  check_pointwise("sqrt(y)", [](double x, double y) { return std::sqrt(y); });
  check_pointwise("abs(x)", [](double x, double y) { return std::abs(x); });
  check_pointwise("sign(x)", [](double x, double y) { return double((x > 0) - (x < 0)); });
  check_pointwise("min(x, y)", [](double x, double y) { return std::min(x, y); });
  check_pointwise("max(x, y)", [](double x, double y) { return std::max(x, y); });
  check_pointwise("min(x, y, -0.5)", [](double x, double y) { return std::min({x, y, -0.5}); });
  check_pointwise("max(x, 0.3, y)", [](double x, double y) { return std::max({x, 0.3, y}); });
  check_pointwise("pow(y, x)", [](double x, double y) { return std::pow(y, x); });
  check_pointwise("if(x > 0, x, y)", [](double x, double y) { return x > 0 ? x : y; });
  check_pointwise("if(x, 1, 2)", [](double x, double y) { return x != 0 ? 1.0 : 2.0; });
}

TEST_CASE("the same functions fold to the std:: values on constants") {
  CHECK(constant("sin(0.3)") == std::sin(0.3));
  CHECK(constant("cos(0.3)") == std::cos(0.3));
  CHECK(constant("tan(0.3)") == std::tan(0.3));
  CHECK(constant("asin(0.3)") == std::asin(0.3));
  CHECK(constant("acos(0.3)") == std::acos(0.3));
  CHECK(constant("atan(0.3)") == std::atan(0.3));
  CHECK(constant("atan2(1, -2)") == std::atan2(1.0, -2.0));
  CHECK(constant("sinh(0.3)") == std::sinh(0.3));
  CHECK(constant("cosh(0.3)") == std::cosh(0.3));
  CHECK(constant("tanh(0.3)") == std::tanh(0.3));
  CHECK(constant("exp(0.3)") == std::exp(0.3));
  CHECK(constant("log(0.3)") == std::log(0.3));
  CHECK(constant("sqrt(0.3)") == std::sqrt(0.3));
  CHECK(constant("abs(-0.3)") == 0.3);
  CHECK(constant("sign(-0.3)") == -1.0);
  CHECK(constant("sign(0)") == 0.0);
  CHECK(constant("min(3, 1, 2)") == 1.0);
  CHECK(constant("max(3, 1, 2)") == 3.0);
  CHECK(constant("pow(2, 10)") == 1024.0);
  CHECK(constant("if(1 < 2, 5, 6)") == 5.0);
  CHECK(constant("if(0, 5, 6)") == 6.0);
  CHECK(constant("3 >= 3") == 1.0);
  CHECK(constant("3 != 3") == 0.0);
}

TEST_CASE("precedence and associativity follow the usual rules") {
  CHECK(constant("1 + 2 * 3") == 7.0);
  CHECK(constant("(1 + 2) * 3") == 9.0);
  CHECK(constant("8 / 4 / 2") == 1.0);    // left-associative
  CHECK(constant("8 - 4 - 2") == 2.0);    // left-associative
  CHECK(constant("2 ^ 3 ^ 2") == 512.0);  // right-associative
  CHECK(constant("-2 ^ 2") == -4.0);      // -(2^2)
  CHECK(constant("(-2) ^ 2") == 4.0);
  CHECK(constant("2 ^ -1") == 0.5);
  CHECK(constant("--3") == 3.0);
  CHECK(constant("-+-3") == 3.0);
  CHECK(constant("2 * -3") == -6.0);
  CHECK(constant("1 + 2 < 4") == 1.0);   // comparisons bind loosest
  CHECK(constant("1 < 2 == 1") == 1.0);  // comparisons are left-associative
  CHECK(constant("2 * 3 ^ 2") == 18.0);
  CHECK(constant("-k^2") == -6.25);
  check_pointwise("-x^2", [](double x, double y) { return -(x * x); });
  check_pointwise("-x^2 + y*x - 1/y", [](double x, double y) { return -(x * x) + y * x - 1 / y; });
}

TEST_CASE("fields, derivatives, parameters and extras read the environment") {
  const Environment env = environment();
  const auto x = env.coordinates.select(1, 0), y = env.coordinates.select(1, 1);
  CHECK(torch::allclose(parse("u").evaluate(env), 10 * x + y));
  CHECK(torch::allclose(parse("v").evaluate(env), x * y));
  CHECK(
      torch::allclose(parse("u_xx + u_yy").evaluate(env), torch::full({5}, 7.0, torch::kFloat64)));
  CHECK(torch::allclose(parse("lap(u)").evaluate(env), torch::full({5}, 7.0, torch::kFloat64)));
  CHECK(torch::allclose(parse("u_yx - D(u, y, x)").evaluate(env),
                        torch::zeros({5}, torch::kFloat64)));
  CHECK(torch::allclose(parse("nu * u_x").evaluate(env), torch::full({5}, 2.5, torch::kFloat64)));
  Environment with_u_y = env;
  with_u_y.derivatives[{0, {1}}] = torch::full({5}, 2.0, torch::kFloat64);
  CHECK(torch::allclose(parse("n_x*u_x + n_y*u_y").evaluate(with_u_y),
                        torch::full({5}, 0.6 * 10 + 0.8 * 2, torch::kFloat64)));
}

TEST_CASE("derivative spellings are order-independent and name the sorted key") {
  const SymbolTable symbols = plane();
  const auto xy = parse("u_xy").derivatives();
  const auto yx = parse("u_yx").derivatives();
  CHECK(xy == yx);
  CHECK(xy == std::set<DerivativeKey>{{0, {0, 1}}});
  CHECK(parse("D(u, y, x)").derivatives() == xy);
  CHECK(parse("D(u_y, x)").derivatives() == xy);
  CHECK(parse("D(u, x, x)").derivatives() == parse("u_xx").derivatives());
  CHECK(derivative_name({0, {1, 0}}, symbols) == "u_xy");
  CHECK(derivative_name({0, {}}, symbols) == "u");
  CHECK(derivative_name({1, {1, 1, 1}}, symbols) == "v_yyy");
  CHECK(parse("u_xxx").derivatives() == std::set<DerivativeKey>{{0, {0, 0, 0}}});
  CHECK(DerivativeKey{0, {0, 1}} == DerivativeKey{0, {0, 1}});
  CHECK(DerivativeKey{0, {1}} < DerivativeKey{0, {0, 0}});  // lower orders first
}

TEST_CASE("derivative discovery lists exactly what the expression reads") {
  const auto needed = parse("u_t + u*u_x - nu*u_xx",
                            []() {
                              SymbolTable s = space_time();
                              s.parameters = {"nu"};
                              return s;
                            }())
                          .derivatives();
  CHECK(needed == std::set<DerivativeKey>{{0, {}}, {0, {0}}, {0, {1}}, {0, {0, 0}}});
  // lap(u) in two or more dimensions is one quantity (one stream in the forward engine)
  CHECK(parse("lap(u) + v").derivatives() ==
        std::set<DerivativeKey>{{0, {0, 1}, /*laplacian=*/true}, {1, {}}});
  CHECK(derivative_name({0, {0, 1}, true}, plane()) == "lap(u)");
  CHECK(DerivativeKey{0, {0, 1}, true}.order() == 2);
  CHECK(DerivativeKey{0, {0, 1}, true} != DerivativeKey{0, {0, 1}});
  // in space-time, lap is spatial only: with one spatial coordinate it is u_xx
  CHECK(parse("lap(u)", space_time()).derivatives() == std::set<DerivativeKey>{{0, {0, 0}}});
  CHECK(parse("u_tx", space_time()).derivatives() == std::set<DerivativeKey>{{0, {0, 1}}});
  CHECK(derivative_name({0, {0, 1}}, space_time()) == "u_xt");
  CHECK(parse("x * y + sin(pi)").derivatives().empty());
  CHECK(parse("if(0, u_xx, v)").derivatives() == std::set<DerivativeKey>{{1, {}}});  // folded
  const auto e = parse("n_x * u_x + n_y * u_y + nu");
  CHECK(e.extra_names() == std::set<std::string>{"n_x", "n_y"});
  CHECK(e.parameter_names() == std::set<std::string>{"nu"});
  CHECK(e.uses_parameters());
  CHECK_FALSE(parse("u_x").uses_parameters());
}

TEST_CASE("multi-letter coordinates are matched longest first") {
  SymbolTable s;
  s.spatial = {"x", "xi"};
  s.time = "tau";
  s.fields = {"phi"};
  CHECK(parse("phi_xix", s).derivatives() == std::set<DerivativeKey>{{0, {0, 1}}});
  CHECK(parse("phi_taux", s).derivatives() == std::set<DerivativeKey>{{0, {0, 2}}});
  CHECK(derivative_name({0, {0, 1, 2}}, s) == "phi_xxitau");
}

TEST_CASE("parameters are read as 0-d tensors and gradients flow to them") {
  Environment env = environment();
  env.parameters["nu"] = torch::scalar_tensor(0.25, torch::kFloat64).requires_grad_(true);
  const torch::Tensor r = parse("u_x - nu * lap(u)").evaluate(env);
  REQUIRE(r.requires_grad());
  r.sum().backward();
  // d/dnu sum(u_x - nu*(u_xx + u_yy)) = -5 * 7
  CHECK(env.parameters["nu"].grad().item<double>() == doctest::Approx(-35.0));

  // through coordinates too, with autograd intact: d/dx sum(sin(x)) = cos(x)
  env.coordinates = env.coordinates.detach().requires_grad_(true);
  parse("sin(x) * y").evaluate(env).sum().backward();
  const auto x = env.coordinates.select(1, 0).detach(), y = env.coordinates.select(1, 1).detach();
  CHECK(torch::allclose(env.coordinates.grad().select(1, 0), torch::cos(x) * y));

  // a parameter-only expression is broadcast to [n] and still carries the gradient
  Environment env2 = environment();
  env2.parameters["nu"] = torch::scalar_tensor(0.5, torch::kFloat64).requires_grad_(true);
  const torch::Tensor p = parse("nu^2").evaluate(env2);
  CHECK(p.sizes() == torch::IntArrayRef{5});
  p.sum().backward();
  CHECK(env2.parameters["nu"].grad().item<double>() == doctest::Approx(5.0));
}

TEST_CASE("constant subtrees are folded at parse time") {
  CHECK(parse("2 * pi * k").is_constant());
  CHECK(parse("2 * pi * k").evaluate_constant() == doctest::Approx(5 * M_PI));
  CHECK_FALSE(parse("2 * x").is_constant());
  CHECK(parse("if(1, 3, u)").is_constant());
  // a folded constant is broadcast to n in the coordinates' dtype and device
  Environment env = environment();
  env.coordinates = env.coordinates.to(torch::kFloat32);
  const torch::Tensor c = parse("sin(pi / 2) + k").evaluate(env);
  CHECK(c.sizes() == torch::IntArrayRef{5});
  CHECK((c.scalar_type() == torch::kFloat32));
  CHECK(torch::allclose(c, torch::full({5}, 3.5f)));
  // folding happens in double precision before the cast
  CHECK(parse("1e-10 + 1 - 1").evaluate_constant() == doctest::Approx(1e-10).epsilon(1e-6));
}

TEST_CASE("results follow the coordinates' dtype") {
  Environment env;
  env.coordinates = torch::rand({4, 2}, torch::kFloat32);
  const auto r = parse("x^2 + (y > 0.5) + k").evaluate(env);
  CHECK((r.scalar_type() == torch::kFloat32));
  CHECK(r.sizes() == torch::IntArrayRef{4});
}

TEST_CASE("evaluate_constant names what is not constant") {
  CHECK(parse("k^2 / 2").evaluate_constant() == 3.125);
  CHECK_THROWS_WITH_AS(parse("1 + x").evaluate_constant(),
                       "equations[0].residual: expected a constant expression, but it reads 'x' "
                       "at column 5 (only numbers, pi, e and the case's constants may appear here)",
                       Error);
  CHECK_THROWS_WITH_AS(parse("2*nu").evaluate_constant(),
                       "equations[0].residual: expected a constant expression, but it reads 'nu' "
                       "at column 3 (only numbers, pi, e and the case's constants may appear here)",
                       Error);
}

TEST_CASE("unknown symbols are reported with a suggestion") {
  CHECK(parse_error("u - uxx") ==
        "equations[0].residual: unknown symbol 'uxx' at column 5 (did you mean 'u_xx'?)");
  CHECK(parse_error("u_xx + u_y + nuu") ==
        "equations[0].residual: unknown symbol 'nuu' at column 14 (did you mean 'nu'?)");
  CHECK(parse_error("u + zeta") == "equations[0].residual: unknown symbol 'zeta' at column 5");
  CHECK(parse_error("uy") ==
        "equations[0].residual: unknown symbol 'uy' at column 1 (did you mean 'u_y'?)");
  CHECK(parse_error("V_yy") ==
        "equations[0].residual: unknown symbol 'V_yy' at column 1 (did you mean 'v_yy'?)");
}

TEST_CASE("unknown functions and wrong argument counts are reported") {
  CHECK(parse_error("sine(x)") ==
        "equations[0].residual: unknown function 'sine' at column 1 (did you mean 'sin'?)");
  CHECK(parse_error("2 * atan2(y)") ==
        "equations[0].residual: wrong number of arguments to 'atan2' at column 5 (expected 2, got "
        "1)");
  CHECK(
      parse_error("sin(x, y)") ==
      "equations[0].residual: wrong number of arguments to 'sin' at column 1 (expected 1, got 2)");
  CHECK(
      parse_error("exp()") ==
      "equations[0].residual: wrong number of arguments to 'exp' at column 1 (expected 1, got 0)");
  CHECK(parse_error("min(x)") ==
        "equations[0].residual: wrong number of arguments to 'min' at column 1 (expected at least "
        "2, got 1)");
  CHECK(parse_error("if(x, 1)") ==
        "equations[0].residual: wrong number of arguments to 'if' at column 1 (expected 3, got 2)");
  CHECK(parse_error("u(x)") ==
        "equations[0].residual: field 'u' is not a function at column 1 (write products with '*', "
        "e.g. u*(...))");
}

TEST_CASE("lexical errors name the character") {
  CHECK(parse_error("x $ y") == "equations[0].residual: unexpected character '$' at column 3");
  CHECK(parse_error("x = y") ==
        "equations[0].residual: unexpected character '=' at column 3 (did you mean '=='?)");
  CHECK(parse_error("x ** 2") ==
        "equations[0].residual: unexpected '**' at column 3 (use '^' for powers)");
  CHECK(parse_error("1e+ x") ==
        "equations[0].residual: malformed number '1e+' at column 1 (expected digits after the "
        "exponent, e.g. 1e-3)");
  // columns count characters, not bytes
  CHECK(parse_error("\xcf\x80 * x") ==
        "equations[0].residual: unexpected character '\xcf\x80' at column 1");
  CHECK(parse_error("x*\xcf\x80 $") ==
        "equations[0].residual: unexpected character '\xcf\x80' at column 3");
}

TEST_CASE("structural errors say what was expected") {
  CHECK(parse_error("") ==
        "equations[0].residual: empty expression at column 1 (expected a number, symbol or '(')");
  CHECK(parse_error("   ") ==
        "equations[0].residual: empty expression at column 4 (expected a number, symbol or '(')");
  CHECK(parse_error("x +") ==
        "equations[0].residual: unexpected end of expression at column 4 (expected a number, "
        "symbol or '(')");
  CHECK(parse_error("x * / y") ==
        "equations[0].residual: unexpected '/' at column 5 (expected a number, symbol or '(')");
  CHECK(
      parse_error("(x + y") ==
      "equations[0].residual: missing ')' at column 7 (expected ')' to close the '(' at column 1)");
  CHECK(
      parse_error("sin(x") ==
      "equations[0].residual: missing ')' at column 6 (expected ')' to close the '(' at column 4)");
  CHECK(parse_error("(x y)") ==
        "equations[0].residual: unexpected 'y' at column 4 (expected an operator or ')'; ')' to "
        "close the '(' at column 1)");
  CHECK(parse_error("atan2(x y)") ==
        "equations[0].residual: unexpected 'y' at column 9 (expected ',' or ')' in the arguments "
        "of 'atan2'; ')' to close the '(' at column 6)");
  CHECK(parse_error("x y") ==
        "equations[0].residual: unexpected 'y' at column 3 (expected an operator or the end of the "
        "expression)");
  CHECK(parse_error("2 x") ==
        "equations[0].residual: unexpected 'x' at column 3 (expected an operator or the end of the "
        "expression)");
  CHECK(parse_error("x)") == "equations[0].residual: unexpected ')' at column 2 (no '(' to close)");
  CHECK(parse_error("max(x,)") ==
        "equations[0].residual: unexpected ')' at column 7 (expected a number, symbol or '(')");
  CHECK(
      parse_error(std::string(300, '(') + "x" + std::string(300, ')')).find("nested too deeply") !=
      std::string::npos);
}

TEST_CASE("derivative errors name the coordinates and fields that exist") {
  CHECK(parse_error("u_z") ==
        "equations[0].residual: unknown coordinate 'z' in derivative 'u_z' at column 1 (the "
        "coordinates are x, y)");
  CHECK(parse_error("1 + u_xz") ==
        "equations[0].residual: unknown coordinate 'z' in derivative 'u_xz' at column 5 (the "
        "coordinates are x, y)");
  CHECK(parse_error("u_t") ==
        "equations[0].residual: unknown coordinate 't' in derivative 'u_t' at column 1 (the "
        "coordinates are x, y; this is not a space-time problem)");
  CHECK(parse_error("u_") ==
        "equations[0].residual: incomplete derivative 'u_' at column 1 (name the coordinates after "
        "'_', e.g. u_x)");
  CHECK(parse_error("x_y") ==
        "equations[0].residual: cannot differentiate coordinate 'x' at column 1 (only fields have "
        "derivatives, the fields are u, v; d(expr, x) differentiates an expression)");
  CHECK(parse_error("nu_x") ==
        "equations[0].residual: cannot differentiate parameter 'nu' at column 1 (only fields have "
        "derivatives, the fields are u, v; d(expr, x) differentiates an expression)");
}

TEST_CASE("D() and lap() misuse is reported") {
  CHECK(parse_error("D(u)") ==
        "equations[0].residual: D() needs a field and at least one coordinate at column 1 (e.g. "
        "D(u, x, x), got 1 argument)");
  CHECK(parse_error("D()") ==
        "equations[0].residual: D() needs a field and at least one coordinate at column 1 (e.g. "
        "D(u, x, x), got 0 arguments)");
  CHECK(parse_error("D(x, y)") ==
        "equations[0].residual: cannot differentiate coordinate 'x' at column 3 (only fields have "
        "derivatives, the fields are u, v; d(expr, x) differentiates an expression)");
  CHECK(parse_error("D(w, x)") ==
        "equations[0].residual: unknown field 'w' in D() at column 3 (the fields are u, v)");
  CHECK(parse_error("D(u, z)") ==
        "equations[0].residual: unknown coordinate 'z' in D() at column 6 (the coordinates are x, "
        "y)");
  CHECK(parse_error("D(2*u, x)") ==
        "equations[0].residual: D() expects a field, not '2' at column 3 (its arguments are names, "
        "e.g. D(u, x, x); the fields are u, v)");
  CHECK(parse_error("D(u, 1)") ==
        "equations[0].residual: D() expects a coordinate, not '1' at column 6 (its arguments are "
        "names, e.g. D(u, x, x); the coordinates are x, y)");
  CHECK(parse_error("D(u*2, x)") ==
        "equations[0].residual: unexpected '*' at column 4 (the arguments of D() are names, e.g. "
        "D(u, x, x))");
  CHECK(
      parse_error("D(u, x") ==
      "equations[0].residual: missing ')' at column 7 (expected ')' to close the '(' at column 2)");
  CHECK(
      parse_error("lap(u, v)") ==
      "equations[0].residual: wrong number of arguments to 'lap' at column 1 (expected 1, got 2)");
  CHECK(
      parse_error("lap()") ==
      "equations[0].residual: wrong number of arguments to 'lap' at column 1 (expected 1, got 0)");
  CHECK(parse_error("lap(k)") ==
        "equations[0].residual: cannot differentiate constant 'k' at column 5 (only fields have "
        "derivatives, the fields are u, v; d(expr, x) differentiates an expression)");
  // lap() of an expression differentiates it; of a vector it is an error
  CHECK(parse_error("lap(sin(u))").empty());
  CHECK(parse_error("lap(grad(u))") ==
        "equations[0].residual: the argument of 'lap' is a vector where a number is needed at "
        "column 5 (make a number of it with div(...) or dot(..., ...))");
  CHECK(parse_error("lapp(u)") ==
        "equations[0].residual: unknown function 'lapp' at column 1 (did you mean 'lap'?)");
}

TEST_CASE("symbol tables that would make names ambiguous are rejected") {
  SymbolTable s = plane();
  s.constants["pi"] = 3.0;
  CHECK(parse_error("x", s) ==
        "equations[0].residual: constant 'pi' may not be named like a built-in constant (pi and e "
        "are built in)");
  s = plane();
  s.parameters.push_back("x");
  CHECK(parse_error("x", s) ==
        "equations[0].residual: 'x' is both a coordinate and a parameter (names must be unique)");
  s = plane();
  s.fields.push_back("u_2");
  CHECK(parse_error("x", s).find("field 'u_2' may not contain '_'") != std::string::npos);
  s = plane();
  s.constants["sin"] = 1.0;
  CHECK(parse_error("x", s) ==
        "equations[0].residual: constant 'sin' may not be named like a function");
  s = plane();
  s.extra.push_back("u_n");
  CHECK(parse_error("x", s) ==
        "equations[0].residual: per-point value 'u_n' is spelled like a derivative of field 'u' "
        "(rename one of them)");
}

TEST_CASE("evaluation reports missing or misshapen inputs") {
  Environment env = environment();
  CHECK_THROWS_WITH_AS(parse("v_x").evaluate(env),
                       "equations[0].residual: no value for 'v_x' was supplied (the derivatives to "
                       "compute come from Expression::derivatives())",
                       Error);
  env.extra["n_x"] = torch::ones({4}, torch::kFloat64);
  CHECK_THROWS_WITH_AS(parse("n_x").evaluate(env),
                       "equations[0].residual: 'n_x' must have shape [5], got [4]", Error);
  env.coordinates = torch::zeros({5, 3}, torch::kFloat64);
  CHECK_THROWS_AS(parse("x").evaluate(env), Error);
  CHECK_THROWS_AS(Expression().evaluate(environment()), Error);
}

TEST_CASE("copies share the parsed tree and keep the text") {
  const Expression a = parse("u_x + 1");
  const Expression b = a;
  CHECK(b.text() == "u_x + 1");
  CHECK(b.key() == kKey);
  CHECK(torch::allclose(a.evaluate(environment()), b.evaluate(environment())));
}

TEST_CASE("subtrees of coordinates only are computed once per point set") {
  const SymbolTable symbols = plane();
  const auto root = parse_tree("u - 2*sin(pi*x)*sin(pi*y)", symbols, kKey);
  CoordinateCache cache(*root);
  // The source term is the root's second child, the only subtree kept.
  const Node* source = root->children[1].get();
  CHECK(cache.slot(source) == 0);
  CHECK(cache.slot(root.get()) == -1);
  CHECK(cache.slot(root->children[0].get()) == -1);

  Environment env = environment();
  const auto x = env.coordinates.select(1, 0), y = env.coordinates.select(1, 1);
  const auto expected =
      env.derivatives.at({0, {}}) - 2 * torch::sin(M_PI * x) * torch::sin(M_PI * y);
  const auto first = evaluate_tree(*root, env, kKey, &cache);
  CHECK(torch::allclose(first, expected, 1e-14, 1e-14));
  auto* kept = cache.values_at(env.coordinates);
  REQUIRE(kept != nullptr);
  REQUIRE(kept->at(0).defined());
  const auto kept_value = kept->at(0);
  // Evaluated again on the same points: the kept tensor itself, the same bits.
  env.derivatives[{0, {}}] = env.derivatives.at({0, {}}) + 1;
  const auto second = evaluate_tree(*root, env, kKey, &cache);
  CHECK(cache.values_at(env.coordinates)->at(0).is_same(kept_value));
  CHECK(torch::equal(second, env.derivatives.at({0, {}}) - kept_value));

  // Points changed in place or replaced are new point sets.
  env.coordinates.mul_(0.5);
  const auto halved = evaluate_tree(*root, env, kKey, &cache);
  CHECK(torch::allclose(halved, evaluate_tree(*root, env, kKey), 1e-14, 1e-14));
  CHECK_FALSE(cache.values_at(env.coordinates)->at(0).is_same(kept_value));
  env.coordinates = env.coordinates.clone() + 0.25;
  CHECK(torch::equal(evaluate_tree(*root, env, kKey, &cache), evaluate_tree(*root, env, kKey)));

  // Points that need a gradient are never kept: the graph to them is built every time.
  env.coordinates = env.coordinates.detach().requires_grad_(true);
  CHECK(cache.values_at(env.coordinates) == nullptr);
  evaluate_tree(*root, env, kKey, &cache).sum().backward();
  REQUIRE(env.coordinates.grad().defined());
  CHECK(env.coordinates.grad().abs().sum().item<double>() > 0);
}

TEST_CASE("an expression keeps its coordinate subtrees across evaluations, copies too") {
  const auto e = parse("u_xx + k*sin(pi*x)*y");
  const Expression copy = e;
  const Environment env = environment();
  const auto once = e.evaluate(env);
  CHECK(torch::equal(copy.evaluate(env), once));
  CHECK(torch::equal(e.evaluate(env), once));
  const auto x = env.coordinates.select(1, 0), y = env.coordinates.select(1, 1);
  CHECK(torch::allclose(once, 3.0 + 2.5 * torch::sin(M_PI * x) * y, 1e-14, 1e-14));
}

TEST_CASE("definitions stand for their expressions, derivatives included") {
  SymbolTable s = plane();
  s.definitions = {{"kappa", "1 + x^2"}, {"flux", "kappa*u_x"}, {"twice", "2*flux"}};
  const Environment env = environment();
  const auto defined = Expression::parse("twice - lap(u)*kappa", s, kKey);
  const auto expanded = Expression::parse("2*((1 + x^2)*u_x) - lap(u)*(1 + x^2)", s, kKey);
  CHECK(torch::equal(defined.evaluate(env), expanded.evaluate(env)));
  // The derivatives a definition reads are the expression's.
  CHECK(defined.derivatives() == expanded.derivatives());
  // A definition of numbers only folds like any constant.
  s.definitions["half"] = "1/2";
  CHECK(Expression::parse("half*4", s, kKey).evaluate_constant() == 2.0);
}

TEST_CASE("a definition that depends on itself, or reads an unknown name, is named") {
  SymbolTable s = plane();
  s.definitions = {{"a", "b + 1"}, {"b", "2*a"}};
  CHECK(parse_error("a", s).find("definitions: 'a' depends on itself (a -> b -> a)") !=
        std::string::npos);
  s.definitions = {{"a", "x + q"}};
  CHECK(parse_error("a", s).find("definitions.a: unknown symbol 'q'") != std::string::npos);
  // A definition may not take a name that already means something.
  s.definitions = {{"u", "x"}};
  CHECK(parse_error("u", s).find("'u' is both a field and a definition") != std::string::npos);
}
