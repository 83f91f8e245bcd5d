#include "tessera/train/loss_balancer.hpp"

#include <cmath>

#include "tessera/core/error.hpp"

namespace tessera::train {

LossBalancer::LossBalancer(AdaptiveWeighting settings, std::vector<std::string> term_names)
    : settings_(settings), term_names_(std::move(term_names)) {
  TESSERA_ASSERT(settings_.every > 0, "balancing every " << settings_.every << " iterations");
}

std::vector<double> LossBalancer::squared_gradient_norms(
    const std::map<std::string, torch::Tensor>& terms,
    const std::vector<torch::Tensor>& parameters) const {
  std::vector<double> squares(term_names_.size(), 0.0);
  for (std::size_t i = 0; i < term_names_.size(); ++i) {
    auto it = terms.find(term_names_[i]);
    if (it == terms.end() || parameters.empty() || !it->second.requires_grad()) continue;
    for (auto& g : torch::autograd::grad({it->second}, parameters, {}, /*retain_graph=*/true,
                                         /*create_graph=*/false, /*allow_unused=*/true))
      if (g.defined()) squares[i] += g.pow(2).sum().item<double>();
  }
  return squares;
}

void LossBalancer::update(const std::vector<double>& squared_norms,
                          std::map<std::string, double>& weights) const {
  TESSERA_ASSERT(squared_norms.size() == term_names_.size(),
                 squared_norms.size() << " norms for " << term_names_.size() << " terms");
  double total = 0;
  for (double s : squared_norms) total += std::sqrt(s);
  for (std::size_t i = 0; i < term_names_.size(); ++i) {
    const double norm = std::sqrt(squared_norms[i]);
    if (norm <= 0 || !std::isfinite(total / norm)) continue;
    double& w = weights.at(term_names_[i]);
    w = settings_.alpha * w + (1 - settings_.alpha) * total / norm;
  }
}

}  // namespace tessera::train
