// Expressions written as TorchScript (for exported models) compute what evaluate() computes.
#include <doctest/doctest.h>
#include <torch/script.h>

#include "tessera/core/error.hpp"
#include "tessera/expr/environment.hpp"
#include "tessera/expr/expression.hpp"

using namespace tessera;
using namespace tessera::expr;

TEST_CASE("an expression's TorchScript equals its evaluation, operator by operator") {
  SymbolTable symbols;
  symbols.spatial = {"x", "y"};
  symbols.fields = {"u"};
  symbols.constants = {{"k", 2.5}};
  symbols.definitions = {{"r", "sqrt(x^2 + y^2)"}};
  const auto x = torch::rand({40, 2}, torch::kFloat64) * 2 - 1;
  Environment env;
  env.coordinates = x;
  for (const std::string text :
       {"1 + k*x - y/3", "-x^3 + pow(y, 2)", "if(x < 0, sin(pi*x), exp(-y))",
        "(x <= y) + (x > 0) - (y >= 0.5) + (x == x) + (x != y)", "min(x, y, 0.2) * max(x, -y)",
        "atan2(y, x) + abs(x)*sign(y) + tanh(r) + log(1 + r) + cosh(x) - sinh(y)",
        "tan(x/2) + asin(x/2) + acos(y/2) + atan(x)", "7"}) {
    CAPTURE(text);
    const auto expression = Expression::parse(text, symbols, "test");
    torch::jit::Module module("M");
    module.define("def f(self, x):\n    return " + expression.torchscript("x") + "\n");
    const auto scripted = module.get_method("f")({x}).toTensor();
    const auto expected = expression.evaluate(env).expand({x.size(0)});
    CHECK(torch::allclose(scripted, expected, 1e-14, 1e-14));
  }
}

TEST_CASE("an expression that reads a field cannot be written as TorchScript") {
  SymbolTable symbols;
  symbols.spatial = {"x"};
  symbols.fields = {"u"};
  CHECK_THROWS_WITH_AS(Expression::parse("u*x", symbols, "conditions[0].value").torchscript("x"),
                       doctest::Contains("conditions[0].value: 'u' cannot be exported"), Error);
}
