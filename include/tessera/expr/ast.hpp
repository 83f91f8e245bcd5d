#pragma once
/// The syntax tree of a parsed expression. Built by parse_tree (parser.cpp), read by
/// evaluate_tree (evaluate.cpp); pure-constant subtrees are already folded into numbers.
#include <memory>
#include <string>
#include <vector>

#include "tessera/expr/operations.hpp"
#include "tessera/expr/symbols.hpp"
#include "tessera/expr/table.hpp"

namespace tessera::expr {

enum class NodeKind {
  number,      ///< `value` (numbers, pi, e, case constants, folded subtrees)
  coordinate,  ///< column `index` of Environment::coordinates
  derivative,  ///< Environment::derivatives[`derivative`]
  parameter,   ///< Environment::parameters[`name`]
  extra,       ///< Environment::extra[`name`]
  unary,       ///< `op` applied to children[0]
  binary,      ///< `op` applied to children[0], children[1]
  call,        ///< `function` applied to children
  table,       ///< `table` interpolated at children (one per axis), differentiated along the
               ///< axes in `derivative.wrt`
};

struct Node {
  NodeKind kind = NodeKind::number;
  int column = 1;  ///< 1-based position in the text, for messages
  double value = 0.0;
  int index = 0;
  DerivativeKey derivative;
  std::string name;  ///< parameter or extra name; the spelling of a symbol otherwise
  Op op = Op::add;
  Function function = Function::sin;
  std::shared_ptr<const Table> table;
  std::vector<std::unique_ptr<Node>> children;
};

using NodePtr = std::unique_ptr<Node>;

/// Node builders that fold: an operator or function whose operands are all numbers becomes a
/// number (computed in double precision), and if() with a constant condition becomes the
/// chosen branch.
NodePtr make_number(double value, int column);
NodePtr make_unary(Op op, NodePtr operand, int column);
NodePtr make_binary(Op op, NodePtr left, NodePtr right, int column);
NodePtr make_call(Function function, std::vector<NodePtr> args, int column);

/// Parses `text` into a folded tree; errors are "<key>: <what> at column <c> (...)".
NodePtr parse_tree(const std::string& text, const SymbolTable& symbols, const std::string& key);

}  // namespace tessera::expr
