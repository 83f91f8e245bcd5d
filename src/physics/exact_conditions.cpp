#include "tessera/physics/exact_conditions.hpp"

#include <map>

#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/environment.hpp"

namespace tessera::physics {
namespace {

using autodiff::Partial;
using MultiIndex = std::vector<int>;  // sorted input indices, repeats allowed: {0, 0} = d2/dx2

/// Every sub-multiset beta of alpha with the multinomial factor prod_k C(alpha_k, beta_k).
std::vector<std::pair<MultiIndex, double>> sub_indices(const MultiIndex& alpha) {
  std::map<int, int> counts;
  for (int k : alpha) ++counts[k];
  std::vector<std::pair<MultiIndex, double>> out{{{}, 1.0}};
  for (const auto& [k, c] : counts) {
    std::vector<std::pair<MultiIndex, double>> next;
    for (const auto& [beta, factor] : out) {
      double binomial = 1;
      for (int b = 0; b <= c; ++b) {
        MultiIndex extended = beta;
        extended.insert(extended.end(), b, k);
        next.emplace_back(extended, factor * binomial);
        binomial = binomial * (c - b) / (b + 1);
      }
    }
    out = std::move(next);
  }
  for (auto& [beta, factor] : out) std::sort(beta.begin(), beta.end());
  return out;
}

MultiIndex difference(const MultiIndex& alpha, const MultiIndex& beta) {
  MultiIndex rest;
  std::multiset<int> remove(beta.begin(), beta.end());
  for (int k : alpha) {
    auto it = remove.find(k);
    if (it != remove.end())
      remove.erase(it);
    else
      rest.push_back(k);
  }
  return rest;
}

/// The plain multi-indices a partial needs: itself, or for a Laplacian each {k, k}.
std::vector<MultiIndex> expanded(const Partial& p) {
  if (!p.laplacian) return {p.wrt};
  std::vector<MultiIndex> out;
  for (int k : p.wrt) out.push_back({k, k});
  return out;
}

/// Derivatives of f(x) ([n], built from `x` with requires_grad) for the given multi-indices,
/// by repeated autograd; constants (detached).
std::map<MultiIndex, torch::Tensor> derivatives(const torch::Tensor& f, const torch::Tensor& x,
                                                const std::set<MultiIndex>& wanted) {
  std::map<MultiIndex, torch::Tensor> out;
  std::map<MultiIndex, torch::Tensor> graph{{{}, f}};
  for (const auto& alpha : wanted) {
    MultiIndex prefix;
    for (int k : alpha) {
      MultiIndex next = prefix;
      next.push_back(k);
      std::sort(next.begin(), next.end());
      if (!graph.count(next)) {
        const auto& g = graph.at(prefix);
        torch::Tensor d;
        if (g.requires_grad())
          d = torch::autograd::grad({g.sum()}, {x}, {}, /*retain_graph=*/true,
                                    /*create_graph=*/true, /*allow_unused=*/true)[0];
        graph[next] = d.defined() ? d.select(1, k) : torch::zeros_like(f);
      }
      prefix = next;
    }
    out[alpha] = graph.at(alpha).detach();
  }
  return out;
}

}  // namespace

const ExactField* ExactConditions::constrained(int field) const {
  for (const auto& f : fields_)
    if (f.field == field) return &f;
  return nullptr;
}

std::set<Partial> ExactConditions::network_partials(const std::set<Partial>& requested) const {
  std::set<Partial> out;
  for (const auto& p : requested) {
    if (!constrained(p.output)) {
      out.insert(p);
      continue;
    }
    for (const auto& alpha : expanded(p))
      for (const auto& [beta, factor] : sub_indices(alpha)) out.insert({p.output, beta, false});
  }
  return out;
}

torch::Tensor ExactPiece::distance(const torch::Tensor& x) const {
  torch::Tensor d;
  for (const auto& f : factors) {
    const auto factor = f.sign * (x.select(1, f.input) - f.origin) / f.length;
    d = d.defined() ? d * factor : factor;
  }
  return d;
}

autodiff::Partials ExactConditions::apply(const torch::Tensor& x,
                                          const std::set<Partial>& requested,
                                          const autodiff::Partials& network) const {
  autodiff::Partials out;
  for (const auto& p : requested)
    if (!constrained(p.output)) out[p] = network.at(p);
  for (const auto& field : fields_) {
    std::set<MultiIndex> wanted;
    for (const auto& p : requested)
      if (p.output == field.field)
        for (const auto& alpha : expanded(p))
          for (const auto& [beta, factor] : sub_indices(alpha)) wanted.insert(beta);
    if (wanted.empty()) continue;
    // phi and g on the coordinates, with autograd for their derivatives.
    torch::AutoGradMode grad_mode(true);
    const auto xg = x.detach().requires_grad_(true);
    expr::Environment env;
    env.coordinates = xg;
    std::vector<torch::Tensor> d, g;
    for (const auto& piece : field.pieces) {
      d.push_back(piece.distance(xg));
      g.push_back(piece.value.evaluate(env) + torch::zeros({x.size(0)}, x.options()));
    }
    auto phi = d.front();
    for (std::size_t i = 1; i < d.size(); ++i) phi = phi * d[i];
    torch::Tensor extension = g.front();
    if (g.size() > 1) {
      // A tiny floor keeps the weights finite where two distances vanish together (corners).
      std::vector<torch::Tensor> others;
      torch::Tensor total;
      for (std::size_t i = 0; i < d.size(); ++i) {
        auto w = torch::ones_like(phi);
        for (std::size_t j = 0; j < d.size(); ++j)
          if (j != i) w = w * d[j];
        w = w + 1e-12;
        others.push_back(w);
        total = total.defined() ? total + w : w;
      }
      extension = torch::zeros_like(phi);
      for (std::size_t i = 0; i < g.size(); ++i) extension = extension + others[i] / total * g[i];
    }
    const auto dphi = derivatives(phi, xg, wanted);
    const auto dg = derivatives(extension, xg, wanted);
    const auto plain = [&](const MultiIndex& alpha) {
      torch::Tensor sum = dg.at(alpha);
      for (const auto& [beta, factor] : sub_indices(alpha))
        sum = sum +
              factor * dphi.at(beta) * network.at({field.field, difference(alpha, beta), false});
      return sum;
    };
    for (const auto& p : requested) {
      if (p.output != field.field) continue;
      torch::Tensor value;
      for (const auto& alpha : expanded(p))
        value = value.defined() ? value + plain(alpha) : plain(alpha);
      out[p] = value;
    }
  }
  return out;
}

}  // namespace tessera::physics
