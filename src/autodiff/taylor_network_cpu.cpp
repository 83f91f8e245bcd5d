// The forward engine on a CPU: the whole MLP as one autograd node that takes a block of points
// through every layer while the block's streams sit in cache, one row per neuron and one column
// per point. Per layer and block: the register-tiled product (taylor_gemm.hpp) with the bias
// folded into the value stream, the activation's primitives for the value rows, the fused
// element-wise step. The backward walks the layers in reverse the same way. One node instead of
// a matrix product, an element-wise node and a handful of views per layer per block: profiled on
// the seed problem, the per-layer path spent a large share of its time zeroing BLAS outputs and
// packing BLAS operands (docs/benchmarks.md, "Whole-network node against the per-layer path").
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "taylor_blocks.hpp"
#include "taylor_gemm.hpp"
#include "taylor_kernels.hpp"
#include "taylor_scratch.hpp"
#include "taylor_tanh.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor {

namespace {

using detail::Blocks;
using detail::from_blocks;
using detail::gemm;
using detail::lanes;
using detail::Scratch;
using detail::to_blocks;
using detail::uninitialised;
using detail::unwritten;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One layer's parameters as the kernels read them: W [out, in] and b [out], contiguous; with
// groups, one W and b per group back to back ([G, out, in], [G, out]).
template <typename T>
struct Layer {
  int64_t in = 0, out = 0;
  const T* weight = nullptr;
  const T* bias = nullptr;

  // The parameters of group g.
  Layer at(int64_t group) const { return {in, out, weight + group * out * in, bias + group * out}; }
};

// The layers over contiguous copies of the parameters [W_0, b_0, W_1, b_1, ...].
template <typename T>
struct Network {
  std::vector<torch::Tensor> kept;
  std::vector<Layer<T>> layers;

