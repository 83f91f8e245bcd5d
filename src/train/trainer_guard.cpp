// The divergence guard of Adam stages: a subdomain whose gradient turns non-finite goes back to
// its last good state with its learning rate halved, instead of ending hours of training; the
// third time it happens the job stops and says where.
#include <cmath>
#include <iostream>
#include <sstream>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::train {
namespace {

constexpr int max_failures = 3;

/// Names of the terms whose sums are not finite in subdomain `s` (" poisson walls").
std::string nonfinite_terms(const Trainer::LocalLoss& loss, int s) {
  std::ostringstream names;
  for (const auto& [name, per] : loss.sums)
    if (auto it = per.find(s); it != per.end() && !std::isfinite(it->second.item<double>()))
      names << " " << name;
  return names.str().empty() ? " (gradient only)" : names.str();
}

/// Drops subdomain `s`'s figures from this iteration's log: it is being rolled back.
void forget_subdomain(Trainer::LocalLoss& loss, int s) {
  for (auto& [name, per] : loss.sums) per.erase(s);
  for (auto& [name, per] : loss.counts) per.erase(s);
  loss.jump_sums.erase(s);
  loss.jump_counts.erase(s);
}

}  // namespace

namespace {

/// Whether every element of a contiguous CPU array is finite: a plain loop, since three tensor
/// operations per parameter (isfinite, all, item) took 3 % of a small-batch iteration.
template <typename T>
bool all_finite(const T* data, int64_t count) {
  bool finite = true;
  for (int64_t i = 0; i < count; ++i) finite &= std::isfinite(data[i]);
  return finite;
}

bool finite(const torch::Tensor& t) {
  if (t.device().is_cpu() && t.is_contiguous()) {
    if (t.scalar_type() == torch::kFloat32) return all_finite(t.data_ptr<float>(), t.numel());
    if (t.scalar_type() == torch::kFloat64) return all_finite(t.data_ptr<double>(), t.numel());
  }
  return torch::isfinite(t).all().item<bool>();
}

}  // namespace

bool finite_gradients(const std::vector<torch::Tensor>& parameters) {
  for (const auto& p : parameters)
    if (p.grad().defined() && !finite(p.grad())) return false;
  return true;
}

void Trainer::keep_good_states() {
  guards_.resize(owned_.size());
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < owned_.size(); ++i) {
    auto& guard = guards_[i];
    guard.parameters.clear();
    for (const auto& p : owned_[i]->network->parameters())
      guard.parameters.push_back(p.detach().clone());
    torch::serialize::OutputArchive archive;
    optimizers_[i]->save(archive);
    std::ostringstream bytes;
    archive.save_to(bytes);
    guard.optimizer = bytes.str();
    guard.iteration = iteration_;
  }
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
    auto& guard = guards_.at(i);
    const std::string terms = nonfinite_terms(loss, model.id);
    forget_subdomain(loss, model.id);
    TESSERA_CHECK(
        ++guard.failures < max_failures,
        "non-finite loss or gradient in subdomain "
            << model.id << " at iteration " << iteration_ + 1 << ", term(s):" << terms
            << "; it diverged " << max_failures << " times (learning rate already halved "
            << max_failures - 1
            << " times); stopped. The last complete checkpoint is kept: lower the learning rate "
               "or check the equations, then continue with --restart latest");
    torch::NoGradGuard no_grad;
    for (std::size_t k = 0; k < parameters.size(); ++k) parameters[k].copy_(guard.parameters[k]);
    torch::serialize::InputArchive archive;
    std::istringstream bytes(guard.optimizer);
    archive.load_from(bytes);
    optimizers_[i]->load(archive);
    guard.lr_factor *= 0.5;
    std::cerr << "tessera: warning: non-finite loss or gradient in subdomain " << model.id
              << " at iteration " << iteration_ + 1 << ", term(s):" << terms
              << "; rolled back to iteration " << guard.iteration
              << " with its learning rate halved (factor " << guard.lr_factor << "), failure "
              << guard.failures << " of " << max_failures << "\n";
  }
  return may_step;
}

}  // namespace tessera::train
