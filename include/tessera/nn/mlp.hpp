#pragma once
/// The per-subdomain network: input normalisation to [-1, 1] over the subdomain's box,
/// optional Fourier features, a tanh/sin/gelu/silu MLP with optional Jagtap adaptive
/// activation, and a linear output layer (one output per field). The modified MLP (Wang, Teng
/// & Perdikaris 2021) adds two encoders of the features, U = s(W_u f + b_u) and
/// V = s(W_v f + b_v), and mixes every hidden layer's output g with them:
/// h = g * U + (1 - g) * V, which carries the input into every layer.
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/nn/network.hpp"

namespace tessera::nn {

enum class Activation { tanh, sin, gelu, silu };

/// Applies the activation element-wise.
torch::Tensor activate(Activation activation, const torch::Tensor& z);

struct MlpOptions {
  int64_t inputs = 2;   ///< number of input coordinates (time included)
  int64_t outputs = 1;  ///< number of fields
  std::vector<int64_t> hidden{50, 50, 50};
  /// The modified MLP's encoders and gating (see above); every hidden width must be equal.
  bool modified = false;
  Activation activation = Activation::tanh;
  std::optional<double>
      adaptive_scale;  ///< Jagtap: sigma(scale * a * z), a trainable, a0 = 1/scale
  /// Inputs whose box range [lower, upper] is one period of the solution: each enters as
  /// (cos(pi z), sin(pi z)) of its normalised value z instead of z, so the network and all its
  /// derivatives are periodic along it by construction. Not with Fourier features.
  std::vector<int> periodic_inputs;
  int64_t fourier_count = 0;   ///< 0: no Fourier features
  double fourier_scale = 1.0;  ///< std of the fixed Fourier matrix entries
  /// Random weight factorisation (Wang et al. 2023): every layer's weight is W = diag(exp(s)) V
  /// with s ~ N(mean, std) per output and V = W0 / exp(s), so the network starts as the plain
  /// one and trains s and V. (mean, std); nullopt: plain weights.
  std::optional<std::pair<double, double>> weight_factorization;
  bool xavier_uniform = false;       ///< default: Xavier-normal
  std::vector<double> lower, upper;  ///< input box used for normalisation to [-1, 1]
  uint64_t seed = 1234;              ///< initialisation stream: (seed, subdomain, purpose)
  int64_t subdomain = 0;
  std::string purpose = "init";  ///< another network of the same subdomain draws from its own
};

/// A fully connected network. Parameters are created in float64 on the CPU from Tessera's own
/// RNG (so initialisation is the same on every device and LibTorch version), then moved with
/// `to(device, dtype)`.
class MlpImpl : public Network {
 public:
  explicit MlpImpl(MlpOptions options);

  /// x: [n, inputs] -> [n, outputs], in the module's dtype and device.
  torch::Tensor forward(const torch::Tensor& x) override;
  int64_t outputs() const override { return options_.outputs; }

  /// Maps x to the normalised (periodic-embedded or Fourier-featured) features the first layer
  /// sees.
  torch::Tensor features(const torch::Tensor& x) const;

  const MlpOptions& options() const { return options_; }
  /// Whether input `input` enters periodically (MlpOptions::periodic_inputs).
  bool is_periodic(int64_t input) const;
  /// Weights [out, in] of every layer, output layer last: the parameters themselves, or with
  /// weight factorisation exp(s) * V, differentiable with respect to s and V.
  std::vector<torch::Tensor> weights() const;
  /// Biases [out] of every layer, output layer last.
  const std::vector<torch::Tensor>& biases() const { return biases_; }
  /// The modified MLP's encoder weights [width, features] and biases [width], U's then V's
  /// (empty for the plain MLP); weights as in weights().
  std::vector<torch::Tensor> encoder_weights() const;
  const std::vector<torch::Tensor>& encoder_biases() const { return encoder_biases_; }
  /// Jagtap slopes, one 0-d tensor per hidden layer (empty without adaptive activation).
  const std::vector<torch::Tensor>& slopes() const { return slopes_; }
  const torch::Tensor& fourier_matrix() const { return fourier_; }
  const torch::Tensor& shift() const { return shift_; }
  const torch::Tensor& scale() const { return scale_; }

  /// Mixed precision (a stage's precision "bf16"): every layer's product takes bfloat16
  /// operands (accumulated in float32 and returned in bfloat16, as bf16 GEMMs do) and is
  /// converted back to float32 before the bias; the parameters, activations and everything
  /// after stay float32.
  void set_bf16_products(bool on) override { bf16_products_ = on; }
  bool bf16_products() const override { return bf16_products_; }

 private:
  /// z W^T + b, with bfloat16 operands where bf16_products() is on.
  torch::Tensor affine(const torch::Tensor& z, const torch::Tensor& weight,
                       const torch::Tensor& bias) const;

  MlpOptions options_;
  bool bf16_products_ = false;
  std::vector<torch::Tensor> weights_, biases_, slopes_;
  std::vector<torch::Tensor> encoder_weights_, encoder_biases_;
  std::vector<torch::Tensor> log_scales_;  ///< s of every layer with weight factorisation
  std::vector<torch::Tensor> encoder_log_scales_;
  torch::Tensor fourier_;        ///< [feature_inputs, count] fixed, or undefined
  torch::Tensor shift_, scale_;  ///< normalisation: (x - shift) * scale, [inputs]
};

TORCH_MODULE(Mlp);

/// TF32 matrix products on CUDA devices (a stage's precision "tf32") on or off, for the process.
void set_tf32_products(bool on);

}  // namespace tessera::nn
