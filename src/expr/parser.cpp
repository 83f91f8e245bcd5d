// Recursive descent over the tokens, lowest precedence first:
//   comparison := additive (('<' | '<=' | '>' | '>=' | '==' | '!=') additive)*
//   additive   := multiplicative (('+' | '-') multiplicative)*
//   multiplicative := unary (('*' | '/') unary)*
//   unary      := ('-' | '+') unary | power          (so -x^2 = -(x^2))
//   power      := primary ('^' unary)?               (right-associative; 2^-1 works)
//   primary    := number | symbol | call | '(' comparison ')'
// Operands are Terms (term.hpp): numbers per point, or vectors from grad() and vector().
#include <algorithm>

#include "term.hpp"
#include "tessera/core/text.hpp"
#include "tessera/expr/ast.hpp"
#include "tessera/expr/diagnostics.hpp"
#include "tessera/expr/differentiate.hpp"
#include "tessera/expr/expression.hpp"
#include "tessera/expr/lexer.hpp"
#include "tessera/expr/resolve.hpp"

namespace tessera::expr {

namespace {

constexpr int kMaxDepth = 200;

/// The definitions being read on this thread, innermost last.
thread_local std::vector<std::string> expanding;

const char* const kOperand = "expected a number, symbol or '('";

class Parser {
 public:
  Parser(const std::string& text, const SymbolTable& symbols, const std::string& key)
      : key_(key), tokens_(tokenize(text, key)), resolver_(symbols, key) {}

  NodePtr parse() { return as_number(parse_term(), key_, "the expression"); }

