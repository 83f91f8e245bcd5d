#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "tessera/autodiff/reverse.hpp"
#include "tessera/autodiff/taylor.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

using namespace tessera;
using namespace tessera::autodiff;

namespace {

const char* name_of(nn::Activation a) {
  switch (a) {
    case nn::Activation::tanh:
      return "tanh";
    case nn::Activation::sin:
      return "sin";
    case nn::Activation::gelu:
      return "gelu";
    case nn::Activation::silu:
      return "silu";
  }
  return "?";
}

const nn::Activation all_activations[] = {nn::Activation::tanh, nn::Activation::sin,
                                          nn::Activation::gelu, nn::Activation::silu};

// Three inputs (so mixed partials have two distinct pairs), two outputs, an input box that is
// not the unit cube (so normalisation matters).
nn::MlpOptions three_inputs_two_outputs(nn::Activation activation = nn::Activation::tanh) {
  nn::MlpOptions o;
  o.inputs = 3;
  o.outputs = 2;
  o.hidden = {12, 10, 9};
  o.activation = activation;
  o.lower = {-1.0, 0.0, 0.5};
  o.upper = {2.0, 1.0, 3.0};
  return o;
}

nn::Mlp make_network(nn::Activation activation, bool fourier, bool adaptive) {
  auto o = three_inputs_two_outputs(activation);
  if (fourier) {
    o.fourier_count = 6;
    o.fourier_scale = 0.7;
  }
  if (adaptive) o.adaptive_scale = 10.0;
  nn::Mlp network(o);
  // Zero biases and slopes of exactly 1/scale would leave the bias and slope paths untested.
  torch::NoGradGuard no_grad;
  for (auto& b : network->biases()) b.copy_(0.3 * torch::randn_like(b));
  for (auto& s : network->slopes()) s.fill_(0.13 + 0.02 * torch::rand({}).item<double>());
  return network;
}

torch::Tensor points(const nn::MlpOptions& o, int64_t n) {
  const auto lo = torch::tensor(o.lower, torch::kFloat64),
             hi = torch::tensor(o.upper, torch::kFloat64);
  return lo + (hi - lo) * torch::rand({n, o.inputs}, torch::kFloat64);
}

std::set<Partial> every_partial_up_to_second(int inputs, int outputs) {
  std::set<Partial> requested;
  for (int o = 0; o < outputs; ++o) {
    requested.insert({o, {}});
    for (int i = 0; i < inputs; ++i) {
      requested.insert({o, {i}});
      for (int j = i; j < inputs; ++j) requested.insert({o, {i, j}});
    }
    // the Laplacian over all inputs and over the last two (its own stream each)
    std::vector<int> all(static_cast<std::size_t>(inputs));
    for (int i = 0; i < inputs; ++i) all[static_cast<std::size_t>(i)] = i;
    requested.insert({o, all, true});
    requested.insert({o, {inputs - 2, inputs - 1}, true});
  }
  return requested;
}

struct Difference {
  double abs = 0, rel = 0;  // rel: max |a - b| over max |b|, per tensor
  void add(const torch::Tensor& a, const torch::Tensor& b) {
    const double d = (a - b).abs().max().item<double>();
    abs = std::max(abs, d);
    rel = std::max(rel, d / std::max(b.abs().max().item<double>(), 1e-300));
  }
};

// A training-like loss of every partial, so each reaches the parameters with its own weight.
torch::Tensor loss_of(const Partials& partials) {
  torch::Tensor loss = torch::zeros({}, torch::kFloat64);
  double weight = 1.0;
  for (const auto& [p, t] : partials) {
    loss = loss + weight * (t * t).mean() + t.mean();
    weight *= 0.7;
  }
  return loss;
}

std::vector<torch::Tensor> parameter_grads(nn::Mlp& network, const Partials& partials) {
  network->zero_grad();
  loss_of(partials).backward();
  std::vector<torch::Tensor> grads;
  // A parameter no requested partial depends on (the output bias under derivatives) gets none.
  for (const auto& p : network->parameters())
    grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return grads;
}

// Partials and d(loss)/d(parameters) of both engines; returns the largest differences.
// The forward engine runs both of its paths (the whole-network CPU node, over several blocks of
// points with a short last one, and the per-layer path GPUs take).
std::pair<Difference, Difference> compare_engines(nn::Mlp& network,
                                                  const std::set<Partial>& requested,
                                                  TaylorPath path, int64_t n = 130) {
  const auto x = points(network->options(), n);
  auto forward = [&network](const torch::Tensor& p) { return network->forward(p); };
  const auto reverse = reverse_partials(forward, x, requested, /*create_graph=*/true);
  const auto taylor = taylor_partials(*network, x, requested, /*create_graph=*/true, path);
  Difference values, grads;
  REQUIRE(taylor.size() == requested.size());
  for (const auto& p : requested) values.add(taylor.at(p), reverse.at(p));
  const auto reverse_grads = parameter_grads(network, reverse);
  const auto taylor_grads = parameter_grads(network, taylor);
  REQUIRE(reverse_grads.size() == taylor_grads.size());
  for (std::size_t k = 0; k < reverse_grads.size(); ++k)
    grads.add(taylor_grads[k], reverse_grads[k]);
  return {values, grads};
}

}  // namespace

