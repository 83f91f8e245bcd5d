#include "tessera/train/divergence_guard.hpp"

#include <cmath>
#include <sstream>

#include "tessera/core/error.hpp"
#include "tessera/core/finite.hpp"

namespace tessera::train {

bool finite_gradients(const std::vector<torch::Tensor>& parameters) {
  for (const auto& p : parameters)
    if (p.grad().defined() && !core::all_finite(p.grad())) return false;
  return true;
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
