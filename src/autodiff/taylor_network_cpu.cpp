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
#include "taylor_tanh.hpp"
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

// One layer's operands in the kernels' padded layout, pointing into a Packed network's storage.
template <typename T>
struct Layer {
  int64_t in = 0, out = 0, in_padded = 0, out_padded = 0;
  const T* transposed = nullptr;  // W^T [in, out_padded], for the forward product
  const T* weight = nullptr;      // W [out, in_padded], for the input gradient
  const T* bias = nullptr;        // [out_padded]
};

// All layers' operands in one zeroed buffer, filled by plain loops: building them from tensor
// operations (transpose, zeros, narrow, copy per operand) took 4 % of a small-batch iteration.
template <typename T>
struct Packed {
  torch::Tensor storage;
  std::vector<Layer<T>> layers;
};

template <typename T>
Packed<T> pack(at::TensorList parameters) {
  Packed<T> packed;
  std::vector<torch::Tensor> weights, biases;
  int64_t size = 0;
  for (std::size_t k = 0; k + 1 < parameters.size(); k += 2) {
    weights.push_back(parameters[k].detach().contiguous());
    biases.push_back(parameters[k + 1].detach().contiguous());
    Layer<T> layer;
    layer.out = weights.back().size(0);
    layer.in = weights.back().size(1);
    layer.out_padded = padded_width<T>(layer.out);
    layer.in_padded = padded_width<T>(layer.in);
    size += layer.in * layer.out_padded + layer.out * layer.in_padded + layer.out_padded;
    packed.layers.push_back(layer);
  }
  packed.storage = torch::zeros({size}, parameters[0].options().requires_grad(false));
  T* next = packed.storage.template data_ptr<T>();
  for (std::size_t l = 0; l < packed.layers.size(); ++l) {
    Layer<T>& layer = packed.layers[l];
    const T* w = weights[l].template data_ptr<T>();
    const T* b = biases[l].template data_ptr<T>();
    T* transposed = next;
    T* weight = transposed + layer.in * layer.out_padded;
    T* bias = weight + layer.out * layer.in_padded;
    next = bias + layer.out_padded;
    for (int64_t o = 0; o < layer.out; ++o) {
      for (int64_t i = 0; i < layer.in; ++i) {
        transposed[i * layer.out_padded + o] = w[o * layer.in + i];
        weight[o * layer.in_padded + i] = w[o * layer.in + i];
      }
      bias[o] = b[o];
    }
    layer.transposed = transposed;
    layer.weight = weight;
    layer.bias = bias;
  }
  return packed;
}

struct Blocks {
  int64_t streams = 0, points = 0, size = 0;
  int64_t count() const { return (points + size - 1) / size; }
};

// What the backward needs from the forward. A layer's output streams are not kept: the
// backward recomputes them from the pre-activation and primitives (a cheap element-wise pass)
// into cache-resident scratch, which halves the memory traffic of the backward.
struct Activations {
  torch::Tensor features;             // the first layer's input streams [K, n, f_padded]
  std::vector<torch::Tensor> pre;     // hidden layers' pre-activations z (bias in the value stream)
  std::vector<std::vector<torch::Tensor>> primitives;  // hidden layers' primitives, [n, width]
};

// Block-local arrays of [K, block, widest padded layer], one set per thread.
template <typename T>
class Scratch {
 public:
  Scratch(int count, const std::vector<Layer<T>>& layers, const Blocks& blocks) {
    int64_t widest = 0;
    for (const auto& layer : layers) widest = std::max({widest, layer.in_padded, layer.out_padded});
    size_ = blocks.streams * blocks.size * widest;
    data_.resize(static_cast<std::size_t>(count * size_));
  }
  T* operator[](int k) { return data_.data() + k * size_; }

 private:
  std::vector<T> data_;
  int64_t size_ = 0;
};

// c_k = a_k . b (+ bias on the value stream) for each stream k of a block: stream k of a starts
// at a + k * a_plane with rows a_width apart, of c at c + k * c_plane with rows c_width apart;
// b is [steps, c_width].
template <typename T>
void product_per_stream(int64_t streams, int64_t m, const T* a, int64_t a_plane, int64_t a_width,
                        int64_t steps, const T* b, T* c, int64_t c_plane, int64_t c_width,
                        const T* value_bias) {
  for (int64_t k = 0; k < streams; ++k)
    gemm(m, c_width / lanes<T>(), steps, a + k * a_plane, a_width, 1, b, c_width, c + k * c_plane,
         c_width, false, k == 0 ? value_bias : nullptr);
}

template <typename T>
std::vector<const T*> block_pointers(const std::vector<torch::Tensor>& tensors, int64_t offset) {
  auto p = detail::pointers<T>(tensors);
  for (auto& q : p) q += offset;
  return p;
}

