// Tabulated data in expressions: interpolation, derivatives through the chain rule, the
// errors of nearest-neighbour data and of points outside the grid.
#include <doctest/doctest.h>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/expression.hpp"
#include "tessera/expr/table.hpp"

using namespace tessera;

namespace {

/// f(x, y) = 1 + 2x + 3y + 4xy sampled on a non-uniform grid: bilinear interpolation is exact.
std::shared_ptr<const expr::Table> bilinear(expr::Interpolation interpolation) {
  const std::vector<double> xs = {0.0, 0.1, 0.35, 0.6, 1.0};
  const std::vector<double> ys = {-1.0, 0.0, 0.5, 2.0};
  std::vector<double> values;
  for (const double y : ys)
    for (const double x : xs) values.push_back(1 + 2 * x + 3 * y + 4 * x * y);
  return std::make_shared<const expr::Table>("kappa", std::vector<std::string>{"x", "y"},
                                             std::vector<std::vector<double>>{xs, ys}, values,
                                             interpolation);
}

expr::SymbolTable symbols(expr::Interpolation interpolation) {
  expr::SymbolTable table;
  table.spatial = {"x", "y"};
  table.fields = {"u"};
  table.tables["kappa"] = bilinear(interpolation);
  return table;
}

torch::Tensor points() {
  torch::manual_seed(5);
  auto x = torch::rand({64, 2}, torch::kFloat64);
  x.select(1, 1).mul_(3.0).sub_(1.0);  // y in [-1, 2]
  return x;
}

torch::Tensor evaluate(const std::string& text, expr::Interpolation interpolation,
                       const torch::Tensor& x,
                       std::map<expr::DerivativeKey, torch::Tensor> d = {}) {
  return expr::Expression::parse(text, symbols(interpolation), "k").evaluate({x, d, {}, {}});
}

}  // namespace

TEST_CASE("linear data reproduce a bilinear function and its derivatives exactly") {
  const auto x = points();
  const auto X = x.select(1, 0), Y = x.select(1, 1);
  const auto linear = expr::Interpolation::linear;
  CHECK(
      torch::allclose(evaluate("kappa(x, y)", linear, x), 1 + 2 * X + 3 * Y + 4 * X * Y, 0, 1e-13));
  CHECK(torch::allclose(evaluate("d(kappa(x, y), x)", linear, x), 2 + 4 * Y, 0, 1e-12));
  CHECK(torch::allclose(evaluate("d(kappa(x, y), y)", linear, x), 3 + 4 * X, 0, 1e-12));
  CHECK(torch::allclose(evaluate("d(kappa(x, y), x, y)", linear, x), torch::full_like(X, 4.0), 0,
                        1e-12));
  // arguments are expressions: the chain rule reaches them
  const auto half = X / 2;
  CHECK(torch::allclose(evaluate("d(kappa(x/2, y), x)", linear, x), (2 + 4 * Y) / 2, 0, 1e-12));
  CHECK(torch::allclose(evaluate("kappa(x/2, 0.5)", linear, x), 1 + 2 * half + 1.5 + 2 * half, 0,
                        1e-13));
  // the grid's own ends are inside
  const auto corners = torch::tensor({{0.0, -1.0}, {1.0, 2.0}}, torch::kFloat64);
  CHECK(evaluate("kappa(x, y)", linear, corners)[1].item<double>() == doctest::Approx(17.0));
}

TEST_CASE("autograd through the interpolant agrees with the symbolic derivative") {
  // the reverse engine differentiates expressions of coordinates by autograd
  const auto x = points().requires_grad_(true);
  const auto value = evaluate("kappa(x, y)*sin(x)", expr::Interpolation::linear, x);
  const auto grad = torch::autograd::grad({value.sum()}, {x})[0];
  const auto symbolic =
      evaluate("d(kappa(x, y)*sin(x), x)", expr::Interpolation::linear, x.detach());
  CHECK(torch::allclose(grad.select(1, 0), symbolic, 0, 1e-12));
}

TEST_CASE("products with fields differentiate by the product rule") {
  const auto x = points();
  const auto u = torch::rand({64}, torch::kFloat64), u_x = torch::rand({64}, torch::kFloat64);
  std::map<expr::DerivativeKey, torch::Tensor> d = {{{0, {}}, u}, {{0, {0}}, u_x}};
  const auto Y = x.select(1, 1), X = x.select(1, 0);
  CHECK(torch::allclose(evaluate("d(kappa(x, y)*u, x)", expr::Interpolation::linear, x, d),
                        (2 + 4 * Y) * u + (1 + 2 * X + 3 * Y + 4 * X * Y) * u_x, 0, 1e-12));
}

