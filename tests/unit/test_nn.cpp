#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/nn/mlp.hpp"

using namespace tessera;
using namespace tessera::nn;

namespace {

MlpOptions small_options() {
  MlpOptions o;
  o.inputs = 2;
  o.outputs = 3;
  o.hidden = {16, 16};
  o.lower = {0.0, -1.0};
  o.upper = {2.0, 3.0};
  o.seed = 42;
  o.subdomain = 0;
  return o;
}

/// Random points in the options' input box: float64 [n, inputs].
torch::Tensor points_in_box(const MlpOptions& o, int64_t n) {
  const auto lo = torch::tensor(o.lower, torch::kFloat64);
  const auto hi = torch::tensor(o.upper, torch::kFloat64);
  return lo + (hi - lo) * torch::rand({n, o.inputs}, torch::kFloat64);
}

/// True when both networks have bit-identical weights and biases.
bool same_parameters(Mlp& a, Mlp& b) {
  if (a->weights().size() != b->weights().size()) return false;
  for (std::size_t i = 0; i < a->weights().size(); ++i) {
    if (!torch::equal(a->weights()[i], b->weights()[i])) return false;
    if (!torch::equal(a->biases()[i], b->biases()[i])) return false;
  }
  return true;
}

double sample_std(const torch::Tensor& t) {
  return t.flatten().std(/*unbiased=*/true).item<double>();
}

}  // namespace

TEST_CASE("mlp output has shape [n, outputs] and dtype float64") {
  auto o = small_options();
  Mlp net(o);
  const auto y = net->forward(points_in_box(o, 10));
  CHECK(y.sizes() == torch::IntArrayRef({10, 3}));
  CHECK((y.scalar_type() == torch::kFloat64));
  CHECK(torch::isfinite(y).all().item<bool>());
  // Layers: hidden 16, 16, then the output layer 3.
  REQUIRE(net->weights().size() == 3);
  CHECK(net->weights()[0].sizes() == torch::IntArrayRef({16, 2}));
  CHECK(net->weights()[1].sizes() == torch::IntArrayRef({16, 16}));
  CHECK(net->weights()[2].sizes() == torch::IntArrayRef({3, 16}));
  CHECK(net->biases()[2].sizes() == torch::IntArrayRef({3}));
  CHECK(net->slopes().empty());
  CHECK(!net->fourier_matrix().defined());
}

TEST_CASE("mlp inputs are normalised to [-1, 1] over the box: corners map to +-1") {
  auto o = small_options();
  Mlp net(o);
  const auto corners =
      torch::tensor({0.0, -1.0, 2.0, -1.0, 0.0, 3.0, 2.0, 3.0, 1.0, 1.0}, torch::kFloat64)
          .view({5, 2});
  const auto expected =
      torch::tensor({-1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 0.0, 0.0}, torch::kFloat64)
          .view({5, 2});
  const auto f = net->features(corners);
  CHECK(f.sizes() == torch::IntArrayRef({5, 2}));
  CHECK(torch::allclose(f, expected, /*rtol=*/0, /*atol=*/1e-15));
  const auto inside = net->features(points_in_box(o, 200));
  CHECK(inside.abs().max().item<double>() <= 1.0);
}

TEST_CASE(
    "same seed and subdomain give identical weights; another subdomain "
    "or seed differs") {
  auto o = small_options();
  Mlp a(o), b(o);
  CHECK(same_parameters(a, b));
  const auto x = points_in_box(o, 8);
  CHECK(torch::equal(a->forward(x), b->forward(x)));

  auto other_subdomain = o;
  other_subdomain.subdomain = 1;
  Mlp c(other_subdomain);
  CHECK_FALSE(same_parameters(a, c));

  auto other_seed = o;
  other_seed.seed = 43;
  Mlp d(other_seed);
  CHECK_FALSE(same_parameters(a, d));
}

TEST_CASE("biases start at zero") {
  Mlp net(small_options());
  for (const auto& b : net->biases()) CHECK(b.abs().max().item<double>() == 0.0);
}

