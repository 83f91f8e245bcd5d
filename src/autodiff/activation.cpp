// The activations' derivatives up to third order, in closed form: the forward engine needs
// sigma' and sigma'' for the streams and sigma''' for their backward. Each is a polynomial in
// a few transcendental "primitives", so those are computed once per layer and saved for the
// backward, which then evaluates no transcendental function at all.
#include <cmath>

#include <ATen/Dispatch.h>

#include "kernels/elementwise.hpp"
#include "kernels/tanh.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff::taylor {

std::vector<torch::Tensor> activation_primitives(nn::Activation activation,
                                                 const torch::Tensor& z) {
  switch (activation) {
    case nn::Activation::tanh:
      return {torch::tanh(z)};
    case nn::Activation::sin:
      return {torch::sin(z), torch::cos(z)};
    case nn::Activation::gelu:  // exact (erf) GELU, as torch::gelu computes it
      return {z, 0.5 * (1 + torch::erf(z * M_SQRT1_2)),
              torch::exp(-0.5 * z * z) * (0.5 * M_2_SQRTPI * M_SQRT1_2)};
    case nn::Activation::silu:
      return {z, torch::sigmoid(z)};
  }
  TESSERA_UNREACHABLE("activation primitives: unknown activation");
}

int64_t primitive_count(nn::Activation activation) {
  switch (activation) {
    case nn::Activation::tanh:
      return 1;
    case nn::Activation::sin:
      return 2;
    case nn::Activation::gelu:
      return 3;
    case nn::Activation::silu:
      return 2;
  }
  TESSERA_UNREACHABLE("activation primitives: unknown activation");
}

void activation_primitives_into(nn::Activation activation, const torch::Tensor& z,
                                std::vector<torch::Tensor>& out) {
  switch (activation) {
    case nn::Activation::tanh:
      if (detail::cpu_kernel_applies(z) && z.is_contiguous() && out[0].is_contiguous()) {
        AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "taylor_tanh", [&] {
          detail::tanh_into(z.data_ptr<scalar_t>(), out[0].data_ptr<scalar_t>(), z.numel());
        });
        return;
      }
      at::tanh_out(out[0], z);
      return;
    case nn::Activation::sin:
      at::sin_out(out[0], z), at::cos_out(out[1], z);
      return;
    case nn::Activation::gelu:
    case nn::Activation::silu: {
      const auto primitives = activation_primitives(activation, z);
      for (std::size_t k = 0; k < primitives.size(); ++k) out[k].copy_(primitives[k]);
      return;
    }
  }
}

std::vector<torch::Tensor> derivatives_from_primitives(nn::Activation activation,
                                                       const std::vector<torch::Tensor>& primitives,
                                                       int order) {
  TESSERA_CHECK(order >= 0 && order <= 3,
                "activation derivatives: order " << order << " not in 0..3");
  std::vector<torch::Tensor> d;
  switch (activation) {
    case nn::Activation::tanh: {  // tanh' = 1 - tanh^2
      const auto& t = primitives[0];
      const auto d1 = 1 - t * t;
      d = {t, d1, -2 * t * d1, d1 * (6 * t * t - 2)};
      break;
    }
    case nn::Activation::sin: {
      const auto &s = primitives[0], &c = primitives[1];
      d = {s, c, -s, -c};
      break;
    }
    case nn::Activation::gelu: {  // z Phi(z), Phi' = phi, phi' = -z phi
      const auto &z = primitives[0], &cdf = primitives[1], &pdf = primitives[2];
      d = {z * cdf, cdf + z * pdf, pdf * (2 - z * z), z * pdf * (z * z - 4)};
      break;
    }
    case nn::Activation::silu: {  // z s(z), s' = s (1 - s), s'' = s' (1 - 2 s)
      const auto &z = primitives[0], &s = primitives[1];
      const auto ds = s * (1 - s), skew = 1 - 2 * s;
      d = {z * s, s + z * ds, ds * (2 + z * skew), ds * (skew * (3 + z * skew) - 2 * z * ds)};
      break;
    }
  }
  d.resize(static_cast<std::size_t>(order) + 1);
  return d;
}

std::vector<torch::Tensor> activation_derivatives(nn::Activation activation, const torch::Tensor& z,
                                                  int order) {
  return derivatives_from_primitives(activation, activation_primitives(activation, z), order);
}

}  // namespace tessera::autodiff::taylor
