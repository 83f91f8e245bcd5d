#include "tessera/train/gradient_clipping.hpp"

namespace tessera::train {

void clip_gradient_norm(const std::vector<torch::Tensor>& parameters, double max_norm) {
  std::vector<torch::Tensor> gradients, norms;
  for (const auto& p : parameters)
    if (p.grad().defined()) {
      gradients.push_back(p.grad());
      norms.push_back(p.grad().data().norm(2));
    }
  if (gradients.empty()) return;
  const auto total = norms.size() == 1 ? norms.front() : torch::stack(norms).norm(2);
  const auto factor = torch::clamp(max_norm / (total + 1e-6), c10::nullopt, 1.0);
  for (auto& g : gradients) g.data().mul_(factor);
}

}  // namespace tessera::train
