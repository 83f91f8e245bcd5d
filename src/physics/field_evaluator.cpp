#include "tessera/physics/field_evaluator.hpp"

#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

expr::Environment FieldEvaluator::evaluate(const torch::Tensor& x,
                                           const std::set<expr::DerivativeKey>& keys,
                                           bool create_graph,
                                           std::map<std::string, torch::Tensor> extra) const {
  std::set<autodiff::Partial> requested;
  for (const auto& key : keys) requested.insert({key.field, key.wrt, key.laplacian});
  expr::Environment env;
  env.coordinates = x;
  if (parameters_) env.parameters = parameters_->values();
  env.extra = std::move(extra);
  if (requested.empty()) return env;
  auto partials =
      exact_
          ? exact_->apply(x, requested,
                          engine_(network_, x, exact_->network_partials(requested), create_graph))
          : engine_(network_, x, requested, create_graph);
  for (auto& [partial, tensor] : partials)
    env.derivatives[expr::DerivativeKey{partial.output, partial.wrt, partial.laplacian}] =
        std::move(tensor);
  return env;
}

torch::Tensor FieldEvaluator::values(const torch::Tensor& x, int outputs) const {
  if (!exact_) return network_(x).detach();
  std::set<expr::DerivativeKey> keys;
  for (int f = 0; f < outputs; ++f) keys.insert({f, {}, false});
  const auto env = evaluate(x, keys, /*create_graph=*/false);
  std::vector<torch::Tensor> columns;
  for (int f = 0; f < outputs; ++f) columns.push_back(env.derivatives.at({f, {}, false}).detach());
  return torch::stack(columns, 1);
}

}  // namespace tessera::physics
