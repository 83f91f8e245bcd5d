// Several subdomains' fields evaluated together (one grouped network call per stream layout)
// against each evaluator on its own, and a subdomain's bits alone against beside others.
#include <doctest/doctest.h>

#include <optional>

#include "tessera/autodiff/taylor.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/field_evaluator.hpp"

using namespace tessera;

namespace {

nn::Mlp network(int64_t subdomain, torch::Dtype dtype) {
  nn::MlpOptions options;
  options.hidden = {9, 7};
  options.outputs = 2;
  options.lower = {0.0, 0.0};
  options.upper = {1.0 + static_cast<double>(subdomain), 1.0};
  options.subdomain = subdomain;
  nn::Mlp mlp(options);
  mlp->to(dtype);
  torch::NoGradGuard no_grad;
  for (auto& p : mlp->parameters()) p.add_(0.3 * torch::randn_like(p));
  return mlp;
}

physics::FieldEvaluator evaluator(nn::Mlp mlp, bool groupable) {
  physics::FieldEvaluator fields(
      [mlp](const torch::Tensor& x) mutable { return mlp->forward(x); },
      [mlp](const autodiff::NetworkFunction&, const torch::Tensor& x,
            const std::set<autodiff::Partial>& requested, bool create_graph) {
        return autodiff::taylor_partials(*mlp, x, requested, create_graph);
      });
  if (groupable) fields.set_groupable(mlp);
  return fields;
}

const std::set<expr::DerivativeKey> kLaplacian = {
    {0, {}}, {1, {}}, {0, {0}}, {0, {0, 1}, true}, {1, {1}}};
const std::set<expr::DerivativeKey> kValues = {{0, {}}, {1, {}}};
const std::set<expr::DerivativeKey> kSlopes = {{0, {0}}, {1, {1}}};

// Sum of every derivative of every environment, to backpropagate.
torch::Tensor total(const std::vector<expr::Environment>& environments) {
  torch::Tensor sum = torch::zeros({}, torch::kFloat64);
  for (const auto& env : environments)
    for (const auto& [key, value] : env.derivatives) sum = sum + value.pow(2).sum();
  return sum;
}

std::vector<torch::Tensor> gradients(const nn::Mlp& mlp) {
  std::vector<torch::Tensor> result;
  for (const auto& p : mlp->parameters()) result.push_back(p.grad().clone());
  return result;
}

void zero_gradients(const std::vector<nn::Mlp>& networks) {
  for (const auto& mlp : networks)
    for (auto& p : mlp->parameters()) p.mutable_grad() = torch::Tensor();
}

// Two small networks (subdomains 0 and 1) built from `options` as `adjust` leaves it.
template <typename Adjust>
std::vector<nn::Mlp> two_networks(torch::Dtype dtype, const Adjust& adjust) {
  std::vector<nn::Mlp> networks;
  for (int64_t s = 0; s < 2; ++s) {
    nn::MlpOptions options;
    options.hidden = {7, 6};
    options.outputs = 2;
    options.lower = {0.0, 0.0};
    options.upper = {2.0, 1.0};
    options.subdomain = s;
    adjust(options);
    networks.emplace_back(options);
    networks.back()->to(dtype);
  }
  return networks;
}

}  // namespace

TEST_CASE("fields evaluated together equal each evaluator on its own, gradients included") {
  torch::manual_seed(3);
  const std::vector<nn::Mlp> networks{network(0, torch::kFloat64), network(1, torch::kFloat64)};
  const auto a = evaluator(networks[0], true), b = evaluator(networks[1], true);
  const auto xa = torch::rand({37, 2}, torch::kFloat64),
             xb = torch::rand({301, 2}, torch::kFloat64);
  const auto ya = torch::rand({5, 2}, torch::kFloat64);
  // Two layouts (values only; up to the Laplacian), subdomain a twice in the second.
  const std::vector<physics::FieldRequest> requests{{&a, xa, kLaplacian, {}},
                                                    {&b, xb, kLaplacian, {}},
                                                    {&a, ya, kLaplacian, {}},
                                                    {&b, ya, kValues, {}}};
  const auto together = physics::evaluate_together(requests, true);
  REQUIRE(together.size() == requests.size());
  // Grouped: the partials come out of the grouped call's one split node.
  for (const auto& env : together)
    CHECK(env.derivatives.at({0, {}}).grad_fn()->name().find("SplitPartials") != std::string::npos);
  total(together).backward();
  const auto grouped_a = gradients(networks[0]), grouped_b = gradients(networks[1]);
  zero_gradients(networks);

  std::vector<expr::Environment> alone;
  for (const auto& r : requests) alone.push_back(r.fields->evaluate(r.x, r.keys, true));
  total(alone).backward();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    CHECK(together[i].derivatives.size() == requests[i].keys.size());
    for (const auto& [key, value] : alone[i].derivatives)
      CHECK(torch::allclose(together[i].derivatives.at(key), value, 1e-12, 1e-12));
  }
  const auto own_a = gradients(networks[0]), own_b = gradients(networks[1]);
  for (std::size_t k = 0; k < own_a.size(); ++k) {
    CHECK(torch::allclose(grouped_a[k], own_a[k], 1e-10, 1e-12));
    CHECK(torch::allclose(grouped_b[k], own_b[k], 1e-10, 1e-12));
  }
}