TEST_CASE("activation derivatives up to third order match autograd of the activation") {
  const auto z = torch::linspace(-4, 4, 101, torch::kFloat64).requires_grad_(true);
  for (auto activation : all_activations) {
    CAPTURE(name_of(activation));
    const auto d = taylor::activation_derivatives(activation, z, 3);
    REQUIRE(d.size() == 4);
    auto expected = nn::activate(activation, z);
    CHECK((d[0] - expected).abs().max().item<double>() < 1e-14);
    for (int order = 1; order <= 3; ++order) {
      expected = torch::autograd::grad({expected.sum()}, {z}, {}, true, true)[0];
      CHECK((d[order] - expected).abs().max().item<double>() < 1e-12);
    }
  }
}

TEST_CASE(
    "forward engine matches the reverse engine to 1e-10 for every activation, with and "
    "without Fourier features and adaptive activation, partials (first, second, mixed, "
    "Laplacian) and parameter gradients") {
  torch::manual_seed(7);
  for (auto activation : all_activations)
    for (bool fourier : {false, true})
      for (bool adaptive : {false, true}) {
        CAPTURE(name_of(activation));
        CAPTURE(fourier);
        CAPTURE(adaptive);
        auto network = make_network(activation, fourier, adaptive);
        for (auto path : {TaylorPath::automatic, TaylorPath::per_layer}) {
          const auto [values, grads] =
              compare_engines(network, every_partial_up_to_second(3, 2), path);
          const std::string label = std::string(name_of(activation)) + (fourier ? " fourier" : "") +
                                    (adaptive ? " adaptive" : "") +
                                    (path == TaylorPath::per_layer ? " (per layer)" : "");
          MESSAGE(label << ": partials max abs " << values.abs << " rel " << values.rel
                        << "; parameter grads max abs " << grads.abs << " rel " << grads.rel);
          CHECK(values.rel < 1e-10);
          CHECK(grads.rel < 1e-10);
        }
      }
}

TEST_CASE("forward engine matches the reverse engine with weight factorisation") {
  torch::manual_seed(9);
  auto o = three_inputs_two_outputs();
  o.hidden = {12, 10};
  o.weight_factorization = std::make_pair(0.5, 0.2);
  nn::Mlp network(o);
  for (auto path : {TaylorPath::automatic, TaylorPath::per_layer}) {
    const auto [values, grads] = compare_engines(network, every_partial_up_to_second(3, 2), path);
    CHECK(values.rel < 1e-10);
    CHECK(grads.rel < 1e-10);
  }
}

