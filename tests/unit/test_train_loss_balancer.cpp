// Loss balancing: the weights move toward sum_j sqrt(q_j) / sqrt(q_i), q_i the mean over the
// term's points of |grad r_i(x)|^2, estimated from the term's probe; a term with q = 0 keeps its
// weight, and a term that is already satisfied does not get a runaway weight.
#include <doctest/doctest.h>

#include <cmath>

#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/loss_group.hpp"
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

TEST_CASE("term gradients are flattened per term over all parameters") {
  auto a = torch::tensor({1.0, 2.0}, torch::kFloat64).set_requires_grad(true);
  auto b = torch::tensor({3.0}, torch::kFloat32).set_requires_grad(true);
  // One row at index 0 of a one-point term: the probe is the residual itself (sign +1).
  const auto probe = [](const torch::Tensor& r) {
    return std::vector<physics::Probe>{{r.reshape({1}), 0, 1}};
  };
  const std::map<std::string, std::vector<physics::Probe>> terms = {
      {"pde", probe(a.pow(2).sum())},                                  // gradient (2, 4 | 0)
      {"walls", probe((3 * b).sum().to(torch::kFloat64) + a[0] * 2)},  // gradient (2, 0 | 3)
  };
  train::LossBalancer balancer(settings(0.9), {"pde", "walls", "absent"});
  const auto gradients = balancer.term_gradients(terms, {a, b});
  REQUIRE(gradients.size() == 3);
  CHECK(torch::equal(gradients[0], torch::tensor({2.0, 4.0, 0.0}, torch::kFloat64)));
  CHECK(torch::equal(gradients[1], torch::tensor({2.0, 0.0, 3.0}, torch::kFloat64)));
  CHECK(torch::equal(gradients[2], torch::zeros({3}, torch::kFloat64)));
}

TEST_CASE("update moves each weight toward the balancing weight; silent terms keep theirs") {
  train::LossBalancer balancer(settings(0.5), {"pde", "walls", "silent"});
  std::map<std::string, double> weights = {{"pde", 1.0}, {"walls", 1.0}, {"silent", 4.0}};
  balancer.update({1.0, 9.0, 0.0}, weights);  // norms 1 and 3: total 4
  CHECK(weights["pde"] == doctest::Approx(0.5 * 1 + 0.5 * 4.0));
  CHECK(weights["walls"] == doctest::Approx(0.5 * 1 + 0.5 * 4.0 / 3.0));
  CHECK(weights["silent"] == 4.0);
}

TEST_CASE("a probe's squared gradient norm estimates the mean of |grad r(x)|^2") {
  // r(x) = theta . phi(x) at 4000 points: grad r(x) = phi(x), so the target is mean |phi|^2.
  // The estimate's relative spread is about sqrt(2 / parameters): 7 % for 400 of them.
  torch::manual_seed(3);
  const auto phi = torch::randn({4000, 400}, torch::kFloat64);
  auto theta = torch::zeros({400}, torch::kFloat64).set_requires_grad(true);
  const auto r = phi.matmul(theta);
  const auto term = physics::Replica{}.term("pde", r.pow(2).mean(), r, 4000, 4000);
  train::LossBalancer balancer(settings(0.9), {"pde"});
  const auto q = balancer.term_gradients({{"pde", {term.probe}}}, {theta})[0].pow(2).sum();
  const double target = phi.pow(2).sum(1).mean().item<double>();
  CHECK(q.item<double>() == doctest::Approx(target).epsilon(0.2));
  // Two replicas' probes add up to the single rank's.
  const auto low =
      physics::Replica{0, 2}.term("pde", r.pow(2).mean(), r.slice(0, 0, 2000), 2000, 4000);
  const auto high =
      physics::Replica{1, 2}.term("pde", r.pow(2).mean(), r.slice(0, 2000), 2000, 4000);
  const auto joined = balancer.term_gradients({{"pde", {low.probe, high.probe}}}, {theta})[0];
  const auto single = balancer.term_gradients({{"pde", {term.probe}}}, {theta})[0];
  CHECK(torch::allclose(joined, single, 1e-12, 1e-12));
}

TEST_CASE("a satisfied term does not get a runaway weight") {
  // Two residuals of one parameter vector: r1 = x . a - 1 (the unsolved term that drives the
  // solution) and r2 = x . b (already satisfied to 1e-6, like a pressure gauge at one point).
  // |grad L2| = 2 |r2| |b| vanishes with r2, and the rule sum_j |grad L_j| / |grad L_i| would
  // give term 2 a weight near 1e6; its stiffness |b| is that of term 1, so the weights must be
  // alike.
  auto x = torch::tensor({0.0, 1e-6}, torch::kFloat64).set_requires_grad(true);
  const auto r1 = (x * torch::tensor({1.0, 0.0}, torch::kFloat64)).sum().reshape({1}) - 1;
  const auto r2 = (x * torch::tensor({0.0, 1.0}, torch::kFloat64)).sum().reshape({1});
  const auto drive = physics::Replica{}.term("drive", r1.pow(2).mean(), r1, 1, 1);
  const auto gauge = physics::Replica{}.term("gauge", r2.pow(2).mean(), r2, 1, 1);
  train::LossBalancer balancer(settings(0.0), {"drive", "gauge"});
  std::map<std::string, double> weights = {{"drive", 1.0}, {"gauge", 1.0}};
  std::vector<double> q;
  for (const auto& g :
       balancer.term_gradients({{"drive", {drive.probe}}, {"gauge", {gauge.probe}}}, {x}))
    q.push_back(g.pow(2).sum().item<double>());
  balancer.update(q, weights);
  CHECK(weights["drive"] == doctest::Approx(2.0));
  CHECK(weights["gauge"] == doctest::Approx(2.0));
}

TEST_CASE("balancing is due every `every` iterations only when enabled") {
  train::LossBalancer on(settings(0.9), {"pde"});
  CHECK(on.due(0));
  CHECK_FALSE(on.due(5));
  CHECK(on.due(20));
  train::AdaptiveWeighting off;
  CHECK_FALSE(train::LossBalancer(off, {"pde"}).due(0));
}
