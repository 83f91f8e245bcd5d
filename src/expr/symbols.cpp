#include "tessera/expr/symbols.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ostream>
#include <set>

#include "tessera/core/error.hpp"
#include "tessera/expr/operations.hpp"

namespace tessera::expr {

std::vector<std::string> SymbolTable::coordinates() const {
  std::vector<std::string> names = spatial;
  if (!time.empty()) names.push_back(time);
  return names;
}

const std::map<std::string, double>& builtin_constants() {
  static const std::map<std::string, double> constants = {{"pi", 3.14159265358979323846},
                                                          {"e", 2.71828182845904523536}};
  return constants;
}

namespace {

bool is_identifier(const std::string& name) {
  if (name.empty()) return false;
  if (!std::isalpha(static_cast<unsigned char>(name[0])) && name[0] != '_') return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

}  // namespace

void validate(const SymbolTable& symbols, const std::string& key) {
  // kind of every name seen so far, to report a name used twice with both meanings
  std::map<std::string, std::string> kinds;
  auto add = [&](const std::string& name, const std::string& kind) {
    TESSERA_CHECK(is_identifier(name), key << ": " << kind << " name '" << name
                                           << "' is not a valid name (use letters, digits and '_', "
                                              "starting with a letter)");
    TESSERA_CHECK(builtin_constants().count(name) == 0,
                  key << ": " << kind << " '" << name
                      << "' may not be named like a built-in constant (pi and e are built in)");
    const auto callable = function_names();
    TESSERA_CHECK(std::find(callable.begin(), callable.end(), name) == callable.end(),
                  key << ": " << kind << " '" << name << "' may not be named like a function");
    const auto [it, inserted] = kinds.emplace(name, kind);
    TESSERA_CHECK(inserted, key << ": '" << name << "' is both a " << it->second << " and a "
                                << kind << " (names must be unique)");
  };
  for (const auto& name : symbols.coordinates()) {
    add(name, "coordinate");
    TESSERA_CHECK(name.find('_') == std::string::npos,
                  key << ": coordinate '" << name
                      << "' may not contain '_' (it separates a field from its derivative suffix)");
  }
  for (const auto& name : symbols.fields) {
    add(name, "field");
    TESSERA_CHECK(name.find('_') == std::string::npos,
                  key << ": field '" << name
                      << "' may not contain '_' (it separates a field from its derivative suffix)");
  }
  for (const auto& [name, value] : symbols.constants) add(name, "constant");
  for (const auto& name : symbols.parameters) add(name, "parameter");
  for (const auto& [name, text] : symbols.definitions) add(name, "definition");
  for (const auto& [name, table] : symbols.tables) add(name, "data");
  for (const auto& name : symbols.extra) {
    add(name, "per-point value");
    const auto underscore = name.find('_');
    if (underscore != std::string::npos) {
      const std::string prefix = name.substr(0, underscore);
      const auto it = kinds.find(prefix);
      TESSERA_CHECK(it == kinds.end() || it->second != "field",
                    key << ": per-point value '" << name
                        << "' is spelled like a derivative of field '" << prefix
                        << "' (rename one of them)");
    }
  }
}

bool DerivativeKey::operator<(const DerivativeKey& other) const {
  if (field != other.field) return field < other.field;
  // lower orders first, so a sorted set reads u, u_x, u_y, u_xx, ...
  if (order() != other.order()) return order() < other.order();
  if (laplacian != other.laplacian) return other.laplacian;
  return wrt < other.wrt;
}

bool DerivativeKey::operator==(const DerivativeKey& other) const {
  return field == other.field && wrt == other.wrt && laplacian == other.laplacian;
}

std::ostream& operator<<(std::ostream& out, const DerivativeKey& key) {
  out << "{field " << key.field << (key.laplacian ? ", laplacian" : "") << ", wrt [";
  for (std::size_t i = 0; i < key.wrt.size(); ++i) out << (i ? ", " : "") << key.wrt[i];
  return out << "]}";
}

std::string derivative_name(const DerivativeKey& key, const SymbolTable& symbols) {
  const auto coordinates = symbols.coordinates();
  TESSERA_CHECK(key.field >= 0 && key.field < static_cast<int>(symbols.fields.size()),
                "expr: derivative of field index " << key.field << ", but there are "
                                                   << symbols.fields.size() << " fields");
  std::string name = symbols.fields[key.field];
  if (key.laplacian) return "lap(" + name + ")";
  if (key.wrt.empty()) return name;
  name += '_';
  std::vector<int> sorted = key.wrt;
  std::sort(sorted.begin(), sorted.end());
  for (int index : sorted) {
    TESSERA_CHECK(index >= 0 && index < static_cast<int>(coordinates.size()),
                  "expr: derivative with respect to coordinate index "
                      << index << ", but there are " << coordinates.size() << " coordinates");
    name += coordinates[index];
  }
  return name;
}

}  // namespace tessera::expr
