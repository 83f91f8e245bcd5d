// Gradient-norm balancing: the weights move toward sum_j |grad L_j| / |grad L_i| with the
// moving-average factor, and a term without gradient keeps its weight.
#include <doctest/doctest.h>

#include <cmath>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/loss_balancer.hpp"

using namespace tessera;

namespace {

train::AdaptiveWeighting settings(double alpha) {
  train::AdaptiveWeighting s;
  s.enabled = true;
  s.every = 10;
  s.alpha = alpha;
  return s;
}

}  // namespace

TEST_CASE("squared gradient norms are taken per term over all parameters") {
  auto a = torch::tensor({1.0, 2.0}, torch::kFloat64).set_requires_grad(true);
  auto b = torch::tensor({3.0}, torch::kFloat64).set_requires_grad(true);
  const std::map<std::string, torch::Tensor> terms = {
      {"pde", a.pow(2).sum()},          // gradient (2, 4) and 0: |g|^2 = 20
      {"walls", (3 * b).sum() + a[0]},  // gradient (1, 0) and 3: |g|^2 = 10
  };
  train::LossBalancer balancer(settings(0.9), {"pde", "walls", "absent"});
  const auto squares = balancer.squared_gradient_norms(terms, {a, b});
  REQUIRE(squares.size() == 3);
  CHECK(squares[0] == doctest::Approx(20.0));
  CHECK(squares[1] == doctest::Approx(10.0));
  CHECK(squares[2] == 0.0);
}

TEST_CASE("update moves each weight toward the balancing weight; zero norms keep theirs") {
  train::LossBalancer balancer(settings(0.5), {"pde", "walls", "silent"});
  std::map<std::string, double> weights = {{"pde", 1.0}, {"walls", 1.0}, {"silent", 4.0}};
  balancer.update({1.0, 9.0, 0.0}, weights);  // norms 1 and 3: total 4
  CHECK(weights["pde"] == doctest::Approx(0.5 * 1 + 0.5 * 4.0));
  CHECK(weights["walls"] == doctest::Approx(0.5 * 1 + 0.5 * 4.0 / 3.0));
  CHECK(weights["silent"] == 4.0);
}

TEST_CASE("balancing is due every `every` iterations only when enabled") {
  train::LossBalancer on(settings(0.9), {"pde"});
  CHECK(on.due(0));
  CHECK_FALSE(on.due(5));
  CHECK(on.due(20));
  train::AdaptiveWeighting off;
  CHECK_FALSE(train::LossBalancer(off, {"pde"}).due(0));
}
