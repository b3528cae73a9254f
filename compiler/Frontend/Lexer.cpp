//===- Lexer.cpp - Tokenizer for the tile DSL -----------------------------===//
//
// Implements the lexical structure of Language.md: identifiers and keywords,
// decimal and hex integers (which must fit in int64_t), floats, punctuation
// (longest match first) and `#` line comments. `//` is floor division, as
// in Python and Triton, not a comment: the parser turns a `//` where an
// operator cannot stand (an old comment) into an error that says so. Columns are 1-based byte
// offsets within the line, matching what Diagnostics prints the caret under.
//
//===----------------------------------------------------------------------===//

#include "Lexer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace sparsetile {

static bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool isDigit(char c) { return c >= '0' && c <= '9'; }

static bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

static int hexValue(char c) {
  if (isDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// Spells a byte for a message; control and non-ASCII bytes would garble the
/// terminal, so they are shown as escapes.
static std::string spellChar(char c) {
  unsigned char u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f)
    return std::string(1, c);
  char buf[8];
  std::snprintf(buf, sizeof(buf), "\\x%02X", u);
  return buf;
}

static TokenKind keywordKind(const std::string &word) {
  struct Entry {
    const char *spelling;
    TokenKind kind;
  };
  static const Entry keywords[] = {
      {"kernel", TokenKind::KwKernel}, {"let", TokenKind::KwLet},
      {"const", TokenKind::KwConst},   {"for", TokenKind::KwFor},
      {"in", TokenKind::KwIn},         {"range", TokenKind::KwRange},
      {"if", TokenKind::KwIf},         {"else", TokenKind::KwElse},
      {"return", TokenKind::KwReturn}, {"true", TokenKind::KwTrue},
      {"false", TokenKind::KwFalse},   {"None", TokenKind::KwNone},
      {"fn", TokenKind::KwFn},         {"import", TokenKind::KwImport},
      {"while", TokenKind::KwWhile},   {"break", TokenKind::KwBreak},
      {"continue", TokenKind::KwContinue},
  };
  for (const Entry &e : keywords)
    if (word == e.spelling)
      return e.kind;
  return TokenKind::Identifier;
}

std::string describeToken(const Token &token) {
  if (token.kind == TokenKind::Eof)
    return "end of file";
  return "'" + token.text + "'";
}

Loc Lexer::currentLoc() const {
  return Loc{line, static_cast<int>(pos - lineStart) + 1, fileId};
}

Token Lexer::makeError(Loc loc, std::string message) {
  Token tok;
  tok.kind = TokenKind::Error;
  tok.loc = loc;
  tok.text = std::move(message);
  return tok;
}

void Lexer::skipWhitespaceAndComments() {
  while (!atEnd()) {
    char c = peekChar();
    if (c == '\n') {
      ++pos;
      ++line;
      lineStart = pos;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos;
    } else if (c == '#') {
      while (!atEnd() && peekChar() != '\n')
        ++pos;
    } else {
      return;
    }
  }
}

Token Lexer::lexNumber(Loc loc, size_t begin) {
  Token tok;
  tok.loc = loc;

  // Hex integer.
  if (peekChar() == '0' && (peekChar(1) == 'x' || peekChar(1) == 'X')) {
    pos += 2;
    if (hexValue(peekChar()) < 0)
      return makeError(loc, "expected hex digits after '0x'");
    uint64_t value = 0;
    bool overflow = false;
    while (!atEnd() && hexValue(peekChar()) >= 0) {
      if (value > (uint64_t(std::numeric_limits<int64_t>::max()) >> 4))
        overflow = true;
      value = (value << 4) | uint64_t(hexValue(peekChar()));
      ++pos;
    }
    if (value > uint64_t(std::numeric_limits<int64_t>::max()))
      overflow = true;
    tok.text = source.substr(begin, pos - begin);
    if (isIdentChar(peekChar()))
      return makeError(loc, "invalid character '" + spellChar(peekChar()) +
                                "' in number '" + tok.text + "'");
    if (overflow)
      return makeError(loc, "integer literal '" + tok.text +
                                "' does not fit in 64 bits");
    tok.kind = TokenKind::IntLiteral;
    tok.intValue = int64_t(value);
    return tok;
  }

  bool isFloat = false;
  while (isDigit(peekChar()))
    ++pos;
  if (peekChar() == '.') {
    isFloat = true;
    ++pos;
    while (isDigit(peekChar()))
      ++pos;
  }
  if (peekChar() == 'e' || peekChar() == 'E') {
    isFloat = true;
    ++pos;
    if (peekChar() == '+' || peekChar() == '-')
      ++pos;
    if (!isDigit(peekChar())) {
      tok.text = source.substr(begin, pos - begin);
      return makeError(loc,
                       "expected digits in the exponent of '" + tok.text + "'");
    }
    while (isDigit(peekChar()))
      ++pos;
  }
  tok.text = source.substr(begin, pos - begin);
  // `12abc` is almost certainly a typo; lexing it as `12` `abc` would only
  // produce a more confusing error later.
  if (isIdentChar(peekChar()))
    return makeError(loc, "invalid character '" + spellChar(peekChar()) +
                              "' in number '" + tok.text + "'");

  if (isFloat) {
    // strtod needs a NUL-terminated buffer; tok.text is one.
    errno = 0;
    double value = std::strtod(tok.text.c_str(), nullptr);
    if (std::isinf(value))
      return makeError(loc, "float literal '" + tok.text + "' is out of range");
    tok.kind = TokenKind::FloatLiteral;
    tok.floatValue = value;
    return tok;
  }

  uint64_t value = 0;
  const uint64_t max = uint64_t(std::numeric_limits<int64_t>::max());
  for (char c : tok.text) {
    uint64_t digit = uint64_t(c - '0');
    if (value > (max - digit) / 10)
      return makeError(loc, "integer literal '" + tok.text +
                                "' does not fit in 64 bits");
    value = value * 10 + digit;
  }
  tok.kind = TokenKind::IntLiteral;
  tok.intValue = int64_t(value);
  return tok;
}

Token Lexer::next() {
  skipWhitespaceAndComments();
  Loc loc = currentLoc();
  Token tok;
  tok.loc = loc;
  if (atEnd()) {
    tok.kind = TokenKind::Eof;
    return tok;
  }

  size_t begin = pos;
  char c = peekChar();
  if (isIdentStart(c)) {
    while (isIdentChar(peekChar()))
      ++pos;
    tok.text = source.substr(begin, pos - begin);
    tok.kind = keywordKind(tok.text);
    return tok;
  }
  if (isDigit(c) || (c == '.' && isDigit(peekChar(1))))
    return lexNumber(loc, begin);
  if (c == '"') {
    // Strings are messages and import paths: no escapes, one line.
    ++pos;
    while (!atEnd() && peekChar() != '"' && peekChar() != '\n')
      ++pos;
    if (peekChar() != '"')
      return makeError(loc, "unterminated string");
    tok.text = source.substr(begin + 1, pos - begin - 1);
    ++pos;
    tok.kind = TokenKind::StringLiteral;
    return tok;
  }

  struct Punct {
    const char *spelling;
    TokenKind kind;
  };
  // Longer operators come first so that the longest match wins.
  static const Punct puncts[] = {
      {"//=", TokenKind::SlashSlashEqual},
      {"//", TokenKind::SlashSlash}, {"**", TokenKind::StarStar},
      {"->", TokenKind::Arrow},
      {"<=", TokenKind::LessEqual},  {">=", TokenKind::GreaterEqual},
      {"==", TokenKind::EqualEqual}, {"!=", TokenKind::NotEqual},
      {"&&", TokenKind::AmpAmp},     {"||", TokenKind::PipePipe},
      {"<<", TokenKind::LessLess},   {">>", TokenKind::GreaterGreater},
      {"+=", TokenKind::PlusEqual},  {"-=", TokenKind::MinusEqual},
      {"*=", TokenKind::StarEqual},  {"/=", TokenKind::SlashEqual},
      {"(", TokenKind::LParen},      {")", TokenKind::RParen},
      {"[", TokenKind::LBracket},    {"]", TokenKind::RBracket},
      {"{", TokenKind::LBrace},      {"}", TokenKind::RBrace},
      {",", TokenKind::Comma},       {";", TokenKind::Semicolon},
      {":", TokenKind::Colon},       {".", TokenKind::Dot},
      {"=", TokenKind::Equal},       {"@", TokenKind::At},
      {"*", TokenKind::Star},        {"+", TokenKind::Plus},
      {"-", TokenKind::Minus},       {"/", TokenKind::Slash},
      {"%", TokenKind::Percent},     {"<", TokenKind::Less},
      {">", TokenKind::Greater},     {"!", TokenKind::Bang},
      {"~", TokenKind::Tilde},       {"&", TokenKind::Amp},
      {"|", TokenKind::Pipe},        {"^", TokenKind::Caret},
  };
  for (const Punct &p : puncts) {
    size_t len = std::char_traits<char>::length(p.spelling);
    if (source.compare(pos, len, p.spelling) == 0) {
      pos += len;
      tok.kind = p.kind;
      tok.text = p.spelling;
      return tok;
    }
  }

  // Skip the byte so that a caller that keeps going still makes progress.
  ++pos;
  return makeError(loc, "unexpected character '" + spellChar(c) + "'");
}

} // namespace sparsetile
