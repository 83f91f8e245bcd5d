// The forward engine on a CPU: the whole MLP as one autograd node that takes a block of points
// through every layer while the block's streams sit in cache. Per layer and block: the
// register-tiled product (taylor_gemm.hpp) with the bias folded into the value stream, the
// activation's primitives for the value rows, the fused element-wise step. The backward walks
// the layers in reverse the same way. One node instead of a matrix product, an element-wise node
// and a handful of views per layer per block; profiled on the seed problem, the per-layer path
// spent 9 % of its time zeroing BLAS outputs and 12 % packing BLAS operands.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>

#include "taylor_gemm.hpp"
#include "taylor_kernels.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor {

namespace {

using detail::gemm;
using detail::lanes;
using detail::padded_width;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Points per block (TESSERA_TAYLOR_BLOCK overrides, for tuning): about 400 rows over all
// streams keep a layer's input, pre-activation, primitives and output within a 512 KiB L2.
int64_t block_points(int64_t streams) {
  static const int64_t forced = [] {
    const char* text = std::getenv("TESSERA_TAYLOR_BLOCK");
    return text ? std::max<int64_t>(std::atoll(text), 1) : int64_t{0};
  }();
  return forced > 0 ? forced : std::max<int64_t>(400 / streams, 8);
}

// t with its last dimension widened to `width` by zero columns.
torch::Tensor widened(const torch::Tensor& t, int64_t width) {
  auto sizes = t.sizes().vec();
  sizes.back() = width;
  auto out = torch::zeros(sizes, t.options());
  out.narrow(-1, 0, t.size(-1)).copy_(t);
  return out;
}

// One layer's operands in the kernels' padded layout.
struct Layer {
  int64_t in = 0, out = 0, in_padded = 0, out_padded = 0;
  torch::Tensor transposed;  // W^T [in, out_padded], for the forward product
  torch::Tensor weight;      // W [out, in_padded], for the input gradient
  torch::Tensor bias;        // [out_padded]
};

template <typename T>
std::vector<Layer> pack(at::TensorList parameters) {
  std::vector<Layer> layers;
  for (std::size_t k = 0; k + 1 < parameters.size(); k += 2) {
    const auto w = parameters[k].detach().contiguous(), b = parameters[k + 1].detach();
    Layer layer;
    layer.out = w.size(0);
    layer.in = w.size(1);
    layer.out_padded = padded_width<T>(layer.out);
    layer.in_padded = padded_width<T>(layer.in);
    layer.transposed = widened(w.t(), layer.out_padded);
    layer.weight = widened(w, layer.in_padded);
    layer.bias = widened(b, layer.out_padded);
    layers.push_back(std::move(layer));
  }
  return layers;
}

struct Blocks {
  int64_t streams = 0, points = 0, size = 0;
  int64_t count() const { return (points + size - 1) / size; }
};

// What the backward needs from the forward, in the padded layout [K, n, width_padded].
struct Activations {
  std::vector<torch::Tensor> inputs;  // every layer's input streams; inputs[0]: the features
  std::vector<torch::Tensor> pre;     // hidden layers' pre-activations (bias in the value stream)
  std::vector<std::vector<torch::Tensor>> primitives;  // hidden layers' primitives, [n, width]
};

// c_k = a_k . b for each stream k over the block's rows [b0, b0 + m): a is [K, n, a_width],
// c is [K, n, c_width] (whole vectors), b is [steps, c_width].
template <typename T>
void product_per_stream(const Blocks& blocks, int64_t b0, int64_t m, const T* a, int64_t a_width,
                        int64_t steps, const T* b, T* c, int64_t c_width, const T* value_bias) {
  for (int64_t k = 0; k < blocks.streams; ++k) {
    const int64_t row = k * blocks.points + b0;
    gemm(m, c_width / lanes<T>(), steps, a + row * a_width, a_width, 1, b, c_width,
         c + row * c_width, c_width, false, k == 0 ? value_bias : nullptr);
  }
}

template <typename T>
torch::Tensor forward_pass(const std::vector<Layer>& layers, nn::Activation activation,
                           const detail::StreamShape& shape, const Blocks& blocks,
                           Activations& saved) {
  const auto options = saved.inputs[0].options();
  const int64_t K = blocks.streams, n = blocks.points;
  const std::size_t hidden = layers.size() - 1;
  for (std::size_t l = 0; l < hidden; ++l) {
    const int64_t width = layers[l].out_padded;
    saved.pre.push_back(torch::empty({K, n, width}, options));
    saved.inputs.push_back(torch::empty({K, n, width}, options));
    saved.primitives.emplace_back();
    for (int64_t p = 0; p < primitive_count(activation); ++p)
      saved.primitives.back().push_back(torch::empty({n, width}, options));
  }
  auto out = torch::empty({K, n, layers.back().out_padded}, options);
  at::parallel_for(0, blocks.count(), 1, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t b0 = block * blocks.size, m = std::min(blocks.size, n - b0);
      for (std::size_t l = 0; l <= hidden; ++l) {
        const Layer& layer = layers[l];
        T* z = (l == hidden ? out : saved.pre[l]).template data_ptr<T>();
        product_per_stream<T>(blocks, b0, m, saved.inputs[l].template data_ptr<T>(),
                              layer.in_padded, layer.in, layer.transposed.template data_ptr<T>(), z,
                              layer.out_padded, layer.bias.template data_ptr<T>());
        if (l == hidden) break;
        std::vector<torch::Tensor> rows;
        for (const auto& p : saved.primitives[l]) rows.push_back(p.narrow(0, b0, m));
        activation_primitives_into(activation, saved.pre[l].select(0, 0).narrow(0, b0, m), rows);
        const int64_t w = layer.out_padded;
        detail::streams_forward_range<T>(activation, z, detail::pointers<T>(saved.primitives[l]), shape,
                                         n * w, b0 * w, (b0 + m) * w,
                                         saved.inputs[l + 1].template data_ptr<T>());
      }
    }
  });
  return out;
}

