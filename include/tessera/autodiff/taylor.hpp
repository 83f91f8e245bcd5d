#pragma once
/// The forward (Taylor) engine: the value, first derivatives and the requested second
/// derivatives of an MLP's outputs, propagated layer by layer in one forward pass, so that
/// training backpropagates through first-order operations only.
#include <torch/types.h>

#include <set>
#include <vector>

#include "tessera/autodiff/partial.hpp"
#include "tessera/nn/fbpinn.hpp"
#include "tessera/nn/mlp.hpp"

namespace tessera::autodiff {

/// Whether the forward engine can compute `requested` for a network built with `options`:
/// every partial of order <= 2 whose output and axes exist. Every activation, Fourier
/// features and adaptive activation are supported.
bool taylor_supports(const nn::MlpOptions& options, const std::set<Partial>& requested);

/// Which implementation of the forward engine runs (see taylor_partials).
enum class TaylorPath { automatic, per_layer };

/// Evaluates `network` at `x` ([n, inputs], the network's dtype and device; not modified) and
/// returns every partial in `requested` as an [n] tensor, the same values as
/// `reverse_partials(network->forward, ...)` up to rounding. Precondition: `taylor_supports`.
///
/// All derivative streams travel stacked in one [streams, n, width] tensor. On a CPU (float32,
/// float64) the whole network is one autograd node over cache-sized blocks of points
/// (`TaylorPath::automatic`); elsewhere, or with `TaylorPath::per_layer`, each layer is one
/// matrix product and one fused element-wise node with a hand-written backward. With
/// `create_graph` the results can be backpropagated to the network's parameters (first-order
/// only: a second backward through them is refused); without, no graph is recorded.
Partials taylor_partials(const nn::MlpImpl& network, const torch::Tensor& x,
                         const std::set<Partial>& requested, bool create_graph,
                         TaylorPath path = TaylorPath::automatic);

/// Several plain MLPs of one architecture evaluated together on a CPU: network `network` at the
/// point sets `xs`, one group of the grouped whole-network node per entry.
struct NetworkPoints {
  const nn::MlpImpl* network = nullptr;
  std::vector<torch::Tensor> xs;  ///< [n_i, inputs] each, the network's dtype and device
};

/// Whether `network` at x can join a grouped evaluation (taylor_partials_grouped): a plain
/// (not modified) MLP in float32 or float64 on a CPU, without bf16 products.
bool taylor_groups(const nn::MlpImpl& network, const torch::Tensor& x);

/// taylor_partials for every point set of every entry of `groups` in one grouped node (the
/// entries' networks must have the same layer shapes and activation; `requested[g][i]` is what
/// xs[i] of entry g asks for, and all of them must share one stream layout). Each entry's
/// results and parameter gradients depend on its own points only, whatever other entries share
/// the call, so a subdomain gives the same bits alone or beside others. Precondition:
/// taylor_groups and taylor_supports for every entry.
std::vector<std::vector<Partials>> taylor_partials_grouped(
    const std::vector<NetworkPoints>& groups,
    const std::vector<std::vector<std::set<Partial>>>& requested, bool create_graph);

/// Whether the forward engine can compute `requested` for an FBPINN: every partial of order
/// <= 2 whose output and axes exist.
bool taylor_supports(const nn::FbpinnOptions& options, const std::set<Partial>& requested);

/// The FBPINN's partials by the forward engine (src/autodiff/fbpinn.cpp): every level's
/// subdomain networks carry their streams together as one batch (on a CPU the grouped
/// whole-network node; elsewhere, or with `TaylorPath::per_layer`, one stacked product and one
/// element-wise node per layer), the windows' streams follow in closed form (no graph: they
/// depend on x only), and the product rule and the per-point sums give u's streams. Same
/// contract as above.
Partials taylor_partials(const nn::FbpinnImpl& network, const torch::Tensor& x,
                         const std::set<Partial>& requested, bool create_graph,
                         TaylorPath path = TaylorPath::automatic);

}  // namespace tessera::autodiff