TEST_CASE(
    "forward engine matches the reverse engine for the modified MLP: every activation, with "
    "Fourier features, weight factorisation and adaptive activation, and on subsets of partials") {
  torch::manual_seed(10);
  const auto modified = [](nn::Activation activation, bool extras) {
    auto o = three_inputs_two_outputs(activation);
    o.hidden = {11, 11, 11};
    o.modified = true;
    if (extras) {
      o.fourier_count = 5;
      o.fourier_scale = 0.7;
      o.weight_factorization = std::make_pair(0.5, 0.2);
      o.adaptive_scale = 10.0;
    }
    nn::Mlp network(o);
    torch::NoGradGuard no_grad;
    for (auto& b : network->biases()) b.copy_(0.3 * torch::randn_like(b));
    for (auto& b : network->encoder_biases()) b.copy_(0.3 * torch::randn_like(b));
    for (auto& s : network->slopes()) s.fill_(0.13);
    return network;
  };
  for (auto activation : all_activations)
    for (bool extras : {false, true}) {
      CAPTURE(name_of(activation));
      CAPTURE(extras);
      auto network = modified(activation, extras);
      REQUIRE(network->encoder_weights().size() == 2);
      const auto [values, grads] =
          compare_engines(network, every_partial_up_to_second(3, 2), TaylorPath::automatic);
      CHECK(values.rel < 1e-10);
      CHECK(grads.rel < 1e-10);
    }
  auto network = modified(nn::Activation::tanh, false);
  for (const std::set<Partial>& requested :
       std::vector<std::set<Partial>>{{{0, {}}}, {{1, {0, 2}}}, {{0, {2}}, {0, {0, 1}, true}}}) {
    const auto [values, grads] = compare_engines(network, requested, TaylorPath::automatic);
    CHECK(values.rel < 1e-10);
    CHECK(grads.rel < 1e-10);
  }
}

TEST_CASE(
    "forward engine matches the reverse engine with periodic inputs, plain and modified MLP, "
    "on every partial and on subsets") {
  torch::manual_seed(11);
  for (bool modified : {false, true}) {
    CAPTURE(modified);
    auto o = three_inputs_two_outputs(nn::Activation::sin);
    o.periodic_inputs = {2, 0};
    if (modified) o.hidden = {9, 9}, o.modified = true;
    nn::Mlp network(o);
    for (const std::set<Partial>& requested : std::vector<std::set<Partial>>{
             every_partial_up_to_second(3, 2), {{0, {0, 0}}}, {{1, {0, 2}, true}, {0, {1}}}}) {
      const auto [values, grads] = compare_engines(network, requested, TaylorPath::automatic);
      CHECK(values.rel < 1e-10);
      CHECK(grads.rel < 1e-10);
    }
  }
}

TEST_CASE(
    "forward engine computes exactly a subset of partials (mixed only, pure only, value only)") {
  torch::manual_seed(8);
  auto network = make_network(nn::Activation::tanh, false, true);
  const std::vector<std::set<Partial>> subsets{
      {{1, {0, 2}}},
      {{0, {1, 1}}, {1, {2, 2}}},
      {{0, {}}},
      {{1, {2}}, {0, {0, 1}}},
      // Laplacians: alone, next to one of their own terms, and over part of the inputs
      {{0, {0, 1, 2}, true}},
      {{1, {0, 2}, true}, {1, {0, 0}}, {0, {}}},
      // a Laplacian over x0, x1 next to the first derivative along a third input (u_t + lap u)
      {{0, {2}}, {0, {0, 1}, true}}};
  for (const auto& requested : subsets)
    for (auto path : {TaylorPath::automatic, TaylorPath::per_layer}) {
      const auto [values, grads] = compare_engines(network, requested, path);
      CHECK(values.rel < 1e-10);
      CHECK(grads.rel < 1e-10);
    }
  CHECK(taylor::stream_layout({{1, {0, 2}}}).count() == 4);  // value, d/dx0, d/dx2, d2/dx0dx2
  // value, three firsts and one Laplacian stream instead of three pure second streams
  CHECK(taylor::stream_layout({{0, {0, 1, 2}, true}}).count() == 5);
}

TEST_CASE("a Laplacian partial is the sum of the pure second derivatives (reverse engine)") {
  torch::manual_seed(11);
  auto network = make_network(nn::Activation::tanh, false, false);
  const auto x = points(network->options(), 30);
  auto forward = [&network](const torch::Tensor& p) { return network->forward(p); };
  const auto d = reverse_partials(forward, x, {{0, {0, 0}}, {0, {1, 1}}, {0, {2, 2}}}, false);
  const auto lap = reverse_partials(forward, x, {{0, {0, 1, 2}, true}}, false);
  REQUIRE(lap.size() == 1);
  const auto sum = d.at({0, {0, 0}}) + d.at({0, {1, 1}}) + d.at({0, {2, 2}});
  CHECK((lap.at({0, {0, 1, 2}, true}) - sum).abs().max().item<double>() < 1e-14);
}

