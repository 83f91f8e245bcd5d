#pragma once
/// A case-file expression (docs/case-format.md "Expressions"): parsed once into a folded
/// syntax tree, evaluated on tensors as often as needed.
#include <memory>
#include <set>
#include <string>

#include <torch/types.h>

#include "tessera/expr/environment.hpp"
#include "tessera/expr/symbols.hpp"

namespace tessera::expr {

struct Node;
class CoordinateCache;

/// Immutable after parse, but for the values of coordinate-only subtrees it keeps per point set
/// (coordinate_cache.hpp); cheap to copy (copies share the tree and what it keeps).
class Expression {
 public:
  /// An empty expression; evaluating it throws. Use parse().
  Expression() = default;

  /// Parses `text`; `key` (e.g. "equations[0].residual") prefixes every error message, which
  /// reads "<key>: <what> at column <c> (...)". Also validates `symbols` (see validate()).
  static Expression parse(const std::string& text, const SymbolTable& symbols,
                          const std::string& key);

  /// Every field derivative the expression reads (order 0 when the field itself is used).
  /// lap(u) expands to the second derivatives in the spatial coordinates.
  const std::set<DerivativeKey>& derivatives() const { return derivatives_; }

  bool uses_parameters() const { return !parameter_names_.empty(); }
  /// Names of the parameters read, e.g. {"nu"}.
  const std::set<std::string>& parameter_names() const { return parameter_names_; }
  /// Names of the extra per-point values read, e.g. {"n_x", "n_y"}.
  const std::set<std::string>& extra_names() const { return extra_names_; }
  /// True when the expression reads coordinates.
  bool uses_coordinates() const { return uses_coordinates_; }
  /// True when it calls tabulated data (the case's `data`).
  bool uses_tables() const { return uses_tables_; }
  /// True when it folded to a number (evaluate_constant() will succeed).
  bool is_constant() const;

  /// Evaluates with autograd intact. Returns [n] (a constant is broadcast to
  /// n = env.coordinates.size(0)) in env.coordinates' dtype and device. The result may be a
  /// view of an input (a bare "u" or "x"): clone it before modifying it in place. Subtrees of
  /// coordinates and numbers only are computed once per point set and kept
  /// (coordinate_cache.hpp); copies of an expression share what they keep.
  torch::Tensor evaluate(const Environment& env) const;

  /// The value of an expression of numbers and constants only; throws with the key otherwise.
  double evaluate_constant() const;

  /// The expression as TorchScript source: an expression of the float tensor named `points`
  /// ([n, inputs], the coordinates in input order) with value [n], for exported models. Only
  /// numbers, coordinates, operators and functions; throws with the key for fields, parameters
  /// and other names, which an exported model cannot read.
  std::string torchscript(const std::string& points) const;

  const std::string& text() const { return text_; }
  const std::string& key() const { return key_; }

 private:
  std::string text_;
  std::string key_;
  std::shared_ptr<const Node> root_;
  std::shared_ptr<CoordinateCache> cache_;  // shared with copies, like the tree
  int coordinate_count_ = 0;
  std::set<DerivativeKey> derivatives_;
  std::set<std::string> parameter_names_;
  std::set<std::string> extra_names_;
  bool uses_coordinates_ = false;
  bool uses_tables_ = false;
};

/// Reads the case's definition `name` as a use of it would (a number or a vector), so that one
/// no expression uses is checked too: unknown names, cycles, misused operators; errors start
/// with `key`.
void check_definition(const std::string& name, const SymbolTable& symbols, const std::string& key);

}  // namespace tessera::expr
