// The chain rule on the syntax tree. The builders below drop the zeros and ones the rules
// produce, so d(a*u, x) is a_x*u + a*u_x and not 0*u + ... : trees stay as small as the written
// expansion and the coordinate cache keeps the coefficient's derivatives once per point set.
#include "tessera/expr/differentiate.hpp"

#include <algorithm>

#include "tessera/expr/diagnostics.hpp"

namespace tessera::expr {

namespace {

bool is_value(const NodePtr& node, double value) {
  return node->kind == NodeKind::number && node->value == value;
}

NodePtr sum(NodePtr a, NodePtr b, int column) {
  if (is_value(a, 0.0)) return b;
  if (is_value(b, 0.0)) return a;
  return make_binary(Op::add, std::move(a), std::move(b), column);
}

NodePtr difference(NodePtr a, NodePtr b, int column) {
  if (is_value(b, 0.0)) return a;
  if (is_value(a, 0.0)) return make_unary(Op::negate, std::move(b), column);
  return make_binary(Op::subtract, std::move(a), std::move(b), column);
}

NodePtr product(NodePtr a, NodePtr b, int column) {
  if (is_value(a, 0.0) || is_value(b, 0.0)) return make_number(0.0, column);
  if (is_value(a, 1.0)) return b;
  if (is_value(b, 1.0)) return a;
  return make_binary(Op::multiply, std::move(a), std::move(b), column);
}

NodePtr quotient(NodePtr a, NodePtr b, int column) {
  if (is_value(a, 0.0)) return make_number(0.0, column);
  if (is_value(b, 1.0)) return a;
  return make_binary(Op::divide, std::move(a), std::move(b), column);
}

NodePtr call(Function function, NodePtr a, int column) {
  std::vector<NodePtr> args;
  args.push_back(std::move(a));
  return make_call(function, std::move(args), column);
}

NodePtr square(NodePtr a, int column) {
  return make_binary(Op::power, std::move(a), make_number(2.0, column), column);
}

class Differentiator {
 public:
  Differentiator(int coordinate, const SymbolTable& symbols, const std::string& key)
      : coordinate_(coordinate), symbols_(symbols), key_(key) {}

  NodePtr operator()(const Node& node) const {
    const int c = node.column;
    switch (node.kind) {
      case NodeKind::number:
      case NodeKind::parameter:
        return make_number(0.0, c);
      case NodeKind::coordinate:
        return make_number(node.index == coordinate_ ? 1.0 : 0.0, c);
      case NodeKind::derivative:
        return field_derivative(node.derivative, c);
      case NodeKind::extra:
        fail_at(key_, "cannot differentiate per-point value '" + node.name + "'", c,
                "it is known only at the points, not as a function of the coordinates");
      case NodeKind::unary:
        return make_unary(node.op, (*this)(*node.children[0]), c);
      case NodeKind::binary:
        return binary(node);
      case NodeKind::call:
        return function(node);
      case NodeKind::table:
        return table(node);
    }
    fail_at(key_, "cannot differentiate this node", c);
  }

 private:
  /// One leaf per derivative key; lap(u) is u_xx + u_yy + ..., so its derivative is the sum
  /// of the third derivatives.
  NodePtr field_derivative(const DerivativeKey& key, int column) const {
    if (!key.laplacian) return leaf(with_coordinate(key.field, key.wrt), column);
    NodePtr result;
    for (const int axis : key.wrt) {
      NodePtr term = leaf(with_coordinate(key.field, {axis, axis}), column);
      result = result ? sum(std::move(result), std::move(term), column) : std::move(term);
    }
    return result;
  }

  DerivativeKey with_coordinate(int field, std::vector<int> wrt) const {
    wrt.push_back(coordinate_);
    std::sort(wrt.begin(), wrt.end());
    return {field, wrt};
  }

  NodePtr leaf(const DerivativeKey& key, int column) const {
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::derivative;
    node->derivative = key;
    node->name = derivative_name(key, symbols_);
    node->column = column;
    return node;
  }

