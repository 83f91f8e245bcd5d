// The forward engine's per-layer path, on any device (a GPU wants the whole batch at once): each
// layer is one matrix product over all points and streams and one element-wise node, whose
// step is one autograd node with a hand-written backward: autograd would otherwise record a
// dozen element-wise nodes per layer and replay them all in the backward.
#include "kernels/elementwise.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor {

namespace detail {

void streams_forward_generic(const torch::Tensor& pre, const std::vector<torch::Tensor>& d,
                             const StreamShape& shape, torch::Tensor& out) {
  const int64_t firsts = shape.firsts, seconds = static_cast<int64_t>(shape.pairs.size());
  out.select(0, 0).copy_(d[0]);
  if (firsts > 0) {
    auto first = out.narrow(0, 1, firsts);
    torch::mul_out(first, pre.narrow(0, 1, firsts), d[1]);
  }
  if (seconds > 0) {
    std::vector<int64_t> p, q;
    for (const auto& [a, b] : shape.pairs) p.push_back(1 + a), q.push_back(1 + b);
    const auto index = torch::TensorOptions().dtype(torch::kLong).device(pre.device());
    const auto zp = pre.index_select(0, torch::tensor(p, index));
    const auto zq = pre.index_select(0, torch::tensor(q, index));
    out.narrow(0, 1 + firsts, seconds)
        .copy_(d[2] * zp * zq + d[1] * pre.narrow(0, 1 + firsts, seconds));
  }
  for (std::size_t k = 0; k < shape.laplacians.size(); ++k) {
    const int64_t stream = 1 + firsts + seconds + static_cast<int64_t>(k);
    auto squares = torch::zeros_like(d[1]);
    for (int64_t a : shape.laplacians[k]) squares += pre.select(0, 1 + a) * pre.select(0, 1 + a);
    out.select(0, stream).copy_(d[2] * squares + d[1] * pre.select(0, stream));
  }
}

void streams_backward_generic(const torch::Tensor& grad, const torch::Tensor& pre,
                              const std::vector<torch::Tensor>& d, const StreamShape& shape,
                              torch::Tensor& grad_pre) {
  const int64_t firsts = shape.firsts, seconds = static_cast<int64_t>(shape.pairs.size());
  auto value = grad.select(0, 0) * d[1];
  if (firsts > 0) {
    const auto g = grad.narrow(0, 1, firsts);
    grad_pre.narrow(0, 1, firsts).copy_(g * d[1]);
    value += (g * pre.narrow(0, 1, firsts)).sum(0) * d[2];
  }
  if (seconds > 0) {
    std::vector<int64_t> p, q;
    for (const auto& [a, b] : shape.pairs) p.push_back(a), q.push_back(b);
    const auto index = torch::TensorOptions().dtype(torch::kLong).device(pre.device());
    const auto p_index = torch::tensor(p, index), q_index = torch::tensor(q, index);
    const auto firsts_pre = pre.narrow(0, 1, firsts);
    const auto zp = firsts_pre.index_select(0, p_index), zq = firsts_pre.index_select(0, q_index);
    const auto g = grad.narrow(0, 1 + firsts, seconds);
    grad_pre.narrow(0, 1 + firsts, seconds).copy_(g * d[1]);
    const auto g2 = g * d[2];
    // Pair j's terms added to its two first-order streams one pair after the other, in
    // index_add's order: a CUDA index_add with repeated indices adds by atomics, in no fixed
    // order, and the determinism rule holds on GPUs too.
    auto first_grads = grad_pre.narrow(0, 1, firsts);
    const auto to_p = g2 * zq, to_q = g2 * zp;
    for (int64_t j = 0; j < seconds; ++j) first_grads[p[static_cast<std::size_t>(j)]] += to_p[j];
    for (int64_t j = 0; j < seconds; ++j) first_grads[q[static_cast<std::size_t>(j)]] += to_q[j];
    value += (g * zp * zq).sum(0) * d[3] + (g * pre.narrow(0, 1 + firsts, seconds)).sum(0) * d[2];
  }
  for (std::size_t k = 0; k < shape.laplacians.size(); ++k) {
    const int64_t stream = 1 + firsts + seconds + static_cast<int64_t>(k);
    const auto g = grad.select(0, stream);
    grad_pre.select(0, stream).copy_(g * d[1]);
    auto squares = torch::zeros_like(g);
    for (int64_t a : shape.laplacians[k]) {
      const auto za = pre.select(0, 1 + a);
      squares += za * za;
      grad_pre.select(0, 1 + a).add_(2 * g * d[2] * za);
    }
    value += g * (d[3] * squares + d[2] * pre.select(0, stream));
  }
  grad_pre.select(0, 0).copy_(value);
}

}  // namespace detail

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The step without autograd, from the value stream's primitives.
torch::Tensor streams_forward(nn::Activation activation, const torch::Tensor& pre,
                              const std::vector<torch::Tensor>& primitives,
                              const detail::StreamShape& shape, bool fused) {
  auto out = torch::empty_like(pre);
  if (fused)
    detail::streams_forward_cpu(activation, pre, primitives, shape, out);
  else
    detail::streams_forward_generic(pre, derivatives_from_primitives(activation, primitives, 2),
                                    shape, out);
  return out;
}

