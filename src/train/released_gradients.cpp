#include "tessera/train/released_gradients.hpp"

namespace tessera::train {

std::vector<torch::Tensor> release_gradients(torch::optim::Optimizer& optimizer) {
  std::vector<torch::Tensor> released;
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params())
      if (p.grad().defined()) {
        released.push_back(p);
        p.mutable_grad().reset();
      }
  return released;
}

void zero_missing_gradients(const std::vector<torch::Tensor>& released) {
  for (auto p : released)
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
}

}  // namespace tessera::train
