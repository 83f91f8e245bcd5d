// The interface terms of many whole sides at once: one squared jump and one weighted sum per
// set of sides whose terms read the same columns, instead of a dozen small operations (and as
// many backward nodes) per side and term.
#include <algorithm>
#include <sstream>
#include <utility>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/interface_coupling.hpp"

namespace tessera::train {
namespace {

using Side = InterfaceCoupling::SideValues;

// Row r of the sides' stacked rows belongs to subdomain slot r falls in: each subdomain's sides
// come one after another, so its rows are one range.
struct Rows {
  std::vector<int> slot_ids;                        // subdomain id of each slot, in order
  std::vector<std::pair<int64_t, int64_t>> ranges;  // each slot's rows [begin, end)
};

Rows rows_of(const std::vector<Side>& sides) {
  Rows rows;
  int64_t row = 0;
  for (const auto& s : sides) {
    const int id = s.model->id;
    if (rows.slot_ids.empty() || rows.slot_ids.back() != id) {
      TESSERA_ASSERT(
          std::find(rows.slot_ids.begin(), rows.slot_ids.end(), id) == rows.slot_ids.end(),
          "interface sides of subdomain " << id << " are not consecutive");
      rows.slot_ids.push_back(id);
      rows.ranges.emplace_back(row, row);
    }
    row += s.local.size(0);
    rows.ranges.back().second = row;
  }
  return rows;
}

// Per-slot sums of per-row values ([rows] or [rows, k]) in float64, each slot's rows added one
// after another in row order: a running sum (cumsum) over the slot's range, whose last row is
// the sum. On the CPU that is a plain sequential loop; on a GPU a scan without atomics. No read.
torch::Tensor slot_sums(const torch::Tensor& per_row, const Rows& rows) {
  const auto values = per_row.to(torch::kFloat64);
  std::vector<torch::Tensor> sums;
  for (const auto& [begin, end] : rows.ranges)
    sums.push_back(end > begin ? values.narrow(0, begin, end - begin).cumsum(0)[end - begin - 1]
                               : torch::zeros_like(values[0]));
  return torch::stack(sums);
}

// The rows whose neighbour values are all finite ([rows] bool), and the neighbour values with
// the others' set to zero. A neighbour that diverged may send non-finite values until it is
// rolled back: its rows do without their terms, decided on the device without a read.
std::pair<torch::Tensor, torch::Tensor> usable_remote(const torch::Tensor& remote) {
  const auto usable = torch::isfinite(remote).all(1);
  return {usable, torch::where(usable.unsqueeze(1), remote, 0.0)};
}

// The lower side of each interface logs the field jump, each interface counted once.
void add_jumps(LocalLoss& loss, const std::vector<Side>& sides) {
  std::vector<Side> lower;
  for (const auto& s : sides)
    if (s.model->interfaces[s.k]->side() == 0) lower.push_back(s);
  if (lower.empty()) return;
  const int64_t fields = lower.front().model->network->outputs();
  std::vector<torch::Tensor> locals, remotes;
  for (const auto& s : lower) {
    locals.push_back(s.local.detach().narrow(1, 0, fields));
    remotes.push_back(s.model->remote.at(s.k).narrow(1, 0, fields));
  }
  const auto rows = rows_of(lower);
  const auto [usable, remote] = usable_remote(torch::cat(remotes));
  const auto squared = (torch::cat(locals) - remote).pow(2).sum(1) * usable;
  const auto sums = slot_sums(squared, rows);
  for (std::size_t slot = 0; slot < rows.slot_ids.size(); ++slot) {
    auto& sum = loss.jump_sums[rows.slot_ids[slot]];
    const auto value = sums[static_cast<int64_t>(slot)];
    sum = sum.defined() ? sum + value : value;
  }
  for (const auto& s : lower)
    loss.jump_counts[s.model->id] += static_cast<double>(s.local.size(0) * fields);
}

// Sides whose terms read the same columns of values of the same width, in list order.
std::vector<std::vector<Side>> by_columns(const std::vector<Side>& sides) {
  std::vector<std::pair<std::string, std::vector<Side>>> sets;
  for (const auto& s : sides) {
    const auto& side = *s.model->interfaces[s.k];
    const auto columns = side.term_columns();
    if (columns.empty()) continue;
    std::ostringstream key;
    key << side.quantities();
    for (const auto& t : columns)
      key << ' ' << t.name << t.start << ':' << t.width << '*' << t.scale;
    auto it = std::find_if(sets.begin(), sets.end(),
                           [&](const auto& set) { return set.first == key.str(); });
    if (it == sets.end()) it = sets.insert(sets.end(), {key.str(), {}});
    it->second.push_back(s);
  }
  std::vector<std::vector<Side>> result;
  for (auto& set : sets) result.push_back(std::move(set.second));
  return result;
}

void add_set(LocalLoss& loss, const std::vector<Side>& sides,
             const std::map<std::string, double>& weights, bool probes) {
  const auto& first = *sides.front().model->interfaces[sides.front().k];
  const auto columns = first.term_columns();
  const int64_t quantities = first.quantities();
  std::vector<torch::Tensor> locals, remotes;
  for (const auto& s : sides) {
    locals.push_back(s.local);
    remotes.push_back(s.model->remote.at(s.k));
  }
  const auto options = sides.front().local.options();
  const auto rows = rows_of(sides);
  // The jump scaled per column (continuity's average halves it); columns no term reads get 0.
  std::vector<double> scale(static_cast<std::size_t>(quantities), 0.0);
  std::vector<double> column_weight(static_cast<std::size_t>(quantities), 0.0);
  for (const auto& t : columns)
    for (int64_t c = t.start; c < t.start + t.width; ++c) {
      scale[static_cast<std::size_t>(c)] = t.scale;
      column_weight[static_cast<std::size_t>(c)] = weights.at(t.name);
    }
  // A side's term is the mean over its points (a replica's share of the mean over all).
  std::vector<double> row_weight;
  for (const auto& s : sides) {
    const int64_t n = s.local.size(0);
    const double share = s.model->interfaces[s.k]->share();
    row_weight.insert(row_weight.end(), n, n > 0 ? share / static_cast<double>(n) : 0.0);
  }
  const auto to_tensor = [&](const std::vector<double>& v) {
    return torch::tensor(v, torch::kFloat64).to(options.device(), options.dtype());
  };
  const auto [usable, remote] = usable_remote(torch::cat(remotes));
  const auto jump = (torch::cat(locals) - remote) * to_tensor(scale);
  const auto squared = jump.pow(2);
  const auto weight =
      (to_tensor(row_weight) * usable).unsqueeze(1) * to_tensor(column_weight).unsqueeze(0);
  const auto total = (squared * weight).sum();
  loss.total = loss.total.defined() ? loss.total + total : total;

  // The logged figures: per row and term the sum of squares, in float64; per subdomain their
  // sums over its own rows, and per term the weighted sum (the sides' means).
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> per_term;
  for (const auto& t : columns)
    per_term.push_back(squared.detach().narrow(1, t.start, t.width).sum(1));
  const auto per_row = torch::stack(per_term, 1).to(torch::kFloat64) * usable.unsqueeze(1);
  const auto per_slot = slot_sums(per_row, rows);  // [slots, terms]
  const auto means = (per_row * torch::tensor(row_weight, per_row.options()).unsqueeze(1))
                         .sum(0)
                         .to(options.dtype());
  for (std::size_t k = 0; k < columns.size(); ++k) {
    const auto& t = columns[k];
    const auto term_slots = per_slot.select(1, static_cast<int64_t>(k));
    for (std::size_t slot = 0; slot < rows.slot_ids.size(); ++slot) {
      auto& sum = loss.sums[t.name][rows.slot_ids[slot]];
      const auto value = term_slots[static_cast<int64_t>(slot)];
      sum = sum.defined() ? sum + value : value;
    }
    auto& term = loss.terms[t.name];
    const auto mean = means[static_cast<int64_t>(k)];
    term = term.defined() ? term + mean : mean;
    int64_t row = 0;
    for (const auto& s : sides) {
      const int64_t n = s.local.size(0);
      loss.counts[t.name][s.model->id] += static_cast<double>(n);
      if (probes) {
        // The probe differentiates the jump: it must stay on the graph.
        torch::AutoGradMode graph(true);
        const auto& side = *s.model->interfaces[s.k];
        auto value = side.term(t.name, {}, jump.narrow(0, row, n).narrow(1, t.start, t.width));
        loss.probes[t.name].push_back(std::move(value.probe));
      }
      row += n;
    }
  }
}

}  // namespace

void InterfaceCoupling::add_terms_together(LocalLoss& loss, const std::vector<SideValues>& sides,
                                           const std::map<std::string, double>& weights,
                                           bool probes) {
  for (const auto& set : by_columns(sides)) add_set(loss, set, weights, probes);
  add_jumps(loss, sides);
}

}  // namespace tessera::train
