#pragma once
/// Partials of a network made of parts that each give some outputs from some of the inputs
/// (nn::FieldNetworks): each part's come from its own engine on its own input columns, and a
/// derivative along an input that a part does not read is zero.
#include <torch/types.h>

#include <functional>
#include <set>
#include <vector>

#include "tessera/autodiff/partial.hpp"

namespace tessera::autodiff {

/// A derivative engine for one network: (its function, x [n, its inputs], requested,
/// create_graph) -> partials, as reverse_partials or a forward-engine wrapper.
using Engine = std::function<Partials(const NetworkFunction&, const torch::Tensor&,
                                      const std::set<Partial>&, bool)>;

/// One part: the outputs it gives (ascending), the input columns it reads (ascending), its
/// network and that network's engine.
struct PartEngine {
  std::vector<int> outputs;
  std::vector<int> inputs;
  NetworkFunction function;
  Engine engine;
};

/// Every partial in `requested` at x [n, inputs]: each part evaluates its outputs' partials on
/// x's columns `inputs`, with the axes renumbered to its own. A partial along an input the part
/// does not read is a tensor of zeros [n] (x's dtype and device, no graph); a Laplacian sums
/// the pure second derivatives along the part's own inputs among those asked (zero when it
/// reads none of them). Each part is called at most once.
Partials parts_partials(const std::vector<PartEngine>& parts, const torch::Tensor& x,
                        const std::set<Partial>& requested, bool create_graph);

}  // namespace tessera::autodiff