// The primitives of the block's value rows [b0, b0 + m): tanh straight from the raw arrays (a
// few microseconds of tensor dispatch per block add up over hundreds of blocks), the other
// activations through tensor views.
template <typename T>
void block_primitives(nn::Activation activation, const torch::Tensor& pre,
                      std::vector<torch::Tensor>& primitives, int64_t b0, int64_t m) {
  const int64_t w = pre.size(2);
  if (activation == nn::Activation::tanh) {
    detail::tanh_into(pre.data_ptr<T>() + b0 * w, primitives[0].data_ptr<T>() + b0 * w, m * w);
    return;
  }
  std::vector<torch::Tensor> rows;
  for (const auto& p : primitives) rows.push_back(p.narrow(0, b0, m));
  activation_primitives_into(activation, pre.select(0, 0).narrow(0, b0, m), rows);
}

template <typename T>
torch::Tensor forward_pass(const std::vector<Layer<T>>& layers, nn::Activation activation,
                           const detail::StreamShape& shape, const Blocks& blocks,
                           Activations& saved) {
  const auto options = saved.features.options();
  const int64_t K = blocks.streams, n = blocks.points;
  const std::size_t hidden = layers.size() - 1;
  for (std::size_t l = 0; l < hidden; ++l) {
    const int64_t width = layers[l].out_padded;
    saved.pre.push_back(torch::empty({K, n, width}, options));
    saved.primitives.emplace_back();
    for (int64_t p = 0; p < primitive_count(activation); ++p)
      saved.primitives.back().push_back(torch::empty({n, width}, options));
  }
  auto out = torch::empty({K, n, layers.back().out_padded}, options);
  at::parallel_for(0, blocks.count(), 1, [&](int64_t first, int64_t last) {
    Scratch<T> scratch(2, layers, blocks);
    for (int64_t block = first; block < last; ++block) {
      const int64_t b0 = block * blocks.size, m = std::min(blocks.size, n - b0);
      const int64_t features_width = layers[0].in_padded;
      const T* h = saved.features.template data_ptr<T>() + b0 * features_width;
      int64_t h_plane = n * features_width;
      for (std::size_t l = 0; l <= hidden; ++l) {
        const Layer<T>& layer = layers[l];
        const int64_t w = layer.out_padded;
        T* z = (l == hidden ? out : saved.pre[l]).template data_ptr<T>() + b0 * w;
        product_per_stream<T>(K, m, h, h_plane, layer.in_padded, layer.in,
                              layer.transposed, z, n * w, w, layer.bias);
        if (l == hidden) break;
        block_primitives<T>(activation, saved.pre[l], saved.primitives[l], b0, m);
        T* next = scratch[static_cast<int>(l % 2)];
        detail::streams_forward_range(activation, z, n * w, block_pointers<T>(saved.primitives[l], b0 * w),
                                      shape, m * w, next, m * w);
        h = next;
        h_plane = m * w;
      }
    }
  });
  return out;
}

