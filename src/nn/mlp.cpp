#include "tessera/nn/mlp.hpp"

#include <ATen/Context.h>

#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/rng.hpp"
#include "tessera/core/text.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::nn {

torch::Tensor activate(Activation activation, const torch::Tensor& z) {
  switch (activation) {
    case Activation::tanh:
      return torch::tanh(z);
    case Activation::sin:
      return torch::sin(z);
    case Activation::gelu:
      return torch::gelu(z);
    case Activation::silu:
      return torch::silu(z);
  }
  return z;
}

namespace {

torch::Tensor random_tensor(core::Rng& rng, std::vector<int64_t> shape, double std_dev,
                            bool uniform) {
  auto t = torch::empty(shape, torch::kFloat64);
  auto* data = t.data_ptr<double>();
  // Uniform Xavier: U(-a, a) with a = sqrt(3) * std, which has the same variance.
  const double half_width = std::sqrt(3.0) * std_dev;
  for (int64_t i = 0; i < t.numel(); ++i)
    data[i] = uniform ? (2.0 * rng.uniform() - 1.0) * half_width : rng.normal() * std_dev;
  return t;
}

}  // namespace

MlpImpl::MlpImpl(MlpOptions options) : options_(std::move(options)) {
  TESSERA_CHECK(options_.inputs >= 1 && options_.outputs >= 1, "network needs inputs and outputs");
  TESSERA_CHECK(static_cast<int64_t>(options_.lower.size()) == options_.inputs &&
                    static_cast<int64_t>(options_.upper.size()) == options_.inputs,
                "network input box must have one range per input");
  for (int64_t i = 0; i < options_.inputs; ++i)
    TESSERA_CHECK(options_.lower[i] < options_.upper[i],
                  "network input box: axis " << i << " needs lower < upper, got "
                                             << options_.lower[i] << " and " << options_.upper[i]);
  core::Rng rng(options_.seed, options_.subdomain, options_.purpose);

  auto lower = torch::tensor(options_.lower, torch::kFloat64);
  auto upper = torch::tensor(options_.upper, torch::kFloat64);
  shift_ = register_buffer("shift", (lower + upper) / 2);
  scale_ = register_buffer("scale", 2.0 / (upper - lower));

  for (int axis : options_.periodic_inputs)
    TESSERA_CHECK(axis >= 0 && axis < options_.inputs,
                  "periodic input " << axis << " is not an input");
  TESSERA_CHECK(options_.periodic_inputs.empty() || options_.fourier_count == 0,
                "periodic inputs cannot be combined with Fourier features");
  int64_t width = options_.inputs + static_cast<int64_t>(options_.periodic_inputs.size());
  if (options_.fourier_count > 0) {
    fourier_ =
        register_buffer("fourier", random_tensor(rng, {options_.inputs, options_.fourier_count},
                                                 options_.fourier_scale, /*uniform=*/false));
    width = 2 * options_.fourier_count;
  }
  std::vector<int64_t> widths = options_.hidden;
  widths.push_back(options_.outputs);
  for (std::size_t layer = 0; layer < widths.size(); ++layer) {
    const int64_t out = widths[layer];
    const double std_dev = std::sqrt(2.0 / static_cast<double>(width + out));
    const char* name = options_.weight_factorization ? "weight_direction" : "weight";
    weights_.push_back(
        register_parameter(name + std::to_string(layer),
                           random_tensor(rng, {out, width}, std_dev, options_.xavier_uniform)));
    biases_.push_back(
        register_parameter("bias" + std::to_string(layer), torch::zeros({out}, torch::kFloat64)));
    if (options_.adaptive_scale && layer + 1 < widths.size()) {
      slopes_.push_back(
          register_parameter("slope" + std::to_string(layer),
                             torch::full({}, 1.0 / *options_.adaptive_scale, torch::kFloat64)));
    }
    width = out;
  }
  if (options_.modified) {
    const int64_t features = weights_.front().size(1), hidden = options_.hidden.front();
    for (int64_t w : options_.hidden)
      TESSERA_CHECK(w == hidden,
                    "the modified MLP needs equal hidden widths, got " << hidden << " and " << w);
    // Drawn after the layers, so those are the plain network's for the same seed.
    const double std_dev = std::sqrt(2.0 / static_cast<double>(features + hidden));
    for (const char* name : {"encoder_u", "encoder_v"}) {
      encoder_weights_.push_back(register_parameter(
          std::string(name) + (options_.weight_factorization ? "_weight_direction" : "_weight"),
          random_tensor(rng, {hidden, features}, std_dev, options_.xavier_uniform)));
      encoder_biases_.push_back(
          register_parameter(std::string(name) + "_bias", torch::zeros({hidden}, torch::kFloat64)));
    }
  }
  // Drawn after every weight, so that W0 is the plain network's for the same seed.
  if (const auto& factorization = options_.weight_factorization) {
    torch::NoGradGuard no_grad;
    const auto factorize = [&](torch::Tensor& weight, const std::string& name) {
      auto s = random_tensor(rng, {weight.size(0)}, factorization->second, /*uniform=*/false) +
               factorization->first;
      weight.div_(torch::exp(s).unsqueeze(1));
      return register_parameter(name, s);
    };
    for (std::size_t layer = 0; layer < weights_.size(); ++layer)
      log_scales_.push_back(factorize(weights_[layer], "weight_log_scale" + std::to_string(layer)));
    for (std::size_t e = 0; e < encoder_weights_.size(); ++e)
      encoder_log_scales_.push_back(
          factorize(encoder_weights_[e], "encoder_log_scale" + std::to_string(e)));
  }
}

