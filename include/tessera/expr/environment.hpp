#pragma once
/// The tensors an expression reads when it is evaluated.
#include <map>
#include <string>

#include <torch/types.h>

#include "tessera/expr/symbols.hpp"

namespace tessera::expr {

/// Values available when evaluating, all on one device. n = coordinates.size(0).
/// Gradients flow through every tensor that requires them.
struct Environment {
  torch::Tensor coordinates;  ///< [n, coordinates().size()]; sets dtype and device
  std::map<DerivativeKey, torch::Tensor> derivatives;  ///< each [n]
  std::map<std::string, torch::Tensor> parameters;     ///< each 0-d (may require grad)
  std::map<std::string, torch::Tensor> extra;          ///< each [n]
};

}  // namespace tessera::expr
