// The divergence guard puts a network back to its last good state, halves its learning rate,
// and ends the job on the third divergence.
#include <doctest/doctest.h>

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/divergence_guard.hpp"
#include "tessera/train/gradient_clipping.hpp"

using namespace tessera;

namespace {

struct Network {
  torch::Tensor w = torch::tensor({1.0, 2.0}, torch::kFloat64).set_requires_grad(true);
  torch::optim::Adam optimizer{{w}, torch::optim::AdamOptions(0.1)};
  void step() {
    optimizer.zero_grad();
    w.pow(2).sum().backward();
    optimizer.step();
  }
};

}  // namespace

TEST_CASE("a roll-back restores parameters and optimizer state and halves the learning rate") {
  Network net;
  train::DivergenceGuard guard;
  guard.resize(1);
  net.step();
  const auto good = net.w.detach().clone();
  guard.remember(0, {net.w}, net.optimizer, 7);
  net.step();
  net.step();
  REQUIRE_FALSE(torch::equal(net.w.detach(), good));

  const std::string warning = guard.roll_back(0, 3, 9, " walls", {net.w}, net.optimizer);
  CHECK(torch::equal(net.w.detach(), good));
  CHECK(guard.lr_factor(0) == 0.5);
  CHECK(guard.failures(0) == 1);
  CHECK(warning.find("subdomain 3 at iteration 9, term(s): walls") != std::string::npos);
  CHECK(warning.find("rolled back to iteration 7") != std::string::npos);

  // The restored optimizer takes the same step as one that never went further.
  Network twin;
  twin.step();
  twin.step();
  net.step();
  CHECK(torch::allclose(net.w.detach(), twin.w.detach(), 0, 0));
}

TEST_CASE("the third divergence ends the job with a message naming subdomain and terms") {
  Network net;
  train::DivergenceGuard guard;
  guard.resize(2);
  guard.remember(1, {net.w}, net.optimizer, 0);
  guard.roll_back(1, 5, 10, " pde", {net.w}, net.optimizer);
  guard.roll_back(1, 5, 20, " pde", {net.w}, net.optimizer);
  CHECK(guard.lr_factor(1) == 0.25);
  std::string message;
  try {
    guard.roll_back(1, 5, 30, " pde", {net.w}, net.optimizer);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK(message.find("subdomain 5 at iteration 30, term(s): pde") != std::string::npos);
  CHECK(message.find("--restart latest") != std::string::npos);
  CHECK(guard.lr_factor(0) == 1.0);  // the other network is untouched
}

TEST_CASE("restored counters carry over from a checkpoint") {
  train::DivergenceGuard guard;
  guard.resize(1);
  guard.restore(0, 0.25, 2);
  CHECK(guard.lr_factor(0) == 0.25);
  CHECK(guard.failures(0) == 2);
}

TEST_CASE("the guard keeps each network's first failing iteration and reads it once") {
  train::DivergenceGuard guard;
  guard.resize(3);
  CHECK(guard.take_failures() == std::vector<int64_t>{-1, -1, -1});  // nothing watched
  const auto flags = [](std::vector<bool> ok) {
    auto t = torch::empty({static_cast<int64_t>(ok.size())}, torch::kBool);
    for (std::size_t i = 0; i < ok.size(); ++i) t[static_cast<int64_t>(i)] = bool(ok[i]);
    return t;
  };
  const auto reads = core::host_reads();
  guard.watch(flags({true, true, true}), 5);
  guard.watch(flags({true, false, true}), 6);
  guard.watch(flags({false, false, true}), 7);
  CHECK(core::host_reads() == reads);  // watching reads nothing
  CHECK(guard.take_failures() == std::vector<int64_t>{7, 6, -1});
  CHECK(core::host_reads() == reads + 1);
  CHECK(guard.take_failures() == std::vector<int64_t>{-1, -1, -1});  // forgotten once taken
}

TEST_CASE("clipping on the device gives LibTorch's clipped gradients bit for bit") {
  for (const double max_norm : {0.5, 1e3}) {
    CAPTURE(max_norm);
    torch::manual_seed(3);
    auto a = torch::randn({7, 5}).requires_grad_(true), b = torch::randn({5}).requires_grad_(true);
    auto c = a.detach().clone().requires_grad_(true), d = b.detach().clone().requires_grad_(true);
    const auto ga = torch::randn({7, 5}), gb = torch::randn({5});
    a.mutable_grad() = ga.clone();
    b.mutable_grad() = gb.clone();
    c.mutable_grad() = ga.clone();
    d.mutable_grad() = gb.clone();
    torch::nn::utils::clip_grad_norm_(std::vector<torch::Tensor>{a, b}, max_norm);
    const auto reads = core::host_reads();
    train::clip_gradient_norm({c, d}, max_norm);
    CHECK(core::host_reads() == reads);
    CHECK(torch::equal(a.grad(), c.grad()));
    CHECK(torch::equal(b.grad(), d.grad()));
    CHECK(torch::equal(a.grad(), ga) == (max_norm > 100));  // clipped only below the norm
  }
}
