// The forward engine on the FBPINN's windowed sum (src/autodiff/fbpinn.cpp) and the grouped
// whole-network node it runs on a CPU, against the reverse engine and the one-network node.
#include <doctest/doctest.h>

#include "tessera/autodiff/reverse.hpp"
#include "tessera/autodiff/taylor.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/nn/fbpinn.hpp"

using namespace tessera;
using namespace tessera::autodiff;

namespace {

// Two inputs cut 3 x 2 with a coarse 1 x 1 level, two outputs, random output layers (they
// start at zero, which would leave the products untested).
nn::Fbpinn two_level_network(int64_t inputs) {
  nn::FbpinnOptions o;
  o.inputs = inputs;
  o.outputs = 2;
  o.hidden = {8, 7};
  o.overlap = 0.6;
  o.levels = {nn::WindowGrid{{{0.0, 1.0, 2.0, 3.0}, {-1.0, 0.0, 1.0}}},
              nn::WindowGrid{{{0.0, 3.0}, {-1.0, 1.0}}}};
  if (inputs == 3)
    for (auto& level : o.levels) level.edges.push_back({0.0, 0.5, 1.0});
  nn::Fbpinn network(o);
  network->to(torch::kFloat64);
  torch::NoGradGuard no_grad;
  for (auto& p : network->parameters()) p.add_(0.3 * torch::randn_like(p));
  return network;
}

torch::Tensor points_in_box(int64_t n, int64_t inputs) {
  auto x = torch::rand({n, inputs}, torch::kFloat64);
  x.select(1, 0).mul_(3.0);
  x.select(1, 1).mul_(2.0).sub_(1.0);
  return x;
}

std::set<Partial> every_partial(int inputs, int outputs) {
  std::set<Partial> requested;
  for (int o = 0; o < outputs; ++o) {
    requested.insert({o, {}});
    std::vector<int> all;
    for (int i = 0; i < inputs; ++i) {
      all.push_back(i);
      requested.insert({o, {i}});
      for (int j = i; j < inputs; ++j) requested.insert({o, {i, j}});
    }
    requested.insert({o, all, true});
  }
  return requested;
}

double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).abs().max().item<double>() / std::max(b.abs().max().item<double>(), 1e-300);
}

std::vector<torch::Tensor> gradients(torch::nn::Module& module, const Partials& partials) {
  module.zero_grad();
  auto loss = torch::zeros({}, torch::kFloat64);
  double weight = 1.0;
  for (const auto& entry : partials) {
    loss = loss + weight * (entry.second * entry.second).mean();
    weight *= 0.8;
  }
  loss.backward();
  std::vector<torch::Tensor> grads;
  for (const auto& p : module.parameters())
    grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return grads;
}

}  // namespace

TEST_CASE("forward engine on an FBPINN matches the reverse engine: partials and gradients") {
  torch::manual_seed(21);
  // Both paths: the grouped CPU node, and the stacked per-layer products other devices take.
  for (auto path : {TaylorPath::automatic, TaylorPath::per_layer})
    for (int64_t inputs : {2, 3}) {
      CAPTURE(inputs);
      CAPTURE(path == TaylorPath::per_layer);
      auto network = two_level_network(inputs);
      const auto x = points_in_box(300, inputs);
      const auto forward = [&](const torch::Tensor& y) { return network->forward(y); };
      for (const auto& requested :
           std::vector<std::set<Partial>>{every_partial(static_cast<int>(inputs), 2),
                                          {{1, {0}}, {0, {1}}},
                                          {{0, {0, 1}, true}}}) {
        const auto reverse = reverse_partials(forward, x, requested, true);
        const auto taylor = taylor_partials(*network, x, requested, true, path);
        REQUIRE(taylor.size() == requested.size());
        for (const auto& p : requested)
          CHECK(relative_difference(taylor.at(p), reverse.at(p)) < 1e-10);
        const auto reverse_grads = gradients(*network, reverse);
        const auto taylor_grads = gradients(*network, taylor);
        for (std::size_t k = 0; k < reverse_grads.size(); ++k)
          CHECK(relative_difference(taylor_grads[k], reverse_grads[k]) < 1e-10);
      }
    }
}

TEST_CASE("forward engine on an FBPINN: points outside every support, none, float32") {
  torch::manual_seed(4);
  auto network = two_level_network(2);
  const std::set<Partial> requested{{0, {}}, {0, {0}}, {1, {0, 1}}};
  // Outside the box no fine support holds the first point; the coarse level's network, whose
  // axes are not cut, still does (an uncut axis has no window).
  const auto outside = torch::tensor({{-5.0, 0.0}, {1.5, 0.2}}, torch::kFloat64);
  const auto p = taylor_partials(*network, outside, requested, false);
  const auto u = network->forward(outside);
  for (int64_t k = 0; k < 2; ++k)
    CHECK(p.at({0, {}})[k].item<double>() ==
          doctest::Approx(u[k][0].item<double>()).epsilon(1e-12));
  const auto none =
      taylor_partials(*network, torch::zeros({0, 2}, torch::kFloat64), requested, true);
  CHECK(none.at({1, {0, 1}}).numel() == 0);
  // float32: the grouped node's single-precision kernels, to float32 rounding.
  network->to(torch::kFloat32);
  const auto x = points_in_box(200, 2).to(torch::kFloat32);
  const auto forward = [&](const torch::Tensor& y) { return network->forward(y); };
  const auto reverse = reverse_partials(forward, x, requested, false);
  const auto taylor = taylor_partials(*network, x, requested, false);
  for (const auto& q : requested) CHECK(relative_difference(taylor.at(q), reverse.at(q)) < 1e-4);
}

