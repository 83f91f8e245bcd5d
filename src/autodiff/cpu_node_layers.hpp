#pragma once
// The whole-network CPU node's pieces that its forward (cpu_node.cpp) and its backward
// (cpu_node_backward.cpp) share: a layer's parameters as the kernels read them, what the
// forward saves for the backward, and the per-block steps both walk through (products, a hidden
// layer's output streams, the saved pre-activations).
#include <algorithm>
#include <vector>

#include "cpu_node_blocks.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/gemm.hpp"
#include "kernels/scratch.hpp"
#include "kernels/tanh.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor::node {

using detail::Blocks;
using detail::from_blocks;
using detail::gemm;
using detail::lanes;
using detail::Scratch;
using detail::to_blocks;
using detail::uninitialised;
using detail::unwritten;

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
    // Only their data is read: a contiguous parameter is kept as it is.
    for (const auto& p : parameters) kept.push_back(p.is_contiguous() ? p : p.contiguous());
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

// layer_output, and the activation's backward on the same pre-activations in the same pass:
// the gradient at them from the gradient `grad` at the layer's output streams, into `grad_pre`
// (both [K][size * w]). The backward walks down the layers reading each layer's saved arrays
// once instead of twice.
template <typename T>
Streams<const T*> layer_output_and_backward(nn::Activation activation,
                                            const detail::StreamShape& shape, int64_t size,
                                            const Streams<const T*>& pre,
                                            const std::vector<torch::Tensor>& primitives,
                                            int64_t b0, int64_t w, const T* grad, T* grad_pre,
                                            T* scratch) {
  const int64_t count = size * w;
  const bool value_is_primitive = detail::sigma_is_first_primitive(activation);
  const auto prim = block_pointers<T>(primitives, b0 * w);
  detail::streams_backward_and_forward_range(activation, pre.rest, pre.plane, grad, prim, shape,
                                             count, grad_pre, count, scratch, count,
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

// The parameter gradients [W_0, b_0, W_1, b_1, ...] from the blocked output gradient, each
// [G, ...] with groups (as the parameters); float and double (cpu_node_backward.cpp).
template <typename T>
std::vector<torch::Tensor> backward_pass(const std::vector<Layer<T>>& layers,
                                         nn::Activation activation,
                                         const detail::StreamShape& shape, const Blocks& blocks,
                                         const Activations& saved, const torch::Tensor& grad_out);

}  // namespace tessera::autodiff::taylor::node
