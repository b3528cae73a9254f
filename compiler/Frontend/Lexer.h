//===- Lexer.h - Tokenizer for the tile DSL ---------------------*- C++ -*-===//
//
// Splits .tile source text into tokens on demand. The lexer never reports
// errors itself: a malformed token comes back as TokenKind::Error carrying the
// message, and the parser reports it only if it gets that far. This keeps the
// "first error wins" rule of the parser exact even though the parser looks
// ahead.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_FRONTEND_LEXER_H
#define SPARSETILE_FRONTEND_LEXER_H

#include "Diagnostics.h"

#include <cstdint>
#include <string>

namespace sparsetile {

enum class TokenKind {
  Eof,
  Error, ///< Malformed input; Token::text holds the message.
  Identifier,
  IntLiteral,
  FloatLiteral,
  // Keywords.
  KwKernel,
  KwLet,
  KwConst,
  KwFor,
  KwWhile,
  KwBreak,
  KwContinue,
  KwIn,
  KwRange,
  KwIf,
  KwElse,
  KwReturn,
  KwTrue,
  KwFalse,
  KwNone,
  KwFn,
  KwImport,
  StringLiteral, ///< "text": `text` holds the contents without quotes.
  Arrow,         ///< ->
  // Punctuation.
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Semicolon,
  Colon,
  Dot,
  Equal,
  At,
  Star,
  Plus,
  Minus,
  Slash,
  SlashSlash, ///< `//`, floor division (Python's): not a comment.
  StarStar,   ///< `**`, power.
  Percent,
  Less,
  Greater,
  LessEqual,
  GreaterEqual,
  EqualEqual,
  NotEqual,
  AmpAmp,
  PipePipe,
  Bang,
  Tilde,
  Amp,
  Pipe,
  Caret,
  LessLess,
  GreaterGreater,
  PlusEqual,
  MinusEqual,
  StarEqual,
  SlashEqual,
  SlashSlashEqual,
};

/// One token. `text` is the source spelling (the message for Error tokens).
struct Token {
  TokenKind kind = TokenKind::Eof;
  std::string text;
  Loc loc;
  int64_t intValue = 0;  ///< IntLiteral only.
  double floatValue = 0; ///< FloatLiteral only.

  bool is(TokenKind k) const { return kind == k; }
};

/// Produces the tokens of one source buffer, one call to next() at a time.
/// The buffer must outlive the lexer.
class Lexer {
public:
  /// `fileId` goes into every token's Loc::file (see Diagnostics::addFile).
  explicit Lexer(const std::string &source, int fileId = 0)
      : source(source), fileId(fileId) {}

  /// Returns the next token; after the end of input, Eof forever.
  Token next();

private:
  char peekChar(size_t ahead = 0) const {
    return pos + ahead < source.size() ? source[pos + ahead] : '\0';
  }
  bool atEnd(size_t ahead = 0) const { return pos + ahead >= source.size(); }
  Loc currentLoc() const;
  void skipWhitespaceAndComments();
  Token lexNumber(Loc loc, size_t begin);
  Token makeError(Loc loc, std::string message);

  const std::string &source;
  int fileId;
  size_t pos = 0;
  int line = 1;
  size_t lineStart = 0;
};

/// How a token is named in "found ..." messages: "'foo'" or "end of file".
std::string describeToken(const Token &token);

} // namespace sparsetile

#endif // SPARSETILE_FRONTEND_LEXER_H
