#include "term.hpp"

#include "tessera/expr/diagnostics.hpp"
#include "tessera/expr/differentiate.hpp"

namespace tessera::expr {

namespace {

const char* const kMakeNumber = "make a number of it with div(...) or dot(..., ...)";

NodePtr summed(std::vector<NodePtr> terms, int column) {
  NodePtr total;
  for (auto& term : terms) {
    if (!total) {
      total = std::move(term);
    } else if (term->kind == NodeKind::number && term->value == 0.0) {
      continue;
    } else if (total->kind == NodeKind::number && total->value == 0.0) {
      total = std::move(term);
    } else {
      total = make_binary(Op::add, std::move(total), std::move(term), column);
    }
  }
  return total ? std::move(total) : make_number(0.0, column);
}

Term componentwise(Op op, Term left, Term right, int column) {
  const std::size_t size = left.is_vector() ? left.components.size() : right.components.size();
  std::vector<NodePtr> result;
  for (std::size_t i = 0; i < size; ++i) {
    NodePtr a = left.is_vector() ? std::move(left.components[i]) : clone(*left.scalar);
    NodePtr b = right.is_vector() ? std::move(right.components[i]) : clone(*right.scalar);
    result.push_back(make_binary(op, std::move(a), std::move(b), column));
  }
  return Term::vector(std::move(result), column);
}

}  // namespace

Term Term::number(NodePtr node) {
  Term term;
  term.column = node->column;
  term.scalar = std::move(node);
  return term;
}

Term Term::vector(std::vector<NodePtr> components, int column) {
  Term term;
  term.components = std::move(components);
  term.column = column;
  return term;
}

NodePtr as_number(Term term, const std::string& key, const std::string& what) {
  if (term.is_vector())
    fail_at(key, what + " is a vector where a number is needed", term.column, kMakeNumber);
  return std::move(term.scalar);
}

Term combine(Op op, Term left, Term right, int column, const std::string& key) {
  if (!left.is_vector() && !right.is_vector())
    return Term::number(make_binary(op, std::move(left.scalar), std::move(right.scalar), column));
  const bool both = left.is_vector() && right.is_vector();
  const std::string symbol = op_symbol(op);
  if ((op == Op::add || op == Op::subtract) && both)
    return componentwise(op, std::move(left), std::move(right), column);
  if (op == Op::multiply && !both)
    return componentwise(op, std::move(left), std::move(right), column);
  if (op == Op::divide && !right.is_vector())
    return componentwise(op, std::move(left), std::move(right), column);
  std::string detail = kMakeNumber;
  if (op == Op::multiply) detail = "the product of two vectors is dot(a, b)";
  if (op == Op::add || op == Op::subtract) detail = "both sides must be vectors, or both numbers";
  fail_at(key, "'" + symbol + "' cannot take a vector " + (both ? "on both sides" : "and a number"),
          column, detail);
}

Term negated(Term term, int column) {
  if (!term.is_vector())
    return Term::number(make_unary(Op::negate, std::move(term.scalar), column));
  for (auto& component : term.components)
    component = make_unary(Op::negate, std::move(component), column);
  term.column = column;
  return term;
}

Term gradient(const Node& scalar, const SymbolTable& symbols, const std::string& key, int column) {
  std::vector<NodePtr> components;
  for (int axis = 0; axis < static_cast<int>(symbols.spatial.size()); ++axis)
    components.push_back(differentiate(scalar, axis, symbols, key));
  return Term::vector(std::move(components), column);
}

NodePtr divergence(const Term& vector, const SymbolTable& symbols, const std::string& key,
                   int column) {
  std::vector<NodePtr> terms;
  for (std::size_t axis = 0; axis < vector.components.size(); ++axis)
    terms.push_back(differentiate(*vector.components[axis], static_cast<int>(axis), symbols, key));
  return summed(std::move(terms), column);
}

NodePtr dot(const Term& left, const Term& right, int column) {
  std::vector<NodePtr> terms;
  for (std::size_t i = 0; i < left.components.size(); ++i)
    terms.push_back(
        make_binary(Op::multiply, clone(*left.components[i]), clone(*right.components[i]), column));
  return summed(std::move(terms), column);
}

NodePtr laplacian(const Node& scalar, const SymbolTable& symbols, const std::string& key,
                  int column) {
  std::vector<NodePtr> terms;
  for (int axis = 0; axis < static_cast<int>(symbols.spatial.size()); ++axis)
    terms.push_back(differentiate(*differentiate(scalar, axis, symbols, key), axis, symbols, key));
  return summed(std::move(terms), column);
}

}  // namespace tessera::expr
