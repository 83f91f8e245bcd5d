#pragma once
/// What an identifier in an expression means under a SymbolTable.
#include <string>
#include <vector>

#include "tessera/expr/ast.hpp"
#include "tessera/expr/symbols.hpp"

namespace tessera::expr {

/// Resolves names for one parse; every error is "<key>: ... at column <c> (...)".
class Resolver {
 public:
  Resolver(const SymbolTable& symbols, const std::string& key);

  /// The leaf for a symbol (not a call or a definition, which the parser expands): a number
  /// for pi, e and constants, else a coordinate,
  /// field derivative ("u", "u_yx"), parameter or extra node. Unknown names fail with a
  /// did-you-mean over every known name, derivative spellings of the fields included.
  NodePtr symbol(const std::string& name, int column) const;

  /// The derivative that a field or derivative spelling ("u", "u_x") names, for the first
  /// argument of `function` (D or lap).
  DerivativeKey differentiable(const std::string& name, int column,
                               const std::string& function) const;

  /// The index of coordinate `name` in coordinates(), for an argument of `function` (D or d).
  int coordinate(const std::string& name, int column, const std::string& function) const;

  /// "field", "coordinate", "constant", "parameter", "per-point value", or "" when unknown.
  std::string kind_of(const std::string& name) const;

  const SymbolTable& symbols() const { return symbols_; }

 private:
  /// The key of "<field>_<suffix>" when the prefix is a field; fails when the suffix is not
  /// made of coordinate names. Returns false (untouched `out`) when the prefix is no field.
  bool split_derivative(const std::string& name, int column, DerivativeKey& out) const;
  [[noreturn]] void fail_unknown(const std::string& name, int column) const;
  [[noreturn]] void fail_not_field(const std::string& name, int column) const;

  const SymbolTable& symbols_;
  const std::string& key_;
  std::vector<std::string> coordinates_;
};

}  // namespace tessera::expr
