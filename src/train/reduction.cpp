// The three reduction strategies (reduction.hpp) and what they share: job-wide figures per
// subdomain slot and the shared parameters' sums.
#include "tessera/train/reduction.hpp"

#include <algorithm>

#include "tessera/core/host_reads.hpp"
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::train {
namespace {

std::vector<torch::Tensor> parameters_of(const std::vector<SubdomainModel*>& owned) {
  std::vector<torch::Tensor> params;
  for (auto* s : owned)
    for (auto& p : s->network->parameters()) params.push_back(p);
  return params;
}

/// Gradient accumulation: ceil(largest / batch_points) parts of `points` (at least one).
int parts_within(int64_t points, int64_t batch_points) {
  if (batch_points <= 0) return 1;
  return static_cast<int>(std::max<int64_t>(1, (points + batch_points - 1) / batch_points));
}

/// Part gradients summed over the parts of a pass, in their order.
void accumulate_term_gradients(TermGradients& terms, std::vector<torch::Tensor> part) {
  if (terms.sums.empty()) {
    terms.sums = std::move(part);
    return;
  }
  for (std::size_t t = 0; t < part.size(); ++t) terms.sums[t] += part[t];
}

/// One rank per subdomain: every slot has one contributor and gradients are whole already.
class OwnerReduction : public Reduction {
 public:
  OwnerReduction(parallel::Communicator comm, int subdomains, std::vector<SubdomainModel*> owned,
                 GradientSync sync, double& sync_seconds)
      : Reduction(comm, subdomains, std::move(owned), sync, sync_seconds) {}

  bool fills_slots() const override { return true; }
  bool loss_decides_divergence() const override { return true; }
  Parts parts(int64_t largest, int64_t batch_points) const override {
    const int within = parts_within(largest, batch_points);
    return {within, 0, within, false};
  }
  void sum_gradients(const std::vector<torch::Tensor>&) override {
    core::ScopedTimer timer(sync_s_);
    sum_shared_gradients();
  }
  torch::Tensor closure_value(const torch::Tensor& total,
                              const std::vector<torch::Tensor>&) override {
    return total;
  }
  void sum_shares(const std::vector<torch::Tensor>&, std::vector<double>&) override {}
  void sum_term_gradients(std::vector<torch::Tensor>&) override {}
  void sum_log_figures(std::vector<double>& figures) override { comm_.sum_in_place(figures); }
  void add_term_gradients(TermGradients& terms, std::vector<torch::Tensor> part) override {
    accumulate_term_gradients(terms, std::move(part));
  }
  void record_part(const SubdomainModel&, const LocalLoss&, bool, TermGradients&) override {}
  LocalLoss finish_parts(const SubdomainModel&, LocalLoss merged, TermGradients&) override {
    return merged;
  }
};

/// Data-parallel replicas: each rank of a group holds a share of every term of its subdomains,
/// and the group's sums are the whole.
class ReplicaReduction : public OwnerReduction {
 public:
  using OwnerReduction::OwnerReduction;

  bool fills_slots() const override { return group().rank() == 0; }
  // The replicas' local losses differ; their summed gradient is the same on every one.
  bool loss_decides_divergence() const override { return false; }
  void sum_gradients(const std::vector<torch::Tensor>& owned_parameters) override {
    core::ScopedTimer timer(sync_s_);
    // Every replica of a group owns the same subdomains, so all of them call this or none.
    if (!owned_.empty()) sync_.replicas->sum_gradients(owned_parameters);
    sum_shared_gradients();
  }
  torch::Tensor closure_value(const torch::Tensor& total,
                              const std::vector<torch::Tensor>& trained) override {
    // The group's summed loss and gradient, identical on every member, so every replica's
    // optimizer takes the same decisions. One all-reduce per evaluation.
    std::vector<double> value{core::read_double(total)};
    {
      core::ScopedTimer timer(sync_s_);
      sync_.replicas->sum_gradients(trained, &value);
    }
    return torch::full({}, value[0], total.options());
  }
  void sum_shares(const std::vector<torch::Tensor>& owned_parameters,
                  std::vector<double>& values) override {
    if (owned_.empty()) return;
    core::ScopedTimer timer(sync_s_);
    sync_.replicas->sum_gradients(owned_parameters, &values);
  }
  void sum_term_gradients(std::vector<torch::Tensor>& gradients) override {
    if (owned_.empty()) return;
    gradients = group_sum(torch::cat(gradients)).split(gradients.front().numel());
  }
  physics::ChunkSum chunk_sum() override {
    // Every replica then weighs the time chunks by the same sums: those of the whole sample.
    return [this](const torch::Tensor& figures) { return group_sum(figures); };
  }

 private:
  const parallel::Communicator& group() const { return sync_.replicas->communicator(); }

  /// `flat` ([m]) summed over the group, in its dtype and on its device. One all-reduce.
  torch::Tensor group_sum(const torch::Tensor& flat) const {
    core::ScopedTimer timer(sync_s_);
    const auto bucket = core::read_to_host(flat, torch::kFloat64, core::HostRead::message);
    std::vector<double> values(bucket.data_ptr<double>(),
                               bucket.data_ptr<double>() + bucket.numel());
    group().sum_in_place(values);
    return torch::tensor(values, torch::kFloat64).to(flat.device(), flat.scalar_type());
  }
};

/// Points shared out by slices: each part of a pass is recorded apart, then every rank of the
/// group folds all parts in slice order, so its figures and gradients are the group's already.
class SliceReduction : public Reduction {
 public:
  SliceReduction(parallel::Communicator comm, int subdomains, std::vector<SubdomainModel*> owned,
                 std::vector<std::string> term_names, GradientSync sync, double& sync_seconds)
      : Reduction(comm, subdomains, std::move(owned), sync, sync_seconds),
        term_names_(std::move(term_names)) {}

  bool fills_slots() const override { return slices().group.rank() == 0; }
  // A group of one holds its subdomain's whole loss; a larger one decides by the gradient.
  bool loss_decides_divergence() const override { return slices().group.size() == 1; }
  Parts parts(int64_t largest, int64_t batch_points) const override {
    const int count = slices().count;
    const int within = parts_within((largest + count - 1) / count, batch_points);
    // Slice k is parts [k within, (k + 1) within): the same rows whichever rank evaluates it.
    return {count * within, slices().first * within, slices().end * within, true};
  }
  void sum_gradients(const std::vector<torch::Tensor>&) override {}
  torch::Tensor closure_value(const torch::Tensor& total,
                              const std::vector<torch::Tensor>&) override {
    return total;
  }
  void sum_shares(const std::vector<torch::Tensor>&, std::vector<double>&) override {}
  void sum_term_gradients(std::vector<torch::Tensor>&) override {}
  void sum_log_figures(std::vector<double>& figures) override {
    // Every rank of the group holds the group's sum already: only the first gives it.
    if (slices().group.rank() > 0) std::fill(figures.begin(), figures.end(), 0.0);
    comm_.sum_in_place(figures);
  }
  void add_term_gradients(TermGradients& terms, std::vector<torch::Tensor> part) override {
    terms.sums = std::move(part);
  }
  void record_part(const SubdomainModel& model, const LocalLoss& part, bool create_graph,
                   TermGradients& terms) override;
  LocalLoss finish_parts(const SubdomainModel& model, LocalLoss merged,
                         TermGradients& terms) override;

 private:
  const SliceShare& slices() const { return sync_.slices; }

  std::vector<std::string> term_names_;
  std::vector<SliceRecord> records_;  ///< this pass's parts so far
};

double value_of(const torch::Tensor& t) { return t.defined() ? core::read_double(t) : 0.0; }

int64_t element_count(const std::vector<torch::Tensor>& tensors) {
  int64_t size = 0;
  for (const auto& t : tensors) size += t.numel();
  return size;
}

void SliceReduction::record_part(const SubdomainModel& model, const LocalLoss& part,
                                 bool create_graph, TermGradients& terms) {
  SliceRecord record;
  const auto tensors = parameters_of(owned_);
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
      figures.push_back(p.grad().defined() ? core::read_double(p.grad()) : 0.0);
      p.mutable_grad() = torch::Tensor();
    }
  if (terms.measuring) {
    const int64_t size = element_count(tensors);
    for (std::size_t t = 0; t < term_names_.size(); ++t) {
      const auto g = t < terms.sums.size() ? terms.sums[t].contiguous()
                                           : torch::zeros({size}, torch::kFloat64);
      figures.insert(figures.end(), g.data_ptr<double>(), g.data_ptr<double>() + size);
    }
    terms.sums.clear();
  }
  records_.push_back(std::move(record));
}

LocalLoss SliceReduction::finish_parts(const SubdomainModel& model, LocalLoss,
                                       TermGradients& terms) {
  SliceRecord sum;
  {
    core::ScopedTimer timer(sync_s_);
    sum = fold_slice_records(slices().group, records_);
  }
  records_.clear();
  const auto tensors = parameters_of(owned_);
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
  if (terms.measuring) {
    const int64_t size = element_count(tensors);
    terms.sums.clear();
    for (std::size_t t = 0; t < term_names_.size(); ++t, k += static_cast<std::size_t>(size))
      terms.sums.push_back(
          torch::from_blob(const_cast<double*>(f.data() + k), {size}, torch::kFloat64).clone());
  }
  return loss;
}

}  // namespace