// Non-tensor arguments travel through saved_data, the shape encoded (detail::encode).
class ActivateStreams : public torch::autograd::Function<ActivateStreams> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& pre,
                               const torch::Tensor& bias, int64_t activation,
                               std::vector<int64_t> shape_code, bool fused) {
    const auto activation_kind = static_cast<nn::Activation>(activation);
    const auto primitives = activation_primitives(activation_kind, pre.select(0, 0) + bias);
    // The backward needs the primitives, not z: it evaluates no transcendental function.
    std::vector<torch::Tensor> saved{pre};
    saved.insert(saved.end(), primitives.begin(), primitives.end());
    ctx->save_for_backward(saved);
    ctx->saved_data["activation"] = activation;
    ctx->saved_data["shape"] = shape_code;
    ctx->saved_data["fused"] = fused;
    return streams_forward(activation_kind, pre, primitives, detail::decode(shape_code), fused);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    // The loop writes through raw pointers and treats sigma^(m) as constants: a second
    // backward through it would be silently wrong, so it is refused.
    TESSERA_CHECK(!torch::GradMode::is_enabled(),
                  "the forward (Taylor) derivative engine supports first-order backward only; "
                  "use training.derivatives = \"autograd\" for higher-order gradients");
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& pre = saved[0];
    const auto shape = detail::decode(ctx->saved_data["shape"].toIntVector());
    const auto activation = static_cast<nn::Activation>(ctx->saved_data["activation"].toInt());
    const std::vector<torch::Tensor> primitives(saved.begin() + 1, saved.end());
    const auto grad = grads[0].contiguous();
    auto grad_pre = torch::empty_like(pre);
    if (ctx->saved_data["fused"].toBool())
      detail::streams_backward_cpu(activation, grad, pre, primitives, shape, grad_pre);
    else
      detail::streams_backward_generic(
          grad, pre, derivatives_from_primitives(activation, primitives, 3), shape, grad_pre);
    auto grad_bias = grad_pre.select(0, 0).sum(0);
    return {grad_pre, grad_bias, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor activate_streams(nn::Activation activation, const torch::Tensor& pre,
                               const torch::Tensor& bias, const StreamLayout& layout,
                               Kernel kernel) {
  TESSERA_ASSERT(
      pre.dim() == 3 && pre.size(0) == layout.count(),
      "activate_streams: pre must be [" << layout.count() << ", n, width], got " << pre.sizes());
  TESSERA_ASSERT(bias.dim() == 1 && bias.size(0) == pre.size(2),
                 "activate_streams: bias must be [width]");
  const auto input = pre.contiguous();
  const bool fused = kernel == Kernel::automatic && detail::cpu_kernel_applies(input);
  if (torch::GradMode::is_enabled() && (input.requires_grad() || bias.requires_grad())) {
    return ActivateStreams::apply(input, bias, static_cast<int64_t>(activation),
                                  detail::encode(detail::shape_of(layout)), fused);
  }
  return streams_forward(activation, input,
                         activation_primitives(activation, input.select(0, 0) + bias),
                         detail::shape_of(layout), fused);
}

torch::Tensor linear_streams(const torch::Tensor& h, const torch::Tensor& weight) {
  const int64_t streams = h.size(0), n = h.size(1);
  return torch::mm(h.reshape({streams * n, h.size(2)}), weight.t())
      .view({streams, n, weight.size(0)});
}

torch::Tensor add_output_bias(const torch::Tensor& out, const torch::Tensor& bias) {
  return torch::cat({(out.select(0, 0) + bias).unsqueeze(0), out.narrow(0, 1, out.size(0) - 1)});
}

torch::Tensor network_streams_per_layer(const torch::Tensor& features,
                                        const std::vector<torch::Tensor>& weights,
                                        const std::vector<torch::Tensor>& biases,
                                        nn::Activation activation, const StreamLayout& layout,
                                        Kernel kernel) {
  torch::Tensor h = features;
  for (std::size_t layer = 0; layer + 1 < weights.size(); ++layer)
    h = activate_streams(activation, linear_streams(h, weights[layer]), biases[layer], layout,
                         kernel);
  return add_output_bias(linear_streams(h, weights.back()), biases.back());
}

}  // namespace tessera::autodiff::taylor
