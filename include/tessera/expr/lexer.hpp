#pragma once
/// Splitting expression text into tokens.
#include <string>
#include <vector>

namespace tessera::expr {

enum class TokenKind { number, identifier, op, left_paren, right_paren, comma, end };

struct Token {
  TokenKind kind = TokenKind::end;
  std::string text;    ///< as written ("1e-3", "u_xx", "<=", ...); "" for end
  double value = 0.0;  ///< numbers only
  int column = 1;      ///< 1-based, counted in characters (UTF-8 aware)
};

/// The tokens of `text`, ending with one TokenKind::end token (its column is one past the
/// last character). Throws "<key>: unexpected character 'c' at column <c>" and
/// "<key>: malformed number '1e' at column <c> (...)".
std::vector<Token> tokenize(const std::string& text, const std::string& key);

/// How a token reads in a message: "'x'", "'('", "end of expression".
std::string describe(const Token& token);

}  // namespace tessera::expr
