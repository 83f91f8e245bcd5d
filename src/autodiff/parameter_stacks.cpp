// The grouped node's parameter stacks: every network's weights and biases stacked per layer by
// one autograd node, shared by the calls of one SharedStacks scope.
#include "parameter_stacks.hpp"

#include <ATen/Dispatch.h>

#include <algorithm>

#include "tessera/core/error.hpp"

namespace tessera::autodiff {

namespace {

thread_local SharedStacks* innermost_stacks = nullptr;

bool parameters_are_leaves(const std::vector<torch::Tensor>& weights,
                           const std::vector<torch::Tensor>& biases) {
  for (const auto* list : {&weights, &biases})
    for (const auto& t : *list)
      if (!t.is_leaf()) return false;
  return true;
}

// Every layer's weights and biases of a call's networks stacked, as one autograd node: one
// forward, and in each backward pass one node that hands every network its slice of the stacked
// gradients, where a stack per tensor made two nodes per layer in each (docs/benchmarks.md,
// "Subdomains of a rank evaluated together"). The slices are the values an unbind would give.
// CPU only, as the grouped node that reads the stacks.
class StackParameters : public torch::autograd::Function<StackParameters> {
 public:
  // `parameters`: the tensors of every stack back to back, `groups` per stack.
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                at::TensorList parameters, int64_t groups) {
    ctx->saved_data["groups"] = groups;
    torch::autograd::variable_list stacks;
    for (std::size_t first = 0; first < parameters.size();
         first += static_cast<std::size_t>(groups)) {
      const auto& one = parameters[first];
      std::vector<int64_t> sizes{groups};
      sizes.insert(sizes.end(), one.sizes().begin(), one.sizes().end());
      auto stack = torch::empty(sizes, one.options());
      // A copy per tensor, as torch::stack would make, without its dispatch per element.
      AT_DISPATCH_FLOATING_TYPES(one.scalar_type(), "stack_parameters", [&] {
        auto* out = stack.data_ptr<scalar_t>();
        for (int64_t g = 0; g < groups; ++g) {
          const auto part = parameters[first + static_cast<std::size_t>(g)].contiguous();
          TESSERA_ASSERT(part.sizes() == one.sizes() && part.device().is_cpu(),
                         "stack_parameters: CPU tensors of one shape per stack");
          out = std::copy_n(part.data_ptr<scalar_t>(), part.numel(), out);
        }
      });
      stacks.push_back(stack);
    }
    return stacks;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const int64_t groups = ctx->saved_data["groups"].toInt();
    torch::autograd::variable_list slices;
    for (const auto& grad : grads) {
      if (grad.defined()) {
        const auto parts = grad.unbind(0);
        slices.insert(slices.end(), parts.begin(), parts.end());
      } else {
        slices.resize(slices.size() + static_cast<std::size_t>(groups));
      }
    }
    slices.emplace_back();  // groups
    return slices;
  }
};

}  // namespace

SharedStacks::SharedStacks() : outer_(innermost_stacks) { innermost_stacks = this; }

SharedStacks::~SharedStacks() { innermost_stacks = outer_; }

SharedStacks* SharedStacks::current() { return innermost_stacks; }

std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> stacked(
    const std::vector<const nn::MlpImpl*>& networks,
    const std::vector<std::vector<torch::Tensor>>& weights,
    const std::vector<std::vector<torch::Tensor>>& biases) {
  SharedStacks* scope = SharedStacks::current();
  const bool graph = torch::GradMode::is_enabled();
  if (scope) {
    for (const auto& held : scope->stacks)
      if (held.networks == networks && held.graph == graph) return {held.weights, held.biases};
  }
  bool shareable = true;
  std::vector<torch::Tensor> parameters;  // weights of layer 0, its biases, layer 1's, ...
  for (std::size_t layer = 0; layer < weights.size(); ++layer) {
    shareable = shareable && parameters_are_leaves(weights[layer], biases[layer]);
    parameters.insert(parameters.end(), weights[layer].begin(), weights[layer].end());
    parameters.insert(parameters.end(), biases[layer].begin(), biases[layer].end());
  }
  const auto stacks =
      StackParameters::apply(at::TensorList(parameters), static_cast<int64_t>(networks.size()));
  std::vector<torch::Tensor> stacked_weights, stacked_biases;
  for (std::size_t layer = 0; layer < weights.size(); ++layer) {
    stacked_weights.push_back(stacks[2 * layer]);
    stacked_biases.push_back(stacks[2 * layer + 1]);
  }
  if (scope && shareable)
    scope->stacks.push_back({networks, graph, stacked_weights, stacked_biases});
  return {stacked_weights, stacked_biases};
}

}  // namespace tessera::autodiff
