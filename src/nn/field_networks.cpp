#include "tessera/nn/field_networks.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::nn {

FieldNetworksImpl::FieldNetworksImpl(int64_t fields, std::vector<FieldPart> parts)
    : fields_(fields), parts_(std::move(parts)) {
  std::vector<int> owner(static_cast<std::size_t>(fields), -1);
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    const auto& part = parts_[k];
    TESSERA_ASSERT(part.options.inputs == static_cast<int64_t>(part.inputs.size()) &&
                       part.options.outputs == static_cast<int64_t>(part.fields.size()),
                   "part " << part.name << " has options for another shape");
    for (int f : part.fields) {
      TESSERA_ASSERT(f >= 0 && f < fields && owner[static_cast<std::size_t>(f)] < 0,
                     "field " << f << " is given by two parts or out of range");
      owner[static_cast<std::size_t>(f)] = static_cast<int>(k);
    }
    networks_.push_back(register_module(part.name, Mlp(part.options)));
    columns_.push_back(
        torch::tensor(std::vector<int64_t>(part.inputs.begin(), part.inputs.end()), torch::kInt64));
  }
  for (int o : owner) TESSERA_ASSERT(o >= 0, "a field is given by no part");
}

torch::Tensor FieldNetworksImpl::forward(const torch::Tensor& x) {
  std::vector<torch::Tensor> columns(static_cast<std::size_t>(fields_));
  for (std::size_t k = 0; k < parts_.size(); ++k) {
    const auto in = static_cast<int64_t>(parts_[k].inputs.size()) == x.size(1)
                        ? x
                        : x.index_select(1, columns_[k].to(x.device()));
    const auto out = networks_[k]->forward(in);
    for (std::size_t j = 0; j < parts_[k].fields.size(); ++j)
      columns[static_cast<std::size_t>(parts_[k].fields[j])] =
          out.select(1, static_cast<int64_t>(j));
  }
  return torch::stack(columns, 1);
}

void FieldNetworksImpl::set_bf16_products(bool on) {
  for (auto& network : networks_) network->set_bf16_products(on);
}

bool FieldNetworksImpl::bf16_products() const { return networks_.front()->bf16_products(); }

}  // namespace tessera::nn
