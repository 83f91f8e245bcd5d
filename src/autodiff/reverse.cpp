#include "tessera/autodiff/reverse.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::autodiff {

Partials reverse_partials(const NetworkFunction& network, const torch::Tensor& x,
                          const std::set<Partial>& requested, bool create_graph) {
  // Every prefix of every request is a node of the derivative tree; a Laplacian needs the pure
  // second derivatives it sums.
  std::set<Partial> nodes;
  for (const auto& p : requested) {
    if (p.laplacian) {
      for (int axis : p.wrt)
        nodes.insert({{p.output, {}}, {p.output, {axis}}, {p.output, {axis, axis}}});
      continue;
    }
    for (std::size_t k = 0; k <= p.wrt.size(); ++k)
      nodes.insert({p.output, std::vector<int>(p.wrt.begin(), p.wrt.begin() + k)});
  }
  const bool any_derivative =
      std::any_of(nodes.begin(), nodes.end(), [](const Partial& p) { return !p.wrt.empty(); });

  torch::Tensor input = x;
  if (any_derivative) input = x.detach().requires_grad_(true);
  const torch::Tensor outputs = network(input);
  TESSERA_ASSERT(outputs.dim() == 2, "network must return [n, outputs]");

  Partials values;
  for (const auto& node : nodes)
    if (node.wrt.empty()) values[node] = outputs.select(1, node.output);

  // Nodes are ordered so a prefix comes before its extensions (lexicographic `wrt` within an
  // output): expanding in order always finds the parent computed.
  for (const auto& node : nodes) {
    std::vector<int> children;
    for (const auto& other : nodes) {
      if (other.output == node.output && other.wrt.size() == node.wrt.size() + 1 &&
          std::equal(node.wrt.begin(), node.wrt.end(), other.wrt.begin()))
        children.push_back(other.wrt.back());
    }
    if (children.empty()) continue;
    const torch::Tensor& parent = values.at(node);
    bool grandchildren = false;
    for (const auto& other : nodes)
      if (other.output == node.output && other.wrt.size() > node.wrt.size() + 1 &&
          std::equal(node.wrt.begin(), node.wrt.end(), other.wrt.begin()))
        grandchildren = true;
    const bool keep_graph = create_graph || grandchildren;
    // A parent that does not depend on x (e.g. a derivative of a linear network) gives no grad.
    if (!parent.requires_grad()) {
      for (int c : children) {
        Partial child{node.output, node.wrt};
        child.wrt.push_back(c);
        values[child] = torch::zeros_like(parent);
      }
      continue;
    }
    auto grads = torch::autograd::grad({parent}, {input}, {torch::ones_like(parent)},
                                       /*retain_graph=*/true, /*create_graph=*/keep_graph,
                                       /*allow_unused=*/true);
    const torch::Tensor all = grads[0].defined() ? grads[0] : torch::zeros_like(input);
    for (int c : children) {
      Partial child{node.output, node.wrt};
      child.wrt.push_back(c);
      values[child] = all.select(1, c);
    }
  }

  Partials result;
  for (const auto& p : requested) {
    if (!p.laplacian) {
      result[p] = values.at(p);
      continue;
    }
    TESSERA_CHECK(!p.wrt.empty(), "reverse engine: a Laplacian needs at least one coordinate");
    torch::Tensor sum = values.at({p.output, {p.wrt[0], p.wrt[0]}});
    for (std::size_t k = 1; k < p.wrt.size(); ++k)
      sum = sum + values.at({p.output, {p.wrt[k], p.wrt[k]}});
    result[p] = sum;
  }
  return result;
}

}  // namespace tessera::autodiff
