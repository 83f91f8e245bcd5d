#include "tessera/expr/resolve.hpp"

#include <algorithm>

#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"
#include "tessera/expr/diagnostics.hpp"
#include "tessera/expr/table.hpp"

namespace tessera::expr {

namespace {

int index_of(const std::vector<std::string>& names, const std::string& name) {
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return index_of(names, name) >= 0;
}

NodePtr leaf(NodeKind kind, const std::string& name, int column) {
  auto node = std::make_unique<Node>();
  node->kind = kind;
  node->name = name;
  node->column = column;
  return node;
}

/// Derivative spellings worth suggesting: all first and second orders, pure third and fourth.
std::vector<std::string> derivative_spellings(const SymbolTable& symbols) {
  const int count = static_cast<int>(symbols.coordinates().size());
  std::vector<std::string> names;
  for (int field = 0; field < static_cast<int>(symbols.fields.size()); ++field) {
    for (int i = 0; i < count; ++i) {
      names.push_back(derivative_name({field, {i}}, symbols));
      for (int j = i; j < count; ++j) names.push_back(derivative_name({field, {i, j}}, symbols));
      names.push_back(derivative_name({field, {i, i, i}}, symbols));
      names.push_back(derivative_name({field, {i, i, i, i}}, symbols));
    }
  }
  return names;
}

}  // namespace

Resolver::Resolver(const SymbolTable& symbols, const std::string& key)
    : symbols_(symbols), key_(key), coordinates_(symbols.coordinates()) {}

std::string Resolver::kind_of(const std::string& name) const {
  if (builtin_constants().count(name) || symbols_.constants.count(name)) return "constant";
  if (contains(coordinates_, name)) return "coordinate";
  if (contains(symbols_.fields, name)) return "field";
  if (contains(symbols_.parameters, name)) return "parameter";
  if (contains(symbols_.extra, name)) return "per-point value";
  if (symbols_.definitions.count(name)) return "definition";
  if (symbols_.tables.count(name)) return "data";
  return "";
}

NodePtr Resolver::symbol(const std::string& name, int column) const {
  if (const auto table = symbols_.tables.find(name); table != symbols_.tables.end())
    fail_at(key_, "data '" + name + "' is a function", column,
            "call it with its coordinates: " + name + "(" + join(table->second->axes()) + ")");
  const auto builtin = builtin_constants().find(name);
  const auto constant = symbols_.constants.find(name);
  if (builtin != builtin_constants().end() || constant != symbols_.constants.end()) {
    auto node = leaf(NodeKind::number, name, column);
    node->value = builtin != builtin_constants().end() ? builtin->second : constant->second;
    return node;
  }
  if (const int index = index_of(coordinates_, name); index >= 0) {
    auto node = leaf(NodeKind::coordinate, name, column);
    node->index = index;
    return node;
  }
  if (const int field = index_of(symbols_.fields, name); field >= 0) {
    auto node = leaf(NodeKind::derivative, name, column);
    node->derivative = {field, {}};
    return node;
  }
  if (contains(symbols_.parameters, name)) return leaf(NodeKind::parameter, name, column);
  // before derivative spellings: extras such as "n_x" contain '_' too
  if (contains(symbols_.extra, name)) return leaf(NodeKind::extra, name, column);
  DerivativeKey key;
  if (split_derivative(name, column, key)) {
    auto node = leaf(NodeKind::derivative, name, column);
    node->derivative = key;
    return node;
  }
  const auto underscore = name.find('_');
  if (underscore != std::string::npos && !kind_of(name.substr(0, underscore)).empty())
    fail_not_field(name.substr(0, underscore), column);
  fail_unknown(name, column);
}

DerivativeKey Resolver::differentiable(const std::string& name, int column,
                                       const std::string& function) const {
  if (const int field = index_of(symbols_.fields, name); field >= 0) return {field, {}};
  DerivativeKey key;
  if (split_derivative(name, column, key)) return key;
  if (!kind_of(name).empty()) fail_not_field(name, column);
  const auto underscore = name.find('_');
  if (underscore != std::string::npos && !kind_of(name.substr(0, underscore)).empty())
    fail_not_field(name.substr(0, underscore), column);
  fail_at(key_, "unknown field '" + name + "' in " + function + "()", column,
          "the fields are " + join(symbols_.fields));
}

int Resolver::coordinate(const std::string& name, int column, const std::string& function) const {
  const int index = index_of(coordinates_, name);
  if (index >= 0) return index;
  std::string detail = "the coordinates are " + join(coordinates_);
  if (symbols_.time.empty() && name == "t") detail += "; this is not a space-time problem";
  fail_at(key_, "unknown coordinate '" + name + "' in " + function + "()", column, detail);
}

bool Resolver::split_derivative(const std::string& name, int column, DerivativeKey& out) const {
  const auto underscore = name.find('_');
  if (underscore == std::string::npos) return false;
  const int field = index_of(symbols_.fields, name.substr(0, underscore));
  if (field < 0) return false;
  const std::string suffix = name.substr(underscore + 1);
  if (suffix.empty())
    fail_at(key_, "incomplete derivative '" + name + "'", column,
            "name the coordinates after '_', e.g. " + derivative_name({field, {0}}, symbols_));

  // Longest names first, so that with coordinates "x" and "xi" the suffix "xix" reads xi, x.
  std::vector<int> order(coordinates_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return coordinates_[a].size() > coordinates_[b].size(); });
  const bool single_letters = std::all_of(coordinates_.begin(), coordinates_.end(),
                                          [](const std::string& c) { return c.size() == 1; });
  std::vector<int> wrt;
  std::size_t pos = 0;
  while (pos < suffix.size()) {
    int matched = -1;
    for (int index : order) {
      if (suffix.compare(pos, coordinates_[index].size(), coordinates_[index]) == 0) {
        matched = index;
        break;
      }
    }
    if (matched < 0) {
      const std::string unknown = single_letters ? suffix.substr(pos, 1) : suffix.substr(pos);
      std::string detail = "the coordinates are " + join(coordinates_);
      if (symbols_.time.empty() && unknown == "t") detail += "; this is not a space-time problem";
      fail_at(key_, "unknown coordinate '" + unknown + "' in derivative '" + name + "'", column,
              detail);
    }
    wrt.push_back(matched);
    pos += coordinates_[matched].size();
  }
  std::sort(wrt.begin(), wrt.end());
  out = {field, wrt};
  return true;
}

