#include "tessera/expr/lexer.hpp"

#include <cctype>
#include <cstdlib>

#include "tessera/core/error.hpp"

namespace tessera::expr {

namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool is_identifier_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

/// Walks the text keeping a 1-based column counted in characters, not bytes.
class Cursor {
 public:
  explicit Cursor(const std::string& text) : text_(text) {}
  bool done() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  std::size_t pos() const { return pos_; }
  int column() const { return column_; }
  void advance() {
    ++pos_;
    while (pos_ < text_.size() && is_utf8_continuation(text_[pos_])) ++pos_;
    ++column_;
  }

 private:
  const std::string& text_;
  std::size_t pos_ = 0;
  int column_ = 1;
};

Token lex_number(Cursor& cursor, const std::string& text, const std::string& key) {
  Token token{TokenKind::number, "", 0.0, cursor.column()};
  const std::size_t start = cursor.pos();
  while (is_digit(cursor.peek())) cursor.advance();
  if (cursor.peek() == '.') {
    cursor.advance();
    while (is_digit(cursor.peek())) cursor.advance();
  }
  if (cursor.peek() == 'e' || cursor.peek() == 'E') {
    // "2e" is not 2*e: the language has no implicit multiplication, so it can only be a typo.
    const std::size_t sign = (cursor.peek(1) == '+' || cursor.peek(1) == '-') ? 1 : 0;
    if (!is_digit(cursor.peek(1 + sign))) {
      for (std::size_t i = 0; i <= sign; ++i) cursor.advance();
      TESSERA_FAIL(key << ": malformed number '" << text.substr(start, cursor.pos() - start)
                       << "' at column " << token.column
                       << " (expected digits after the exponent, e.g. 1e-3)");
    }
    for (std::size_t i = 0; i <= sign; ++i) cursor.advance();
    while (is_digit(cursor.peek())) cursor.advance();
  }
  token.text = text.substr(start, cursor.pos() - start);
  token.value = std::strtod(token.text.c_str(), nullptr);
  return token;
}

}  // namespace

std::vector<Token> tokenize(const std::string& text, const std::string& key) {
  std::vector<Token> tokens;
  Cursor cursor(text);
  while (!cursor.done()) {
    const char c = cursor.peek();
    const int column = cursor.column();
    if (std::isspace(static_cast<unsigned char>(c))) {
      cursor.advance();
    } else if (is_digit(c) || (c == '.' && is_digit(cursor.peek(1)))) {
      tokens.push_back(lex_number(cursor, text, key));
    } else if (is_identifier_start(c)) {
      const std::size_t start = cursor.pos();
      while (is_identifier_char(cursor.peek())) cursor.advance();
      tokens.push_back(
          {TokenKind::identifier, text.substr(start, cursor.pos() - start), 0.0, column});
    } else if (c == '(' || c == ')' || c == ',') {
      const TokenKind kind = c == '('   ? TokenKind::left_paren
                             : c == ')' ? TokenKind::right_paren
                                        : TokenKind::comma;
      tokens.push_back({kind, std::string(1, c), 0.0, column});
      cursor.advance();
    } else if (c == '*' && cursor.peek(1) == '*') {
      TESSERA_FAIL(key << ": unexpected '**' at column " << column << " (use '^' for powers)");
    } else if (c == '+' || c == '-' || c == '*' || c == '/' || c == '^') {
      tokens.push_back({TokenKind::op, std::string(1, c), 0.0, column});
      cursor.advance();
    } else if ((c == '<' || c == '>' || c == '=' || c == '!') && cursor.peek(1) == '=') {
      tokens.push_back({TokenKind::op, std::string{c, '='}, 0.0, column});
      cursor.advance();
      cursor.advance();
    } else if (c == '<' || c == '>') {
      tokens.push_back({TokenKind::op, std::string(1, c), 0.0, column});
      cursor.advance();
    } else {
      const std::size_t start = cursor.pos();
      cursor.advance();
      const std::string character = text.substr(start, cursor.pos() - start);
      const std::string hint = c == '='   ? " (did you mean '=='?)"
                               : c == '!' ? " (did you mean '!='?)"
                                          : "";
      TESSERA_FAIL(key << ": unexpected character '" << character << "' at column " << column
                       << hint);
    }
  }
  tokens.push_back({TokenKind::end, "", 0.0, cursor.column()});
  return tokens;
}

std::string describe(const Token& token) {
  if (token.kind == TokenKind::end) return "end of expression";
  return "'" + token.text + "'";
}

}  // namespace tessera::expr
