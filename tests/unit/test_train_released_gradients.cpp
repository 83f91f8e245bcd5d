// Gradients released at the start of an Adam iteration instead of zeroed: the parameters a
// backward pass reaches get the same gradients as on zeroed ones, a released parameter that no
// term reaches steps on zeros, and one that never had a gradient keeps none.
#include <doctest/doctest.h>

#include <vector>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/released_gradients.hpp"

namespace {

using tessera::train::release_gradients;
using tessera::train::zero_missing_gradients;

torch::Tensor parameter(std::vector<double> values) {
  return torch::tensor(values, torch::kFloat64).set_requires_grad(true);
}

}  // namespace

TEST_CASE("released gradients: only the parameters that had one are released") {
  auto reached = parameter({1, 2, 3});
  auto never = parameter({4, 5});
  torch::optim::SGD optimizer({reached, never}, torch::optim::SGDOptions(0.1));
  (reached * 2).sum().backward();
  const auto released = release_gradients(optimizer);
  REQUIRE(released.size() == 1);
  CHECK(released[0].is_same(reached));
  CHECK_FALSE(reached.grad().defined());
  CHECK_FALSE(never.grad().defined());
}

TEST_CASE(
    "released gradients: an unreached parameter steps on zeros, a never-reached one on none") {
  auto reached = parameter({1, 2, 3});
  auto unreached = parameter({-1, 0.5});
  auto never = parameter({4, 5});
  torch::optim::SGD optimizer({reached, unreached, never}, torch::optim::SGDOptions(0.1));
  ((reached * 2).sum() + (unreached * 3).sum()).backward();

  // The next iteration's loss reaches only `reached`.
  const auto released = release_gradients(optimizer);
  CHECK(released.size() == 2);
  reached.pow(2).sum().backward();
  zero_missing_gradients(released);
  CHECK(torch::equal(reached.grad(), 2 * reached.detach()));
  REQUIRE(unreached.grad().defined());
  CHECK(torch::equal(unreached.grad(), torch::zeros({2}, torch::kFloat64)));
  CHECK_FALSE(never.grad().defined());

  // As with zero_grad in LibTorch 1.x: the unreached parameter takes a step on a zero gradient
  // (unchanged by plain SGD), the never-reached one is skipped.
  const auto before = unreached.detach().clone();
  optimizer.step();
  CHECK(torch::equal(unreached.detach(), before));
  CHECK(torch::equal(never.detach(), torch::tensor({4.0, 5.0}, torch::kFloat64)));
}

TEST_CASE("released gradients: two backward passes give the bits they gave on zeroed gradients") {
  torch::manual_seed(7);
  const auto x = torch::randn({16, 4});
  const auto start = torch::randn({4, 3});
  const auto passes = [&](const torch::Tensor& p) {
    (x.matmul(p).tanh().pow(2).sum()).backward();  // the interior terms
    (x.matmul(p).sin().sum() * 0.3).backward();    // the interface terms
  };
  auto released_path = start.clone().set_requires_grad(true);
  auto zeroed_path = start.clone().set_requires_grad(true);
  torch::optim::SGD released_optimizer({released_path}, torch::optim::SGDOptions(0.1));
  // A first iteration leaves a gradient behind on both.
  passes(released_path);
  passes(zeroed_path);

  const auto released = release_gradients(released_optimizer);
  passes(released_path);
  zero_missing_gradients(released);
  zeroed_path.mutable_grad().zero_();
  passes(zeroed_path);
  CHECK(torch::equal(released_path.grad(), zeroed_path.grad()));
}
