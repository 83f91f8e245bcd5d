#pragma once
/// What the trainer needs of a subdomain's network, whatever its architecture: a function of
/// the input coordinates with trainable parameters (the plain or modified MLP, nn::Mlp; the
/// windowed sum of overlapping subdomain networks, nn::Fbpinn).
#include <torch/nn/module.h>
#include <torch/types.h>

#include <cstdint>

namespace tessera::nn {

class Network : public torch::nn::Module {
 public:
  /// x: [n, inputs] -> [n, outputs], in the module's dtype and device.
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  /// Number of outputs (fields).
  virtual int64_t outputs() const = 0;
  /// Mixed precision (a stage's precision "bf16") where the architecture has it.
  virtual void set_bf16_products(bool on) = 0;
  virtual bool bf16_products() const = 0;
};

}  // namespace tessera::nn
