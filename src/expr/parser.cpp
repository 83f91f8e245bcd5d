// Recursive descent over the tokens, lowest precedence first:
//   comparison := additive (('<' | '<=' | '>' | '>=' | '==' | '!=') additive)*
//   additive   := multiplicative (('+' | '-') multiplicative)*
//   multiplicative := unary (('*' | '/') unary)*
//   unary      := ('-' | '+') unary | power          (so -x^2 = -(x^2))
//   power      := primary ('^' unary)?               (right-associative; 2^-1 works)
//   primary    := number | symbol | call | '(' comparison ')'
#include <algorithm>

#include "tessera/core/text.hpp"
#include "tessera/expr/ast.hpp"
#include "tessera/expr/diagnostics.hpp"
#include "tessera/expr/lexer.hpp"
#include "tessera/expr/resolve.hpp"

namespace tessera::expr {

namespace {

constexpr int kMaxDepth = 200;
const char* const kOperand = "expected a number, symbol or '('";

class Parser {
 public:
  Parser(const std::string& text, const SymbolTable& symbols, const std::string& key)
      : key_(key), tokens_(tokenize(text, key)), resolver_(symbols, key) {}

  NodePtr parse() {
    if (peek().kind == TokenKind::end) fail_at(key_, "empty expression", peek().column, kOperand);
    NodePtr root = parse_comparison();
    const Token& extra = peek();
    if (extra.kind == TokenKind::right_paren)
      fail_at(key_, "unexpected ')'", extra.column, "no '(' to close");
    if (extra.kind != TokenKind::end)
      fail_at(key_, "unexpected " + describe(extra), extra.column,
              "expected an operator or the end of the expression");
    return root;
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool peek_op(const char* op) const { return peek().kind == TokenKind::op && peek().text == op; }

  NodePtr parse_comparison() {
    static const std::pair<const char*, Op> kComparisons[] = {
        {"<", Op::less},           {"<=", Op::less_equal}, {">", Op::greater},
        {">=", Op::greater_equal}, {"==", Op::equal},      {"!=", Op::not_equal}};
    NodePtr left = parse_additive();
    for (;;) {
      const auto it = std::find_if(std::begin(kComparisons), std::end(kComparisons),
                                   [&](const auto& c) { return peek_op(c.first); });
      if (it == std::end(kComparisons)) return left;
      const int column = next().column;
      left = make_binary(it->second, std::move(left), parse_additive(), column);
    }
  }

  NodePtr parse_additive() {
    NodePtr left = parse_multiplicative();
    while (peek_op("+") || peek_op("-")) {
      const Token& op = next();
      left = make_binary(op.text == "+" ? Op::add : Op::subtract, std::move(left),
                         parse_multiplicative(), op.column);
    }
    return left;
  }

  NodePtr parse_multiplicative() {
    NodePtr left = parse_unary();
    while (peek_op("*") || peek_op("/")) {
      const Token& op = next();
      left = make_binary(op.text == "*" ? Op::multiply : Op::divide, std::move(left), parse_unary(),
                         op.column);
    }
    return left;
  }

  NodePtr parse_unary() {
    // Every nesting passes through here, so this bounds the recursion of any input.
    const Token& start = peek();
    if (++depth_ > kMaxDepth)
      fail_at(key_, "expression nested too deeply", start.column,
              "more than " + std::to_string(kMaxDepth) + " levels");
    NodePtr result;
    if (peek_op("-") || peek_op("+")) {
      const Token& op = next();
      NodePtr operand = parse_unary();
      result = op.text == "-" ? make_unary(Op::negate, std::move(operand), op.column)
                              : std::move(operand);
    } else {
      result = parse_power();
    }
    --depth_;
    return result;
  }

  NodePtr parse_power() {
    NodePtr base = parse_primary();
    if (!peek_op("^")) return base;
    const int column = next().column;
    return make_binary(Op::power, std::move(base), parse_unary(), column);
  }

  NodePtr parse_primary() {
    const Token& token = next();
    switch (token.kind) {
      case TokenKind::number:
        return make_number(token.value, token.column);
      case TokenKind::identifier:
        if (peek().kind == TokenKind::left_paren) return parse_call(token);
        return resolver_.symbol(token.text, token.column);
      case TokenKind::left_paren: {
        NodePtr inner = parse_comparison();
        expect_close(token, "an operator or ')'");
        return inner;
      }
      case TokenKind::op:
      case TokenKind::right_paren:
      case TokenKind::comma:
      case TokenKind::end:
        break;
    }
    fail_at(key_, "unexpected " + describe(token), token.column, kOperand);
  }

  /// Consumes the ')' that closes `open`, or fails saying what was `expected` instead.
  void expect_close(const Token& open, const std::string& expected) {
    const Token& token = next();
    if (token.kind == TokenKind::right_paren) return;
    const std::string closes = "')' to close the '(' at column " + std::to_string(open.column);
    if (token.kind == TokenKind::end)
      fail_at(key_, "missing ')'", token.column, "expected " + closes);
    fail_at(key_, "unexpected " + describe(token), token.column,
            "expected " + expected + "; " + closes);
  }

  NodePtr parse_call(const Token& name) {
    if (name.text == "D") return parse_derivative(name);
    if (name.text == "lap") return parse_laplacian(name);
    const FunctionInfo* info = find_function(name.text);
    if (info == nullptr) {
      const std::string kind = resolver_.kind_of(name.text);
      if (!kind.empty())
        fail_at(key_, kind + " '" + name.text + "' is not a function", name.column,
                "write products with '*', e.g. " + name.text + "*(...)");
      const std::string suggestion = core::closest_match(name.text, function_names());
      fail_at(key_, "unknown function '" + name.text + "'", name.column,
              suggestion.empty() ? "the functions are " + join(function_names())
                                 : "did you mean '" + suggestion + "'?");
    }
    const Token& open = next();
    std::vector<NodePtr> args;
    if (peek().kind == TokenKind::right_paren) {
      next();
    } else {
      for (;;) {
        args.push_back(parse_comparison());
        if (peek().kind != TokenKind::comma) break;
        next();
      }
      expect_close(open, "',' or ')' in the arguments of '" + name.text + "'");
    }
    const int count = static_cast<int>(args.size());
    if (count < info->min_args || (info->max_args >= 0 && count > info->max_args)) {
      const std::string expected = info->max_args < 0 ? "at least " + std::to_string(info->min_args)
                                                      : std::to_string(info->min_args);
      fail_at(key_, "wrong number of arguments to '" + name.text + "'", name.column,
              "expected " + expected + ", got " + std::to_string(count));
    }
    return make_call(info->function, std::move(args), name.column);
  }

  /// The arguments of D() and lap(), which are names, not expressions.
  std::vector<Token> parse_name_arguments(const Token& name, const std::string& example) {
    const Token& open = next();
    std::vector<Token> args;
    if (peek().kind == TokenKind::right_paren) {
      next();
      return args;
    }
    for (;;) {
      const Token& token = next();
      if (token.kind == TokenKind::end)
        fail_at(key_, "missing ')'", token.column,
                "expected ')' to close the '(' at column " + std::to_string(open.column));
      if (token.kind != TokenKind::identifier) {
        const bool first = args.empty();
        fail_at(key_,
                name.text + "() expects " + (first ? "a field" : "a coordinate") + ", not " +
                    describe(token),
                token.column,
                "its arguments are names, e.g. " + example + "; the " +
                    (first ? "fields are " + join(resolver_.symbols().fields)
                           : "coordinates are " + join(resolver_.symbols().coordinates())));
      }
      args.push_back(token);
      if (peek().kind == TokenKind::comma) {
        next();
        continue;
      }
      if (peek().kind == TokenKind::right_paren) {
        next();
        return args;
      }
      if (peek().kind == TokenKind::end)
        fail_at(key_, "missing ')'", peek().column,
                "expected ')' to close the '(' at column " + std::to_string(open.column));
      fail_at(key_, "unexpected " + describe(peek()), peek().column,
              "the arguments of " + name.text + "() are names, e.g. " + example);
    }
  }

  NodePtr derivative_leaf(const DerivativeKey& key, int column) {
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::derivative;
    node->derivative = key;
    node->name = derivative_name(key, resolver_.symbols());
    node->column = column;
    return node;
  }

  /// D(u, x, y) == u_xy; the first argument may itself be a derivative: D(u_x, y) == u_xy.
  NodePtr parse_derivative(const Token& name) {
    const std::string example = "D(u, x, x)";
    const auto args = parse_name_arguments(name, example);
    if (args.size() < 2)
      fail_at(key_, "D() needs a field and at least one coordinate", name.column,
              "e.g. " + example + ", got " + std::to_string(args.size()) + " argument" +
                  (args.size() == 1 ? "" : "s"));
    DerivativeKey key = resolver_.differentiable(args[0].text, args[0].column, "D");
    for (std::size_t i = 1; i < args.size(); ++i)
      key.wrt.push_back(resolver_.coordinate(args[i].text, args[i].column));
    std::sort(key.wrt.begin(), key.wrt.end());
    return derivative_leaf(key, name.column);
  }

  /// lap(u) = u_xx + u_yy + ... over the spatial coordinates only (never time): one Laplacian
  /// leaf for a field in two or more dimensions, else the sum of its second derivatives.
  NodePtr parse_laplacian(const Token& name) {
    const auto args = parse_name_arguments(name, "lap(u)");
    if (args.size() != 1)
      fail_at(key_, "wrong number of arguments to 'lap'", name.column,
              "expected 1, got " + std::to_string(args.size()));
    const int spatial = static_cast<int>(resolver_.symbols().spatial.size());
    if (spatial == 0)
      fail_at(key_, "lap() needs spatial coordinates", name.column, "this case has none");
    const DerivativeKey base = resolver_.differentiable(args[0].text, args[0].column, "lap");
    if (base.wrt.empty() && spatial >= 2) {
      DerivativeKey key = base;
      key.laplacian = true;
      for (int i = 0; i < spatial; ++i) key.wrt.push_back(i);
      return derivative_leaf(key, name.column);
    }
    NodePtr sum;
    for (int i = 0; i < spatial; ++i) {
      DerivativeKey key = base;
      key.wrt.push_back(i);
      key.wrt.push_back(i);
      std::sort(key.wrt.begin(), key.wrt.end());
      NodePtr term = derivative_leaf(key, name.column);
      sum = sum ? make_binary(Op::add, std::move(sum), std::move(term), name.column)
                : std::move(term);
    }
    return sum;
  }

  const std::string& key_;
  std::vector<Token> tokens_;
  Resolver resolver_;
  std::size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

NodePtr parse_tree(const std::string& text, const SymbolTable& symbols, const std::string& key) {
  return Parser(text, symbols, key).parse();
}

}  // namespace tessera::expr