TEST_CASE("nearest data take the closest grid value and refuse derivatives") {
  const auto x = torch::tensor({{0.04, 0.2}, {0.06, 0.3}, {0.9, 1.9}}, torch::kFloat64);
  const auto value = evaluate("kappa(x, y)", expr::Interpolation::nearest, x);
  CHECK(value[0].item<double>() == doctest::Approx(1 + 0 + 0 + 0));        // (0, 0)
  CHECK(value[1].item<double>() == doctest::Approx(1 + 0.2 + 1.5 + 0.2));  // (0.1, 0.5)
  CHECK(value[2].item<double>() == doctest::Approx(1 + 2 + 6 + 8));        // (1, 2)
  CHECK_THROWS_WITH_AS(
      expr::Expression::parse("d(kappa(x, y), x)", symbols(expr::Interpolation::nearest), "k"),
      doctest::Contains("cannot differentiate data 'kappa'"), Error);
  // a derivative along a coordinate the arguments do not read is zero, and allowed
  CHECK_NOTHROW(
      expr::Expression::parse("d(kappa(x, 0.5), y)", symbols(expr::Interpolation::nearest), "k"));
}

TEST_CASE("misuse of data is reported with the key") {
  const auto linear = symbols(expr::Interpolation::linear);
  CHECK_THROWS_WITH_AS(expr::Expression::parse("d(kappa(x, y), x, x)", linear, "k"),
                       doctest::Contains("cannot differentiate data 'kappa' twice along x"), Error);
  CHECK_THROWS_WITH_AS(expr::Expression::parse("kappa + 1", linear, "k"),
                       doctest::Contains("data 'kappa' is a function at column 1 (call it with "
                                         "its coordinates: kappa(x, y))"),
                       Error);
  CHECK_THROWS_WITH_AS(expr::Expression::parse("kappa(x)", linear, "k"),
                       doctest::Contains("wrong number of arguments to 'kappa'"), Error);
  // kappa(x, y) itself is covered by the load-time check against the domain; other arguments
  // are checked where they are evaluated
  const auto outside = torch::tensor({{0.25, 0.0}, {0.75, 0.0}}, torch::kFloat64);
  CHECK_THROWS_WITH_AS(evaluate("kappa(2*x, y)", expr::Interpolation::linear, outside),
                       doctest::Contains("kappa(...) is asked at x = 1.5, outside its grid [0, 1]"),
                       Error);
  CHECK_THROWS_WITH_AS(
      expr::Table("bad", {"x"}, {{0.0, 0.0, 1.0}}, {1, 2, 3}, expr::Interpolation::linear),
      doctest::Contains("must increase strictly"), Error);
  CHECK_THROWS_WITH_AS(
      expr::Table("bad", {"x"}, {{0.0, 1.0}}, {1, 2, 3}, expr::Interpolation::linear),
      doctest::Contains("3 values for a grid of 2 points"), Error);
}

TEST_CASE("edges: float32 rounding at the ends, unchecked points, and if() of equal branches") {
  const auto table = bilinear(expr::Interpolation::linear);
  // one float32 rounding step past the grid's end is inside
  const auto x32 = torch::tensor({std::nextafter(1.0f, 2.0f)}, torch::kFloat32);
  const auto y32 = torch::tensor({2.0f}, torch::kFloat32);
  CHECK(table->evaluate({x32, y32}, {}, "k")[0].item<double>() == doctest::Approx(17.0));
  // without the check (the points are the domain's), a point beyond takes the edge value
  const auto beyond = torch::tensor({1.5}, torch::kFloat64), y = torch::tensor({2.0});
  CHECK(table->evaluate({beyond, y.to(torch::kFloat64)}, {}, "k", false)[0].item<double>() ==
        doctest::Approx(17.0));
  // min(x, 1) differentiates to if(x <= 1, 1, 0) along x and to 0 along y: no second
  // derivative along x is asked of the data
  CHECK_NOTHROW(expr::Expression::parse("d(kappa(min(x, 1), y), x, y)",
                                        symbols(expr::Interpolation::linear), "k"));
}