std::unique_ptr<Reduction> Reduction::choose(parallel::Communicator comm, int subdomains,
                                             std::vector<SubdomainModel*> owned,
                                             std::vector<std::string> term_names, GradientSync sync,
                                             double& sync_seconds) {
  if (sync.slices.on())
    return std::make_unique<SliceReduction>(comm, subdomains, std::move(owned),
                                            std::move(term_names), sync, sync_seconds);
  if (sync.replicas)
    return std::make_unique<ReplicaReduction>(comm, subdomains, std::move(owned), sync,
                                              sync_seconds);
  return std::make_unique<OwnerReduction>(comm, subdomains, std::move(owned), sync, sync_seconds);
}

void Reduction::sum_shared_gradients() {
  if (sync_.parameter_sum) sync_.parameter_sum->sum_gradients(sync_.parameters->raw());
}

std::vector<double> Reduction::subdomain_figures(const std::vector<std::vector<double>>& per_owned,
                                                 std::size_t width) {
  std::vector<double> figures(static_cast<std::size_t>(subdomains_) * width, 0.0);
  for (std::size_t i = 0; i < owned_.size() && fills_slots(); ++i)
    for (std::size_t j = 0; j < width; ++j)
      figures[static_cast<std::size_t>(owned_[i]->id) * width + j] = per_owned[i][j];
  core::ScopedTimer timer(sync_s_);
  comm_.sum_in_place(figures);
  return figures;
}

void Reduction::share_parameters(const physics::SharedParameters& parameters) {
  const auto& raw = parameters.raw();
  const bool source = !owned_.empty() && fills_slots();
  std::vector<double> values(raw.size(), 0.0);
  if (source)
    for (std::size_t i = 0; i < raw.size(); ++i) values[i] = core::read_double(raw[i]);
  {
    core::ScopedTimer timer(sync_s_);
    comm_.sum_in_place(values);  // one contributor: exact
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i].fill_(values[i]);
}

}  // namespace tessera::train
