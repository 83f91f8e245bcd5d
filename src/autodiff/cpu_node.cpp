// The forward engine on a CPU: the whole MLP as one autograd node that takes a block of points
// through every layer while the block's streams sit in cache, one row per neuron and one column
// per point. Per layer and block: the register-tiled product (kernels/gemm.hpp) with the bias
// folded into the value stream, the activation's primitives for the value rows, the fused
// element-wise step. The backward (cpu_node_backward.cpp) walks the layers in reverse the
// same way. One node instead of a matrix product, an element-wise node and a handful of views per
// layer per block: profiled on the seed problem, the per-layer path spent a large share of its
// time zeroing BLAS outputs and packing BLAS operands (docs/benchmarks.md, "Whole-network node
// against the per-layer path").
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "cpu_node_layers.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor {

namespace {

using namespace node;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

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

// Networks' tensors given apart ([W_0 of every network, b_0 of every network, W_1, ...], `groups`
// networks) stacked per layer, as the kernels read them: a copy, off the graph. Gradients then
// go from the node to each network's own tensors, so the sums a network's gradient is made of
// do not depend on which other networks share the call.
std::vector<torch::Tensor> stack_apart(at::TensorList parameters, int64_t groups) {
  std::vector<torch::Tensor> stacks;
  for (std::size_t first = 0; first < parameters.size(); first += static_cast<std::size_t>(groups))
    stacks.push_back(torch::stack(parameters.slice(first, static_cast<std::size_t>(groups))));
  return stacks;
}

// Non-tensor arguments travel through saved_data, the shape encoded (detail::encode).
// Saved tensors: the parameters, the blocked features, then each hidden layer's blocked
// pre-activation (undefined where recomputed) and primitives.
class NetworkStreams : public torch::autograd::Function<NetworkStreams> {
 public:
  // `apart` > 0: `parameters` holds each of that many networks' tensors on their own (see
  // stack_apart); 0: stacked per layer.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& features,
                               at::TensorList parameters, std::vector<int64_t> group_rows,
                               const torch::Tensor& order, int64_t activation,
                               std::vector<int64_t> shape_code, int64_t apart) {
    Activations saved;
    const auto stacks = apart > 0
                            ? stack_apart(parameters, apart)
                            : std::vector<torch::Tensor>(parameters.begin(), parameters.end());
    const auto out =
        run_forward(features, stacks, group_rows, order, static_cast<nn::Activation>(activation),
                    detail::decode(shape_code), saved);
    std::vector<torch::Tensor> keep(stacks.begin(), stacks.end());
    keep.push_back(saved.features);
    for (std::size_t l = 0; l < saved.pre.size(); ++l) {
      keep.push_back(saved.pre[l]);
      keep.insert(keep.end(), saved.primitives[l].begin(), saved.primitives[l].end());
    }
    ctx->save_for_backward(keep);
    ctx->saved_data["activation"] = activation;
    ctx->saved_data["shape"] = shape_code;
    ctx->saved_data["parameters"] = static_cast<int64_t>(stacks.size());
    ctx->saved_data["apart"] = apart;
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
    const int64_t apart = ctx->saved_data["apart"].toInt();
    for (std::size_t k = 0; k < parameter_grads.size(); ++k) {
      const auto grad = parameter_grads[k].reshape(parameters[k].sizes());
      if (apart == 0) {
        result.push_back(grad);
        continue;
      }
      for (int64_t g = 0; g < apart; ++g) result.push_back(grad[g]);
    }
    result.resize(result.size() + 5);  // group rows, order, activation, shape, apart
    return result;
  }
};

// Whether `rows` ([n] int64) holds each of 0 .. n-1 once: the blocked conversion reads and
// writes at these rows, so a row out of range would reach past the features and a repeated
// one would leave another row of the output unwritten.
bool is_permutation(const torch::Tensor& rows) {
  const int64_t n = rows.numel();
  const int64_t* row = rows.data_ptr<int64_t>();
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (int64_t i = 0; i < n; ++i) {
    if (row[i] < 0 || row[i] >= n || seen[static_cast<std::size_t>(row[i])]) return false;
    seen[static_cast<std::size_t>(row[i])] = true;
  }
  return true;
}

}  // namespace