  NodePtr binary(const Node& node) const {
    const int c = node.column;
    const Node& a = *node.children[0];
    const Node& b = *node.children[1];
    switch (node.op) {
      case Op::add:
        return sum((*this)(a), (*this)(b), c);
      case Op::subtract:
        return difference((*this)(a), (*this)(b), c);
      case Op::multiply:
        return sum(product((*this)(a), clone(b), c), product(clone(a), (*this)(b), c), c);
      case Op::divide:
        // (a/b)' = a'/b - a b'/b^2
        return difference(quotient((*this)(a), clone(b), c),
                          quotient(product(clone(a), (*this)(b), c), square(clone(b), c), c), c);
      case Op::power:
        return power(a, b, c);
      case Op::negate:
      case Op::less:
      case Op::less_equal:
      case Op::greater:
      case Op::greater_equal:
      case Op::equal:
      case Op::not_equal:
        return make_number(0.0, c);
    }
    fail_at(key_, "cannot differentiate this operator", c);
  }

  /// a^b: with a constant exponent b a^(b-1) a'; with a constant base a^b log(a) b';
  /// else a^b (b' log(a) + b a'/a).
  NodePtr power(const Node& a, const Node& b, int c) const {
    if (b.kind == NodeKind::number) {
      if (b.value == 0.0) return make_number(0.0, c);
      if (b.value == 1.0) return (*this)(a);
      NodePtr lowered = make_binary(Op::power, clone(a), make_number(b.value - 1.0, c), c);
      if (b.value == 2.0) lowered = clone(a);
      return product(product(make_number(b.value, c), std::move(lowered), c), (*this)(a), c);
    }
    // An exponent constant in space (a trainable parameter, u^p): b a^(b-1) a', which stays
    // finite where a = 0 (the general form divides by a).
    NodePtr rate_b = (*this)(b);
    if (is_value(rate_b, 0.0)) {
      NodePtr lowered = make_binary(Op::power, clone(a),
                                    make_binary(Op::subtract, clone(b), make_number(1.0, c), c), c);
      return product(product(clone(b), std::move(lowered), c), (*this)(a), c);
    }
    NodePtr whole = make_binary(Op::power, clone(a), clone(b), c);
    NodePtr log_a = call(Function::log, clone(a), c);
    if (a.kind == NodeKind::number)
      return product(product(std::move(whole), std::move(log_a), c), std::move(rate_b), c);
    NodePtr rate = sum(product(std::move(rate_b), std::move(log_a), c),
                       quotient(product(clone(b), (*this)(a), c), clone(a), c), c);
    return product(std::move(whole), std::move(rate), c);
  }

  NodePtr function(const Node& node) const {
    const int c = node.column;
    const Node& a = *node.children[0];
    auto chain = [&](NodePtr outer) { return product(std::move(outer), (*this)(a), c); };
    auto of_a = [&](Function f) { return call(f, clone(a), c); };
    auto one_minus_a_squared = [&]() {
      return difference(make_number(1.0, c), square(clone(a), c), c);
    };
    switch (node.function) {
      case Function::sin:
        return chain(of_a(Function::cos));
      case Function::cos:
        return chain(make_unary(Op::negate, of_a(Function::sin), c));
      case Function::tan:
        return chain(quotient(make_number(1.0, c), square(of_a(Function::cos), c), c));
      case Function::asin:
        return chain(
            quotient(make_number(1.0, c), call(Function::sqrt, one_minus_a_squared(), c), c));
      case Function::acos:
        return chain(
            quotient(make_number(-1.0, c), call(Function::sqrt, one_minus_a_squared(), c), c));
      case Function::atan:
        return chain(
            quotient(make_number(1.0, c), sum(make_number(1.0, c), square(clone(a), c), c), c));
      case Function::atan2: {
        // atan2(y, x)' = (x y' - y x') / (x^2 + y^2)
        const Node& x = *node.children[1];
        NodePtr top =
            difference(product(clone(x), (*this)(a), c), product(clone(a), (*this)(x), c), c);
        return quotient(std::move(top), sum(square(clone(x), c), square(clone(a), c), c), c);
      }
      case Function::sinh:
        return chain(of_a(Function::cosh));
      case Function::cosh:
        return chain(of_a(Function::sinh));
      case Function::tanh:
        return chain(difference(make_number(1.0, c), square(of_a(Function::tanh), c), c));
      case Function::exp:
        return chain(of_a(Function::exp));
      case Function::log:
        return quotient((*this)(a), clone(a), c);
      case Function::sqrt:
        return quotient((*this)(a), product(make_number(2.0, c), of_a(Function::sqrt), c), c);
      case Function::abs:
        return chain(of_a(Function::sign));
      case Function::sign:
        return make_number(0.0, c);
      case Function::min:
        return selected(node, Op::less_equal);
      case Function::max:
        return selected(node, Op::greater_equal);
      case Function::pow:
        return power(a, *node.children[1], c);
      case Function::if_: {
        std::vector<NodePtr> args;
        args.push_back(clone(a));
        args.push_back((*this)(*node.children[1]));
        args.push_back((*this)(*node.children[2]));
        return make_call(Function::if_, std::move(args), c);
      }
    }
    fail_at(key_, "cannot differentiate this function", c);
  }