// Where each layer's weight and bias gradients sit in one flat buffer.
struct GradientLayout {
  std::vector<int64_t> weight, bias;
  int64_t size = 0;
  explicit GradientLayout(const std::vector<Layer>& layers) {
    for (const auto& layer : layers) {
      weight.push_back(size);
      size += layer.out * layer.in_padded;
      bias.push_back(size);
      size += layer.out_padded;
    }
  }
};

// The parameter gradients [W_0, b_0, W_1, b_1, ...] from the padded output gradient.
template <typename T>
std::vector<torch::Tensor> backward_pass(const std::vector<Layer>& layers, nn::Activation activation,
                                         const detail::StreamShape& shape, const Blocks& blocks,
                                         const Activations& saved, const torch::Tensor& grad_out) {
  const auto options = grad_out.options();
  const int64_t K = blocks.streams, n = blocks.points;
  const std::size_t hidden = layers.size() - 1;
  // The gradient at each hidden layer's output and pre-activation.
  std::vector<torch::Tensor> grad_h, grad_z;
  for (std::size_t l = 0; l < hidden; ++l) {
    grad_h.push_back(torch::empty({K, n, layers[l].out_padded}, options));
    grad_z.push_back(torch::empty({K, n, layers[l].out_padded}, options));
  }
  // Parameter gradients are summed per block, then over blocks in block order, so the result
  // does not depend on how blocks were spread over threads.
  const GradientLayout layout(layers);
  auto partial = torch::zeros({blocks.count(), layout.size}, options);
  at::parallel_for(0, blocks.count(), 1, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t b0 = block * blocks.size, m = std::min(blocks.size, n - b0);
      T* sums = partial.template data_ptr<T>() + block * layout.size;
      for (std::size_t l = layers.size(); l-- > 0;) {
        const Layer& layer = layers[l];
        const int64_t w = layer.out_padded;
        const T* gz = grad_out.template data_ptr<T>();
        if (l < hidden) {
          detail::streams_backward_range<T>(
              activation, saved.pre[l].template data_ptr<T>(), grad_h[l].template data_ptr<T>(),
              detail::pointers<T>(saved.primitives[l]), shape, n * w, b0 * w, (b0 + m) * w,
              grad_z[l].template data_ptr<T>());
          gz = grad_z[l].template data_ptr<T>();
        }
        const T* h = saved.inputs[l].template data_ptr<T>();
        for (int64_t k = 0; k < K; ++k) {
          const int64_t row = k * n + b0;
          gemm(layer.out, layer.in_padded / lanes<T>(), m, gz + row * w, 1, w,
               h + row * layer.in_padded, layer.in_padded, sums + layout.weight[l],
               layer.in_padded, true, static_cast<const T*>(nullptr));
        }
        T* bias = sums + layout.bias[l];
        for (int64_t r = b0; r < b0 + m; ++r)
          for (int64_t j = 0; j < w; ++j) bias[j] += gz[r * w + j];
        if (l > 0)
          product_per_stream<T>(blocks, b0, m, gz, w, layer.out,
                                layer.weight.template data_ptr<T>(),
                                grad_h[l - 1].template data_ptr<T>(), layer.in_padded, nullptr);
      }
    }
  });
  auto total = torch::zeros({layout.size}, options);
  T* sum = total.template data_ptr<T>();
  for (int64_t block = 0; block < blocks.count(); ++block) {
    const T* part = partial.template data_ptr<T>() + block * layout.size;
    for (int64_t j = 0; j < layout.size; ++j) sum[j] += part[j];
  }
  std::vector<torch::Tensor> grads;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Layer& layer = layers[l];
    grads.push_back(total.narrow(0, layout.weight[l], layer.out * layer.in_padded)
                        .view({layer.out, layer.in_padded})
                        .narrow(1, 0, layer.in)
                        .contiguous());
    grads.push_back(total.narrow(0, layout.bias[l], layer.out).clone());
  }
  return grads;
}