  explicit Network(at::TensorList parameters) {
    for (const auto& p : parameters) kept.push_back(p.detach().contiguous());
    for (std::size_t k = 0; k + 1 < kept.size(); k += 2)
      layers.push_back({kept[k].size(-1), kept[k].size(-2), kept[k].template data_ptr<T>(),
                        kept[k + 1].template data_ptr<T>()});
  }
};

// What the backward needs from the forward, all blocked. A layer's output streams are not kept:
// the backward recomputes them from the pre-activation and primitives (a cheap element-wise
// pass) into cache-resident scratch, which halves the memory traffic of the backward
// (docs/benchmarks.md, "Recomputing layer outputs in the backward").
struct Activations {
  torch::Tensor features;  // the first layer's input streams
  // Hidden layers' pre-activations z_k, k >= 1 (plane 0 unused); undefined for a layer whose
  // pre-activations are recomputed in the backward (see `recomputed`).
  std::vector<torch::Tensor> pre;
  std::vector<std::vector<torch::Tensor>> primitives;  // hidden layers' primitives, [padded, w]
};

// Block-local arrays of [K, widest layer, block] per set.
template <typename T>
int64_t scratch_size(const std::vector<Layer<T>>& layers, const Blocks& blocks) {
  int64_t widest = 0;
  for (const auto& layer : layers) widest = std::max({widest, layer.in, layer.out});
  return blocks.streams * blocks.largest * widest;
}

template <typename T>
std::vector<const T*> block_pointers(const std::vector<torch::Tensor>& tensors, int64_t offset) {
  auto p = detail::pointers<T>(tensors);
  for (auto& q : p) q += offset;
  return p;
}

// The primitives of a block's value stream from its pre-activation `value` (`count` elements),
// into the primitives' elements from `offset`: tanh straight from the raw arrays (a few
// microseconds of tensor dispatch per block add up over hundreds of blocks), the other
// activations through tensor views.
template <typename T>
void block_primitives(nn::Activation activation, T* value, std::vector<torch::Tensor>& primitives,
                      int64_t offset, int64_t count) {
  if (activation == nn::Activation::tanh) {
    detail::tanh_into(value, primitives[0].data_ptr<T>() + offset, count);
    return;
  }
  std::vector<torch::Tensor> flat;
  for (const auto& p : primitives) flat.push_back(p.view({-1}).narrow(0, offset, count));
  activation_primitives_into(activation, torch::from_blob(value, {count}, primitives[0].options()),
                             flat);
}

// A block's streams (see detail::Streams). A hidden layer's value pre-activation goes to scratch
// (the backward never reads it: sigma and its derivatives come from the primitives), and for
// tanh and sin a layer's output value is its saved first primitive (copying it was a visible
// cost of an iteration: docs/benchmarks.md, "Value stream read from the saved tanh").
using detail::contiguous;
using detail::Streams;

// Every stream k of a block of `size` rows: z_k = W h_k (+ b on the value stream), [out][size]
// from [in][size].
template <typename T>
void layer_products(const Layer<T>& layer, const Blocks& blocks, int64_t size,
                    const Streams<const T*>& h, const Streams<T*>& z) {
  for (int64_t k = 0; k < blocks.streams; ++k)
    gemm(layer.out, size / lanes<T>(), layer.in, layer.weight, layer.in, 1, h[k], size, z[k], size,
         false, k == 0 ? layer.bias : nullptr);
}

// A hidden layer's output streams for the block of `size` rows from row b0, from its
// pre-activations (streams k >= 1 are read) and primitives, into `scratch` (the value stream too
// unless it is the first primitive).
template <typename T>
Streams<const T*> layer_output(nn::Activation activation, const detail::StreamShape& shape,
                               int64_t size, const Streams<const T*>& pre,
                               const std::vector<torch::Tensor>& primitives, int64_t b0, int64_t w,
                               T* scratch) {
  const int64_t count = size * w;
  const bool value_is_primitive = detail::sigma_is_first_primitive(activation);
  const auto prim = block_pointers<T>(primitives, b0 * w);
  detail::streams_forward_range(activation, pre.rest, pre.plane, prim, shape, count, scratch, count,
                                !value_is_primitive);
  return {value_is_primitive ? prim[0] : scratch, scratch, count};
}

// Whether hidden layer l's pre-activations are recomputed in the backward instead of saved:
// the first layer's, when its input (the features) is narrow. Recomputing costs `in` multiply-adds
// per element; saving one costs a write to memory and a read back. On the seed problem (2
// inputs) the saved arrays' traffic was a visible cost of an iteration and the first layer's a
// sizeable part of it (docs/benchmarks.md, "Recomputing the first layer's pre-activations").
constexpr int64_t recompute_max_inputs = 16;

template <typename T>
bool recomputed(const std::vector<Layer<T>>& layers, std::size_t l) {
  return l == 0 && layers[0].in <= recompute_max_inputs;
}

// Hidden layer l's saved pre-activation streams for the block at point b0.
template <typename T>
Streams<T*> saved_pre(const Activations& saved, const Blocks& blocks, std::size_t l, int64_t b0,
                      int64_t w) {
  return contiguous(saved.pre[l].template data_ptr<T>() + b0 * w, blocks.padded() * w);
}

template <typename T>
Streams<const T*> as_const(const Streams<T*>& s) {
  return {s.value, s.rest, s.plane};
}

template <typename T>
torch::Tensor forward_pass(const std::vector<Layer<T>>& layers, nn::Activation activation,
                           const detail::StreamShape& shape, const Blocks& blocks,
                           Activations& saved) {
  const auto options = saved.features.options();
  const int64_t K = blocks.streams, P = blocks.padded();
  const std::size_t hidden = layers.size() - 1;
  // Saved pre-activations keep all K streams for simple indexing; the value stream's plane is
  // never written or read. A recomputed layer's are not kept (an undefined tensor).
  for (std::size_t l = 0; l < hidden; ++l) {
    const int64_t width = layers[l].out;
    saved.pre.push_back(recomputed(layers, l) ? torch::Tensor()
                                              : unwritten({K, P, width}, options));
    saved.primitives.emplace_back();
    for (int64_t p = 0; p < primitive_count(activation); ++p)
      saved.primitives.back().push_back(unwritten({P, width}, options));
  }
  auto out = unwritten({K, P, layers.back().out}, options);
  at::parallel_for(0, blocks.count(), 1, [&](int64_t first, int64_t last) {
    // Two alternating sets of a layer's output streams, the value pre-activation, and a
    // recomputed layer's pre-activations.
    Scratch<T> scratch(4, scratch_size(layers, blocks));
    T *value_pre = scratch[2], *unsaved_pre = scratch[3];
    for (int64_t block = first; block < last; ++block) {
      const int64_t b0 = blocks.start[block], size = blocks.rows(block);
      const int64_t group = blocks.group_of(block);
      auto h = contiguous<const T*>(saved.features.template data_ptr<T>() + b0 * layers[0].in,
                                    P * layers[0].in);
      for (std::size_t l = 0; l < hidden; ++l) {
        const int64_t w = layers[l].out;
        Streams<T*> z = contiguous(unsaved_pre, size * w);
        if (!recomputed(layers, l)) {
          z = saved_pre<T>(saved, blocks, l, b0, w);
          z.value = value_pre;
        }
        layer_products(layers[l].at(group), blocks, size, h, z);
        block_primitives<T>(activation, z.value, saved.primitives[l], b0 * w, size * w);
        h = layer_output<T>(activation, shape, size, as_const(z), saved.primitives[l], b0, w,
                            scratch[static_cast<int>(l % 2)]);
      }
      const int64_t w = layers[hidden].out;
      layer_products(layers[hidden].at(group), blocks, size, h,
                     contiguous(out.template data_ptr<T>() + b0 * w, P * w));
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
      size += layer.out * layer.in;
      bias.push_back(size);
      size += layer.out;
    }
  }
};

// Blocks per chunk of the backward. Each chunk sums its parameter gradients per lane (see
// gemm_lanes), folds the lanes once at its end, and the chunks are added in order: the result
// does not depend on how chunks were spread over threads. A chunk holds blocks of one group.
constexpr int64_t blocks_per_chunk = 8;

// The sum of one entry's lanes, halves added pairwise: the order is fixed, so vectorising it
// (the compiler does) changes nothing, and it is a few vector additions instead of a chain of
// lanes<T>() dependent scalar ones (the chain was a visible cost of a seed-problem iteration:
// docs/benchmarks.md, "Lane sums as a pairwise tree").
template <typename T>
T sum_lanes(const T* lane) {
  constexpr int64_t L = lanes<T>();
  T half[L / 2];
  for (int64_t i = 0; i < L / 2; ++i) half[i] = lane[i] + lane[i + L / 2];
  for (int64_t width = L / 4; width >= 1; width /= 2)
    for (int64_t i = 0; i < width; ++i) half[i] += half[i + width];
  return half[0];
}

// The parameter gradients [W_0, b_0, W_1, b_1, ...] from the blocked output gradient, each
// [G, ...] with groups (as the parameters).
template <typename T>
std::vector<torch::Tensor> backward_pass(const std::vector<Layer<T>>& layers,
                                         nn::Activation activation,
                                         const detail::StreamShape& shape, const Blocks& blocks,
                                         const Activations& saved, const torch::Tensor& grad_out) {
  const auto options = grad_out.options();
  const int64_t K = blocks.streams, P = blocks.padded(), L = lanes<T>();
  const std::size_t hidden = layers.size() - 1;
  const GradientLayout layout(layers);
  // Every group's blocks in chunks of at most blocks_per_chunk: (group, first block, end).
  struct Chunk {
    int64_t group, start, end;
  };
  std::vector<Chunk> chunk_list;
  for (int64_t group = 0; group < blocks.groups(); ++group)
    for (int64_t start = blocks.first_block(group); start < blocks.first_block(group + 1);
         start += blocks_per_chunk)
      chunk_list.push_back(
          {group, start, std::min(blocks.first_block(group + 1), start + blocks_per_chunk)});
  const auto chunks = static_cast<int64_t>(chunk_list.size());
  auto partial = unwritten({chunks, layout.size}, options);
  // A bias gradient is g_0 . 1.
  const std::vector<T> ones(static_cast<std::size_t>(blocks.largest), T(1));
  at::parallel_for(0, chunks, 1, [&](int64_t first, int64_t last) {
    // The gradient at a layer's output, at its pre-activation, its recomputed input, and a
    // recomputed layer's pre-activations.
    Scratch<T> scratch(4, scratch_size(layers, blocks));
    T *grad_h = scratch[0], *grad_z = scratch[1], *input = scratch[2], *unsaved_pre = scratch[3];
    // Written by each chunk's first block (accumulate = false), so never read uninitialised.
    const auto by_lane = uninitialised<T>(layout.size * L);
    for (int64_t chunk = first; chunk < last; ++chunk) {
      const auto [group, chunk_start, chunk_end] = chunk_list[static_cast<std::size_t>(chunk)];
      for (int64_t block = chunk_start; block < chunk_end; ++block) {
        const bool accumulate = block > chunk_start;
        const int64_t b0 = blocks.start[block], size = blocks.rows(block), vectors = size / L;
        const auto features = contiguous<const T*>(
            saved.features.template data_ptr<T>() + b0 * layers[0].in, P * layers[0].in);
        // Hidden layer l's pre-activations: saved, or recomputed here (only the first layer's,
        // from the features, so before the walk down the layers).
        // The forward's choice is read from what it saved, so the two cannot disagree.
        const auto pre = [&](std::size_t l) {
          return !saved.pre[l].defined()
                     ? contiguous<const T*>(unsaved_pre, size * layers[l].out)
                     : as_const(saved_pre<T>(saved, blocks, l, b0, layers[l].out));
        };
        if (hidden > 0 && !saved.pre[0].defined())
          layer_products(layers[0].at(group), blocks, size, features,
                         contiguous(unsaved_pre, size * layers[0].out));
        for (std::size_t l = layers.size(); l-- > 0;) {
          const Layer<T> layer = layers[l].at(group);
          const int64_t w = layer.out, in = layer.in;
          auto gz = contiguous<const T*>(grad_out.template data_ptr<T>() + b0 * w, P * w);
          if (l < hidden) {
            const auto z = pre(l);
            detail::streams_backward_range(activation, z.rest, z.plane, grad_h,
                                           block_pointers<T>(saved.primitives[l], b0 * w), shape,
                                           size * w, grad_z, size * w);
            gz = contiguous<const T*>(grad_z, size * w);
          }
          const auto h = l == 0 ? features
                                : layer_output<T>(activation, shape, size, pre(l - 1),
                                                  saved.primitives[l - 1], b0, in, input);
          // dW = sum_k g_k h_k^T, db = g_0 . 1.
          detail::gemm_lanes(w, in, vectors, K, gz, size, h, size,
                             by_lane.get() + layout.weight[l] * L, accumulate);
          detail::gemm_lanes(w, 1, vectors, 1, gz, size, contiguous<const T*>(ones.data(), 0), 0,
                             by_lane.get() + layout.bias[l] * L, accumulate);
          // g_h = W^T g_z for every stream, into the layer below.
          if (l > 0)
            for (int64_t k = 0; k < K; ++k)
              gemm(in, vectors, w, layer.weight, 1, in, gz[k], size, grad_h + k * size * in, size,
                   false, static_cast<const T*>(nullptr));
        }
      }
      T* sums = partial.template data_ptr<T>() + chunk * layout.size;
      for (int64_t j = 0; j < layout.size; ++j) sums[j] = sum_lanes(by_lane.get() + j * L);
    }
  });
  auto total = torch::zeros({blocks.groups(), layout.size}, options);
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    T* sum = total.template data_ptr<T>() +
             chunk_list[static_cast<std::size_t>(chunk)].group * layout.size;
    const T* part = partial.template data_ptr<T>() + chunk * layout.size;
    for (int64_t j = 0; j < layout.size; ++j) sum[j] += part[j];
  }
  std::vector<torch::Tensor> grads;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Layer<T>& layer = layers[l];
    grads.push_back(total.narrow(1, layout.weight[l], layer.out * layer.in));
    grads.push_back(total.narrow(1, layout.bias[l], layer.out));
  }
  return grads;
}

