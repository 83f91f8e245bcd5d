#include "tessera/train/divergence_guard.hpp"

#include <cmath>
#include <sstream>

#include "tessera/core/error.hpp"
#include "tessera/core/finite.hpp"
#include "tessera/core/host_reads.hpp"

namespace tessera::train {

torch::Tensor finite_flag(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> defined;
  for (const auto& t : tensors)
    if (t.defined()) defined.push_back(t);
  if (defined.empty()) return torch::scalar_tensor(true, torch::kBool);
  if (defined.front().device().is_cpu()) {
    // The flag computed in place, as a kernel would on its device.
    bool finite = true;
    for (const auto& t : defined) finite = finite && core::finite_on_cpu(t);
    return torch::scalar_tensor(finite, torch::kBool);
  }
  std::vector<torch::Tensor> flags;
  for (const auto& t : defined) flags.push_back(torch::isfinite(t).all());
  return torch::stack(flags).all();
}

torch::Tensor finite_gradients(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> gradients;
  for (const auto& p : parameters) gradients.push_back(p.grad());
  return finite_flag(gradients);
}

void DivergenceGuard::watch(const torch::Tensor& ok, int64_t iteration) {
  if (!first_failure_.defined() || first_failure_.device() != ok.device() ||
      first_failure_.size(0) != ok.size(0))
    first_failure_ = torch::full({ok.size(0)}, -1, torch::dtype(torch::kLong).device(ok.device()));
  first_failure_ =
      torch::where(first_failure_.lt(0).logical_and(ok.logical_not()), iteration, first_failure_);
}

std::vector<int64_t> DivergenceGuard::take_failures() {
  if (!first_failure_.defined()) return std::vector<int64_t>(slots_.size(), -1);
  const auto host = core::read_to_host(first_failure_, torch::kLong);
  std::vector<int64_t> failures(host.data_ptr<int64_t>(), host.data_ptr<int64_t>() + host.numel());
  first_failure_ = torch::Tensor();
  return failures;
}

void DivergenceGuard::remember(std::size_t i, const std::vector<torch::Tensor>& parameters,
                               const torch::optim::Optimizer& optimizer, int64_t iteration) {
  torch::NoGradGuard no_grad;
  auto& slot = slots_.at(i);
  slot.parameters.clear();
  for (const auto& p : parameters) slot.parameters.push_back(p.detach().clone());
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  slot.optimizer = bytes.str();
  slot.iteration = iteration;
}

std::string DivergenceGuard::roll_back(std::size_t i, int subdomain, int64_t iteration,
                                       const std::string& terms,
                                       const std::vector<torch::Tensor>& parameters,
                                       torch::optim::Optimizer& optimizer) {
  auto& slot = slots_.at(i);
  TESSERA_CHECK(
      ++slot.failures < max_failures,
      "non-finite loss or gradient in subdomain "
          << subdomain << " at iteration " << iteration << ", term(s):" << terms << "; it diverged "
          << max_failures << " times (learning rate already halved " << max_failures - 1
          << " times); stopped. The last complete checkpoint is kept: lower the learning rate "
             "or check the equations, then continue with --restart latest");
  TESSERA_ASSERT(slot.parameters.size() == parameters.size(),
                 "roll-back of network " << i << " before any good state was remembered");
  torch::NoGradGuard no_grad;
  for (std::size_t k = 0; k < parameters.size(); ++k) parameters[k].copy_(slot.parameters[k]);
  torch::serialize::InputArchive archive;
  std::istringstream bytes(slot.optimizer);
  archive.load_from(bytes);
  optimizer.load(archive);
  slot.lr_factor *= 0.5;
  std::ostringstream warning;
  warning << "non-finite loss or gradient in subdomain " << subdomain << " at iteration "
          << iteration << ", term(s):" << terms << "; rolled back to iteration " << slot.iteration
          << " with its learning rate halved (factor " << slot.lr_factor << "), failure "
          << slot.failures << " of " << max_failures;
  return warning.str();
}

void DivergenceGuard::restore(std::size_t i, double lr_factor, int failures) {
  slots_.at(i).lr_factor = lr_factor;
  slots_.at(i).failures = failures;
}

}  // namespace tessera::train
