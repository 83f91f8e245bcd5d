#include "tessera/physics/field_evaluator.hpp"

#include <sstream>

#include "tessera/autodiff/taylor.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

namespace {

std::set<autodiff::Partial> partials_of(const std::set<expr::DerivativeKey>& keys) {
  std::set<autodiff::Partial> requested;
  for (const auto& key : keys) requested.insert({key.field, key.wrt, key.laplacian});
  return requested;
}

// Requests with equal keys can share one grouped call: the same layer shapes, activation and
// dtype, and the same stream layout.
std::string group_key(const nn::MlpOptions& options, torch::ScalarType dtype,
                      const std::set<autodiff::Partial>& wanted) {
  const auto layout = autodiff::taylor::stream_layout(wanted);
  std::ostringstream key;
  key << static_cast<int>(options.activation) << ' ' << dtype << ' ' << options.inputs << ' '
      << options.outputs << ' ' << options.fourier_count << ' ' << options.periodic_inputs.size();
  for (int64_t width : options.hidden) key << " h" << width;
  for (int a : layout.axes) key << " a" << a;
  for (const auto& [a, b] : layout.pairs) key << " p" << a << b;
  for (const auto& l : layout.laplacians) {
    key << " l";
    for (int a : l) key << a;
  }
  return key.str();
}

}  // namespace

std::set<autodiff::Partial> FieldEvaluator::network_partials(
    const std::set<expr::DerivativeKey>& keys) const {
  const auto requested = partials_of(keys);
  return exact_ && !requested.empty() ? exact_->network_partials(requested) : requested;
}

expr::Environment FieldEvaluator::environment(const torch::Tensor& x,
                                              const std::set<expr::DerivativeKey>& keys,
                                              autodiff::Partials network_partials,
                                              std::map<std::string, torch::Tensor> extra) const {
  const auto requested = partials_of(keys);
  expr::Environment env;
  env.coordinates = x;
  if (parameters_) env.parameters = parameters_->values();
  env.extra = std::move(extra);
  if (requested.empty()) return env;
  auto partials = exact_ ? exact_->apply(x, requested, std::move(network_partials))
                         : std::move(network_partials);
  for (auto& [partial, tensor] : partials)
    env.derivatives[expr::DerivativeKey{partial.output, partial.wrt, partial.laplacian}] =
        std::move(tensor);
  return env;
}

expr::Environment FieldEvaluator::evaluate(const torch::Tensor& x,
                                           const std::set<expr::DerivativeKey>& keys,
                                           bool create_graph,
                                           std::map<std::string, torch::Tensor> extra) const {
  const auto requested = network_partials(keys);
  auto partials =
      requested.empty() ? autodiff::Partials{} : engine_(network_, x, requested, create_graph);
  return environment(x, keys, std::move(partials), std::move(extra));
}

std::vector<expr::Environment> evaluate_together(const std::vector<FieldRequest>& requests,
                                                 bool create_graph) {
  std::vector<expr::Environment> result(requests.size());
  // Calls of grouped requests, keyed by architecture and stream layout; within a call, one
  // group per subdomain holding its requests in list order.
  struct Call {
    std::vector<autodiff::NetworkPoints> groups;
    std::vector<std::vector<std::set<autodiff::Partial>>> requested;
    std::vector<std::vector<std::size_t>> indices;
  };
  std::map<std::string, Call> calls;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    const auto& mlp = r.fields->groupable();
    auto wanted = r.fields->network_partials(r.keys);
    if (!mlp || wanted.empty() || !autodiff::taylor_groups(*mlp, r.x) ||
        !autodiff::taylor_supports(mlp->options(), wanted)) {
      result[i] = r.fields->evaluate(r.x, r.keys, create_graph, r.extra);
      continue;
    }
    auto& call = calls[group_key(mlp->options(), r.x.scalar_type(), wanted)];
    std::size_t g = 0;
    while (g < call.groups.size() && call.groups[g].network != mlp.get()) ++g;
    if (g == call.groups.size()) {
      call.groups.push_back({mlp.get(), {}});
      call.requested.emplace_back();
      call.indices.emplace_back();
    }
    call.groups[g].xs.push_back(r.x);
    call.requested[g].push_back(std::move(wanted));
    call.indices[g].push_back(i);
  }
  for (auto& [key, call] : calls) {
    auto partials = autodiff::taylor_partials_grouped(call.groups, call.requested, create_graph);
    for (std::size_t g = 0; g < call.groups.size(); ++g)
      for (std::size_t k = 0; k < call.indices[g].size(); ++k) {
        const auto& r = requests[call.indices[g][k]];
        result[call.indices[g][k]] =
            r.fields->environment(r.x, r.keys, std::move(partials[g][k]), r.extra);
      }
  }
  return result;
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