// Where each layer's weight and bias gradients sit in one flat buffer.
struct GradientLayout {
  std::vector<int64_t> weight, bias;
  int64_t size = 0;
  template <typename T>
  explicit GradientLayout(const std::vector<Layer<T>>& layers) {
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
std::vector<torch::Tensor> backward_pass(const std::vector<Layer<T>>& layers, nn::Activation activation,
                                         const detail::StreamShape& shape, const Blocks& blocks,
                                         const Activations& saved, const torch::Tensor& grad_out) {
  const auto options = grad_out.options();
  const int64_t K = blocks.streams, n = blocks.points;
  const std::size_t hidden = layers.size() - 1;
  // Parameter gradients are summed per block, then over blocks in block order, so the result
  // does not depend on how blocks were spread over threads.
  const GradientLayout layout(layers);
  auto partial = torch::zeros({blocks.count(), layout.size}, options);
  at::parallel_for(0, blocks.count(), 1, [&](int64_t first, int64_t last) {
    // The gradient at a layer's output, at its pre-activation, and its recomputed input.
    Scratch<T> scratch(3, layers, blocks);
    T *grad_h = scratch[0], *grad_z = scratch[1], *input = scratch[2];
    for (int64_t block = first; block < last; ++block) {
      const int64_t b0 = block * blocks.size, m = std::min(blocks.size, n - b0);
      T* sums = partial.template data_ptr<T>() + block * layout.size;
      for (std::size_t l = layers.size(); l-- > 0;) {
        const Layer<T>& layer = layers[l];
        const int64_t w = layer.out_padded;
        const T* gz = grad_out.template data_ptr<T>() + b0 * w;
        int64_t gz_plane = n * w;
        if (l < hidden) {
          detail::streams_backward_range(activation, saved.pre[l].template data_ptr<T>() + b0 * w,
                                         n * w, grad_h, block_pointers<T>(saved.primitives[l], b0 * w),
                                         shape, m * w, grad_z, m * w);
          gz = grad_z;
          gz_plane = m * w;
        }
        const int64_t in_width = layer.in_padded;
        const T* h = saved.features.template data_ptr<T>() + b0 * in_width;
        int64_t h_plane = n * in_width;
        if (l > 0) {
          detail::streams_forward_range(activation, saved.pre[l - 1].template data_ptr<T>() + b0 * in_width,
                                        n * in_width, block_pointers<T>(saved.primitives[l - 1], b0 * in_width),
                                        shape, m * in_width, input, m * in_width);
          h = input;
          h_plane = m * in_width;
        }
        for (int64_t k = 0; k < K; ++k)
          gemm(layer.out, in_width / lanes<T>(), m, gz + k * gz_plane, 1, w, h + k * h_plane,
               in_width, sums + layout.weight[l], in_width, true, static_cast<const T*>(nullptr));
        T* bias = sums + layout.bias[l];
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < w; ++j) bias[j] += gz[r * w + j];
        if (l > 0)
          product_per_stream<T>(K, m, gz, gz_plane, w, layer.out, layer.weight,
                                grad_h, m * in_width, in_width, nullptr);
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
    const Layer<T>& layer = layers[l];
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
                          Activations& saved) {
  const Blocks blocks{features.size(0), features.size(1), block_points(features.size(0))};
  return AT_DISPATCH_FLOATING_TYPES(features.scalar_type(), "taylor_network_forward", [&] {
    const auto packed = pack<scalar_t>(parameters);
    saved.features = widened(features, padded_width<scalar_t>(features.size(2)));
    return forward_pass<scalar_t>(packed.layers, activation, shape, blocks, saved);
  });
}

// Non-tensor arguments travel through saved_data, the shape encoded (detail::encode).
// Saved tensors: the parameters, the features, then each hidden layer's pre-activation and
// primitives.
class NetworkStreams : public torch::autograd::Function<NetworkStreams> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& features,
                               at::TensorList parameters, int64_t activation,
                               std::vector<int64_t> shape_code, int64_t outputs) {
    Activations saved;
    const auto out = run_forward(features, parameters, static_cast<nn::Activation>(activation),
                                 detail::decode(shape_code), saved);
    std::vector<torch::Tensor> keep(parameters.begin(), parameters.end());
    keep.push_back(saved.features);
    for (std::size_t l = 0; l < saved.pre.size(); ++l) {
      keep.push_back(saved.pre[l]);
      keep.insert(keep.end(), saved.primitives[l].begin(), saved.primitives[l].end());
    }
    ctx->save_for_backward(keep);
    ctx->saved_data["activation"] = activation;
    ctx->saved_data["shape"] = shape_code;
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
    const auto shape = detail::decode(ctx->saved_data["shape"].toIntVector());
    const auto count = static_cast<std::size_t>(ctx->saved_data["parameters"].toInt());
    const std::vector<torch::Tensor> parameters(kept.begin(), kept.begin() + count);
    const std::size_t layer_count = count / 2;
    Activations saved;
    auto next = kept.begin() + count;
    saved.features = *next++;
    const auto primitives = primitive_count(activation);
    for (std::size_t l = 0; l + 1 < layer_count; ++l) {
      saved.pre.push_back(*next++);
      saved.primitives.emplace_back(next, next + primitives);
      next += primitives;
    }
    const auto& input = saved.features;
    const Blocks blocks{input.size(0), input.size(1), block_points(input.size(0))};
    auto parameter_grads = AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "taylor_network_backward", [&] {
      const auto packed = pack<scalar_t>(parameters);
      const auto grad_out = widened(grads[0].contiguous(), packed.layers.back().out_padded);
      return backward_pass<scalar_t>(packed.layers, activation, shape, blocks, saved, grad_out);
    });
    variable_list result{torch::Tensor()};
    result.insert(result.end(), parameter_grads.begin(), parameter_grads.end());
    result.resize(result.size() + 3);  // activation, shape, outputs
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
  const auto shape = detail::shape_of(layout);
  const int64_t outputs = weights.back().size(0);
  if (torch::GradMode::is_enabled() && needs_graph)
    return NetworkStreams::apply(input, at::TensorList(parameters), static_cast<int64_t>(activation),
                                 detail::encode(shape), outputs);
  torch::NoGradGuard no_grad;
  Activations saved;
  return run_forward(input, parameters, activation, shape, saved)
      .narrow(2, 0, outputs)
      .contiguous();
}

}  // namespace tessera::autodiff::taylor
