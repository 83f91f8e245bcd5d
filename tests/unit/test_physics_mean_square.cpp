// The loss terms' mean of squares, one autograd node, against autograd through pow and mean: the
// same value and the same gradient bits, and a backward that can itself be differentiated.
#include <doctest/doctest.h>

#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/loss_group.hpp"

using namespace tessera;

TEST_CASE("mean_square gives autograd's value and gradient through pow and mean, bit for bit") {
  torch::manual_seed(3);
  for (auto dtype : {torch::kFloat32, torch::kFloat64})
    for (const auto& shape : {std::vector<int64_t>{1001}, std::vector<int64_t>{333, 3}}) {
      CAPTURE(dtype);
      CAPTURE(shape.size());
      const auto data = torch::randn(shape, dtype) * 3;
      const auto fused = data.clone().requires_grad_(true);
      const auto plain = data.clone().requires_grad_(true);
      // As a term enters the loss: weighted, then summed with the others.
      const auto a = physics::mean_square(fused);
      const auto b = plain.pow(2).mean();
      CHECK(torch::equal(a.detach(), b.detach()));
      const auto grad_a = torch::autograd::grad({a * 0.37 + 1.5}, {fused})[0];
      const auto grad_b = torch::autograd::grad({b * 0.37 + 1.5}, {plain})[0];
      CHECK(grad_a.abs().sum().item<double>() > 0);
      CHECK(torch::equal(grad_a, grad_b));
    }
}

TEST_CASE("mean_square's backward can be differentiated again") {
  torch::manual_seed(4);
  const auto data = torch::randn({50}, torch::kFloat64);
  const auto fused = data.clone().requires_grad_(true);
  const auto plain = data.clone().requires_grad_(true);
  const auto grad_a =
      torch::autograd::grad({physics::mean_square(fused)}, {fused}, {}, true, true)[0];
  const auto grad_b = torch::autograd::grad({plain.pow(2).mean()}, {plain}, {}, true, true)[0];
  // d/dr of sum(r^3 * grad): second derivatives through the backward itself.
  const auto second_a = torch::autograd::grad({(grad_a * fused.pow(3)).sum()}, {fused})[0];
  const auto second_b = torch::autograd::grad({(grad_b * plain.pow(3)).sum()}, {plain})[0];
  CHECK(torch::allclose(second_a, second_b, 1e-12, 1e-14));
}

TEST_CASE("mean_square of no points is zero") {
  const auto empty = torch::zeros({0}, torch::kFloat32).requires_grad_(true);
  CHECK(physics::mean_square(empty).item<double>() == 0.0);
}
