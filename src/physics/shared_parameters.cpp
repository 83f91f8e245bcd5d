#include "tessera/physics/shared_parameters.hpp"

#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

SharedParameters::SharedParameters(const std::vector<ParameterDefinition>& definitions,
                                   torch::Dtype dtype, torch::Device device)
    : definitions_(definitions) {
  for (const auto& d : definitions_) {
    TESSERA_CHECK(
        !d.positive || d.initial > 0,
        "parameters." << d.name << ": a positive parameter needs a positive initial value");
    const double raw = d.positive ? std::log(d.initial) : d.initial;
    raw_.push_back(torch::full({}, raw, torch::TensorOptions().dtype(dtype).device(device))
                       .set_requires_grad(true));
  }
}

std::map<std::string, torch::Tensor> SharedParameters::values() const {
  std::map<std::string, torch::Tensor> out;
  for (std::size_t i = 0; i < definitions_.size(); ++i)
    out[definitions_[i].name] = definitions_[i].positive ? raw_[i].exp() : raw_[i];
  return out;
}

std::map<std::string, double> SharedParameters::current() const {
  torch::NoGradGuard no_grad;
  std::map<std::string, double> out;
  for (const auto& [name, value] : values()) out[name] = core::read_double(value);
  return out;
}

void SharedParameters::set_dtype(torch::Dtype dtype) const {
  torch::NoGradGuard no_grad;
  for (const auto& raw : raw_)
    if (raw.scalar_type() != dtype) raw.set_data(raw.to(dtype));
}

}  // namespace tessera::physics