namespace {

// exp(s) * V row by row where the weights are factorised, else the weights themselves.
std::vector<torch::Tensor> scaled(const std::vector<torch::Tensor>& directions,
                                  const std::vector<torch::Tensor>& log_scales) {
  if (log_scales.empty()) return directions;
  std::vector<torch::Tensor> product;
  for (std::size_t i = 0; i < directions.size(); ++i)
    product.push_back(torch::exp(log_scales[i]).unsqueeze(1) * directions[i]);
  return product;
}

}  // namespace

bool MlpImpl::is_periodic(int64_t input) const {
  for (int axis : options_.periodic_inputs)
    if (axis == input) return true;
  return false;
}

std::vector<torch::Tensor> MlpImpl::weights() const { return scaled(weights_, log_scales_); }

std::vector<torch::Tensor> MlpImpl::encoder_weights() const {
  return scaled(encoder_weights_, encoder_log_scales_);
}

torch::Tensor MlpImpl::features(const torch::Tensor& x) const {
  auto z = (x - shift_) * scale_;
  if (!options_.periodic_inputs.empty()) {
    // A periodic input's z in [-1, 1] spans one period: it enters as cos(pi z) and sin(pi z),
    // after the other inputs, in place of z.
    std::vector<torch::Tensor> columns;
    for (int64_t i = 0; i < options_.inputs; ++i)
      if (!is_periodic(i)) columns.push_back(z.select(1, i));
    for (int axis : options_.periodic_inputs) {
      const auto angle = M_PI * z.select(1, axis);
      columns.push_back(torch::cos(angle));
      columns.push_back(torch::sin(angle));
    }
    return torch::stack(columns, 1);
  }
  if (fourier_.defined()) {
    auto projected = 2.0 * M_PI * torch::matmul(z, fourier_);
    z = torch::cat({torch::sin(projected), torch::cos(projected)}, 1);
  }
  return z;
}

torch::Tensor MlpImpl::affine(const torch::Tensor& z, const torch::Tensor& weight,
                              const torch::Tensor& bias) const {
  if (bf16_products_)
    return torch::mm(z.to(torch::kBFloat16), weight.t().to(torch::kBFloat16))
               .to(bias.scalar_type()) +
           bias;
  return torch::addmm(bias, z, weight.t());
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  auto z = features(x);
  torch::Tensor u, v;  // the modified MLP's encodings of the features
  if (options_.modified) {
    const auto encoder = encoder_weights();
    u = activate(options_.activation, affine(z, encoder[0], encoder_biases_[0]));
    v = activate(options_.activation, affine(z, encoder[1], encoder_biases_[1]));
  }
  const auto weight = weights();
  const std::size_t layers = weight.size();
  for (std::size_t layer = 0; layer < layers; ++layer) {
    z = affine(z, weight[layer], biases_[layer]);
    if (layer + 1 < layers) {
      if (!slopes_.empty()) z = z * (*options_.adaptive_scale * slopes_[layer]);
      z = activate(options_.activation, z);
      if (options_.modified) z = v + z * (u - v);
    }
  }
  return z;
}

void set_tf32_products(bool on) {
  // "high" lets cuBLAS use TF32 for float32 products; "highest" is LibTorch's default.
  static bool enabled = false;
  if (on == enabled) return;
  at::globalContext().setFloat32MatmulPrecision(on ? "high" : "highest");
  enabled = on;
}

}  // namespace tessera::nn
