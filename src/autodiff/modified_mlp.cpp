// The forward engine for the modified MLP (nn/mlp.hpp): the encoders and the hidden layers are
// ordinary stream activations (per_layer.cpp), and the gating h = V + g (U - V) is the product
// rule applied to whole streams (multiply_streams, streams.cpp) with tensor operations, so
// autograd supplies its backward.
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor {

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
