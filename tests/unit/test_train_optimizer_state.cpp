// Optimizer state survives a save and load exactly: an optimizer restored from the archive
// takes the same next steps as the original (the basis of bit-identical restarts).
#include <doctest/doctest.h>

#include <limits>
#include <sstream>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/divergence_guard.hpp"
#include "tessera/train/fused_adam.hpp"
#include "tessera/train/optimizer_state.hpp"
#include "tessera/train/quasi_newton.hpp"

namespace {

/// A small least-squares-like problem with curvature, so a quasi-Newton method learns some.
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

TEST_CASE("the quasi-Newton methods continue identically from their saved inverse Hessian") {
  using tessera::train::QuasiNewton;
  using tessera::train::QuasiNewtonOptions;
  using tessera::train::QuasiNewtonUpdate;
  // Dense (BFGS, SSBroyden) and on 4 curvature pairs (L-BFGS), whose history fills and then
  // drops its oldest pairs within the steps.
  for (const auto& options : {QuasiNewtonOptions(QuasiNewtonUpdate::bfgs).max_iter(3),
                              QuasiNewtonOptions(QuasiNewtonUpdate::ssbroyden).max_iter(3),
                              QuasiNewtonOptions(QuasiNewtonUpdate::bfgs).max_iter(3).memory(4)}) {
    check_continues_identically<QuasiNewton>(options, 2);
    check_continues_identically<QuasiNewton>(options, 0);  // saved before any step
  }
}

TEST_CASE("Adam continues identically from its saved moments") {
  check_continues_identically<torch::optim::Adam>(torch::optim::AdamOptions(0.01), 5);
}

TEST_CASE("FusedAdam continues identically from its saved moments, and from LibTorch Adam's") {
  check_continues_identically<tessera::train::FusedAdam>(torch::optim::AdamOptions(0.01), 5);
  // Its state is LibTorch's: moments saved by torch::optim::Adam load into FusedAdam.
  Problem problem;
  auto p1 = torch::ones({3}, torch::kFloat64).set_requires_grad(true);
  torch::optim::Adam plain({p1}, torch::optim::AdamOptions(0.01));
  for (int k = 0; k < 4; ++k) {
    plain.zero_grad();
    problem.loss(p1).backward();
    plain.step();
  }
  auto p2 = p1.detach().clone().set_requires_grad(true);
  tessera::train::FusedAdam fused({p2}, torch::optim::AdamOptions(0.01));
  copy_state(plain, fused);
  for (int k = 0; k < 3; ++k) {
    for (auto* p : {&p1, &p2})
      if (p->grad().defined()) p->grad().zero_();
    problem.loss(p1).backward();
    problem.loss(p2).backward();
    plain.step();
    fused.step();
  }
  CHECK(torch::allclose(p1, p2, 0, 1e-14));
}

TEST_CASE("FusedAdam takes LibTorch Adam's steps for every dtype and option") {
  struct Setting {
    torch::Dtype dtype;
    torch::optim::AdamOptions options;
    bool contiguous;
  };
  const std::vector<Setting> settings{
      {torch::kFloat64, torch::optim::AdamOptions(1e-2), true},
      {torch::kFloat32, torch::optim::AdamOptions(1e-3).betas({0.8, 0.99}).eps(1e-6), true},
      // LibTorch's own step: weight decay, AMSGrad, a non-contiguous parameter.
      {torch::kFloat64, torch::optim::AdamOptions(1e-2).weight_decay(0.1), true},
      {torch::kFloat64, torch::optim::AdamOptions(1e-2).amsgrad(true), true},
      {torch::kFloat64, torch::optim::AdamOptions(1e-2), false}};
  for (const auto& setting : settings) {
    torch::manual_seed(11);
    auto start = torch::randn({6, 5}, setting.dtype);
    if (!setting.contiguous) start = start.t();
    auto a = start.clone().set_requires_grad(true), b = start.clone().set_requires_grad(true);
    torch::optim::Adam plain({a}, setting.options);
    tessera::train::FusedAdam fused({b}, setting.options);
    for (int k = 0; k < 20; ++k) {
      const auto grad = torch::randn(start.sizes(), setting.dtype) * (k + 1);
      a.mutable_grad() = grad.clone();
      b.mutable_grad() = grad.clone();
      plain.step();
      fused.step();
    }
    const double tolerance = setting.dtype == torch::kFloat64 ? 1e-14 : 1e-6;
    CHECK_FALSE(torch::equal(a, start));
    CHECK(torch::allclose(a, b, 0, tolerance));
  }
}

namespace {

bool finite(const std::vector<torch::Tensor>& parameters) {
  return tessera::train::finite_gradients(parameters).item<bool>();
}

}  // namespace

TEST_CASE("the divergence guard sees a NaN or an infinity in any gradient, on every path") {
  for (auto dtype : {torch::kFloat32, torch::kFloat64}) {
    auto a = torch::zeros({3, 4}, dtype).requires_grad_(true);
    auto b = torch::zeros({5}, dtype).requires_grad_(true);
    auto unused = torch::zeros({2}, dtype).requires_grad_(true);  // no gradient: ignored
    a.mutable_grad() = torch::ones({3, 4}, dtype);
    b.mutable_grad() = torch::ones({5}, dtype);
    CHECK(finite({a, b, unused}));
    b.mutable_grad()[4] = std::numeric_limits<double>::quiet_NaN();
    CHECK_FALSE(finite({a, b, unused}));
    b.mutable_grad()[4] = 1;
    a.mutable_grad()[2][3] = -std::numeric_limits<double>::infinity();
    CHECK_FALSE(finite({a, b}));
    // a non-contiguous gradient is checked too
    a.mutable_grad() = torch::ones({4, 3}, dtype).t();
    CHECK(finite({a, b}));
    a.mutable_grad()[0][1] = std::numeric_limits<double>::quiet_NaN();
    CHECK_FALSE(finite({a, b}));
  }
  CHECK(finite({}));
}

TEST_CASE("a masked Adam step is LibTorch's step where allowed and no change where not") {
  // Contiguous: the fused loop, which reads the flag as a kernel would; transposed: the tensor
  // route that a GPU takes, every update computed and kept where the flag holds.
  for (const bool contiguous : {true, false}) {
    CAPTURE(contiguous);
    torch::manual_seed(5);
    auto start = torch::randn({4, 3}, torch::kFloat64);
    if (!contiguous) start = start.t();
    auto a = start.clone().set_requires_grad(true), b = start.clone().set_requires_grad(true);
    torch::optim::Adam plain({a}, torch::optim::AdamOptions(1e-2));
    tessera::train::FusedAdam masked({b}, torch::optim::AdamOptions(1e-2));
    const auto yes = torch::scalar_tensor(true, torch::kBool);
    const auto no = torch::scalar_tensor(false, torch::kBool);
    for (int k = 0; k < 6; ++k) {
      const auto grad = torch::randn(start.sizes(), torch::kFloat64) * (k + 1);
      a.mutable_grad() = grad.clone();
      b.mutable_grad() = grad.clone();
      plain.step();
      masked.step_where(yes);
    }
    CHECK(torch::allclose(a, b, 0, 1e-15));
    const auto before = b.detach().clone();
    const auto& state = masked.state();
    const auto& moments = static_cast<const torch::optim::AdamParamState&>(*state.begin()->second);
    const auto average = moments.exp_avg().clone();
    b.mutable_grad() =
        torch::full(start.sizes(), std::numeric_limits<double>::quiet_NaN(), torch::kFloat64);
    masked.step_where(no);
    CHECK(torch::equal(b.detach(), before));
    CHECK(torch::equal(moments.exp_avg(), average));
  }
}