TEST_CASE("a subdomain evaluated together gives the same bits alone or beside others") {
  torch::manual_seed(5);
  const std::vector<nn::Mlp> networks{network(0, torch::kFloat32), network(1, torch::kFloat32)};
  const auto a = evaluator(networks[0], true), b = evaluator(networks[1], true);
  const auto xa = torch::rand({203, 2}), xb = torch::rand({77, 2}), ya = torch::rand({64, 2});
  const auto run = [&](const std::vector<physics::FieldRequest>& requests) {
    zero_gradients(networks);
    const auto envs = physics::evaluate_together(requests, true);
    torch::Tensor sum = torch::zeros({});
    for (std::size_t i = 0; i < requests.size(); ++i)
      if (requests[i].fields == &a)
        for (const auto& [key, value] : envs[i].derivatives) sum = sum + value.sum();
    sum.backward();
    return std::make_pair(envs, gradients(networks[0]));
  };
  const auto [alone, alone_gradients] = run({{&a, xa, kLaplacian, {}}, {&a, ya, kLaplacian, {}}});
  const auto [beside, beside_gradients] =
      run({{&b, xb, kLaplacian, {}}, {&a, xa, kLaplacian, {}}, {&a, ya, kLaplacian, {}}});
  for (const auto& [key, value] : alone[0].derivatives)
    CHECK(torch::equal(beside[1].derivatives.at(key), value));
  for (const auto& [key, value] : alone[1].derivatives)
    CHECK(torch::equal(beside[2].derivatives.at(key), value));
  for (std::size_t k = 0; k < alone_gradients.size(); ++k)
    CHECK(torch::equal(beside_gradients[k], alone_gradients[k]));
}

TEST_CASE("fields that cannot be grouped are evaluated on their own") {
  torch::manual_seed(7);
  const auto mlp = network(0, torch::kFloat64);
  const auto own = evaluator(mlp, /*groupable=*/false);
  const auto x = torch::rand({11, 2}, torch::kFloat64);
  const auto together = physics::evaluate_together({{&own, x, kLaplacian, {}}}, false);
  const auto alone = own.evaluate(x, kLaplacian, false);
  for (const auto& [key, value] : alone.derivatives)
    CHECK(torch::equal(together[0].derivatives.at(key), value));
  CHECK_FALSE(together[0].derivatives.at({0, {}}).requires_grad());
  const auto graph = physics::evaluate_together({{&own, x, kLaplacian, {}}}, true);
  CHECK(graph[0].derivatives.at({0, {}}).grad_fn()->name().find("SplitPartials") ==
        std::string::npos);
}

TEST_CASE("a network's gradient through several calls does not depend on who shares them") {
  // As on a rank holding several subdomains: network a appears in three calls (three stream
  // layouts) and b in only one of them; a's gradient must have the bits of a rank holding a
  // alone, through one backward pass or one per call (the trainer backpropagates the interior
  // before the interface terms). Three contributions, because the grouping of two sums cannot
  // change their rounding.
  torch::manual_seed(9);
  for (const bool factorised : {false, true})
    for (const bool one_backward : {false, true}) {
      CAPTURE(factorised);
      CAPTURE(one_backward);
      const auto networks = two_networks(torch::kFloat32, [&](nn::MlpOptions& options) {
        if (factorised) options.weight_factorization = std::make_pair(1.0, 0.1);
      });
      const auto a = evaluator(networks[0], true), b = evaluator(networks[1], true);
      const auto xa = torch::rand({41, 2}), xb = torch::rand({19, 2}), y = torch::rand({23, 2});
      const auto run = [&](bool beside) {
        zero_gradients(networks);
        std::vector<physics::FieldRequest> values{{&a, y, kValues, {}}};
        if (beside) values.push_back({&b, xb, kValues, {}});
        const auto first = physics::evaluate_together({{&a, xa, kLaplacian, {}}}, true);
        const auto second = physics::evaluate_together(values, true);
        const auto third = physics::evaluate_together({{&a, xa, kSlopes, {}}}, true);
        if (one_backward) {
          (total(first) + total(second) + total(third)).backward();
        } else {
          total(first).backward();
          total(second).backward();
          total(third).backward();
        }
        return gradients(networks[0]);
      };
      const auto alone = run(false), beside = run(true);
      REQUIRE(alone.size() == beside.size());
      for (std::size_t k = 0; k < alone.size(); ++k) CHECK(torch::equal(beside[k], alone[k]));
    }
}

TEST_CASE("networks with Fourier features or periodic inputs are grouped with the same results") {
  torch::manual_seed(11);
  for (const int kind : {0, 1}) {  // 0: Fourier features, 1: periodic input x
    CAPTURE(kind);
    const auto networks = two_networks(torch::kFloat64, [&](nn::MlpOptions& options) {
      if (kind == 0) options.fourier_count = 5;
      if (kind == 1) options.periodic_inputs = {0};
    });
    const auto a = evaluator(networks[0], true), b = evaluator(networks[1], true);
    const auto xa = torch::rand({29, 2}, torch::kFloat64),
               xb = torch::rand({13, 2}, torch::kFloat64);
    const std::vector<physics::FieldRequest> requests{{&a, xa, kLaplacian, {}},
                                                      {&b, xb, kLaplacian, {}}};
    zero_gradients(networks);
    const auto together = physics::evaluate_together(requests, true);
    for (const auto& env : together)
      CHECK(env.derivatives.at({0, {}}).grad_fn()->name().find("SplitPartials") !=
            std::string::npos);
    total(together).backward();
    const auto grouped = gradients(networks[0]);
    zero_gradients(networks);
    std::vector<expr::Environment> alone;
    for (const auto& r : requests) alone.push_back(r.fields->evaluate(r.x, r.keys, true));
    total(alone).backward();
    for (std::size_t i = 0; i < requests.size(); ++i)
      for (const auto& [key, value] : alone[i].derivatives)
        CHECK(torch::allclose(together[i].derivatives.at(key), value, 1e-12, 1e-12));
    const auto own = gradients(networks[0]);
    for (std::size_t k = 0; k < own.size(); ++k)
      CHECK(torch::allclose(grouped[k], own[k], 1e-10, 1e-12));
  }
}