// The blocks of `points` rows: one group in blocks of the cache-sized default, or each of
// `group_rows` (adding up to `points`) in its own blocks of about that size; `order` (empty: the
// identity) as for grouped_network_streams_cpu, kept alive by the caller.
Blocks blocks_of(const torch::Tensor& features, int64_t points,
                 const std::vector<int64_t>& group_rows, const torch::Tensor& order) {
  const auto dtype = features.scalar_type();
  const int64_t size = detail::block_points(dtype, features.size(0));
  const int64_t lanes = dtype == torch::kFloat64 ? detail::lanes<double>() : detail::lanes<float>();
  Blocks blocks;
  blocks.streams = features.size(0);
  blocks.points = points;
  if (order.numel() > 0) blocks.order = order.data_ptr<int64_t>();
  if (group_rows.empty()) {
    detail::add_group(blocks, points, size, lanes, /*even=*/false);
    return blocks;
  }
  for (int64_t rows : group_rows) {
    TESSERA_ASSERT(rows >= 0, "network_streams_cpu: a group cannot have " << rows << " rows");
    detail::add_group(blocks, rows, size, lanes, /*even=*/true);
  }
  TESSERA_ASSERT(blocks.first_point.back() == points,
                 "network_streams_cpu: the groups' rows must add up to the features' rows");
  return blocks;
}

