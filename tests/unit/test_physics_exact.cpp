// Exactly enforced conditions: u = g + phi N and all its derivatives (Leibniz's rule on the
// network's partials) equal autograd's derivatives of the composed function, and u = g where
// the distance vanishes.
#include <doctest/doctest.h>

#include <cmath>

#include "tessera/autodiff/reverse.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/expression.hpp"
#include "tessera/physics/exact_conditions.hpp"

using namespace tessera;
using autodiff::Partial;

namespace {

expr::Expression parse(const std::string& text) {
  expr::SymbolTable symbols;
  symbols.spatial = {"x", "y"};
  symbols.fields = {"u"};
  return expr::Expression::parse(text, symbols, "conditions[0].value");
}

torch::Tensor network(const torch::Tensor& p) {
  const auto x = p.select(1, 0), y = p.select(1, 1);
  return (torch::sin(3 * x) * y * y + x * y).unsqueeze(1);
}

/// Two conditions on u: u = 1 + y on x = 0 (distance x) and u = x^2 on y = 1 (distance 1 - y).
physics::ExactConditions two_conditions() {
  physics::ExactField field;
  // x, and -(y - 1) = 1 - y, as linear factors sign (x[input] - origin) / length.
  field.pieces.push_back({{{0, 0.0, 1.0, 1.0}}, parse("1 + y")});
  field.pieces.push_back({{{1, 1.0, -1.0, 1.0}}, parse("x^2")});
  return physics::ExactConditions({field});
}

}  // namespace

TEST_CASE("exact conditions: derivatives by Leibniz's rule equal autograd's of u = g + phi N") {
  const auto exact = two_conditions();
  torch::manual_seed(5);
  const auto x = torch::rand({64, 2}, torch::kFloat64) * 0.8 + 0.1;
  const std::set<Partial> requested{{0, {}, false},       {0, {0}, false},    {0, {1}, false},
                                    {0, {0, 0}, false},   {0, {0, 1}, false}, {0, {0, 1}, true},
                                    {0, {0, 0, 1}, false}};
  const auto from_network = autodiff::reverse_partials(
      network, x, exact.network_partials(requested), /*create_graph=*/false);
  const auto leibniz = exact.apply(x, requested, from_network);
  // The composed function written out, differentiated by autograd.
  const autodiff::NetworkFunction composed = [](const torch::Tensor& p) {
    const auto X = p.select(1, 0), Y = p.select(1, 1);
    const auto d1 = X, d2 = 1 - Y;
    const auto w1 = d2 + 1e-12, w2 = d1 + 1e-12;
    const auto g = (w1 * (1 + Y) + w2 * X * X) / (w1 + w2);
    return (g + d1 * d2 * network(p).squeeze(1)).unsqueeze(1);
  };
  const auto direct = autodiff::reverse_partials(composed, x, requested, /*create_graph=*/false);
  for (const auto& p : requested) {
    CAPTURE(p.wrt.size());
    CAPTURE(p.laplacian);
    CHECK(torch::allclose(leibniz.at(p), direct.at(p), 1e-10, 1e-10));
  }
}

TEST_CASE("exact conditions hold where their distance vanishes") {
  const auto exact = two_conditions();
  const auto y = torch::linspace(0, 0.9, 10, torch::kFloat64);
  const auto on_left = torch::stack({torch::zeros_like(y), y}, 1);  // x = 0
  const std::set<Partial> value{{0, {}, false}};
  const auto u = exact.apply(
      on_left, value,
      autodiff::reverse_partials(network, on_left, exact.network_partials(value), false));
  CHECK(torch::allclose(u.at({0, {}, false}), 1 + y, 0, 1e-10));
}
