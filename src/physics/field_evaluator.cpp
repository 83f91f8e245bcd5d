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
  auto partials = engine_(network_, x, requested, create_graph);
  for (auto& [partial, tensor] : partials)
    env.derivatives[expr::DerivativeKey{partial.output, partial.wrt, partial.laplacian}] =
        std::move(tensor);
  return env;
}

}  // namespace tessera::physics
