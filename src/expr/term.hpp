#pragma once
/// What the parser holds between operators: a number per point, or a vector of them (one per
/// spatial coordinate) from grad() and vector(). Vectors live only while parsing: div() and
/// dot() make numbers of them, and a vector where a number is needed is an error, so the
/// syntax tree never holds one.
#include <string>
#include <vector>

#include "tessera/expr/ast.hpp"

namespace tessera::expr {

struct Term {
  NodePtr scalar;                   ///< set for a number per point
  std::vector<NodePtr> components;  ///< set for a vector
  int column = 1;

  static Term number(NodePtr node);
  static Term vector(std::vector<NodePtr> components, int column);
  bool is_vector() const { return !scalar; }
};

/// The tree of a number-valued term; a vector fails with "<key>: <what> is a vector ...".
NodePtr as_number(Term term, const std::string& key, const std::string& what);

/// `op` (+, -, *, /, ^ or a comparison) on two terms: numbers as before; a vector plus or
/// minus a vector, a number times a vector and a vector divided by a number component by
/// component; anything else with a vector fails at `column`.
Term combine(Op op, Term left, Term right, int column, const std::string& key);

/// -term, component by component for a vector.
Term negated(Term term, int column);

/// The operators on expressions over `symbols`' spatial coordinates. Each differentiates
/// symbolically (differentiate.hpp); `column` places the result's nodes and errors.
Term gradient(const Node& scalar, const SymbolTable& symbols, const std::string& key, int column);
NodePtr divergence(const Term& vector, const SymbolTable& symbols, const std::string& key,
                   int column);
NodePtr dot(const Term& left, const Term& right, int column);
NodePtr laplacian(const Node& scalar, const SymbolTable& symbols, const std::string& key,
                  int column);

}  // namespace tessera::expr
