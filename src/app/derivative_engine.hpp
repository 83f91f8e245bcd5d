#pragma once
// Which derivative engine computes a network's partials; private to app (model.cpp and
// field_networks.cpp).
#include <string>

#include "tessera/autodiff/reverse.hpp"
#include "tessera/autodiff/taylor.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/case.hpp"
#include "tessera/physics/field_evaluator.hpp"

namespace tessera::app::detail {

// "taylor": the forward engine, "autograd": the reverse engine, "auto": forward wherever it
// applies (orders <= 2), else reverse. Which partials a group asks for is known only when it
// asks, so the choice (and the error for "taylor") is made per call. `Network` is nn::Mlp or
// nn::Fbpinn.
template <typename Network>
physics::DerivativeEngine derivative_engine(const io::Case& c, const Network& network) {
  const io::DerivativeChoice choice = c.training.derivatives;
  if (choice == io::DerivativeChoice::autograd) return autodiff::reverse_partials;
  const std::string file = c.file;
  return [choice, file, network](const autodiff::NetworkFunction& function, const torch::Tensor& x,
                                 const std::set<autodiff::Partial>& requested, bool create_graph) {
    // bf16 products (a stage's precision) run on the reverse engine: the forward engine's
    // kernels are float32/float64.
    if (!network->bf16_products() && autodiff::taylor_supports(network->options(), requested))
      return autodiff::taylor_partials(*network, x, requested, create_graph);
    TESSERA_CHECK(
        choice != io::DerivativeChoice::taylor,
        file << ": training.derivatives: the \"taylor\" engine computes derivatives up "
                "to second order; this case needs higher ones: use \"auto\" or \"autograd\"");
    return autodiff::reverse_partials(function, x, requested, create_graph);
  };
}

}  // namespace tessera::app::detail
