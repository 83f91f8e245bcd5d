// Optimizer state survives a save and load exactly: an optimizer restored from the archive
// takes the same next steps as the original (the basis of bit-identical restarts).
#include <doctest/doctest.h>

#include <sstream>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/optimizer_state.hpp"

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