TEST_CASE("fused CPU element-wise step equals the generic ATen step, forward and backward") {
  torch::manual_seed(9);
  taylor::StreamLayout layout;
  layout.axes = {0, 1, 3};
  layout.pairs = {{0, 0}, {0, 2}, {1, 2}, {2, 2}};
  layout.laplacians = {{0, 1, 2}, {1, 2}};
  for (auto activation : all_activations)
    for (auto dtype : {torch::kFloat64, torch::kFloat32}) {
      CAPTURE(name_of(activation));
      const auto pre = torch::randn({layout.count(), 37, 11}, dtype).requires_grad_(true);
      const auto bias = torch::randn({11}, dtype).requires_grad_(true);
      const auto weight = torch::randn({layout.count(), 37, 11}, dtype);
      std::vector<torch::Tensor> results;
      for (auto kernel : {taylor::Kernel::automatic, taylor::Kernel::generic}) {
        const auto out = taylor::activate_streams(activation, pre, bias, layout, kernel);
        const auto grads = torch::autograd::grad({(out * weight).sum()}, {pre, bias});
        results.insert(results.end(), {out.detach(), grads[0], grads[1]});
      }
      const double tolerance = dtype == torch::kFloat64 ? 1e-12 : 1e-4;
      for (int k = 0; k < 3; ++k)
        CHECK((results[k] - results[k + 3]).abs().max().item<double>() <
              tolerance * (1 + results[k + 3].abs().max().item<double>()));
    }
}

TEST_CASE("forward engine in float32 agrees with the reverse engine to float32 rounding") {
  torch::manual_seed(10);
  auto network = make_network(nn::Activation::tanh, false, false);
  network->to(torch::kFloat32);
  const auto x = points(network->options(), 64).to(torch::kFloat32);
  const std::set<Partial> requested{
      {0, {}}, {0, {0, 0}}, {0, {1, 1}}, {1, {0, 2}}, {1, {0, 1, 2}, true}};
  auto forward = [&network](const torch::Tensor& p) { return network->forward(p); };
  const auto reverse = reverse_partials(forward, x, requested, false);
  const auto taylor = taylor_partials(*network, x, requested, false);
  for (const auto& p : requested) {
    CHECK((taylor.at(p).scalar_type() == torch::kFloat32));
    CHECK((taylor.at(p) - reverse.at(p)).abs().max().item<double>() <
          1e-4 * (1 + reverse.at(p).abs().max().item<double>()));
  }
}

TEST_CASE("forward engine without create_graph records no graph") {
  auto network = make_network(nn::Activation::sin, true, true);
  const auto x = points(network->options(), 8);
  const auto d = taylor_partials(*network, x, {{0, {}}, {0, {0, 1}}}, /*create_graph=*/false);
  for (const auto& [p, t] : d) CHECK_FALSE(t.requires_grad());
}

TEST_CASE("forward engine supports orders up to 2 of existing outputs and axes only") {
  auto o = make_network(nn::Activation::tanh, false, false)->options();
  CHECK(taylor_supports(o, every_partial_up_to_second(3, 2)));
  CHECK_FALSE(taylor_supports(o, {{0, {0, 0, 1}}}));
  CHECK_FALSE(taylor_supports(o, {{2, {0}}}));
  CHECK_FALSE(taylor_supports(o, {{0, {3}}}));
  CHECK_FALSE(taylor_supports(o, {{0, {}, true}}));  // a Laplacian over no coordinate
  auto network = make_network(nn::Activation::tanh, false, false);
  CHECK_THROWS_AS(taylor_partials(*network, points(o, 4), {{0, {0, 0, 0}}}, false), Error);
  // a Laplacian's coordinates in any order name the same stream
  const auto x = points(o, 4);
  const auto unsorted = taylor_partials(*network, x, {{0, {2, 0}, true}}, false);
  const auto sorted = taylor_partials(*network, x, {{0, {0, 2}, true}}, false);
  CHECK(torch::equal(unsorted.at({0, {2, 0}, true}), sorted.at({0, {0, 2}, true})));
}

TEST_CASE("a second backward through the forward engine is refused, not silently wrong") {
  auto network = make_network(nn::Activation::tanh, false, false);
  const auto x = points(network->options(), 8);
  const auto d = taylor_partials(*network, x, {{0, {0, 0}}}, /*create_graph=*/true);
  const auto params = network->parameters();
  CHECK_THROWS(torch::autograd::grad({d.at({0, {0, 0}}).sum()}, params, {}, true,
                                     /*create_graph=*/true));
}
