#include "tessera/train/local_loss.hpp"

namespace tessera::train {
namespace {

void accumulate(torch::Tensor& into, const torch::Tensor& value) {
  into = into.defined() ? into + value : value;
}

}  // namespace

void LocalLoss::add(const physics::TermValue& term, int subdomain, double weight) {
  // A replica's share: the replicas' totals (and gradients) sum to the mean over all points.
  const auto part = term.total_count > 0 ? term.mean_square * term.share() : term.mean_square;
  accumulate(total, weight * part);
  accumulate(terms[term.name], part);
  if (term.probe.residual.defined()) probes[term.name].push_back(term.probe);
  accumulate(sums[term.name][subdomain],
             term.mean_square.detach() * static_cast<double>(term.count));
  counts[term.name][subdomain] += static_cast<double>(term.count);
}

void LocalLoss::merge(LocalLoss&& other) {
  if (other.total.defined()) accumulate(total, other.total);
  for (auto& [name, t] : other.terms) accumulate(terms[name], t);
  for (auto& [name, list] : other.probes)
    for (auto& probe : list) probes[name].push_back(std::move(probe));
  for (auto& [name, per] : other.sums)
    for (auto& [s, t] : per) accumulate(sums[name][s], t);
  for (auto& [name, per] : other.counts)
    for (auto& [s, c] : per) counts[name][s] += c;
  for (auto& [s, t] : other.jump_sums) accumulate(jump_sums[s], t);
  for (auto& [s, c] : other.jump_counts) jump_counts[s] += c;
}

void LocalLoss::detach() {
  if (total.defined()) total = total.detach();
  for (auto& [name, t] : terms) t = t.detach();
  probes.clear();
}

void LocalLoss::forget_subdomain(int s) {
  for (auto& [name, per] : sums) per.erase(s);
  for (auto& [name, per] : counts) per.erase(s);
  jump_sums.erase(s);
  jump_counts.erase(s);
}

}  // namespace tessera::train
