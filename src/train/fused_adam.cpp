#include "tessera/train/fused_adam.hpp"

#include <ATen/Dispatch.h>

#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/optimizer_state.hpp"

namespace tessera::train {

namespace {

bool fusable_tensor(const torch::Tensor& t) {
  return t.device().is_cpu() && t.is_contiguous() && !t.is_sparse() &&
         (t.scalar_type() == torch::kFloat32 || t.scalar_type() == torch::kFloat64);
}

// LibTorch's Adam::step for one parameter, as one loop:
//   m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g^2,
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
template <typename T>
void adam_update(T* p, const T* g, T* m, T* v, int64_t n, T beta1, T beta2, T step_size,
                 T sqrt_correction2, T eps) {
  for (int64_t i = 0; i < n; ++i) {
    m[i] = m[i] * beta1 + g[i] * (1 - beta1);
    v[i] = v[i] * beta2 + g[i] * g[i] * (1 - beta2);
    p[i] -= step_size * m[i] / (std::sqrt(v[i]) / sqrt_correction2 + eps);
  }
}

}  // namespace

torch::optim::AdamParamState& FusedAdam::advance(const torch::Tensor& p) {
  using Key = typename std::decay_t<decltype(state())>::key_type;
  auto& slot = state()[state_key<Key>(p)];
  if (!slot) {
    auto fresh = std::make_unique<torch::optim::AdamParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    slot = std::move(fresh);
  }
  auto& moments = static_cast<torch::optim::AdamParamState&>(*slot);
  moments.step(moments.step() + 1);
  return moments;
}

bool FusedAdam::fusable() const {
  for (const auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    if (options.weight_decay() != 0 || options.amsgrad()) return false;
    for (const auto& p : group.params())
      if (!fusable_tensor(p) || (p.grad().defined() && (!fusable_tensor(p.grad()) ||
                                                        p.grad().scalar_type() != p.scalar_type())))
        return false;
  }
  return true;
}

torch::Tensor FusedAdam::step(LossClosure closure) {
  if (!fusable()) return torch::optim::Adam::step(std::move(closure));
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    const auto [beta1, beta2] = options.betas();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& moments = advance(p);
      const double correction1 = 1 - std::pow(beta1, static_cast<double>(moments.step()));
      const double correction2 = 1 - std::pow(beta2, static_cast<double>(moments.step()));
      AT_DISPATCH_FLOATING_TYPES(p.scalar_type(), "fused_adam", [&] {
        adam_update<scalar_t>(
            p.data_ptr<scalar_t>(), p.grad().data_ptr<scalar_t>(),
            moments.exp_avg().data_ptr<scalar_t>(), moments.exp_avg_sq().data_ptr<scalar_t>(),
            p.numel(), static_cast<scalar_t>(beta1), static_cast<scalar_t>(beta2),
            static_cast<scalar_t>(options.lr() / correction1),
            static_cast<scalar_t>(std::sqrt(correction2)), static_cast<scalar_t>(options.eps()));
      });
    }
  }
  return loss;
}

void FusedAdam::step_where(const torch::Tensor& ok) {
  if (fusable()) {
    if (*ok.to(torch::kBool).data_ptr<bool>()) step();
    return;
  }
  // LibTorch's update (without weight decay and AMSGrad, which Tessera does not set), each
  // result kept where `ok` holds.
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    TESSERA_ASSERT(options.weight_decay() == 0 && !options.amsgrad(),
                   "masked Adam steps take neither weight decay nor AMSGrad");
    const auto [beta1, beta2] = options.betas();
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& moments = advance(p);
      const double correction1 = 1 - std::pow(beta1, static_cast<double>(moments.step()));
      const double correction2 = 1 - std::pow(beta2, static_cast<double>(moments.step()));
      const auto& g = p.grad();
      auto m = moments.exp_avg().mul(beta1).add_(g, 1 - beta1);
      auto v = moments.exp_avg_sq().mul(beta2).addcmul_(g, g, 1 - beta2);
      const auto denominator = (v.sqrt() / std::sqrt(correction2)).add_(options.eps());
      const auto stepped = p.addcdiv(m, denominator, -options.lr() / correction1);
      moments.exp_avg().copy_(torch::where(ok, m, moments.exp_avg()));
      moments.exp_avg_sq().copy_(torch::where(ok, v, moments.exp_avg_sq()));
      p.copy_(torch::where(ok, stepped, p));
    }
  }
}

}  // namespace tessera::train
