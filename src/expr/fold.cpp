#include "tessera/expr/ast.hpp"

#include <algorithm>

namespace tessera::expr {

namespace {

bool is_number(const NodePtr& node) { return node->kind == NodeKind::number; }

}  // namespace

NodePtr make_number(double value, int column) {
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::number;
  node->value = value;
  node->column = column;
  return node;
}

NodePtr make_unary(Op op, NodePtr operand, int column) {
  if (is_number(operand)) return make_number(expr::apply(op, operand->value), column);
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::unary;
  node->op = op;
  node->column = column;
  node->children.push_back(std::move(operand));
  return node;
}

NodePtr make_binary(Op op, NodePtr left, NodePtr right, int column) {
  if (is_number(left) && is_number(right))
    return make_number(expr::apply(op, left->value, right->value), column);
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::binary;
  node->op = op;
  node->column = column;
  node->children.push_back(std::move(left));
  node->children.push_back(std::move(right));
  return node;
}

NodePtr make_call(Function function, std::vector<NodePtr> args, int column) {
  if (std::all_of(args.begin(), args.end(), is_number)) {
    std::vector<double> values;
    for (const auto& arg : args) values.push_back(arg->value);
    return make_number(expr::apply(function, values), column);
  }
  if (function == Function::if_ && is_number(args[0]))
    return std::move(args[args[0]->value != 0.0 ? 1 : 2]);
  // Both branches the same number (a derivative of if(c, x, 1) along y): the number.
  if (function == Function::if_ && is_number(args[1]) && is_number(args[2]) &&
      args[1]->value == args[2]->value)
    return std::move(args[1]);
  auto node = std::make_unique<Node>();
  node->kind = NodeKind::call;
  node->function = function;
  node->column = column;
  node->children = std::move(args);
  return node;
}

}  // namespace tessera::expr