TEST_CASE(
    "xavier-normal weight std is sqrt(2 / (fan_in + fan_out)) within 10% "
    "for 200x200") {
  auto o = small_options();
  o.hidden = {200, 200};
  Mlp net(o);
  const auto w = net->weights()[1];
  REQUIRE(w.sizes() == torch::IntArrayRef({200, 200}));
  const double expected = std::sqrt(2.0 / 400.0);
  CHECK(sample_std(w) == doctest::Approx(expected).epsilon(0.10));
  CHECK(std::abs(w.mean().item<double>()) < 0.05 * expected);
  // Normal: some entries exceed sqrt(3) std (the uniform bound), none are
  // absurd.
  CHECK(w.abs().max().item<double>() > std::sqrt(3.0) * expected);
  CHECK(w.abs().max().item<double>() < 7 * expected);
}

TEST_CASE("xavier-uniform weights have the same std and are bounded by sqrt(3) std") {
  auto o = small_options();
  o.hidden = {200, 200};
  o.xavier_uniform = true;
  Mlp net(o);
  const auto w = net->weights()[1];
  const double expected = std::sqrt(2.0 / 400.0);
  CHECK(sample_std(w) == doctest::Approx(expected).epsilon(0.10));
  CHECK(w.abs().max().item<double>() <= std::sqrt(3.0) * expected);
}

TEST_CASE("fourier features give 2*count features equal to sin/cos(2 pi z B)") {
  auto o = small_options();
  o.fourier_count = 8;
  o.fourier_scale = 2.0;
  Mlp net(o);
  const auto& B = net->fourier_matrix();
  REQUIRE(B.defined());
  CHECK(B.sizes() == torch::IntArrayRef({2, 8}));
  CHECK(net->weights()[0].sizes() == torch::IntArrayRef({16, 16}));

  const auto x = points_in_box(o, 20);
  const auto z = (x - net->shift()) * net->scale();
  const auto projected = 2 * M_PI * torch::matmul(z, B);
  const auto expected = torch::cat({torch::sin(projected), torch::cos(projected)}, 1);
  const auto f = net->features(x);
  CHECK(f.sizes() == torch::IntArrayRef({20, 16}));
  CHECK(torch::allclose(f, expected, /*rtol=*/0, /*atol=*/1e-13));
  // sin^2 + cos^2 = 1 for each frequency.
  const auto sum = f.slice(1, 0, 8).pow(2) + f.slice(1, 8, 16).pow(2);
  CHECK(torch::allclose(sum, torch::ones_like(sum)));
  CHECK(net->forward(x).sizes() == torch::IntArrayRef({20, 3}));
}

TEST_CASE("fourier matrix entries have std fourier_scale and are not trainable") {
  auto o = small_options();
  o.fourier_count = 1000;
  o.fourier_scale = 2.0;
  Mlp net(o);
  CHECK(sample_std(net->fourier_matrix()) == doctest::Approx(2.0).epsilon(0.10));
  CHECK(!net->fourier_matrix().requires_grad());
  for (const auto& p : net->named_parameters()) CHECK(p.key().find("fourier") == std::string::npos);
}

TEST_CASE(
    "adaptive activation: slopes start at 1/scale, get gradients, "
    "forward equals plain") {
  auto plain_options = small_options();
  auto adaptive_options = plain_options;
  adaptive_options.adaptive_scale = 10.0;
  Mlp plain(plain_options), adaptive(adaptive_options);

  REQUIRE(adaptive->slopes().size() == adaptive_options.hidden.size());
  for (const auto& a : adaptive->slopes()) {
    CHECK(a.dim() == 0);
    CHECK(a.requires_grad());
    CHECK(a.item<double>() == doctest::Approx(0.1));
  }
  // Slopes are registered parameters (so the optimiser trains them).
  int slope_parameters = 0;
  for (const auto& p : adaptive->named_parameters())
    if (p.key().find("slope") != std::string::npos) ++slope_parameters;
  CHECK(slope_parameters == static_cast<int>(adaptive_options.hidden.size()));

  // Initialisation draws the same weights with or without adaptive slopes, and
  // scale * a = 1.
  CHECK(same_parameters(plain, adaptive));
  const auto x = points_in_box(plain_options, 32);
  CHECK(torch::allclose(adaptive->forward(x), plain->forward(x), /*rtol=*/0,
                        /*atol=*/1e-14));

  adaptive->forward(x).pow(2).sum().backward();
  for (const auto& a : adaptive->slopes()) {
    REQUIRE(a.grad().defined());
    CHECK(std::abs(a.grad().item<double>()) > 0);
  }
}