torch::Tensor run_forward(const torch::Tensor& features, at::TensorList parameters,
                          nn::Activation activation, const detail::StreamShape& shape,
                          Activations& saved, std::vector<Layer>& layers) {
  const Blocks blocks{features.size(0), features.size(1), block_points(features.size(0))};
  return AT_DISPATCH_FLOATING_TYPES(features.scalar_type(), "taylor_network_forward", [&] {
    layers = pack<scalar_t>(parameters);
    saved.inputs = {widened(features, padded_width<scalar_t>(features.size(2)))};
    return forward_pass<scalar_t>(layers, activation, shape, blocks, saved);
  });
}

// Non-tensor arguments travel through saved_data; pairs flattened as (p0, q0, p1, q1, ...).
// Saved tensors: the parameters, then every layer's input streams, then each hidden layer's
// pre-activation and primitives.
class NetworkStreams : public torch::autograd::Function<NetworkStreams> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& features,
                               at::TensorList parameters, int64_t activation, int64_t firsts,
                               std::vector<int64_t> pairs, int64_t outputs) {
    Activations saved;
    std::vector<Layer> layers;
    const auto out = run_forward(features, parameters, static_cast<nn::Activation>(activation),
                                 detail::shape_from_flat(firsts, pairs), saved, layers);
    std::vector<torch::Tensor> keep(parameters.begin(), parameters.end());
    keep.insert(keep.end(), saved.inputs.begin(), saved.inputs.end());
    for (std::size_t l = 0; l < saved.pre.size(); ++l) {
      keep.push_back(saved.pre[l]);
      keep.insert(keep.end(), saved.primitives[l].begin(), saved.primitives[l].end());
    }
    ctx->save_for_backward(keep);
    ctx->saved_data["activation"] = activation;
    ctx->saved_data["firsts"] = firsts;
    ctx->saved_data["pairs"] = pairs;
    ctx->saved_data["parameters"] = static_cast<int64_t>(parameters.size());
    return out.narrow(2, 0, outputs).contiguous();
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    // The kernels treat the activation's derivatives as constants: a second backward through
    // them would be silently wrong, so it is refused.
    TESSERA_CHECK(!torch::GradMode::is_enabled(),
                  "the forward (Taylor) derivative engine supports first-order backward only; "
                  "use training.derivatives = \"autograd\" for higher-order gradients");
    const auto kept = ctx->get_saved_variables();
    const auto activation = static_cast<nn::Activation>(ctx->saved_data["activation"].toInt());
    const auto shape = detail::shape_from_flat(ctx->saved_data["firsts"].toInt(), ctx->saved_data["pairs"].toIntVector());
    const auto count = static_cast<std::size_t>(ctx->saved_data["parameters"].toInt());
    const std::vector<torch::Tensor> parameters(kept.begin(), kept.begin() + count);
    const std::size_t layer_count = count / 2;
    Activations saved;
    auto next = kept.begin() + count;
    saved.inputs.assign(next, next + layer_count);
    next += layer_count;
    const auto primitives = primitive_count(activation);
    for (std::size_t l = 0; l + 1 < layer_count; ++l) {
      saved.pre.push_back(*next++);
      saved.primitives.emplace_back(next, next + primitives);
      next += primitives;
    }
    const auto& input = saved.inputs[0];
    const Blocks blocks{input.size(0), input.size(1), block_points(input.size(0))};
    auto parameter_grads = AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "taylor_network_backward", [&] {
      const auto layers = pack<scalar_t>(parameters);
      const auto grad_out = widened(grads[0].contiguous(), layers.back().out_padded);
      return backward_pass<scalar_t>(layers, activation, shape, blocks, saved, grad_out);
    });
    variable_list result{torch::Tensor()};
    result.insert(result.end(), parameter_grads.begin(), parameter_grads.end());
    result.resize(result.size() + 4);  // activation, firsts, pairs, outputs
    return result;
  }
};

}  // namespace

