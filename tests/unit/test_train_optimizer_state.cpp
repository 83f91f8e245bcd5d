// Optimizer state survives a save and load exactly: an optimizer restored from the archive
// takes the same next steps as the original (the basis of bit-identical restarts).
#include <doctest/doctest.h>

#include <limits>
#include <sstream>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/optimizer_state.hpp"
#include "tessera/train/trainer.hpp"

namespace {

/// A small least-squares-like problem with curvature, so L-BFGS builds a history.
struct Problem {
  torch::Tensor x = torch::linspace(-1, 1, 192, torch::kFloat64).view({64, 3});
  torch::Tensor loss(const torch::Tensor& p) const { return x.matmul(p).sin().pow(2).sum(); }
};

/// Saves `from`'s state and loads it into `to` through a byte stream, as a checkpoint file does.
void copy_state(const torch::optim::Optimizer& from, torch::optim::Optimizer& to) {
  torch::serialize::OutputArchive out;
  tessera::train::save_optimizer(from, out);
  std::ostringstream bytes;
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read);
  tessera::train::load_optimizer(to, in);
}

template <typename Optimizer, typename Options>
void check_continues_identically(const Options& options, int steps_before) {
  Problem problem;
  auto p1 = torch::ones({3}, torch::kFloat64).set_requires_grad(true);
  Optimizer original({p1}, options);
  auto closure1 = [&] {
    original.zero_grad();
    auto l = problem.loss(p1);
    l.backward();
    return l;
  };
  for (int k = 0; k < steps_before; ++k) original.step(closure1);
  auto p2 = p1.detach().clone().set_requires_grad(true);
  Optimizer restored({p2}, options);
  copy_state(original, restored);
  auto closure2 = [&] {
    restored.zero_grad();
    auto l = problem.loss(p2);
    l.backward();
    return l;
  };
  for (int k = 0; k < 3; ++k) {
    original.step(closure1);
    restored.step(closure2);
  }
  CHECK(torch::equal(p1, p2));
}

}  // namespace

TEST_CASE("L-BFGS continues identically from its saved history") {
  const auto options = torch::optim::LBFGSOptions(1).max_iter(5).history_size(4).line_search_fn("strong_wolfe");
  check_continues_identically<torch::optim::LBFGS>(options, 2);
  check_continues_identically<torch::optim::LBFGS>(options, 0);  // saved before any step
}

TEST_CASE("Adam continues identically from its saved moments") {
  check_continues_identically<torch::optim::Adam>(torch::optim::AdamOptions(0.01), 5);
}

TEST_CASE("the divergence guard sees a NaN or an infinity in any gradient, on every path") {
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    auto a = torch::zeros({3, 4}, dtype).requires_grad_(true);
    auto b = torch::zeros({5}, dtype).requires_grad_(true);
    auto unused = torch::zeros({2}, dtype).requires_grad_(true);  // no gradient: ignored
    a.mutable_grad() = torch::ones({3, 4}, dtype);
    b.mutable_grad() = torch::ones({5}, dtype);
    CHECK(tessera::train::finite_gradients({a, b, unused}));
    b.mutable_grad()[4] = std::numeric_limits<double>::quiet_NaN();
    CHECK_FALSE(tessera::train::finite_gradients({a, b, unused}));
    b.mutable_grad()[4] = 1;
    a.mutable_grad()[2][3] = -std::numeric_limits<double>::infinity();
    CHECK_FALSE(tessera::train::finite_gradients({a, b}));
    // a non-contiguous gradient takes the tensor path
    a.mutable_grad() = torch::ones({4, 3}, dtype).t();
    CHECK(tessera::train::finite_gradients({a, b}));
    a.mutable_grad()[0][1] = std::numeric_limits<double>::quiet_NaN();
    CHECK_FALSE(tessera::train::finite_gradients({a, b}));
  }
}