// The output streams [K, n, out], filling `saved` for the backward.
torch::Tensor run_forward(const torch::Tensor& features, at::TensorList parameters,
                          const std::vector<int64_t>& group_rows, const torch::Tensor& order,
                          nn::Activation activation, const detail::StreamShape& shape,
                          Activations& saved) {
  const Blocks blocks = blocks_of(features, features.size(1), group_rows, order);
  return AT_DISPATCH_FLOATING_TYPES(features.scalar_type(), "taylor_network_forward", [&] {
    const Network<scalar_t> network(parameters);
    saved.features = to_blocks<scalar_t>(features, blocks);
    return from_blocks<scalar_t>(
        forward_pass<scalar_t>(network.layers, activation, shape, blocks, saved), blocks);
  });
}

// Non-tensor arguments travel through saved_data, the shape encoded (detail::encode).
// Saved tensors: the parameters, the blocked features, then each hidden layer's blocked
// pre-activation (undefined where recomputed) and primitives.
class NetworkStreams : public torch::autograd::Function<NetworkStreams> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& features,
                               at::TensorList parameters, std::vector<int64_t> group_rows,
                               const torch::Tensor& order, int64_t activation,
                               std::vector<int64_t> shape_code) {
    Activations saved;
    const auto out =
        run_forward(features, parameters, group_rows, order,
                    static_cast<nn::Activation>(activation), detail::decode(shape_code), saved);
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
    ctx->saved_data["points"] = features.size(1);
    ctx->saved_data["group_rows"] = group_rows;
    ctx->saved_data["order"] = order;
    return out;
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
    const auto order = ctx->saved_data["order"].toTensor();
    const Blocks blocks = blocks_of(input, ctx->saved_data["points"].toInt(),
                                    ctx->saved_data["group_rows"].toIntVector(), order);
    auto parameter_grads =
        AT_DISPATCH_FLOATING_TYPES(input.scalar_type(), "taylor_network_backward", [&] {
          const Network<scalar_t> network(parameters);
          const auto grad_out = to_blocks<scalar_t>(grads[0].contiguous(), blocks);
          return backward_pass<scalar_t>(network.layers, activation, shape, blocks, saved,
                                         grad_out);
        });
    variable_list result{torch::Tensor()};
    for (std::size_t k = 0; k < parameter_grads.size(); ++k)
      result.push_back(parameter_grads[k].reshape(parameters[k].sizes()));
    result.resize(result.size() + 4);  // group rows, order, activation, shape
    return result;
  }
};

}  // namespace

