#include "tessera/train/loss_figures.hpp"

#include <cmath>

#include "tessera/core/host_reads.hpp"

namespace tessera::train {

void reduce_loss_figures(const LocalLoss& loss, const std::vector<std::string>& term_names,
                         const std::map<std::string, double>& weights, Reduction& reduction,
                         LogRecord& record) {
  // Slots: per term, per subdomain, (sum, count); then per subdomain (jump sum, count).
  const std::size_t terms = term_names.size();
  const auto slots = static_cast<std::size_t>(reduction.subdomains());
  std::vector<double> figures(2 * slots * (terms + 1), 0.0);
  for (std::size_t t = 0; t < terms; ++t) {
    const auto& name = term_names[t];
    if (auto it = loss.sums.find(name); it != loss.sums.end())
      for (const auto& [s, value] : it->second)
        figures[2 * (t * slots + s)] = core::read_double(value);
    if (auto it = loss.counts.find(name); it != loss.counts.end())
      for (const auto& [s, count] : it->second) figures[2 * (t * slots + s) + 1] = count;
  }
  for (const auto& [s, value] : loss.jump_sums)
    figures[2 * (terms * slots + s)] = core::read_double(value);
  for (const auto& [s, count] : loss.jump_counts) figures[2 * (terms * slots + s) + 1] = count;
  reduction.sum_log_figures(figures);
  record.loss = 0;
  for (std::size_t t = 0; t <= terms; ++t) {
    double sum = 0, count = 0;
    for (std::size_t s = 0; s < slots; ++s) {  // always in subdomain order
      sum += figures[2 * (t * slots + s)];
      count += figures[2 * (t * slots + s) + 1];
    }
    const double mean = count > 0 ? sum / count : 0.0;
    if (t == terms) {
      if (count > 0) record.interface_jump = std::sqrt(mean);
    } else {
      record.terms[term_names[t]] = mean;
      record.loss += weights.at(term_names[t]) * mean;
    }
  }
}

}  // namespace tessera::train
