#pragma once
/// Gradient-norm loss balancing (Wang et al., "An expert's guide to training PINNs", 2023):
/// every `every` Adam iterations each term i gets lambda_hat_i = sum_j |grad L_j| / |grad L_i|
/// (L2 norms over every network's parameters) and lambda_i <- alpha lambda_i + (1 - alpha)
/// lambda_hat_i, so that each weighted term pulls with the same gradient norm.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/plan.hpp"

namespace tessera::train {

class LossBalancer {
 public:
  LossBalancer(AdaptiveWeighting settings, std::vector<std::string> term_names);

  bool enabled() const { return settings_.enabled; }
  /// Whether the weights are updated at iteration `stage_step` of an Adam stage.
  bool due(int64_t stage_step) const {
    return settings_.enabled && stage_step % settings_.every == 0;
  }

  /// Each term's squared gradient norm over `parameters`, in term_names order: this rank's part
  /// (sum the parts over ranks before update()). A term absent from `terms` or without a graph
  /// contributes 0.
  std::vector<double> squared_gradient_norms(const std::map<std::string, torch::Tensor>& terms,
                                             const std::vector<torch::Tensor>& parameters) const;

  /// Moves `weights` toward the balancing weights of the global squared norms; a term with no
  /// gradient keeps its weight.
  void update(const std::vector<double>& squared_norms,
              std::map<std::string, double>& weights) const;

 private:
  AdaptiveWeighting settings_;
  std::vector<std::string> term_names_;
};

}  // namespace tessera::train