torch::Tensor network_streams_cpu(const torch::Tensor& features,
                                  const std::vector<torch::Tensor>& weights,
                                  const std::vector<torch::Tensor>& biases,
                                  nn::Activation activation, const StreamLayout& layout) {
  return grouped_network_streams_cpu(features, weights, biases, activation, layout, {}, {});
}

namespace {

// The node (with a graph) or its forward alone over `parameters`: stacked per layer
// (`apart` 0) or each of `apart` networks' tensors on their own (see stack_apart).
torch::Tensor streams(const torch::Tensor& features, const std::vector<torch::Tensor>& parameters,
                      int64_t apart, nn::Activation activation, const StreamLayout& layout,
                      const std::vector<int64_t>& group_rows, const torch::Tensor& order) {
  TESSERA_ASSERT(features.dim() == 3 && features.size(0) == layout.count(),
                 "network_streams_cpu: features must be [" << layout.count() << ", n, f], got "
                                                           << features.sizes());
  TESSERA_ASSERT(detail::cpu_kernel_applies(features),
                 "network_streams_cpu: CPU float32/float64 only");
  bool needs_graph = false;
  for (const auto& p : parameters) needs_graph = needs_graph || p.requires_grad();
  const auto input = features.detach().contiguous();
  // Empty for the identity: autograd takes every tensor argument as an input, and wants it defined.
  auto rows = torch::empty({0}, torch::kLong);
  if (order.defined()) {
    TESSERA_ASSERT(!group_rows.empty() && order.numel() == features.size(1),
                   "network_streams_cpu: an order needs groups and one entry per row");
    rows = order.to(torch::kLong).contiguous();  // the CPU node: `order` is on the CPU
    TESSERA_ASSERT(is_permutation(rows), "network_streams_cpu: `order` must hold every row once");
  }
  const auto shape = detail::shape_of(layout);
  if (torch::GradMode::is_enabled() && needs_graph)
    return NetworkStreams::apply(input, at::TensorList(parameters), group_rows, rows,
                                 static_cast<int64_t>(activation), detail::encode(shape), apart);
  torch::NoGradGuard no_grad;
  Activations saved;
  const auto stacks = apart > 0 ? stack_apart(parameters, apart) : parameters;
  return run_forward(input, stacks, group_rows, rows, activation, shape, saved);
}

}  // namespace

torch::Tensor grouped_network_streams_cpu(const torch::Tensor& features,
                                          const std::vector<torch::Tensor>& weights,
                                          const std::vector<torch::Tensor>& biases,
                                          nn::Activation activation, const StreamLayout& layout,
                                          const std::vector<int64_t>& group_rows,
                                          const torch::Tensor& order) {
  const auto groups = std::max<int64_t>(1, static_cast<int64_t>(group_rows.size()));
  std::vector<torch::Tensor> parameters;
  for (std::size_t l = 0; l < weights.size(); ++l) {
    TESSERA_ASSERT(weights[l].numel() == groups * weights[l].size(-1) * weights[l].size(-2) &&
                       biases[l].numel() == groups * weights[l].size(-2),
                   "network_streams_cpu: one weight matrix and bias per group");
    parameters.push_back(weights[l]);
    parameters.push_back(biases[l]);
  }
  return streams(features, parameters, 0, activation, layout, group_rows, order);
}

torch::Tensor grouped_network_streams_cpu(const torch::Tensor& features,
                                          const std::vector<std::vector<torch::Tensor>>& weights,
                                          const std::vector<std::vector<torch::Tensor>>& biases,
                                          nn::Activation activation, const StreamLayout& layout,
                                          const std::vector<int64_t>& group_rows) {
  const auto groups = static_cast<int64_t>(group_rows.size());
  std::vector<torch::Tensor> parameters;
  for (std::size_t l = 0; l < weights.size(); ++l) {
    TESSERA_ASSERT(static_cast<int64_t>(weights[l].size()) == groups &&
                       static_cast<int64_t>(biases[l].size()) == groups,
                   "network_streams_cpu: one weight matrix and bias per group");
    for (const auto* list : {&weights[l], &biases[l]})
      for (const auto& p : *list) {
        TESSERA_ASSERT(p.sizes() == (*list)[0].sizes(),
                       "network_streams_cpu: the networks of a call share their shapes");
        parameters.push_back(p);
      }
  }
  return streams(features, parameters, groups, activation, layout, group_rows, {});
}

}  // namespace tessera::autodiff::taylor