torch::Tensor network_streams_cpu(const torch::Tensor& features,
                                  const std::vector<torch::Tensor>& weights,
                                  const std::vector<torch::Tensor>& biases,
                                  nn::Activation activation, const StreamLayout& layout) {
  return grouped_network_streams_cpu(features, weights, biases, activation, layout, {}, {});
}

torch::Tensor grouped_network_streams_cpu(const torch::Tensor& features,
                                          const std::vector<torch::Tensor>& weights,
                                          const std::vector<torch::Tensor>& biases,
                                          nn::Activation activation, const StreamLayout& layout,
                                          const std::vector<int64_t>& group_rows,
                                          const torch::Tensor& order) {
  TESSERA_ASSERT(features.dim() == 3 && features.size(0) == layout.count(),
                 "network_streams_cpu: features must be [" << layout.count() << ", n, f], got "
                                                           << features.sizes());
  TESSERA_ASSERT(detail::cpu_kernel_applies(features),
                 "network_streams_cpu: CPU float32/float64 only");
  const auto groups = std::max<int64_t>(1, static_cast<int64_t>(group_rows.size()));
  std::vector<torch::Tensor> parameters;
  bool needs_graph = false;
  for (std::size_t l = 0; l < weights.size(); ++l) {
    TESSERA_ASSERT(weights[l].numel() == groups * weights[l].size(-1) * weights[l].size(-2) &&
                       biases[l].numel() == groups * weights[l].size(-2),
                   "network_streams_cpu: one weight matrix and bias per group");
    parameters.push_back(weights[l]);
    parameters.push_back(biases[l]);
    needs_graph = needs_graph || weights[l].requires_grad() || biases[l].requires_grad();
  }
  const auto input = features.detach().contiguous();
  // Empty for the identity: autograd takes every tensor argument as an input, and wants it defined.
  auto rows = torch::empty({0}, torch::kLong);
  if (order.defined()) {
    TESSERA_ASSERT(!group_rows.empty() && order.numel() == features.size(1),
                   "network_streams_cpu: an order needs groups and one entry per row");
    rows = order.to(torch::kLong).contiguous();
  }
  const auto shape = detail::shape_of(layout);
  if (torch::GradMode::is_enabled() && needs_graph)
    return NetworkStreams::apply(input, at::TensorList(parameters), group_rows, rows,
                                 static_cast<int64_t>(activation), detail::encode(shape));
  torch::NoGradGuard no_grad;
  Activations saved;
  return run_forward(input, parameters, group_rows, rows, activation, shape, saved);
}

}  // namespace tessera::autodiff::taylor
