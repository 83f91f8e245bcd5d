#pragma once
/// The network of a subdomain when some fields depend on some of the inputs only
/// (docs/case-format.md, "Fields of some of the inputs"): one MLP for the fields of every
/// input, and one MLP per such field fed with its own input columns. A field's value then does
/// not change along the inputs its network does not see, and its derivatives along them are
/// zero by construction.
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/nn/mlp.hpp"

namespace tessera::nn {

/// One member network: which fields it gives and from which inputs.
struct FieldPart {
  std::string name;         ///< its module name ("main", "field_a"): the checkpoint's key
  std::vector<int> fields;  ///< the field each output is, ascending
  std::vector<int> inputs;  ///< the input columns it reads, ascending (all of them for "main")
  MlpOptions options;       ///< inputs = inputs.size(), outputs = fields.size()
};

class FieldNetworksImpl : public Network {
 public:
  /// `parts` together give each of `fields` outputs exactly once.
  FieldNetworksImpl(int64_t fields, std::vector<FieldPart> parts);

  /// x: [n, inputs] -> [n, fields]: each part's outputs in their fields' columns.
  torch::Tensor forward(const torch::Tensor& x) override;
  int64_t outputs() const override { return fields_; }
  void set_bf16_products(bool on) override;
  bool bf16_products() const override;

  const std::vector<FieldPart>& parts() const { return parts_; }
  /// The network of parts()[k].
  const Mlp& network(std::size_t k) const { return networks_.at(k); }

 private:
  int64_t fields_;
  std::vector<FieldPart> parts_;
  std::vector<Mlp> networks_;
  std::vector<torch::Tensor> columns_;  ///< parts_[k].inputs as an index tensor (CPU, int64)
};

TORCH_MODULE(FieldNetworks);

}  // namespace tessera::nn
