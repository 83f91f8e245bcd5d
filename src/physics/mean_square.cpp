// The mean of squares that every equation and condition term is made of, as one autograd node.
// Through pow and mean, autograd records two backward nodes that expand the gradient, divide
// it, copy r and double it, then multiply: five operations on every term of every iteration.
// Here the backward is the same product, (g / n) (2 r), formed in one pass on the CPU, so the
// gradients are the same bits.
#include <ATen/Dispatch.h>

#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/loss_group.hpp"

namespace tessera::physics {

namespace {

struct MeanSquare : torch::autograd::Function<MeanSquare> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& r) {
    ctx->save_for_backward({r});
    return r.pow(2).mean();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto r = ctx->get_saved_variables()[0];
    const auto& g = grads[0];
    // A graph of the backward (double backward), another device or layout: the same product in
    // tensor operations.
    if (torch::GradMode::is_enabled() || !r.device().is_cpu() || !r.is_contiguous() ||
        !g.device().is_cpu() || g.scalar_type() != r.scalar_type() ||
        (r.scalar_type() != torch::kFloat32 && r.scalar_type() != torch::kFloat64))
      return {(g / r.numel()) * (2 * r)};
    auto out = torch::empty_like(r, torch::MemoryFormat::Contiguous);
    AT_DISPATCH_FLOATING_TYPES(r.scalar_type(), "mean_square_backward", [&] {
      // The mean's backward: g / n, with n converted to the tensor's type as autograd's does.
      const scalar_t q = *g.data_ptr<scalar_t>() / static_cast<scalar_t>(r.numel());
      const scalar_t* in = r.data_ptr<scalar_t>();
      scalar_t* o = out.data_ptr<scalar_t>();
      for (int64_t i = 0, n = r.numel(); i < n; ++i) o[i] = q * (scalar_t(2) * in[i]);
    });
    return {out};
  }
};

}  // namespace

torch::Tensor mean_square(const torch::Tensor& residual) {
  if (residual.numel() == 0) return torch::zeros({}, residual.options());
  return MeanSquare::apply(residual);
}

}  // namespace tessera::physics
