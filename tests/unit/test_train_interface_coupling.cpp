// Interface terms against the neighbour's received values: added with their weights, the
// field jump counted on the lower side only, and nothing from the points where a neighbour sent
// non-finite values.
#include <doctest/doctest.h>

#include <limits>

#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/nn/mlp.hpp"
#include "tessera/train/interface_coupling.hpp"

using namespace tessera;

namespace {

constexpr int64_t kPoints = 64;

/// A subdomain with one continuity-only interface side (side 0: lower, 1: upper).
train::SubdomainModel model_with_side(int side) {
  train::SubdomainModel model;
  model.id = 4;
  nn::MlpOptions options;
  options.hidden = {4};
  options.lower = {0, 0};
  options.upper = {1, 1};
  model.network = nn::Mlp(options).ptr();
  physics::InterfaceWeights weights;
  weights.continuity = 1;
  auto points = torch::rand({kPoints, 2}, torch::kFloat64);
  points.select(1, 0).fill_(0.5);
  model.interfaces.push_back(std::make_unique<physics::InterfaceSide>(
      /*interface_id=*/0, side, /*axis=*/0, points, /*fields=*/1, std::vector<physics::Equation>{},
      std::vector<std::vector<expr::Expression>>{}, weights,
      /*spatial_dims=*/2));
  model.remote.push_back(torch::full({kPoints, 1}, 0.2, torch::kFloat64));
  return model;
}

const std::map<std::string, double> kWeights = {{physics::continuity_term, 3.0}};

}  // namespace

TEST_CASE("interface terms are added with their weight and the jump on the lower side") {
  const auto lower = model_with_side(0);
  const auto local = torch::zeros({kPoints, 1}, torch::kFloat64);
  train::LocalLoss loss;
  train::InterfaceCoupling::add_terms(loss, lower, 0, local, kWeights);
  // Continuity against the average: |0 - (0 + 0.2) / 2|^2 = 0.01 at every point.
  REQUIRE(loss.terms.count(physics::continuity_term) == 1);
  CHECK(loss.terms.at(physics::continuity_term).item<double>() == doctest::Approx(0.01));
  CHECK(loss.total.item<double>() == doctest::Approx(3.0 * 0.01));
  CHECK(loss.counts.at(physics::continuity_term).at(4) == kPoints);
  CHECK(loss.jump_sums.at(4).item<double>() == doctest::Approx(kPoints * 0.04));
  CHECK(loss.jump_counts.at(4) == kPoints);

  // The upper side adds its terms but leaves the jump to the lower side.
  const auto upper = model_with_side(1);
  train::LocalLoss other;
  train::InterfaceCoupling::add_terms(other, upper, 0, local, kWeights);
  CHECK(other.terms.count(physics::continuity_term) == 1);
  CHECK(other.jump_sums.empty());
}

TEST_CASE("a neighbour's non-finite values add nothing at their points, without a read") {
  auto model = model_with_side(0);
  model.remote[0][3][0] = std::numeric_limits<double>::quiet_NaN();
  train::LocalLoss loss;
  const auto local = torch::zeros({kPoints, 1}, torch::kFloat64).requires_grad_(true);
  const auto reads = core::host_reads();
  train::InterfaceCoupling::add_terms(loss, model, 0, local, kWeights);
  CHECK(core::host_reads() == reads);
  // 0.01 at each of the other 63 points, weight 3, the mean over the side's 64.
  CHECK(loss.total.item<double>() == doctest::Approx(0.03 * 63.0 / kPoints));
  CHECK(loss.jump_sums.at(4).item<double>() == doctest::Approx(63 * 0.04));
  loss.total.backward();
  CHECK(core::all_finite(local.grad()));
  CHECK(local.grad()[3][0].item<double>() == 0.0);
  CHECK(local.grad()[4][0].item<double>() != 0.0);
}

TEST_CASE("without interfaces the coupling is inactive and exchanges nothing") {
  train::InterfaceCoupling coupling(nullptr);
  CHECK_FALSE(coupling.active());
  auto model = model_with_side(0);
  std::vector<train::SubdomainModel*> owned{&model};
  const auto locals = coupling.start(owned, false);
  REQUIRE(locals.size() == 1);
  CHECK(locals[0].empty());
  coupling.finish(owned);
  CHECK(model.remote.size() == 1);  // untouched
  CHECK(coupling.exchange_seconds() == 0.0);
}

