// The forward engine for the modified MLP (nn/mlp.hpp): the encoders and the hidden layers are
// ordinary stream activations, and the gating h = V + g (U - V) is the product rule applied
// to whole streams with tensor operations, so autograd supplies its backward.
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor {

torch::Tensor multiply_streams(const torch::Tensor& a, const torch::Tensor& b,
                               const StreamLayout& layout) {
  TESSERA_ASSERT(a.sizes() == b.sizes() && a.size(0) == layout.count(),
                 "multiply_streams: a and b must both be [" << layout.count() << ", n, width]");
  const auto a0 = a.narrow(0, 0, 1), b0 = b.narrow(0, 0, 1);
  const int64_t axes = static_cast<int64_t>(layout.axes.size());
  const int64_t second = layout.count() - 1 - axes;
  // Every derivative stream s has the part a_s b + a b_s: two broadcast products for all.
  const auto derivatives =
      a.narrow(0, 1, layout.count() - 1) * b0 + a0 * b.narrow(0, 1, layout.count() - 1);
  if (second == 0) return torch::cat({a0 * b0, derivatives});
  // Second-order streams add products of first derivatives:
  //   (ab)_ij = a_ij b + a_i b_j + a_j b_i + a b_ij,  (ab)_L = a_L b + 2 sum_i a_i b_i + a b_L.
  const auto first_a = a.narrow(0, 1, axes), first_b = b.narrow(0, 1, axes);
  std::vector<torch::Tensor> cross;
  for (const auto& [i, j] : layout.pairs)
    cross.push_back(i == j ? 2 * first_a[i] * first_b[i]
                           : first_a[i] * first_b[j] + first_a[j] * first_b[i]);
  for (const auto& positions : layout.laplacians) {
    auto sum = first_a[positions.front()] * first_b[positions.front()];
    for (std::size_t k = 1; k < positions.size(); ++k)
      sum = sum + first_a[positions[k]] * first_b[positions[k]];
    cross.push_back(2 * sum);
  }
  return torch::cat({a0 * b0, derivatives.narrow(0, 0, axes),
                     derivatives.narrow(0, axes, second) + torch::stack(cross)});
}

torch::Tensor modified_network_streams(const torch::Tensor& features,
                                       const std::vector<torch::Tensor>& weights,
                                       const std::vector<torch::Tensor>& biases,
                                       const std::vector<torch::Tensor>& encoder_weights,
                                       const std::vector<torch::Tensor>& encoder_biases,
                                       nn::Activation activation, const StreamLayout& layout,
                                       Kernel kernel) {
  TESSERA_ASSERT(encoder_weights.size() == 2 && encoder_biases.size() == 2,
                 "the modified MLP has two encoders");
  const auto encode = [&](std::size_t e) {
    return activate_streams(activation, linear_streams(features, encoder_weights[e]),
                            encoder_biases[e], layout, kernel);
  };
  const auto u = encode(0), v = encode(1);
  const auto u_minus_v = u - v;
  torch::Tensor h = features;
  for (std::size_t layer = 0; layer + 1 < weights.size(); ++layer) {
    const auto g = activate_streams(activation, linear_streams(h, weights[layer]), biases[layer],
                                    layout, kernel);
    h = v + multiply_streams(g, u_minus_v, layout);
  }
  return add_output_bias(linear_streams(h, weights.back()), biases.back());
}

}  // namespace tessera::autodiff::taylor
