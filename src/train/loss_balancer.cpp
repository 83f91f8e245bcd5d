#include "tessera/train/loss_balancer.hpp"

#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"

namespace tessera::train {

LossBalancer::LossBalancer(AdaptiveWeighting settings, std::vector<std::string> term_names)
    : settings_(settings), term_names_(std::move(term_names)) {
  TESSERA_ASSERT(settings_.every > 0, "balancing every " << settings_.every << " iterations");
}

std::vector<torch::Tensor> LossBalancer::term_gradients(
    const std::map<std::string, std::vector<physics::Probe>>& probes,
    const std::vector<torch::Tensor>& parameters) const {
  int64_t size = 0;
  for (const auto& p : parameters) size += p.numel();
  std::vector<torch::Tensor> gradients;
  for (const auto& name : term_names_) {
    auto flat = torch::zeros({size}, torch::kFloat64);
    torch::Tensor probe;
    if (auto it = probes.find(name); it != probes.end())
      for (const auto& part : it->second)
        if (const auto value = part.value(); value.defined())
          probe = probe.defined() ? probe + value : value;
    if (probe.defined() && !parameters.empty() && probe.requires_grad()) {
      const auto grads = torch::autograd::grad({probe}, parameters, {},
                                               /*retain_graph=*/true, /*create_graph=*/false,
                                               /*allow_unused=*/true);
      int64_t offset = 0;
      for (std::size_t k = 0; k < grads.size(); ++k) {
        const int64_t n = parameters[k].numel();
        if (grads[k].defined())
          flat.slice(0, offset, offset + n)
              .copy_(core::read_to_host(grads[k].reshape({-1}), grads[k].scalar_type()));
        offset += n;
      }
    }
    gradients.push_back(flat);
  }
  return gradients;
}

void LossBalancer::rebalance(std::vector<torch::Tensor> gradients,
                             const std::vector<SubdomainModel*>& owned, Reduction& reduction,
                             std::map<std::string, double>& weights) const {
  reduction.sum_term_gradients(gradients);
  // One slot per term and subdomain: each slot has one contributor, so the sums do not depend
  // on which rank owns which subdomain.
  const std::size_t terms = term_names_.size();
  std::vector<std::vector<double>> per_owned(owned.size(), std::vector<double>(terms, 0.0));
  int64_t offset = 0;
  for (std::size_t i = 0; i < owned.size(); ++i) {
    int64_t size = 0;
    for (const auto& p : owned[i]->network->parameters()) size += p.numel();
    for (std::size_t t = 0; t < terms && reduction.fills_slots(); ++t)
      per_owned[i][t] =
          core::read_double(gradients[t].slice(0, offset, offset + size).pow(2).sum());
    offset += size;
  }
  const auto figures = reduction.subdomain_figures(per_owned, terms);
  std::vector<double> squared_norms(terms, 0.0);
  for (std::size_t t = 0; t < terms; ++t)
    for (int s = 0; s < reduction.subdomains(); ++s)  // always in subdomain order
      squared_norms[t] += figures[static_cast<std::size_t>(s) * terms + t];
  update(squared_norms, weights);
}

void LossBalancer::update(const std::vector<double>& squared_norms,
                          std::map<std::string, double>& weights) const {
  TESSERA_ASSERT(squared_norms.size() == term_names_.size(),
                 squared_norms.size() << " norms for " << term_names_.size() << " terms");
  double total = 0;
  for (double q : squared_norms) total += std::sqrt(q);
  for (std::size_t i = 0; i < term_names_.size(); ++i) {
    const double norm = std::sqrt(squared_norms[i]);
    if (!(norm > 0) || !std::isfinite(total / norm)) continue;
    double& w = weights.at(term_names_[i]);
    w = settings_.alpha * w + (1 - settings_.alpha) * total / norm;
  }
}

}  // namespace tessera::train
