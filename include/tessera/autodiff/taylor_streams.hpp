#pragma once
/// Building blocks of the forward (Taylor) engine, exposed for its tests: how derivative
/// streams are stacked, the activation's derivatives, and the per-layer element-wise step.
#include <torch/types.h>

#include <set>
#include <utility>
#include <vector>

#include "tessera/autodiff/partial.hpp"
#include "tessera/nn/mlp.hpp"

namespace tessera::autodiff::taylor {

/// The streams stacked along dim 0 of a [count(), n, width] tensor: stream 0 is the value,
/// streams 1 .. axes.size() the first derivatives along `axes` (input indices, ascending), then
/// one stream per second derivative: `pairs[k]` = (a, b), positions in `axes` with a <= b,
/// then one stream per Laplacian: `laplacians[k]` = the positions in `axes` it sums over.
struct StreamLayout {
  std::vector<int> axes;
  std::vector<std::pair<int, int>> pairs;
  std::vector<std::vector<int>> laplacians;

  int64_t count() const {
    return 1 + static_cast<int64_t>(axes.size() + pairs.size() + laplacians.size());
  }
  /// The stream holding d/d input[axis], or -1.
  int64_t first_stream(int axis) const;
  /// The stream holding d^2/d input[i] d input[j] (any order of i, j), or -1.
  int64_t second_stream(int i, int j) const;
  /// The stream holding the sum of d^2/d input[a]^2 over the inputs `axes_summed`, or -1.
  int64_t laplacian_stream(const std::vector<int>& axes_summed) const;
  /// The stream holding partial `p` (of any output), or -1.
  int64_t stream_of(const Partial& p) const;
};

/// The layout for `requested`, after checking that the engine can compute it (`supported`, from
/// taylor_supports) and that x is [n, inputs].
StreamLayout checked_layout(bool supported, const torch::Tensor& x, int64_t inputs,
                            const std::set<Partial>& requested);

/// Every partial of `requested` as an [n] view of the output streams `out` [K, n, outputs].
Partials partials_from_streams(const torch::Tensor& out, const StreamLayout& layout,
                               const std::set<Partial>& requested);

/// The smallest layout holding every partial of `requested` (orders <= 2): a second derivative
/// or a Laplacian needs the first-derivative streams of its axes.
StreamLayout stream_layout(const std::set<Partial>& requested);

/// The transcendental parts of the activation at z, from which its value and derivatives are
/// polynomials (computed once per layer; everything else is fused): tanh {tanh z},
/// sin {sin z, cos z}, gelu {z, Phi(z), phi(z)} (normal cdf and density), silu {z, sigmoid z}.
std::vector<torch::Tensor> activation_primitives(nn::Activation activation, const torch::Tensor& z);

/// How many primitives `activation_primitives` returns.
int64_t primitive_count(nn::Activation activation);

/// `activation_primitives` written into `out` (primitive_count tensors shaped like z), without
/// allocating where LibTorch has an out= variant.
void activation_primitives_into(nn::Activation activation, const torch::Tensor& z,
                                std::vector<torch::Tensor>& out);

/// sigma, sigma', ..., sigma^(order) (order <= 3) from `activation_primitives`.
std::vector<torch::Tensor> derivatives_from_primitives(nn::Activation activation,
                                                       const std::vector<torch::Tensor>& primitives,
                                                       int order);

/// sigma, sigma', ..., sigma^(order) of the activation at z, each shaped like z (order <= 3).
std::vector<torch::Tensor> activation_derivatives(nn::Activation activation, const torch::Tensor& z,
                                                  int order);

/// Which implementation of the element-wise step runs: `automatic` takes the fused CPU loop
/// for float32/float64 CPU tensors and the generic ATen version elsewhere (GPUs).
enum class Kernel { automatic, generic };

/// One hidden layer's activation applied to all streams: with pre-activation streams
/// `pre` [K, n, w] (bias not yet added) and `bias` [w] (added to the value stream only),
/// returns [K, n, w]:
///   value h = s(z),  first h_a = s'(z) z_a,  second h_ab = s''(z) z_a z_b + s'(z) z_ab,
///   Laplacian h_L = s''(z) sum_a z_a^2 + s'(z) z_L.
/// Recorded as one autograd node with a hand-written first-order backward when grad mode is
/// on and an input requires grad.
torch::Tensor activate_streams(nn::Activation activation, const torch::Tensor& pre,
                               const torch::Tensor& bias, const StreamLayout& layout,
                               Kernel kernel = Kernel::automatic);

/// The whole MLP's streams layer by layer, on any device: one product over all points and
/// streams, then one `activate_streams` node per hidden layer (a GPU wants the whole batch at
/// once). Arguments and result as for network_streams_cpu below; `kernel` picks the element-wise
/// implementation.
torch::Tensor network_streams_per_layer(const torch::Tensor& features,
                                        const std::vector<torch::Tensor>& weights,
                                        const std::vector<torch::Tensor>& biases,
                                        nn::Activation activation, const StreamLayout& layout,
                                        Kernel kernel = Kernel::automatic);

/// A linear layer on streams: every stream of `h` [K, n, in] times weight^T [in, out], as one
/// matrix product -> [K, n, out]. The bias belongs to the value stream only: see
/// `add_output_bias`.
torch::Tensor linear_streams(const torch::Tensor& h, const torch::Tensor& weight);

/// `linear_streams` output with `bias` added to its value stream (stream 0).
torch::Tensor add_output_bias(const torch::Tensor& out, const torch::Tensor& bias);

/// The streams of the element-wise product a * b (both [K, n, w] in `layout`) by the product
/// rule, with tensor operations (autograd records them).
torch::Tensor multiply_streams(const torch::Tensor& a, const torch::Tensor& b,
                               const StreamLayout& layout);

/// The modified MLP's streams (nn/mlp.hpp) layer by layer, on any device: encoders U and V of
/// the features, then h = V + g (U - V) after each hidden layer's activation g. `encoder_weights`
/// and `encoder_biases` hold U's then V's; the rest as for network_streams_per_layer.
torch::Tensor modified_network_streams(const torch::Tensor& features,
                                       const std::vector<torch::Tensor>& weights,
                                       const std::vector<torch::Tensor>& biases,
                                       const std::vector<torch::Tensor>& encoder_weights,
                                       const std::vector<torch::Tensor>& encoder_biases,
                                       nn::Activation activation, const StreamLayout& layout,
                                       Kernel kernel = Kernel::automatic);

/// The whole MLP's streams on a CPU (float32 or float64) as one autograd node. `features`
/// [K, n, f] are the first layer's input streams (no gradient flows to them); `weights` [out, in]
/// and `biases` [out] of every layer, output layer last; hidden layers apply `activation`.
/// Returns [K, n, outputs] with the output bias added to the value stream. Blocks of points go
/// through all layers while they sit in cache, with register-tiled products
/// (src/autodiff/kernels/gemm.hpp) and the fused element-wise step; the backward (first order
/// only) is hand-written likewise.
torch::Tensor network_streams_cpu(const torch::Tensor& features,
                                  const std::vector<torch::Tensor>& weights,
                                  const std::vector<torch::Tensor>& biases,
                                  nn::Activation activation, const StreamLayout& layout);

/// network_streams_cpu for several networks of one architecture at once, each on its own rows:
/// `weights` [G, out, in] and `biases` [G, out] (or [G, 1, out]) per layer, and group g's
/// network takes the `group_rows[g]` rows after those of the groups before it (they add up to
/// n; a group may have none; empty: one group, as network_streams_cpu). The node cuts every
/// group into its own blocks, padded inside it, so a group's outputs and gradient sums depend
/// on its own rows only and no caller pads. The parameter gradients come back per group, each
/// summed in a fixed order. With `order` (a permutation of the n rows, [n] int64), the groups
/// take the rows order[0], order[1], ... instead of 0, 1, ...: features and outputs stay in
/// the caller's row order, and the node reorders while it converts to its blocked layout.
torch::Tensor grouped_network_streams_cpu(const torch::Tensor& features,
                                          const std::vector<torch::Tensor>& weights,
                                          const std::vector<torch::Tensor>& biases,
                                          nn::Activation activation, const StreamLayout& layout,
                                          const std::vector<int64_t>& group_rows,
                                          const torch::Tensor& order = {});

/// grouped_network_streams_cpu with every network's own tensors, `weights` and `biases`
/// [layer][group] (the same shapes for every group), in place of stacks: the node stacks copies
/// for its kernels and hands each network's gradient to that network's tensors, so a network's
/// gradient is made of the same sums whichever other networks share the call. Stacks made
/// outside would be one autograd node per set of networks, through which a network's
/// contributions from several calls are added in a grouping that depends on those sets (and so
/// on how subdomains are spread over the ranks).
torch::Tensor grouped_network_streams_cpu(const torch::Tensor& features,
                                          const std::vector<std::vector<torch::Tensor>>& weights,
                                          const std::vector<std::vector<torch::Tensor>>& biases,
                                          nn::Activation activation, const StreamLayout& layout,
                                          const std::vector<int64_t>& group_rows);

}  // namespace tessera::autodiff::taylor