TEST_CASE("every activation runs and matches its function") {
  const std::pair<const char*, Activation> names[] = {{"tanh", Activation::tanh},
                                                      {"sin", Activation::sin},
                                                      {"gelu", Activation::gelu},
                                                      {"silu", Activation::silu}};
  const auto z = torch::linspace(-3, 3, 13, torch::kFloat64);
  for (const auto& [name, activation] : names) {
    CAPTURE(name);
    auto o = small_options();
    o.activation = activation;
    Mlp net(o);
    const auto y = net->forward(points_in_box(o, 7));
    CHECK(y.sizes() == torch::IntArrayRef({7, 3}));
    CHECK(torch::isfinite(y).all().item<bool>());
  }
  CHECK(torch::allclose(activate(Activation::tanh, z), torch::tanh(z)));
  CHECK(torch::allclose(activate(Activation::sin, z), torch::sin(z)));
  CHECK(torch::allclose(activate(Activation::silu, z), z * torch::sigmoid(z)));
  CHECK(torch::allclose(activate(Activation::gelu, z),
                        0.5 * z * (1 + torch::erf(z / std::sqrt(2.0)))));
}

TEST_CASE("mlp options are checked: the input box needs one range per input") {
  auto o = small_options();
  o.upper = {1.0};
  CHECK_THROWS_AS(Mlp{o}, Error);
}

TEST_CASE("to(kFloat32) converts parameters, buffers and the forward pass") {
  auto o = small_options();
  o.fourier_count = 4;
  o.adaptive_scale = 5.0;
  Mlp net(o);
  const auto x = points_in_box(o, 6);
  const auto reference = net->forward(x);
  net->to(torch::kFloat32);
  for (const auto& p : net->parameters()) CHECK((p.scalar_type() == torch::kFloat32));
  for (const auto& b : net->buffers()) CHECK((b.scalar_type() == torch::kFloat32));
  // The accessors see the converted tensors too.
  CHECK((net->weights()[0].scalar_type() == torch::kFloat32));
  CHECK((net->slopes()[0].scalar_type() == torch::kFloat32));
  CHECK((net->shift().scalar_type() == torch::kFloat32));
  CHECK((net->fourier_matrix().scalar_type() == torch::kFloat32));
  const auto y = net->forward(x.to(torch::kFloat32));
  CHECK((y.scalar_type() == torch::kFloat32));
  CHECK(y.sizes() == torch::IntArrayRef({6, 3}));
  CHECK(torch::allclose(y.to(torch::kFloat64), reference, /*rtol=*/1e-4,
                        /*atol=*/1e-5));
}

TEST_CASE("weight factorisation starts as the plain network and trains scales and directions") {
  auto o = small_options();
  Mlp plain(o);
  o.weight_factorization = std::make_pair(1.0, 0.1);
  Mlp factorized(o);
  // One log scale per output of every layer on top of the plain parameters.
  int64_t outputs = 0;
  for (const auto& w : plain->weights()) outputs += w.size(0);
  int64_t plain_count = 0, factorized_count = 0;
  for (const auto& p : plain->parameters()) plain_count += p.numel();
  for (const auto& p : factorized->parameters()) factorized_count += p.numel();
  CHECK(factorized_count == plain_count + outputs);
  const auto x = torch::rand({7, o.inputs}, torch::kFloat64);
  CHECK(torch::allclose(factorized->forward(x), plain->forward(x), 1e-13, 1e-13));
  // Log scales drawn around the mean, and every parameter gets a gradient.
  const auto s = factorized->named_parameters()["weight_log_scale0"];
  CHECK(s.mean().item<double>() == doctest::Approx(1.0).epsilon(0.1));
  factorized->forward(x).pow(2).sum().backward();
  for (const auto& p : factorized->parameters()) {
    REQUIRE(p.grad().defined());
    CHECK(p.grad().abs().sum().item<double>() > 0);
  }
}

