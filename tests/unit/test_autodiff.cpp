#include <doctest/doctest.h>

#include "tessera/autodiff/reverse.hpp"
#include "tessera/core/torch_pch.hpp"

using namespace tessera::autodiff;

namespace {

// f0 = sin(x) * exp(y), f1 = x^3 * y^2: closed-form partials to any order.
torch::Tensor test_function(const torch::Tensor& p) {
  auto x = p.select(1, 0), y = p.select(1, 1);
  return torch::stack({torch::sin(x) * torch::exp(y), x.pow(3) * y.pow(2)}, 1);
}

double max_error(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

}  // namespace

TEST_CASE("reverse engine matches closed-form partials up to order 4 in float64") {
  auto p = torch::rand({64, 2}, torch::kFloat64) * 2 - 1;
  auto x = p.select(1, 0), y = p.select(1, 1);
  std::set<Partial> requested{{0, {}},     {0, {0}},          {0, {1}},          {0, {0, 0}},
                              {0, {0, 1}}, {0, {0, 0, 0}},    {0, {0, 0, 1, 1}}, {1, {0, 0}},
                              {1, {0, 1}}, {1, {0, 0, 0, 1}}, {1, {1, 1, 1}}};
  auto d = reverse_partials(test_function, p, requested, /*create_graph=*/false);
  const auto s = torch::sin(x), c = torch::cos(x), ey = torch::exp(y);
  CHECK(max_error(d.at({0, {}}), s * ey) < 1e-10);
  CHECK(max_error(d.at({0, {0}}), c * ey) < 1e-10);
  CHECK(max_error(d.at({0, {1}}), s * ey) < 1e-10);
  CHECK(max_error(d.at({0, {0, 0}}), -s * ey) < 1e-10);
  CHECK(max_error(d.at({0, {0, 1}}), c * ey) < 1e-10);
  CHECK(max_error(d.at({0, {0, 0, 0}}), -c * ey) < 1e-10);
  CHECK(max_error(d.at({0, {0, 0, 1, 1}}), -s * ey) < 1e-10);
  CHECK(max_error(d.at({1, {0, 0}}), 6 * x * y.pow(2)) < 1e-10);
  CHECK(max_error(d.at({1, {0, 1}}), 6 * x.pow(2) * y) < 1e-10);
  CHECK(max_error(d.at({1, {0, 0, 0, 1}}), 12 * y) < 1e-10);
  CHECK(max_error(d.at({1, {1, 1, 1}}), torch::zeros_like(x)) < 1e-10);
  CHECK(d.size() == requested.size());
}

TEST_CASE("reverse engine with create_graph lets a loss reach the network parameters") {
  auto w = torch::full({}, 2.0, torch::kFloat64).requires_grad_(true);
  auto network = [&](const torch::Tensor& p) {
    return torch::sin(w * p.select(1, 0)).unsqueeze(1);
  };
  auto p = torch::linspace(0, 1, 16, torch::kFloat64).unsqueeze(1);
  auto d = reverse_partials(network, p, {{0, {0, 0}}}, /*create_graph=*/true);
  // u_xx = -w^2 sin(w x); d/dw sum(u_xx) = sum(-2w sin(wx) - w^2 x cos(wx)).
  d.at({0, {0, 0}}).sum().backward();
  auto x = p.select(1, 0);
  const double expected =
      (-2 * 2.0 * torch::sin(2.0 * x) - 4.0 * x * torch::cos(2.0 * x)).sum().item<double>();
  CHECK(w.grad().item<double>() == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("reverse engine returns zeros for derivatives of a function that does not depend on x") {
  auto network = [](const torch::Tensor& p) { return torch::ones({p.size(0), 1}, p.options()); };
  auto p = torch::rand({8, 2}, torch::kFloat64);
  auto d = reverse_partials(network, p, {{0, {0}}, {0, {0, 1}}}, false);
  CHECK(d.at({0, {0, 1}}).abs().max().item<double>() == 0.0);
}
