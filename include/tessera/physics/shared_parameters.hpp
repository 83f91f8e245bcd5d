#pragma once
/// Trainable physical scalars that every subdomain's equations share (docs/case-format.md
/// "Parameters (inverse problems)"). A positive parameter is trained as its logarithm, so no
/// step can make it zero or negative and steps are relative (a diffusivity of 1e-3 moves as
/// easily as one of 1).
#include <torch/types.h>

#include <map>
#include <string>
#include <vector>

namespace tessera::physics {

struct ParameterDefinition {
  std::string name;
  double initial = 0;
  bool positive = false;
};

class SharedParameters {
 public:
  SharedParameters(const std::vector<ParameterDefinition>& definitions, torch::Dtype dtype,
                   torch::Device device);

  /// name -> 0-d value, differentiable with respect to raw().
  std::map<std::string, torch::Tensor> values() const;
  /// The leaves an optimizer moves (log of the value for positive parameters), in name order.
  const std::vector<torch::Tensor>& raw() const { return raw_; }
  /// name -> current value.
  std::map<std::string, double> current() const;
  bool empty() const { return raw_.empty(); }
  /// Converts the leaves in place (the same tensors, so optimizers keep them).
  void set_dtype(torch::Dtype dtype) const;

 private:
  std::vector<ParameterDefinition> definitions_;
  std::vector<torch::Tensor> raw_;
};

}  // namespace tessera::physics
