#include "tessera/app/field_networks.hpp"

#include <algorithm>

#include "tessera/autodiff/field_parts.hpp"
#include "tessera/core/torch_pch.hpp"

#include "derivative_engine.hpp"

namespace tessera::app {

bool has_field_networks(const io::Case& c) { return !c.field_inputs.empty(); }

namespace {

/// `whole` restricted to the input columns `inputs` and one output.
nn::MlpOptions part_options(const nn::MlpOptions& whole, const std::vector<int>& inputs,
                            const io::FieldInputs& spec, const std::string& field) {
  nn::MlpOptions o = whole;
  o.inputs = static_cast<int64_t>(inputs.size());
  o.outputs = 1;
  if (spec.hidden) o.hidden = *spec.hidden;
  o.lower.clear(), o.upper.clear(), o.periodic_inputs.clear();
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const auto column = static_cast<std::size_t>(inputs[k]);
    o.lower.push_back(whole.lower.at(column));
    o.upper.push_back(whole.upper.at(column));
    if (std::count(whole.periodic_inputs.begin(), whole.periodic_inputs.end(), inputs[k]))
      o.periodic_inputs.push_back(static_cast<int>(k));
  }
  o.purpose = "init:" + field;
  return o;
}

}  // namespace

nn::FieldNetworks field_networks(const io::Case& c, const nn::MlpOptions& whole) {
  std::vector<std::string> inputs = c.coordinates;
  if (c.time) inputs.push_back(c.time->name);
  std::vector<int> all(inputs.size());
  for (std::size_t k = 0; k < all.size(); ++k) all[k] = static_cast<int>(k);

  nn::FieldPart main{"main", {}, all, whole};
  std::vector<nn::FieldPart> parts;
  for (std::size_t f = 0; f < c.fields.size(); ++f) {
    const auto spec = c.field_inputs.find(c.fields[f]);
    if (spec == c.field_inputs.end()) {
      main.fields.push_back(static_cast<int>(f));
      continue;
    }
    std::vector<int> columns;
    for (const auto& name : spec->second.of)
      columns.push_back(
          static_cast<int>(std::find(inputs.begin(), inputs.end(), name) - inputs.begin()));
    parts.push_back({"field_" + c.fields[f],
                     {static_cast<int>(f)},
                     columns,
                     part_options(whole, columns, spec->second, c.fields[f])});
  }
  if (!main.fields.empty()) {
    main.options.outputs = static_cast<int64_t>(main.fields.size());
    parts.insert(parts.begin(), std::move(main));
  }
  return nn::FieldNetworks(static_cast<int64_t>(c.fields.size()), std::move(parts));
}

physics::DerivativeEngine field_networks_engine(const io::Case& c,
                                                const nn::FieldNetworks& networks) {
  std::vector<autodiff::PartEngine> parts;
  for (std::size_t k = 0; k < networks->parts().size(); ++k) {
    nn::Mlp network = networks->network(k);
    parts.push_back({networks->parts()[k].fields, networks->parts()[k].inputs,
                     [network](const torch::Tensor& x) mutable { return network->forward(x); },
                     detail::derivative_engine(c, network)});
  }
  return [parts](const autodiff::NetworkFunction&, const torch::Tensor& x,
                 const std::set<autodiff::Partial>& requested, bool create_graph) {
    return autodiff::parts_partials(parts, x, requested, create_graph);
  };
}

nlohmann::json field_inputs_record(const io::Case& c, const io::NetworkSpec& network) {
  nlohmann::json record = nlohmann::json::object();
  for (const auto& [field, spec] : c.field_inputs)
    record[field] = {{"of", spec.of}, {"hidden", spec.hidden.value_or(network.hidden)}};
  return record;
}

}  // namespace tessera::app
