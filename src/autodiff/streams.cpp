// The per-layer element-wise step of the forward engine as one autograd node: autograd would
// otherwise record a dozen element-wise nodes per layer and replay them all in the backward.
#include <algorithm>
#include <map>

#include "kernels/elementwise.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor {

int64_t StreamLayout::first_stream(int axis) const {
  const auto it = std::find(axes.begin(), axes.end(), axis);
  return it == axes.end() ? -1 : 1 + (it - axes.begin());
}

int64_t StreamLayout::second_stream(int i, int j) const {
  const int64_t a = first_stream(std::min(i, j)) - 1, b = first_stream(std::max(i, j)) - 1;
  if (a < 0 || b < 0) return -1;
  const auto it = std::find(pairs.begin(), pairs.end(), std::make_pair(int(a), int(b)));
  return it == pairs.end() ? -1 : 1 + static_cast<int64_t>(axes.size() + (it - pairs.begin()));
}

int64_t StreamLayout::laplacian_stream(const std::vector<int>& axes_summed) const {
  std::vector<int> positions;
  for (int axis : axes_summed) {
    const int64_t stream = first_stream(axis);
    if (stream < 0) return -1;
    positions.push_back(static_cast<int>(stream - 1));
  }
  std::sort(positions.begin(), positions.end());
  const auto it = std::find(laplacians.begin(), laplacians.end(), positions);
  return it == laplacians.end()
             ? -1
             : 1 + static_cast<int64_t>(axes.size() + pairs.size() + (it - laplacians.begin()));
}

int64_t StreamLayout::stream_of(const Partial& p) const {
  if (p.wrt.empty()) return 0;
  if (p.laplacian) return laplacian_stream(p.wrt);
  return p.wrt.size() == 1 ? first_stream(p.wrt[0]) : second_stream(p.wrt[0], p.wrt[1]);
}

StreamLayout stream_layout(const std::set<Partial>& requested) {
  std::set<int> axes;
  std::set<std::pair<int, int>> pairs;
  std::set<std::vector<int>> laplacians;
  for (const auto& p : requested) {
    TESSERA_CHECK(p.order() <= 2,
                  "forward engine: derivatives of order " << p.order() << " are not supported");
    axes.insert(p.wrt.begin(), p.wrt.end());
    if (p.laplacian)
      laplacians.insert(p.wrt);
    else if (p.wrt.size() == 2)
      pairs.insert({std::min(p.wrt[0], p.wrt[1]), std::max(p.wrt[0], p.wrt[1])});
  }
  StreamLayout layout;
  layout.axes.assign(axes.begin(), axes.end());
  for (const auto& [i, j] : pairs)
    layout.pairs.emplace_back(static_cast<int>(layout.first_stream(i) - 1),
                              static_cast<int>(layout.first_stream(j) - 1));
  for (const auto& summed : laplacians) {
    layout.laplacians.emplace_back();
    for (int axis : summed)
      layout.laplacians.back().push_back(static_cast<int>(layout.first_stream(axis) - 1));
    // laplacian_stream compares sorted positions
    std::sort(layout.laplacians.back().begin(), layout.laplacians.back().end());
  }
  return layout;
}

namespace detail {

StreamShape shape_of(const StreamLayout& layout) {
  StreamShape shape;
  shape.firsts = static_cast<int64_t>(layout.axes.size());
  for (const auto& [a, b] : layout.pairs) shape.pairs.emplace_back(a, b);
  for (const auto& summed : layout.laplacians)
    shape.laplacians.emplace_back(summed.begin(), summed.end());
  return shape;
}

std::vector<int64_t> encode(const StreamShape& shape) {
  std::vector<int64_t> code{shape.firsts, static_cast<int64_t>(shape.pairs.size())};
  for (const auto& [a, b] : shape.pairs) code.insert(code.end(), {a, b});
  code.push_back(static_cast<int64_t>(shape.laplacians.size()));
  for (const auto& summed : shape.laplacians) {
    code.push_back(static_cast<int64_t>(summed.size()));
    code.insert(code.end(), summed.begin(), summed.end());
  }
  return code;
}

StreamShape decode(const std::vector<int64_t>& code) {
  StreamShape shape;
  std::size_t at = 0;
  shape.firsts = code.at(at++);
  for (int64_t k = code.at(at++); k > 0; --k, at += 2)
    shape.pairs.emplace_back(code.at(at), code.at(at + 1));
  for (int64_t k = code.at(at++); k > 0; --k) {
    const auto size = static_cast<std::size_t>(code.at(at++));
    TESSERA_ASSERT(at + size <= code.size(), "taylor shape code: a Laplacian runs past the end");
    shape.laplacians.emplace_back(code.begin() + static_cast<std::ptrdiff_t>(at),
                                  code.begin() + static_cast<std::ptrdiff_t>(at + size));
    at += size;
  }
  return shape;
}

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
    auto first_grads = grad_pre.narrow(0, 1, firsts);
    first_grads.index_add_(0, p_index, g2 * zq);
    first_grads.index_add_(0, q_index, g2 * zp);
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

StreamLayout checked_layout(bool supported, const torch::Tensor& x, int64_t inputs,
                            const std::set<Partial>& requested) {
  TESSERA_CHECK(supported,
                "forward engine: a requested partial has order > 2 or names a missing output "
                "or input");
  TESSERA_ASSERT(x.dim() == 2 && x.size(1) == inputs,
                 "taylor_partials: x must be [n, " << inputs << "], got " << x.sizes());
  return stream_layout(requested);
}

Partials partials_from_streams(const torch::Tensor& out, const StreamLayout& layout,
                               const std::set<Partial>& requested) {
  // Split once (one backward node for all partials) rather than select each partial (two
  // nodes apiece, each zero-filling the whole output in the backward).
  const auto streams = out.unbind(0);
  const int64_t outputs = out.size(2);
  std::map<int64_t, std::vector<torch::Tensor>> columns;
  Partials result;
  for (const auto& p : requested) {
    const int64_t stream = layout.stream_of(p);
    TESSERA_ASSERT(stream >= 0, "forward engine: no stream holds a requested partial");
    const auto& s = streams[static_cast<std::size_t>(stream)];
    if (outputs == 1) {
      result[p] = s.reshape({s.size(0)});
      continue;
    }
    auto& split = columns[stream];
    if (split.empty()) split = s.unbind(1);
    result[p] = split[static_cast<std::size_t>(p.output)];
  }
  return result;
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