TEST_CASE(
    "modified MLP: encoders U, V of the features gate every hidden layer as g U + (1 - g) V, "
    "the layers are the plain network's for the same seed, and unequal widths are refused") {
  auto plain_options = small_options();
  auto options = plain_options;
  options.modified = true;
  Mlp plain(plain_options), modified(options);
  CHECK(same_parameters(plain, modified));
  REQUIRE(modified->encoder_weights().size() == 2);
  REQUIRE(modified->encoder_biases().size() == 2);
  CHECK(modified->encoder_weights()[0].sizes() == torch::IntArrayRef{16, 2});
  CHECK(!torch::equal(modified->encoder_weights()[0], modified->encoder_weights()[1]));
  // 2 encoders of (2 + 1) x 16 parameters on top of the plain network's.
  int64_t plain_count = 0, modified_count = 0;
  for (const auto& p : plain->parameters()) plain_count += p.numel();
  for (const auto& p : modified->parameters()) modified_count += p.numel();
  CHECK(modified_count == plain_count + 2 * 3 * 16);

  {
    torch::NoGradGuard no_grad;
    for (auto& b : modified->encoder_biases()) b.fill_(0.2);
  }
  const auto x = points_in_box(options, 20);
  const auto f = modified->features(x);
  const auto& we = modified->encoder_weights();
  const auto& be = modified->encoder_biases();
  const auto u = torch::tanh(torch::addmm(be[0], f, we[0].t()));
  const auto v = torch::tanh(torch::addmm(be[1], f, we[1].t()));
  auto h = f;
  const auto w = modified->weights();
  for (std::size_t layer = 0; layer + 1 < w.size(); ++layer) {
    const auto g = torch::tanh(torch::addmm(modified->biases()[layer], h, w[layer].t()));
    h = g * u + (1 - g) * v;
  }
  const auto expected = torch::addmm(modified->biases().back(), h, w.back().t());
  CHECK(torch::allclose(modified->forward(x), expected, /*rtol=*/0, /*atol=*/1e-14));

  auto uneven = options;
  uneven.hidden = {16, 8};
  CHECK_THROWS_WITH_AS(Mlp{uneven}, doctest::Contains("equal hidden widths"), Error);
}

TEST_CASE("periodic inputs: the network and its derivatives repeat over the box along them") {
  auto o = small_options();
  o.periodic_inputs = {1};
  Mlp network(o);
  CHECK(network->weights().front().size(1) == 3);  // x, then cos and sin of y
  // Points on the low and the high face of the periodic axis, same x.
  auto low = points_in_box(o, 16);
  low.select(1, 1).fill_(o.lower[1]);
  auto high = low.clone();
  high.select(1, 1).fill_(o.upper[1]);
  low.requires_grad_(true);
  high.requires_grad_(true);
  const auto at_low = network->forward(low), at_high = network->forward(high);
  CHECK(torch::allclose(at_low, at_high, /*rtol=*/0, /*atol=*/1e-14));
  const auto slope_low = torch::autograd::grad({at_low.sum()}, {low})[0];
  const auto slope_high = torch::autograd::grad({at_high.sum()}, {high})[0];
  CHECK(torch::allclose(slope_low, slope_high, /*rtol=*/0, /*atol=*/1e-13));
  // Not periodic along the other input.
  auto right = low.detach().clone();
  right.select(1, 0).fill_(o.upper[0]);
  auto left = low.detach().clone();
  left.select(1, 0).fill_(o.lower[0]);
  CHECK(!torch::allclose(network->forward(left), network->forward(right)));

  auto with_fourier = o;
  with_fourier.fourier_count = 4;
  CHECK_THROWS_WITH_AS(Mlp{with_fourier}, doctest::Contains("Fourier"), Error);
}

// ---- FBPINN: windowed sum of overlapping subdomain networks ----

#include "tessera/nn/fbpinn.hpp"

namespace {

FbpinnOptions two_level_options() {
  FbpinnOptions o;
  o.inputs = 2;
  o.outputs = 2;
  o.hidden = {8, 8};
  o.levels = {WindowGrid{{{0.0, 1.0, 2.0, 3.0}, {-1.0, 0.0, 1.0}}},
              WindowGrid{{{0.0, 3.0}, {-1.0, 1.0}}}};
  o.overlap = 0.5;
  o.seed = 7;
  return o;
}

torch::Tensor points_in(const FbpinnOptions& o, int64_t n) {
  torch::manual_seed(3);
  auto x = torch::rand({n, o.inputs}, torch::kFloat64);
  const auto& level = o.levels.front();
  for (int64_t a = 0; a < o.inputs; ++a) {
    const double lo = level.edges[a].front(), hi = level.edges[a].back();
    x.select(1, a).mul_(hi - lo).add_(lo);
  }
  return x;
}

}  // namespace