torch::Tensor network_streams_cpu(const torch::Tensor& features,
                                  const std::vector<torch::Tensor>& weights,
                                  const std::vector<torch::Tensor>& biases,
                                  nn::Activation activation, const StreamLayout& layout) {
  TORCH_CHECK(features.dim() == 3 && features.size(0) == layout.count(),
              "network_streams_cpu: features must be [", layout.count(), ", n, f], got ",
              features.sizes());
  TORCH_CHECK(detail::cpu_kernel_applies(features), "network_streams_cpu: CPU float32/float64 only");
  std::vector<torch::Tensor> parameters;
  bool needs_graph = false;
  for (std::size_t l = 0; l < weights.size(); ++l) {
    parameters.push_back(weights[l]);
    parameters.push_back(biases[l]);
    needs_graph = needs_graph || weights[l].requires_grad() || biases[l].requires_grad();
  }
  const auto input = features.detach().contiguous();
  const auto pairs = detail::flat_pairs(layout);
  const auto firsts = static_cast<int64_t>(layout.axes.size());
  const int64_t outputs = weights.back().size(0);
  if (torch::GradMode::is_enabled() && needs_graph)
    return NetworkStreams::apply(input, at::TensorList(parameters), static_cast<int64_t>(activation),
                                 firsts, pairs, outputs);
  torch::NoGradGuard no_grad;
  Activations saved;
  std::vector<Layer> layers;
  return run_forward(input, parameters, activation, detail::shape_from_flat(firsts, pairs), saved, layers)
      .narrow(2, 0, outputs)
      .contiguous();
}

}  // namespace tessera::autodiff::taylor
