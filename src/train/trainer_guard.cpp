// The trainer's use of the divergence guard in Adam stages: deciding which subdomains
// diverged this iteration and rolling them back.
#include <cmath>
#include <sstream>

#include "tessera/core/torch_pch.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::train {
namespace {

/// Names of the terms whose sums are not finite in subdomain `s` (" poisson walls").
std::string nonfinite_terms(const LocalLoss& loss, int s) {
  std::ostringstream names;
  for (const auto& [name, per] : loss.sums)
    if (auto it = per.find(s); it != per.end() && !std::isfinite(it->second.item<double>()))
      names << " " << name;
  return names.str().empty() ? " (gradient only)" : names.str();
}

}  // namespace

void Trainer::keep_good_states() {
  guard_.resize(owned_.size());
  for (std::size_t i = 0; i < owned_.size(); ++i)
    guard_.remember(i, owned_[i]->network->parameters(), *optimizers_[i], iteration_);
}

std::vector<bool> Trainer::guard_against_divergence(LocalLoss& loss) {
  std::vector<bool> may_step(owned_.size(), true);
  for (std::size_t i = 0; i < owned_.size(); ++i) {
    auto& model = *owned_[i];
    const auto parameters = model.network->parameters();
    // Replicas see the same summed gradient, so they all decide alike; their local losses differ.
    bool finite = finite_gradients(parameters);
    if (!sync_.replicas)
      for (const auto& [name, per] : loss.sums)
        if (auto it = per.find(model.id); it != per.end())
          finite = finite && std::isfinite(it->second.item<double>());
    if (finite) continue;
    may_step[i] = false;
    const std::string terms = nonfinite_terms(loss, model.id);
    loss.forget_subdomain(model.id);
    const std::string warning =
        guard_.roll_back(i, model.id, iteration_ + 1, terms, parameters, *optimizers_[i]);
    if (callbacks_.on_warning) callbacks_.on_warning(warning);
  }
  return may_step;
}

}  // namespace tessera::train
