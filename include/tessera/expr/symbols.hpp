#pragma once
/// What the names in a case's expressions mean, and how field derivatives are named.
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera::expr {

class Table;

/// What names mean in a case. The coordinates are all network inputs in order: the spatial
/// ones, then time if any.
struct SymbolTable {
  std::vector<std::string> spatial;         ///< e.g. {"x", "y"}; names without '_'
  std::string time;                         ///< "" when not a space-time problem, else e.g. "t"
  std::vector<std::string> fields;          ///< e.g. {"u"}; names never contain '_'
  std::map<std::string, double> constants;  ///< from the case; pi and e are built in
  std::vector<std::string> parameters;      ///< trainable scalars (inverse problems)
  std::vector<std::string> extra;           ///< other per-point values, e.g. "n_x", "n_y"
  /// Named expressions (the case's `definitions`): a name stands for its text, parsed with
  /// this table where it is used, so derivatives reach through it.
  std::map<std::string, std::string> definitions;
  /// Tabulated data (the case's `data`), called like functions: kappa(x, y).
  std::map<std::string, std::shared_ptr<const Table>> tables;

  /// spatial, then time when there is one.
  std::vector<std::string> coordinates() const;
};

/// Throws tessera::Error ("<key>: ...") when the table is unusable: a name that is not an
/// identifier, a '_' in a field or coordinate name, a constant named pi or e, a name used
/// twice (also across kinds, and extras spelled like a field derivative), or a function name
/// used as a symbol. Expression::parse calls it; a case loader may call it first with its own key.
void validate(const SymbolTable& symbols, const std::string& key);

/// A derivative of one field: `wrt` holds coordinate indices (into coordinates()) sorted
/// ascending, repeated for higher orders ({0, 0} = u_xx); empty = the field value itself.
/// With `laplacian`, the key is lap(u): the sum of the pure second derivatives along each
/// coordinate in `wrt` (ascending, each once), read as one quantity so the forward engine can
/// carry it as one derivative stream instead of one per coordinate.
struct DerivativeKey {
  int field = 0;
  std::vector<int> wrt;
  bool laplacian = false;

  int order() const { return laplacian ? 2 : static_cast<int>(wrt.size()); }
  bool operator<(const DerivativeKey& other) const;
  bool operator==(const DerivativeKey& other) const;
  bool operator!=(const DerivativeKey& other) const { return !(*this == other); }
};

/// Prints "{field 0, wrt [0, 1]}" (for messages and test output).
std::ostream& operator<<(std::ostream& out, const DerivativeKey& key);

/// "u", "u_x", "u_xy": the field name, then the coordinate names in sorted index order;
/// "lap(u)" for a Laplacian key.
std::string derivative_name(const DerivativeKey& key, const SymbolTable& symbols);

/// The built-in constants: {"pi", "e"}.
const std::map<std::string, double>& builtin_constants();

}  // namespace tessera::expr
