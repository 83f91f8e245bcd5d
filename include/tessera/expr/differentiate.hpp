#pragma once
/// Symbolic differentiation of a syntax tree along one coordinate, for the operators d(), grad,
/// div and lap() of expressions (docs/case-format.md "Operators on expressions"). The result is
/// an ordinary tree whose leaves are field derivatives of higher order, so both derivative
/// engines evaluate it like any other expression.
#include <string>

#include "tessera/expr/ast.hpp"
#include "tessera/expr/symbols.hpp"

namespace tessera::expr {

/// A deep copy of `node`.
NodePtr clone(const Node& node);

/// d(node)/d(coordinate `coordinate`, an index into symbols.coordinates()). Field derivatives
/// gain one order (u_x -> u_xy), a Laplacian leaf becomes the sum of its third derivatives,
/// parameters and numbers give 0, comparisons and sign() give 0 (they are piecewise constant),
/// if() differentiates its branches, min/max the argument they select. A per-point value
/// (normals) cannot be differentiated: "<key>: ... at column <c> (...)".
NodePtr differentiate(const Node& node, int coordinate, const SymbolTable& symbols,
                      const std::string& key);

}  // namespace tessera::expr