TEST_CASE("grouped whole-network node equals one node per group, gradients per group") {
  torch::manual_seed(9);
  const auto layout = taylor::stream_layout({{0, {0}}, {0, {0, 1}, true}});
  // Three groups: several blocks (four streams: blocks of about 100 rows) with a partly
  // filled last one, none, and less than a vector of rows.
  const std::vector<int64_t> group_rows{301, 0, 5};
  const int64_t groups = 3, rows = 306;
  const std::vector<int64_t> widths{2, 6, 5, 1};
  std::vector<torch::Tensor> weights, biases;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    weights.push_back(
        torch::randn({groups, widths[l + 1], widths[l]}, torch::kFloat64).requires_grad_());
    biases.push_back(torch::randn({groups, widths[l + 1]}, torch::kFloat64).requires_grad_());
  }
  const auto features = torch::randn({layout.count(), rows, 2}, torch::kFloat64);
  const auto target = torch::randn({layout.count(), rows, 1}, torch::kFloat64);
  const auto grouped = taylor::grouped_network_streams_cpu(
      features, weights, biases, nn::Activation::tanh, layout, group_rows);
  (grouped * target).sum().backward();
  int64_t start = 0;
  for (int64_t g = 0; g < groups; ++g) {
    CAPTURE(g);
    const int64_t count = group_rows[static_cast<std::size_t>(g)];
    std::vector<torch::Tensor> w, b;
    for (std::size_t l = 0; l < weights.size(); ++l) {
      w.push_back(weights[l][g].detach().clone().requires_grad_());
      b.push_back(biases[l][g].detach().clone().requires_grad_());
    }
    if (count > 0) {
      const auto alone = taylor::network_streams_cpu(features.narrow(1, start, count), w, b,
                                                     nn::Activation::tanh, layout);
      CHECK(torch::allclose(alone, grouped.narrow(1, start, count), 1e-12, 1e-12));
      (alone * target.narrow(1, start, count)).sum().backward();
    }
    for (std::size_t l = 0; l < weights.size(); ++l) {
      const auto expected = w[l].grad().defined() ? w[l].grad() : torch::zeros_like(w[l]);
      CHECK(torch::allclose(weights[l].grad()[g], expected, 1e-10, 1e-12));
    }
    start += count;
  }
}

TEST_CASE("grouped node with an order takes the groups' rows from anywhere, bit for bit") {
  torch::manual_seed(10);
  const auto layout = taylor::stream_layout({{0, {0}}, {0, {1}}});
  const std::vector<int64_t> group_rows{150, 37};
  const int64_t groups = 2, rows = 187;
  const std::vector<int64_t> widths{2, 7, 1};
  std::vector<torch::Tensor> weights, biases;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    weights.push_back(torch::randn({groups, widths[l + 1], widths[l]}).requires_grad_());
    biases.push_back(torch::randn({groups, widths[l + 1]}).requires_grad_());
  }
  const auto features = torch::randn({layout.count(), rows, 2});
  const auto target = torch::randn({layout.count(), rows, 1});
  const auto consecutive = taylor::grouped_network_streams_cpu(
      features, weights, biases, nn::Activation::tanh, layout, group_rows);
  (consecutive * target).sum().backward();
  std::vector<torch::Tensor> expected;
  for (auto& w : weights) expected.push_back(w.grad().clone()), w.grad().zero_();
  // The same rows scattered: row p of the groups sits at order[p].
  const auto order = torch::randperm(rows, torch::kLong);
  const auto scattered = torch::zeros_like(features).index_copy(1, order, features);
  const auto reordered = taylor::grouped_network_streams_cpu(
      scattered, weights, biases, nn::Activation::tanh, layout, group_rows, order);
  CHECK(torch::equal(reordered.index_select(1, order), consecutive));
  (reordered * torch::zeros_like(target).index_copy(1, order, target)).sum().backward();
  for (std::size_t l = 0; l < weights.size(); ++l)
    CHECK(torch::equal(weights[l].grad(), expected[l]));
  // An order that is not a permutation of the rows is refused, not read past the features.
  auto repeated = order.clone();
  repeated[5] = repeated[6];
  auto outside = order.clone();
  outside[0] = rows;
  for (const auto& bad : {repeated, outside})
    CHECK_THROWS_WITH(
        taylor::grouped_network_streams_cpu(scattered, weights, biases, nn::Activation::tanh,
                                            layout, group_rows, bad),
        doctest::Contains("every row once"));
}

TEST_CASE("FBPINN plans are reused for the same points and rebuilt for others") {
  auto network = two_level_network(2);
  const auto x = points_in_box(50, 2);
  const auto first = network->plans(x);
  const auto again = network->plans(x.clone());
  CHECK(first.front().point.data_ptr() == again.front().point.data_ptr());  // the kept plan
  auto moved = x.clone();
  moved[0][0] = 0.25;
  const auto other = network->plans(moved);
  CHECK(other.front().point.data_ptr() != first.front().point.data_ptr());
  // The windows a plan holds are the network's, and sum to 1 per level.
  const auto dense = network->windows(x);
  const auto& plan = first.front();
  CHECK(torch::allclose(plan.window, dense.index({plan.point, plan.subdomain})));
}
