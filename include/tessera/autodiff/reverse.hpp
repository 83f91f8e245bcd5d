#pragma once
/// The reverse-mode engine: nested autograd, computing exactly the requested partials.
#include "tessera/autodiff/partial.hpp"

namespace tessera::autodiff {

/// Evaluates `network` at `x` ([n, inputs]; need not require grad, it is not modified) and
/// returns every partial in `requested` (any order, mixed included) as [n] tensors.
///
/// Partials are organised as a tree by their sorted `wrt` prefixes; one autograd call per
/// tree node yields the derivatives of that node with respect to all inputs at once, so a
/// first derivative shared by u_xx and u_xy is computed once. With `create_graph` the results
/// can be differentiated again (training: the loss is backpropagated through them); without,
/// the graph is kept only where a higher partial still needs it.
Partials reverse_partials(const NetworkFunction& network, const torch::Tensor& x,
                          const std::set<Partial>& requested, bool create_graph);

}  // namespace tessera::autodiff
