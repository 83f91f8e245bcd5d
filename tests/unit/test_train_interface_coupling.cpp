// Interface terms against the neighbour's received values: added with their weights, the
// field jump counted on the lower side only, and nothing from a neighbour that sent
// non-finite values.
#include <doctest/doctest.h>

#include <limits>

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

TEST_CASE("a neighbour's non-finite values add no interface terms") {
  auto model = model_with_side(0);
  model.remote[0][3][0] = std::numeric_limits<double>::quiet_NaN();
  train::LocalLoss loss;
  train::InterfaceCoupling::add_terms(loss, model, 0, torch::zeros({kPoints, 1}, torch::kFloat64),
                                      kWeights);
  CHECK(loss.terms.empty());
  CHECK_FALSE(loss.total.defined());
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