TEST_CASE("sides together give each side's terms, counts and jumps as one by one") {
  auto lower = model_with_side(0), upper = model_with_side(1);
  upper.id = 5;
  upper.remote[0] = torch::rand({kPoints, 1}, torch::kFloat64);
  const auto local_lower = torch::rand({kPoints, 1}, torch::kFloat64).requires_grad_();
  const auto local_upper = torch::rand({kPoints, 1}, torch::kFloat64).requires_grad_();
  train::LocalLoss one_by_one;
  train::InterfaceCoupling::add_terms(one_by_one, lower, 0, local_lower, kWeights);
  train::InterfaceCoupling::add_terms(one_by_one, upper, 0, local_upper, kWeights);
  train::LocalLoss together;
  train::InterfaceCoupling::add_terms_together(
      together, {{&lower, 0, local_lower}, {&upper, 0, local_upper}}, kWeights, /*probes=*/true);

  CHECK(together.total.item<double>() == doctest::Approx(one_by_one.total.item<double>()));
  const auto name = physics::continuity_term;
  CHECK(together.terms.at(name).item<double>() ==
        doctest::Approx(one_by_one.terms.at(name).item<double>()));
  for (int id : {4, 5}) {
    CHECK(together.sums.at(name).at(id).item<double>() ==
          doctest::Approx(one_by_one.sums.at(name).at(id).item<double>()));
    CHECK(together.counts.at(name).at(id) == one_by_one.counts.at(name).at(id));
  }
  CHECK(together.jump_sums.size() == 1);
  CHECK(together.jump_sums.at(4).item<double>() ==
        doctest::Approx(one_by_one.jump_sums.at(4).item<double>()));
  CHECK(together.jump_counts.at(4) == one_by_one.jump_counts.at(4));
  CHECK(together.probes.at(name).size() == 2);

  const auto [lower_grad, upper_grad] = [&] {
    auto g = torch::autograd::grad({together.total}, {local_lower, local_upper});
    return std::make_pair(g[0], g[1]);
  }();
  const auto expected = torch::autograd::grad({one_by_one.total}, {local_lower, local_upper});
  CHECK(torch::allclose(lower_grad, expected[0], 1e-12, 1e-14));
  CHECK(torch::allclose(upper_grad, expected[1], 1e-12, 1e-14));
}

TEST_CASE("a side's terms together are the same bits alone or beside other subdomains'") {
  auto lower = model_with_side(0), upper = model_with_side(1);
  upper.id = 5;
  upper.remote[0] = torch::rand({kPoints, 1}, torch::kFloat64);
  const auto run = [&](bool beside) {
    const auto local =
        torch::linspace(0, 1, kPoints, torch::kFloat64).unsqueeze(1).requires_grad_();
    std::vector<train::InterfaceCoupling::SideValues> sides;
    if (beside) sides.push_back({&upper, 0, torch::rand({kPoints, 1}, torch::kFloat64)});
    sides.push_back({&lower, 0, local});
    train::LocalLoss loss;
    train::InterfaceCoupling::add_terms_together(loss, sides, kWeights, false);
    const auto gradient = torch::autograd::grad({loss.total}, {local})[0];
    return std::make_tuple(gradient, loss.sums.at(physics::continuity_term).at(4),
                           loss.jump_sums.at(4));
  };
  const auto [alone_gradient, alone_sum, alone_jump] = run(false);
  const auto [beside_gradient, beside_sum, beside_jump] = run(true);
  CHECK(torch::equal(alone_gradient, beside_gradient));
  CHECK(torch::equal(alone_sum, beside_sum));
  CHECK(torch::equal(alone_jump, beside_jump));
}

TEST_CASE("together, a neighbour's non-finite values drop those points' terms only") {
  // Decided on the device, without a read: the point whose received value is NaN adds nothing
  // (nor NaN to the gradient); the side's other points and the other side count in full.
  auto lower = model_with_side(0), upper = model_with_side(1);
  upper.id = 5;
  lower.remote[0][3][0] = std::numeric_limits<double>::quiet_NaN();
  train::LocalLoss loss;
  const auto below = torch::zeros({kPoints, 1}, torch::kFloat64).requires_grad_(true);
  const auto above = torch::zeros({kPoints, 1}, torch::kFloat64).requires_grad_(true);
  const auto reads = core::host_reads();
  train::InterfaceCoupling::add_terms_together(loss, {{&lower, 0, below}, {&upper, 0, above}},
                                               kWeights, false);
  CHECK(core::host_reads() == reads);
  // |0 - (0 + 0.2) / 2|^2 = 0.01 at every point, weight 3: the upper side's mean, and the lower
  // side's mean with 63 of its 64 points.
  CHECK(loss.total.item<double>() == doctest::Approx(0.03 * (1 + 63.0 / kPoints)));
  CHECK(loss.sums.at(physics::continuity_term).at(4).item<double>() == doctest::Approx(0.63));
  CHECK(loss.sums.at(physics::continuity_term).at(5).item<double>() == doctest::Approx(0.64));
  CHECK(loss.jump_sums.at(4).item<double>() == doctest::Approx(63 * 0.04));
  loss.total.backward();
  CHECK(core::all_finite(below.grad()));
  CHECK(below.grad()[3][0].item<double>() == 0.0);
  CHECK(below.grad()[4][0].item<double>() != 0.0);
}
