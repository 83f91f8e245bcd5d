// Sums over the slices of the points that the ranks of a group share (fbpinn): each part's
// figures and gradients are kept apart, then folded in slice order on every rank.
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::train {
namespace {

double value_of(const torch::Tensor& t) { return t.defined() ? t.item<double>() : 0.0; }

}  // namespace

void Trainer::record_slice_part(const SubdomainModel& model, const LocalLoss& part,
                                bool create_graph) {
  SliceRecord record;
  const auto tensors = owned_parameters();
  if (create_graph) {
    record.gradient = flat_gradients(tensors);
    for (auto t : tensors) t.mutable_grad() = torch::Tensor();
  }
  auto& figures = record.figures;
  figures.push_back(value_of(part.total));
  // Per term: whether this part has it, its value in the total, and its sum and count.
  for (const auto& name : term_names_) {
    const auto term = part.terms.find(name);
    const auto sums = part.sums.find(name);
    const auto counts = part.counts.find(name);
    const bool here = sums != part.sums.end() && sums->second.count(model.id);
    figures.push_back(here ? 1.0 : 0.0);
    figures.push_back(term != part.terms.end() ? value_of(term->second) : 0.0);
    figures.push_back(here ? value_of(sums->second.at(model.id)) : 0.0);
    figures.push_back(here ? counts->second.at(model.id) : 0.0);
  }
  // The shared parameters may have a dtype of their own: their gradients ride as figures.
  if (create_graph && sync_.parameters)
    for (auto p : sync_.parameters->raw()) {
      figures.push_back(p.grad().defined() ? p.grad().item<double>() : 0.0);
      p.mutable_grad() = torch::Tensor();
    }
  if (measuring_terms_) {
    int64_t size = 0;
    for (const auto& t : tensors) size += t.numel();
    for (std::size_t t = 0; t < term_names_.size(); ++t) {
      const auto g = t < part_term_gradients_.size() ? part_term_gradients_[t].contiguous()
                                                     : torch::zeros({size}, torch::kFloat64);
      figures.insert(figures.end(), g.data_ptr<double>(), g.data_ptr<double>() + size);
    }
    part_term_gradients_.clear();
  }
  slice_records_.push_back(std::move(record));
}

LocalLoss Trainer::fold_slices(const SubdomainModel& model) {
  SliceRecord sum;
  {
    core::ScopedTimer timer(sync_s_);
    sum = fold_slice_records(sync_.slices.group, slice_records_);
  }
  slice_records_.clear();
  const auto tensors = owned_parameters();
  if (sum.gradient.defined()) set_gradients(tensors, sum.gradient);
  const auto options = torch::TensorOptions().dtype(tensors.front().scalar_type());
  const auto tensor = [&](double v) { return torch::full({}, v, options); };
  const auto& f = sum.figures;
  std::size_t k = 0;
  LocalLoss loss;
  loss.total = tensor(f[k++]);
  for (const auto& name : term_names_) {
    const bool here = f[k] > 0;
    const double term = f[k + 1], sums = f[k + 2], counts = f[k + 3];
    k += 4;
    if (!here) continue;
    loss.terms[name] = tensor(term);
    loss.sums[name][model.id] = tensor(sums);
    loss.counts[name][model.id] = counts;
  }
  if (sum.gradient.defined() && sync_.parameters)
    for (auto p : sync_.parameters->raw()) p.mutable_grad() = torch::full_like(p, f[k++]);
  if (measuring_terms_) {
    int64_t size = 0;
    for (const auto& t : tensors) size += t.numel();
    part_term_gradients_.clear();
    for (std::size_t t = 0; t < term_names_.size(); ++t, k += static_cast<std::size_t>(size))
      part_term_gradients_.push_back(
          torch::from_blob(const_cast<double*>(f.data() + k), {size}, torch::kFloat64).clone());
  }
  return loss;
}

}  // namespace tessera::train