TEST_CASE("FBPINN windows form a partition of unity on every level") {
  const auto o = two_level_options();
  Fbpinn net(o);
  net->to(torch::kFloat64);
  CHECK(net->subdomains() == 3 * 2 + 1);
  const auto w = net->windows(points_in(o, 500));
  CHECK(w.min().item<double>() >= 0.0);
  const auto fine = w.narrow(1, 0, 6).sum(1), coarse = w.narrow(1, 6, 1).sum(1);
  CHECK((fine - 1).abs().max().item<double>() < 1e-14);
  CHECK((coarse - 1).abs().max().item<double>() < 1e-14);
  // A point in the middle of a cell, beyond its neighbours' reach, has that cell's window only.
  const auto centre = torch::tensor({{0.5, -0.5}}, torch::kFloat64);
  CHECK(net->windows(centre)[0][0].item<double>() == doctest::Approx(1.0));
  // No points (an empty slice of a sample): no pairs, an empty output.
  const auto none = torch::zeros({0, o.inputs}, torch::kFloat64);
  CHECK(net->forward(none).sizes() == torch::IntArrayRef({0, o.outputs}));
}

TEST_CASE("FBPINN output is the window-weighted sum of its subdomain networks") {
  auto o = two_level_options();
  o.levels.pop_back();
  Fbpinn net(o);
  net->to(torch::kFloat64);
  const auto x = points_in(o, 200);
  const auto w = net->windows(x);
  CHECK(net->forward(x).abs().max().item<double>() == 0.0);  // the output layers start at 0
  // Subdomain j alone: the plain MLP of stream (seed, j) on the support's coordinates, whose
  // output layer the FBPINN's takes over here.
  auto output_layer = net->named_parameters()["weight2"];
  auto expected = torch::zeros({x.size(0), o.outputs}, torch::kFloat64);
  const auto lower = net->support_lower(), upper = net->support_upper();
  for (int64_t j = 0; j < net->subdomains(); ++j) {
    MlpOptions m;
    m.inputs = o.inputs;
    m.outputs = o.outputs;
    m.hidden = o.hidden;
    m.seed = o.seed;
    m.subdomain = j;
    m.lower.clear();
    m.upper.clear();
    for (int64_t a = 0; a < o.inputs; ++a) {
      m.lower.push_back(lower[j][a].item<double>());
      m.upper.push_back(upper[j][a].item<double>());
    }
    Mlp plain(m);
    plain->to(torch::kFloat64);
    {
      torch::NoGradGuard no_grad;
      output_layer[j].copy_(plain->weights().back());
    }
    expected += w.select(1, j).unsqueeze(1) * plain->forward(x);
  }
  CHECK((net->forward(x) - expected).abs().max().item<double>() < 1e-12);
}

TEST_CASE("FBPINN output is smooth across the edges of the supports") {
  // One axis cut in two: the support of cell 0 ends at 1.25, that of cell 1 starts at 0.75. The
  // second derivative, by autograd, matches central differences of the first through both.
  FbpinnOptions o;
  o.inputs = 1;
  o.outputs = 1;
  o.levels = {WindowGrid{{{0.0, 1.0, 2.0}}}};
  o.overlap = 0.5;
  Fbpinn net(o);
  net->to(torch::kFloat64);
  {
    torch::NoGradGuard no_grad;
    torch::manual_seed(5);
    net->named_parameters()["weight2"].normal_();
  }
  for (double edge : {0.75, 1.25}) {
    auto x =
        torch::tensor({{edge - 1e-4}, {edge}, {edge + 1e-4}}, torch::kFloat64).requires_grad_();
    const auto u = net->forward(x).sum();
    const auto du = torch::autograd::grad({u}, {x}, {}, true, true)[0];
    const auto d2u = torch::autograd::grad({du.sum()}, {x})[0];
    const double central = (du[2][0].item<double>() - du[0][0].item<double>()) / 2e-4;
    CHECK(d2u[1][0].item<double>() == doctest::Approx(central).epsilon(1e-5));
  }
}

TEST_CASE("FBPINN networks and their parameters are keyed by subdomain, not by level count") {
  auto o = two_level_options();
  Fbpinn both(o);
  o.levels.pop_back();
  Fbpinn fine(o);
  // The fine level's subdomains come first and are the same with or without the coarse level.
  CHECK(torch::equal(both->named_parameters()["weight0"].narrow(0, 0, 6),
                     fine->named_parameters()["weight0"]));
  CHECK(both->named_parameters()["weight0"].size(0) == 7);
}