  /// The chain rule over the axes: sum over k of (the table differentiated along axis k) times
  /// d(argument k).
  NodePtr table(const Node& node) const {
    const int c = node.column;
    const Table& data = *node.table;
    NodePtr result = make_number(0.0, c);
    for (int k = 0; k < static_cast<int>(node.children.size()); ++k) {
      NodePtr inner = (*this)(*node.children[static_cast<std::size_t>(k)]);
      if (is_value(inner, 0.0)) continue;
      const auto& wrt = node.derivative.wrt;
      if (data.interpolation() == Interpolation::nearest)
        fail_at(key_, "cannot differentiate data '" + data.name() + "'", c,
                "it is nearest-neighbour data; use \"interpolation\": \"linear\" in data." +
                    data.name());
      if (std::find(wrt.begin(), wrt.end(), k) != wrt.end())
        fail_at(key_,
                "cannot differentiate data '" + data.name() + "' twice along " +
                    data.axes()[static_cast<std::size_t>(k)],
                c,
                "linear interpolation is piecewise linear: its second derivative along one "
                "axis is zero between grid points, not the data's");
      NodePtr outer = clone(node);
      outer->derivative.wrt.push_back(k);
      std::sort(outer->derivative.wrt.begin(), outer->derivative.wrt.end());
      result = sum(std::move(result), product(std::move(outer), std::move(inner), c), c);
    }
    return result;
  }

  /// min or max, one pair at a time: the derivative of the argument that wins (the earlier one
  /// on ties).
  NodePtr selected(const Node& node, Op keeps_left) const {
    const int c = node.column;
    NodePtr current = clone(*node.children[0]);
    NodePtr rate = (*this)(*node.children[0]);
    for (std::size_t i = 1; i < node.children.size(); ++i) {
      const Node& next = *node.children[i];
      std::vector<NodePtr> choice;
      choice.push_back(make_binary(keeps_left, clone(*current), clone(next), c));
      choice.push_back(std::move(rate));
      choice.push_back((*this)(next));
      rate = make_call(Function::if_, std::move(choice), c);
      std::vector<NodePtr> pair;
      pair.push_back(std::move(current));
      pair.push_back(clone(next));
      current = make_call(node.function, std::move(pair), c);
    }
    return rate;
  }

  int coordinate_;
  const SymbolTable& symbols_;
  const std::string& key_;
};

}  // namespace

NodePtr clone(const Node& node) {
  auto copy = std::make_unique<Node>();
  copy->kind = node.kind;
  copy->column = node.column;
  copy->value = node.value;
  copy->index = node.index;
  copy->derivative = node.derivative;
  copy->name = node.name;
  copy->op = node.op;
  copy->function = node.function;
  copy->table = node.table;
  for (const auto& child : node.children) copy->children.push_back(clone(*child));
  return copy;
}

NodePtr differentiate(const Node& node, int coordinate, const SymbolTable& symbols,
                      const std::string& key) {
  return Differentiator(coordinate, symbols, key)(node);
}

}  // namespace tessera::expr