void Resolver::fail_unknown(const std::string& name, int column) const {
  std::vector<std::string> known;
  for (const auto& [builtin, value] : builtin_constants()) known.push_back(builtin);
  for (const auto& [constant, value] : symbols_.constants) known.push_back(constant);
  known.insert(known.end(), coordinates_.begin(), coordinates_.end());
  known.insert(known.end(), symbols_.fields.begin(), symbols_.fields.end());
  known.insert(known.end(), symbols_.parameters.begin(), symbols_.parameters.end());
  known.insert(known.end(), symbols_.extra.begin(), symbols_.extra.end());
  for (const auto& [definition, text] : symbols_.definitions) known.push_back(definition);
  const auto spellings = derivative_spellings(symbols_);
  known.insert(known.end(), spellings.begin(), spellings.end());
  const std::string suggestion = core::closest_match(name, known);
  fail_at(key_, "unknown symbol '" + name + "'", column,
          suggestion.empty() ? "" : "did you mean '" + suggestion + "'?");
}

void Resolver::fail_not_field(const std::string& name, int column) const {
  fail_at(key_, "cannot differentiate " + kind_of(name) + " '" + name + "'", column,
          "only fields have derivatives, the fields are " + join(symbols_.fields) +
              "; d(expr, x) differentiates an expression");
}

}  // namespace tessera::expr
