// The forward engine for the FBPINN (nn/fbpinn.hpp): u = sum_j w_j N_j per level. Each level's
// subdomain networks carry their streams together as one batch (the grouped CPU node, or
// one stacked product per layer elsewhere); the windows' streams come from the plan's closed
// forms; the product rule and the per-point sums give u's streams. Training then
// backpropagates first-order operations only.
#include <cmath>

#include "kernels/elementwise.hpp"
#include "tessera/autodiff/taylor.hpp"
#include "tessera/autodiff/taylor_streams.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff {

namespace {

using taylor::StreamLayout;

// The normalised windows' streams at the pairs of one level, [K, P, 1], from the derivatives
// the plan holds (they depend on x only: no graph).
torch::Tensor window_streams(const nn::LevelPlan& plan, const StreamLayout& layout) {
  std::vector<torch::Tensor> streams{plan.window};
  for (int a : layout.axes) streams.push_back(plan.window_gradient.select(1, a));
  const auto second = [&](int i, int j) {
    return plan.window_hessian.select(1, layout.axes[static_cast<std::size_t>(i)])
        .select(1, layout.axes[static_cast<std::size_t>(j)]);
  };
  for (const auto& [i, j] : layout.pairs) streams.push_back(second(i, j));
  for (const auto& positions : layout.laplacians) {
    auto sum = second(positions.front(), positions.front());
    for (std::size_t k = 1; k < positions.size(); ++k)
      sum = sum + second(positions[k], positions[k]);
    streams.push_back(sum);
  }
  return torch::stack(streams).unsqueeze(2);
}

// The streams of every pair's subdomain network at its point, [K, P, outputs]: the level's
// networks as one batch. On a CPU the batch is one grouped whole-network node
// (cpu_node.cpp), which takes the pairs subdomain by subdomain as the plan orders
// them; elsewhere each layer is one stacked product and one element-wise node over a padded
// batch of plan.rows rows per subdomain (a stacked product needs equal blocks).
torch::Tensor network_streams(const nn::FbpinnImpl& network, const nn::LevelPlan& plan,
                              std::size_t level, const torch::Tensor& x, const StreamLayout& layout,
                              TaylorPath path) {
  const int64_t streams = layout.count(), inputs = x.size(1);
  const int64_t first = network.level_first(level);
  const int64_t count = network.level_first(level + 1) - first;
  const bool cpu_node = path == TaylorPath::automatic && taylor::detail::cpu_kernel_applies(x);
  torch::Tensor features;
  {
    // The normalised coordinates t = (x - c) / r: d t / d x_a = e_a / r_a, no second derivative.
    torch::NoGradGuard no_grad;
    const auto radius = network.radii().index_select(0, plan.subdomain).to(x.options());
    features = torch::zeros({streams, plan.pairs(), inputs}, x.options());
    features[0].copy_(plan.local);
    for (std::size_t k = 0; k < layout.axes.size(); ++k) {
      const int axis = layout.axes[k];
      features[1 + static_cast<int64_t>(k)].select(1, axis).copy_(1 / radius.select(1, axis));
    }
    if (!cpu_node)
      features = torch::zeros({streams, count * plan.rows, inputs}, x.options())
                     .index_copy(1, plan.row, features);
  }
  std::vector<torch::Tensor> weights, biases;
  for (std::size_t layer = 0; layer < network.stacked_weights().size(); ++layer) {
    weights.push_back(
        network.stacked_weights()[layer].narrow(0, first, count));              // [count, out, in]
    biases.push_back(network.stacked_biases()[layer].narrow(0, first, count));  // [count, 1, out]
  }
  const auto activation = network.options().activation;
  if (cpu_node) {
    const auto per_subdomain =
        core::read_to_host(torch::bincount(plan.subdomain - first, {}, count), torch::kLong);
    const std::vector<int64_t> group_rows(per_subdomain.data_ptr<int64_t>(),
                                          per_subdomain.data_ptr<int64_t>() + count);
    return taylor::grouped_network_streams_cpu(features, weights, biases, activation, layout,
                                               group_rows, plan.by_subdomain);
  }
  torch::Tensor h = features;
  for (std::size_t layer = 0; layer < weights.size(); ++layer) {
    const int64_t width = weights[layer].size(1);
    h = taylor::add_output_bias(torch::matmul(h.view({streams, count, plan.rows, h.size(2)}),
                                              weights[layer].transpose(1, 2)),
                                biases[layer])
            .view({streams, count * plan.rows, width});
    if (layer + 1 < weights.size())
      h = taylor::activate_streams(activation, h,
                                   torch::zeros({width}, h.options().requires_grad(false)), layout);
  }
  return h.index_select(1, plan.row);
}

}  // namespace

Partials taylor_partials(const nn::FbpinnImpl& network, const torch::Tensor& x,
                         const std::set<Partial>& requested, bool create_graph, TaylorPath path) {
  const auto layout = taylor::checked_layout(taylor_supports(network.options(), requested), x,
                                             network.options().inputs, requested);
  std::optional<torch::NoGradGuard> no_graph;
  if (!create_graph) no_graph.emplace();
  const auto points = x.detach();
  const int64_t n = points.size(0), outputs = network.outputs();
  auto u = torch::zeros({layout.count(), n, outputs}, points.options());
  const auto plans = network.plans(points);
  // The levels are added in order, as in FbpinnImpl::forward.
  for (std::size_t level = 0; level < plans.size(); ++level) {
    const auto& plan = plans[level];
    if (plan.pairs() == 0) continue;
    const auto windows = window_streams(plan, layout);
    const auto terms = taylor::multiply_streams(
        windows.expand({layout.count(), plan.pairs(), outputs}),
        network_streams(network, plan, level, points, layout, path), layout);
    u = u + nn::FbpinnImpl::sum_by_point(plan, terms, n, 1);
  }
  return taylor::partials_from_streams(u, layout, requested);
}

}  // namespace tessera::autodiff