  /// The whole text as one term (a definition may be a vector).
  Term parse_term() {
    if (peek().kind == TokenKind::end) fail_at(key_, "empty expression", peek().column, kOperand);
    Term root = parse_comparison();
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

  Term parse_comparison() {
    static const std::pair<const char*, Op> kComparisons[] = {
        {"<", Op::less},           {"<=", Op::less_equal}, {">", Op::greater},
        {">=", Op::greater_equal}, {"==", Op::equal},      {"!=", Op::not_equal}};
    Term left = parse_additive();
    for (;;) {
      const auto it = std::find_if(std::begin(kComparisons), std::end(kComparisons),
                                   [&](const auto& c) { return peek_op(c.first); });
      if (it == std::end(kComparisons)) return left;
      const int column = next().column;
      left = combine(it->second, std::move(left), parse_additive(), column, key_);
    }
  }

  Term parse_additive() {
    Term left = parse_multiplicative();
    while (peek_op("+") || peek_op("-")) {
      const Token& op = next();
      left = combine(op.text == "+" ? Op::add : Op::subtract, std::move(left),
                     parse_multiplicative(), op.column, key_);
    }
    return left;
  }

  Term parse_multiplicative() {
    Term left = parse_unary();
    while (peek_op("*") || peek_op("/")) {
      const Token& op = next();
      left = combine(op.text == "*" ? Op::multiply : Op::divide, std::move(left), parse_unary(),
                     op.column, key_);
    }
    return left;
  }

  Term parse_unary() {
    // Every nesting passes through here, so this bounds the recursion of any input.
    const Token& start = peek();
    if (++depth_ > kMaxDepth)
      fail_at(key_, "expression nested too deeply", start.column,
              "more than " + std::to_string(kMaxDepth) + " levels");
    Term result;
    if (peek_op("-") || peek_op("+")) {
      const Token& op = next();
      Term operand = parse_unary();
      result = op.text == "-" ? negated(std::move(operand), op.column) : std::move(operand);
    } else {
      result = parse_power();
    }
    --depth_;
    return result;
  }

  Term parse_power() {
    Term base = parse_primary();
    if (!peek_op("^")) return base;
    const int column = next().column;
    return combine(Op::power, std::move(base), parse_unary(), column, key_);
  }

  Term parse_primary() {
    const Token& token = next();
    switch (token.kind) {
      case TokenKind::number:
        return Term::number(make_number(token.value, token.column));
      case TokenKind::identifier:
        if (peek().kind == TokenKind::left_paren) return parse_call(token);
        if (resolver_.kind_of(token.text) == "definition") {
          Term term = parse_definition(token.text);
          term.column = token.column;  // errors about it point where it is used
          return term;
        }
        return Term::number(resolver_.symbol(token.text, token.column));
      case TokenKind::left_paren: {
        Term inner = parse_comparison();
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

  /// A definition's expression, read where it is used, so derivatives reach through it; it
  /// may be a vector. A definition met again while it is being read is a cycle.
  Term parse_definition(const std::string& name) {
    std::string chain;
    for (const auto& active : expanding) chain += active + " -> ";
    if (std::find(expanding.begin(), expanding.end(), name) != expanding.end())
      TESSERA_FAIL(key_ << ": definitions: '" << name << "' depends on itself (" << chain << name
                        << ")");
    expanding.push_back(name);
    try {
      Term term = Parser(resolver_.symbols().definitions.at(name), resolver_.symbols(),
                         "definitions." + name)
                      .parse_term();
      expanding.pop_back();
      return term;
    } catch (...) {
      expanding.pop_back();
      throw;
    }
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

  Term parse_call(const Token& name) {
    if (name.text == "D") return Term::number(parse_derivative(name));
    if (name.text == "lap") return Term::number(parse_laplacian(name));
    if (name.text == "d") return Term::number(parse_expression_derivative(name));
    if (name.text == "grad") return parse_gradient(name);
    if (name.text == "div" || name.text == "dot" || name.text == "vector")
      return parse_vector_operator(name);
    if (const auto table = resolver_.symbols().tables.find(name.text);
        table != resolver_.symbols().tables.end())
      return parse_table_call(name, table->second);
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
    std::vector<NodePtr> args;
    for (Term& arg : parse_arguments(name, info->min_args, info->max_args))
      args.push_back(as_number(std::move(arg), key_, "an argument of '" + name.text + "'"));
    return Term::number(make_call(info->function, std::move(args), name.column));
  }

  /// The expressions between the parentheses after `name`, min_args to max_args of them
  /// (max_args = -1: no upper limit).
  std::vector<Term> parse_arguments(const Token& name, int min_args, int max_args) {
    const Token& open = next();
    std::vector<Term> args;
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
    if (count < min_args || (max_args >= 0 && count > max_args)) {
      const std::string expected =
          max_args < 0 ? "at least " + std::to_string(min_args) : std::to_string(min_args);
      fail_at(key_, "wrong number of arguments to '" + name.text + "'", name.column,
              "expected " + expected + ", got " + std::to_string(count));
    }
    return args;
  }

  /// kappa(x, y): tabulated data at the arguments, one per grid axis.
  Term parse_table_call(const Token& name, const std::shared_ptr<const Table>& table) {
    const int axes = static_cast<int>(table->axes().size());
    auto node = std::make_unique<Node>();
    node->kind = NodeKind::table;
    node->name = name.text;
    node->column = name.column;
    node->table = table;
    for (Term& arg : parse_arguments(name, axes, axes))
      node->children.push_back(
          as_number(std::move(arg), key_, "an argument of '" + name.text + "'"));
    return Term::number(std::move(node));
  }

  /// d(expr, x, y): the derivative of any expression, by the chain rule on its tree.
  NodePtr parse_expression_derivative(const Token& name) {
    const Token& open = next();
    NodePtr result = as_number(parse_comparison(), key_, "the first argument of 'd'");
    int coordinates = 0;
    while (peek().kind == TokenKind::comma) {
      next();
      const Token& coordinate = next();
      if (coordinate.kind != TokenKind::identifier)
        fail_at(key_, "d() expects a coordinate, not " + describe(coordinate), coordinate.column,
                "e.g. d(a*u_x, x); the coordinates are " + join(resolver_.symbols().coordinates()));
      const int axis = resolver_.coordinate(coordinate.text, coordinate.column, "d");
      result = differentiate(*result, axis, resolver_.symbols(), key_);
      ++coordinates;
    }
    expect_close(open, "',' or ')' in the arguments of 'd'");
    if (coordinates == 0)
      fail_at(key_, "d() needs an expression and at least one coordinate", name.column,
              "e.g. d(a*u_x, x)");
    return result;
  }

  /// grad(expr): the vector of its derivatives along the spatial coordinates.
  Term parse_gradient(const Token& name) {
    require_space(name);
    auto args = parse_arguments(name, 1, 1);
    NodePtr scalar = as_number(std::move(args[0]), key_, "the argument of 'grad'");
    return gradient(*scalar, resolver_.symbols(), key_, name.column);
  }

  /// div(v) and dot(v, w) of vectors; vector(a, b, ...) builds one from its components.
  Term parse_vector_operator(const Token& name) {
    require_space(name);
    const int spatial = static_cast<int>(resolver_.symbols().spatial.size());
    if (name.text == "vector") {
      std::vector<NodePtr> components;
      for (Term& arg : parse_arguments(name, spatial, spatial))
        components.push_back(as_number(std::move(arg), key_, "a component of 'vector'"));
      return Term::vector(std::move(components), name.column);
    }
    const int count = name.text == "div" ? 1 : 2;
    auto args = parse_arguments(name, count, count);
    for (const Term& arg : args)
      if (!arg.is_vector())
        fail_at(key_, name.text + "() takes vectors, not numbers", arg.column,
                "write grad(...) or vector(...) (one component per spatial coordinate)");
    if (name.text == "div")
      return Term::number(divergence(args[0], resolver_.symbols(), key_, name.column));
    return Term::number(dot(args[0], args[1], name.column));
  }

  void require_space(const Token& name) const {
    if (resolver_.symbols().spatial.empty())
      fail_at(key_, name.text + "() needs spatial coordinates", name.column, "this case has none");
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
      key.wrt.push_back(resolver_.coordinate(args[i].text, args[i].column, "D"));
    std::sort(key.wrt.begin(), key.wrt.end());
    return derivative_leaf(key, name.column);
  }

  /// lap(u) = u_xx + u_yy + ... over the spatial coordinates only (never time): one Laplacian
  /// leaf for a field in two or more dimensions, else the sum of its second derivatives.
  NodePtr parse_laplacian(const Token& name) {
    if (!names_a_field(pos_ + 1)) {
      require_space(name);
      auto args = parse_arguments(name, 1, 1);
      NodePtr scalar = as_number(std::move(args[0]), key_, "the argument of 'lap'");
      return laplacian(*scalar, resolver_.symbols(), key_, name.column);
    }
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

  /// True when token `at` is a lone name (followed by ')') other than a definition or data: lap(u),
  /// lap(u_x), and lap(k) for a constant k, whose error says that only fields have
  /// derivatives. Anything else is an expression: lap(a*u), lap(kappa).
  bool names_a_field(std::size_t at) const {
    if (at + 1 >= tokens_.size() || tokens_[at].kind != TokenKind::identifier ||
        tokens_[at + 1].kind != TokenKind::right_paren)
      return false;
    const std::string kind = resolver_.kind_of(tokens_[at].text);
    return kind != "definition" && kind != "data";
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

void check_definition(const std::string& name, const SymbolTable& symbols, const std::string& key) {
  validate(symbols, key);
  Parser(name, symbols, key).parse_term();
}

}  // namespace tessera::expr
