#include "tessera/expr/evaluate.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/table.hpp"

namespace tessera::expr {

namespace {

class Evaluator {
 public:
  Evaluator(const Environment& env, const std::string& key, CoordinateCache* cache)
      : env_(env),
        key_(key),
        options_(env.coordinates.options()),
        n_(env.coordinates.size(0)),
        cache_(cache),
        cached_(cache ? cache->values_at(env.coordinates) : nullptr) {}

  torch::Tensor operator()(const Node& node) const {
    const int slot = cached_ ? cache_->slot(&node) : -1;
    if (slot < 0) return computed(node);
    auto& value = (*cached_)[static_cast<std::size_t>(slot)];
    if (!value.defined()) value = computed(node);
    return value;
  }

 private:
  torch::Tensor computed(const Node& node) const {
    switch (node.kind) {
      case NodeKind::number:
        return torch::scalar_tensor(node.value, options_);
      case NodeKind::coordinate:
        return env_.coordinates.select(1, node.index);
      case NodeKind::derivative: {
        const auto it = env_.derivatives.find(node.derivative);
        TESSERA_CHECK(it != env_.derivatives.end(),
                      key_ << ": no value for '" << node.name
                           << "' was supplied (the derivatives "
                              "to compute come from Expression::derivatives())");
        return per_point(it->second, node.name);
      }
      case NodeKind::parameter: {
        const auto it = env_.parameters.find(node.name);
        TESSERA_CHECK(it != env_.parameters.end(),
                      key_ << ": no value for parameter '" << node.name << "' was supplied");
        TESSERA_CHECK(it->second.dim() == 0, key_ << ": parameter '" << node.name
                                                  << "' must be a 0-d tensor, got shape "
                                                  << it->second.sizes());
        return it->second.to(options_);
      }
      case NodeKind::extra: {
        const auto it = env_.extra.find(node.name);
        TESSERA_CHECK(it != env_.extra.end(),
                      key_ << ": no value for '" << node.name << "' was supplied");
        return per_point(it->second, node.name);
      }
      case NodeKind::unary:
        return expr::apply(node.op, (*this)(*node.children[0]));
      case NodeKind::binary:
        // x^2 with a literal exponent: the Scalar overload skips the exponent's gradient graph
        if (node.op == Op::power && node.children[1]->kind == NodeKind::number)
          return torch::pow((*this)(*node.children[0]), node.children[1]->value);
        return expr::apply(node.op, (*this)(*node.children[0]), (*this)(*node.children[1]));
      case NodeKind::call:
        return expr::apply(node.function, arguments(node));
      case NodeKind::table:
        return node.table->evaluate(arguments(node), node.derivative.wrt, key_,
                                    !reads_its_own_axes(node));
    }
    TESSERA_FAIL(key_ << ": unhandled node kind");
  }

  /// kappa(x, y) for a table over x and y: the points are the domain's, and the problem's
  /// build checked that the grid covers the domain, so no range check (a device read) is due.
  static bool reads_its_own_axes(const Node& node) {
    const auto& axes = node.table->axes();
    for (std::size_t k = 0; k < node.children.size(); ++k)
      if (node.children[k]->kind != NodeKind::coordinate || node.children[k]->name != axes[k])
        return false;
    return true;
  }

  std::vector<torch::Tensor> arguments(const Node& node) const {
    std::vector<torch::Tensor> args;
    args.reserve(node.children.size());
    for (const auto& child : node.children) args.push_back((*this)(*child));
    return args;
  }

  torch::Tensor per_point(const torch::Tensor& value, const std::string& name) const {
    TESSERA_CHECK(value.dim() == 1 && value.size(0) == n_, key_ << ": '" << name
                                                                << "' must have shape [" << n_
                                                                << "], got " << value.sizes());
    return value.to(options_);
  }

  const Environment& env_;
  const std::string& key_;
  torch::TensorOptions options_;
  int64_t n_;
  CoordinateCache* cache_;
  std::vector<torch::Tensor>* cached_;  // this point set's cached values, or null
};

}  // namespace

torch::Tensor evaluate_tree(const Node& node, const Environment& env, const std::string& key,
                            CoordinateCache* cache) {
  TESSERA_CHECK(env.coordinates.defined() && env.coordinates.dim() == 2,
                key << ": evaluation needs coordinates of shape [n, dims]");
  return Evaluator(env, key, cache)(node);
}

}  // namespace tessera::expr
