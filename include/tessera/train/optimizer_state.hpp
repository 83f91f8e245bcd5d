#pragma once
/// Saving and restoring an optimizer's state (Adam's moments, a quasi-Newton inverse Hessian or
/// curvature pairs) exactly, for checkpoints and the divergence guard.
#include <torch/optim/optimizer.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <sstream>
#include <string>
#include <type_traits>

namespace tessera::train {

/// The key LibTorch files a parameter's optimizer state under (a string in 1.x, a pointer in
/// 2.x); Key is the key type of Optimizer::state().
template <typename Key>
Key state_key(const torch::Tensor& parameter) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << parameter.unsafeGetTensorImpl();
    return text.str();
  } else {
    return static_cast<Key>(parameter.unsafeGetTensorImpl());
  }
}

void save_optimizer(const torch::optim::Optimizer& optimizer,
                    torch::serialize::OutputArchive& archive);
/// Into an optimizer built over the same parameters as the saved one.
void load_optimizer(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive);

}  // namespace tessera::train
