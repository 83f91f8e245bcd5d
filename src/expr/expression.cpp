#include "tessera/expr/expression.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/expr/ast.hpp"
#include "tessera/expr/evaluate.hpp"

namespace tessera::expr {

namespace {

/// The first leaf (left to right) that is not a number, or nullptr.
const Node* first_variable(const Node& node) {
  if (node.kind == NodeKind::number) return nullptr;
  if (node.children.empty() || node.kind == NodeKind::table) return &node;
  for (const auto& child : node.children)
    if (const Node* found = first_variable(*child)) return found;
  return nullptr;
}

}  // namespace

Expression Expression::parse(const std::string& text, const SymbolTable& symbols,
                             const std::string& key) {
  validate(symbols, key);
  Expression expression;
  expression.text_ = text;
  expression.key_ = key;
  expression.coordinate_count_ = static_cast<int>(symbols.coordinates().size());
  std::shared_ptr<const Node> root = parse_tree(text, symbols, key);

  // What the folded tree reads, so a run computes only those derivatives.
  std::vector<const Node*> pending{root.get()};
  while (!pending.empty()) {
    const Node* node = pending.back();
    pending.pop_back();
    switch (node->kind) {
      case NodeKind::derivative:
        expression.derivatives_.insert(node->derivative);
        break;
      case NodeKind::parameter:
        expression.parameter_names_.insert(node->name);
        break;
      case NodeKind::extra:
        expression.extra_names_.insert(node->name);
        break;
      case NodeKind::coordinate:
        expression.uses_coordinates_ = true;
        break;
      case NodeKind::table:
        expression.uses_tables_ = true;
        break;
      case NodeKind::number:
      case NodeKind::unary:
      case NodeKind::binary:
      case NodeKind::call:
        break;
    }
    for (const auto& child : node->children) pending.push_back(child.get());
  }
  expression.cache_ = std::make_shared<CoordinateCache>(*root);
  expression.root_ = std::move(root);
  return expression;
}

bool Expression::is_constant() const { return root_ && root_->kind == NodeKind::number; }

torch::Tensor Expression::evaluate(const Environment& env) const {
  TESSERA_CHECK(root_, "expr: evaluate() on an expression that was never parsed");
  TESSERA_CHECK(env.coordinates.defined() && env.coordinates.dim() == 2 &&
                    env.coordinates.size(1) == coordinate_count_,
                key_ << ": evaluation needs coordinates of shape [n, " << coordinate_count_
                     << "], got "
                     << (env.coordinates.defined() ? env.coordinates.sizes() : at::IntArrayRef{}));
  torch::Tensor result = evaluate_tree(*root_, env, key_, cache_.get());
  if (result.dim() == 0) result = result.expand({env.coordinates.size(0)}).contiguous();
  return result;
}

double Expression::evaluate_constant() const {
  TESSERA_CHECK(root_, "expr: evaluate_constant() on an expression that was never parsed");
  if (const Node* variable = first_variable(*root_))
    TESSERA_FAIL(key_ << ": expected a constant expression, but it reads '" << variable->name
                      << "' at column " << variable->column
                      << " (only numbers, pi, e and the case's constants may appear here)");
  return root_->value;
}

}  // namespace tessera::expr
