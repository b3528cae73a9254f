//===- Parser.cpp - Recursive-descent parser for the tile DSL -------------===//
//
// Implements the grammar of Language.md:
//
//   file   := (import | const | fn | attr* 'kernel' NAME '(' params ')' block)*
//   import := 'import' STRING ';'
//   const  := 'const' NAME '=' expr ';'
//   fn     := 'fn' NAME '(' fnparam,* ')' ('->' type)? block
//   fnparam := NAME (':' type)? | 'const' NAME ':' 'dtype'
//   attr   := '@' NAME '(' (INT | NAME) ')' | autotune
//   autotune := '@' 'autotune' '(' tunearg (',' tunearg)* ','? ')'
//   tunearg  := 'key' '=' '[' NAME,* ']' | 'grid' '=' '[' expr,* ']'
//             | 'configs' '=' '[' config,* ']'
//   config   := '{' (NAME ':' (INT | 'true' | 'false')),* '}'
//   param  := 'const' NAME ':' dtype ('=' expr)? | NAME ':' '*'? dtype
//           | NAME ':' 'desc' '<' dtype '>'
//   stmt   := 'let' NAME '=' expr ';' | NAME ('=' | '+=' | ...) expr ';'
//           | 'for' NAME 'in' ('range' | 'static_range')
//                 '(' expr (',' expr)* ','? ')' block
//           | 'if' expr block ('else' (if-stmt | block))?
//           | expr ';' | 'return' expr? ';' | const
//           | 'static_assert' '(' expr ',' STRING ')' ';'
//
// Expressions use one function per precedence level, with binary operators
// folded left-associatively in a loop. Within a top-level item the parser
// stops at the first error; it then skips to the item's end (skipItem) and
// goes on, so that one bad kernel or fn does not hide the others
// (syntaxErrorsFor says which kernels an error stops).
// Two rules keep it safe on arbitrary input: every loop either consumes a
// token or exits, and counters bound the height of the tree being built, so
// neither the parser nor later tree walkers can overflow the stack: `depth`
// counts nesting (parentheses, calls, unary chains, blocks, else-if chains)
// and `height` that plus the operators of left-associative chains (`a + b +
// c` is as tall as it is long), each with its own limit and message.
//
//===----------------------------------------------------------------------===//

#include "Parser.h"
#include "Autotune.h"
#include "Lexer.h"

#include <deque>
#include <map>
#include <set>

namespace sparsetile {

namespace {

using ast::Expr;
using ast::ExprPtr;
using ast::Stmt;
using ast::StmtPtr;

/// The deepest nesting the parser accepts. Real kernels stay far below; the
/// cap exists so that adversarial input fails cleanly instead of overflowing
/// the stack here or in MLIRGen.
constexpr int kMaxDepth = 200;
/// The tallest tree: nesting plus chained operators. A flat sum of 201 terms
/// used to be "nesting too deep"; a chain costs the walkers a stack frame per
/// operator as nesting does, about 0.5 KB through the whole compile, so 1000
/// fit a 1 MiB stack (tests/lit/Errors/expression_too_long.tile runs one).
constexpr int kMaxHeight = 1000;

class Parser {
public:
  Parser(const std::string &source, Diagnostics &diags, int fileId)
      : lexer(source, fileId), diags(diags) {}

  bool parseFile(ast::Module &module);

private:
  // --- Token stream. ---
  const Token &peek(size_t ahead = 0) {
    while (lookahead.size() <= ahead)
      lookahead.push_back(lexer.next());
    return lookahead[ahead];
  }
  bool at(TokenKind kind) { return peek().kind == kind; }
  Token take() {
    peek();
    Token tok = std::move(lookahead.front());
    lookahead.pop_front();
    // What recovery needs (skipItem): the braces open in the current
    // top-level item, and whether its keyword has been read.
    if (tok.kind == TokenKind::LBrace)
      ++braceDepth;
    else if (tok.kind == TokenKind::RBrace && braceDepth > 0)
      --braceDepth;
    else if (braceDepth == 0 &&
             (tok.kind == TokenKind::KwKernel || tok.kind == TokenKind::KwFn ||
              tok.kind == TokenKind::KwConst ||
              tok.kind == TokenKind::KwImport))
      keywordRead = true;
    ++taken;
    return tok;
  }
  bool consumeIf(TokenKind kind) {
    if (!at(kind))
      return false;
    take();
    return true;
  }

  // --- Errors. ---
  /// Reports `message` at the current token. A malformed token takes
  /// precedence: its own message is the more useful one.
  bool error(const std::string &message) { return errorAt(peek(), message); }
  bool errorAt(const Token &tok, const std::string &message) {
    failed = true;
    // `//` was a comment until it became floor division (issue 47). An old
    // comment shows up either where no operator can stand (a statement or
    // an operand starting with `//`) or as a floor division whose "operand"
    // is prose, which fails later on the same line: both are reported at
    // the `//` with what changed, and the second keeps the parser's own
    // message as a note in case a floor division was meant.
    if (tok.kind == TokenKind::SlashSlash) {
      diags.error(tok.loc, kOldComment);
      return false;
    }
    if (lastFloorDiv.line && tok.loc.file == lastFloorDiv.file &&
        tok.loc.line == lastFloorDiv.line) {
      diags.error(lastFloorDiv, std::string(kOldComment) +
                                    " (what follows this '//' is not an "
                                    "expression)");
      diags.note(tok.loc, tok.kind == TokenKind::Error ? tok.text : message);
      return false;
    }
    if (tok.kind == TokenKind::Error)
      diags.error(tok.loc, tok.text);
    else
      diags.error(tok.loc, message);
    return false;
  }
  static constexpr const char *kOldComment =
      "'//' is floor division, as in Python and Triton, not a comment: "
      "comments start with '#'";
  /// "opened at LINE:COL": where the bracket an error wants closed is.
  static std::string opened(Loc loc) {
    return "opened at " + std::to_string(loc.line) + ":" +
           std::to_string(loc.col);
  }
  /// "expected X WHAT, found Y" at the current token.
  bool expectedError(const std::string &what) {
    return error("expected " + what + ", found " + describeToken(peek()));
  }
  /// Consumes a `kind` token or reports "expected 'spelling' context".
  bool expect(TokenKind kind, const char *spelling, const std::string &context,
              Token *out = nullptr) {
    if (at(kind)) {
      Token tok = take();
      if (out)
        *out = std::move(tok);
      return true;
    }
    std::string what = std::string("'") + spelling + "'";
    if (!context.empty())
      what += " " + context;
    return expectedError(what);
  }
  bool expectName(const std::string &what, Token &out) {
    if (at(TokenKind::Identifier)) {
      out = take();
      return true;
    }
    return expectedError(what);
  }

  /// Bounds recursion; see kMaxDepth.
  struct DepthGuard {
    DepthGuard(Parser &p) : p(p) {
      ++p.depth;
      ++p.height;
    }
    ~DepthGuard() {
      --p.depth;
      --p.height;
    }
    Parser &p;
  };
  bool checkDepth() {
    if (depth > kMaxDepth)
      return error("nesting too deep (more than " + std::to_string(kMaxDepth) +
                   " levels)");
    if (height > kMaxHeight)
      return error("expression too long: more than " +
                   std::to_string(kMaxHeight) +
                   " chained operators and nesting levels (split it with "
                   "'let')");
    return true;
  }

  // --- Declarations. ---
  /// Parses one top-level item into `module`; false after its first error.
  bool parseItem(ast::Module &module, ast::BadItem &bad);
  /// After an error in a top-level item: skips to its end (the '}' that
  /// closes it, or the ';' of an import or const), or to the start of the
  /// next item ('kernel', 'fn', 'import', '@') once the item's own keyword
  /// has been read. Completes `bad` with the name of a kernel or fn whose
  /// header the skip passes.
  void skipItem(ast::BadItem &bad);
  bool parseKernel(ast::Kernel &kernel);
  bool parseFunction(ast::Function &fn);
  bool parseConstDecl(ast::ConstDecl &decl);
  bool parseAutotune(ast::Kernel &kernel, Loc where);
  bool parseTuneConfig(std::vector<ast::TuneSetting> &config);
  /// `'[' item (',' item)* ','? ']'`, calling `item` for each entry.
  template <class F> bool parseList(const char *what, F &&item);
  bool parseParam(ast::Param &param);
  /// Records `param` in `seen`; a second parameter of one name is an error.
  bool checkUnique(std::map<std::string, Loc> &seen, const ast::Param &param) {
    auto inserted = seen.emplace(param.name, param.loc);
    if (inserted.second)
      return true;
    failed = true;
    diags.error(param.loc, "duplicate parameter '" + param.name + "'");
    diags.note(inserted.first->second, "previous parameter is here");
    return false;
  }
  bool parseDTypeToken(DType &dtype);

  // --- Statements. ---
  bool parseBlock(ast::Block &block);
  StmtPtr parseStmt();
  StmtPtr parseFor();
  StmtPtr parseIf();

  // --- Expressions. ---
  ExprPtr parseExpr();
  ExprPtr parseBinary(int level);
  ExprPtr parseUnary();
  ExprPtr parsePower();
  ExprPtr parsePostfix();
  ExprPtr parsePrimary();
  /// After `(first` (or `return first`) at a ',': the rest of a tuple, up
  /// to `close` (consumed when it is ')').
  ExprPtr parseTupleRest(Loc loc, ExprPtr first, TokenKind close);
  /// `(a, b)` as the targets of an unpacking `let` or assignment.
  bool parseTargets(Stmt &stmt);
  bool atTupleAssign();
  /// A call's arguments after its '(' (at `open`), through the ')'.
  bool parseArgs(Expr &call, Loc open);
  bool parseSubscript(Expr &index);

  Lexer lexer;
  Diagnostics &diags;
  std::deque<Token> lookahead;
  int depth = 0;
  int height = 0;
  /// Where the last `//` (or `//=`) operator was consumed; line 0 if none
  /// (see errorAt).
  Loc lastFloorDiv;
  /// Set by the first error of the current item; the caller's Diagnostics
  /// may already hold errors from elsewhere, so it cannot tell us.
  bool failed = false;
  /// Recovery state of the current top-level item (see take()).
  int braceDepth = 0;
  bool keywordRead = false;
  size_t taken = 0;
  /// The item starts with '@': attributes, then their kernel.
  bool attributesFirst = false;
  /// The failed item was read to its end (a duplicate kernel).
  bool itemComplete = false;
  /// The kernels read so far, for the duplicate-name error.
  std::map<std::string, Loc> kernelLocs;
};

/// Past this many bad items the parser stops reading the file: each error
/// prints its source line, and a long line of junk must not print it once a
/// token.
constexpr int kMaxBadItems = 20;

//===----------------------------------------------------------------------===//
// Declarations
//===----------------------------------------------------------------------===//

bool Parser::parseFile(ast::Module &module) {
  while (!at(TokenKind::Eof)) {
    // Each item starts afresh: an error in one is recorded with its
    // diagnostics, the rest of the item skipped, and the next one parsed.
    failed = false;
    depth = height = braceDepth = 0;
    keywordRead = attributesFirst = false;
    lastFloorDiv = Loc();
    size_t mark = diags.str().size();
    size_t start = taken;
    ast::BadItem bad;
    bad.loc = peek().loc;
    itemComplete = false;
    if (parseItem(module, bad))
      continue;
    if (!itemComplete)
      skipItem(bad);
    if (taken == start) // Every round consumes a token.
      take();
    bad.diagnostics = diags.str().substr(mark);
    if (bad.name.empty())
      bad.kind = ast::BadItem::FileLevel;
    module.badItems.push_back(std::move(bad));
    if (module.badItems.size() >= size_t(kMaxBadItems) &&
        !at(TokenKind::Eof)) {
      ast::BadItem stop;
      stop.loc = peek().loc;
      size_t before = diags.str().size();
      diags.error(stop.loc, "too many syntax errors (" +
                                std::to_string(kMaxBadItems) +
                                "); the rest of the file is not read");
      stop.diagnostics = diags.str().substr(before);
      module.badItems.push_back(std::move(stop));
      return false;
    }
  }
  return module.badItems.empty();
}

bool Parser::parseItem(ast::Module &module, ast::BadItem &bad) {
  if (at(TokenKind::KwImport)) {
    ast::Import imp;
    imp.loc = take().loc;
    Token path;
    if (!expect(TokenKind::StringLiteral, "\"path\"", "after 'import'",
                &path))
      return false;
    imp.path = path.text;
    if (!expect(TokenKind::Semicolon, ";", "after the import"))
      return false;
    module.imports.push_back(std::move(imp));
    return true;
  }
  if (at(TokenKind::KwConst)) {
    ast::ConstDecl decl;
    if (!parseConstDecl(decl))
      return false;
    module.constants.push_back(std::move(decl));
    return true;
  }
  if (at(TokenKind::KwFn)) {
    ast::Function fn;
    bad.kind = ast::BadItem::Function;
    bool ok = parseFunction(fn);
    bad.name = fn.name;
    if (ok)
      module.functions.push_back(std::move(fn));
    return ok;
  }
  ast::Kernel kernel;
  bad.kind = ast::BadItem::Kernel;
  attributesFirst = at(TokenKind::At);
  bool ok = parseKernel(kernel);
  bad.name = kernel.name;
  if (!ok)
    return false;
  auto inserted = kernelLocs.emplace(kernel.name, kernel.loc);
  if (!inserted.second) {
    failed = itemComplete = true; // Nothing to skip.
    diags.error(kernel.loc, "duplicate kernel '" + kernel.name + "'");
    diags.note(inserted.first->second, "previous definition is here");
    return false;
  }
  module.kernels.push_back(std::move(kernel));
  return true;
}

void Parser::skipItem(ast::BadItem &bad) {
  while (!at(TokenKind::Eof)) {
    TokenKind kind = peek().kind;
    bool header = kind == TokenKind::KwKernel || kind == TokenKind::KwFn;
    if (header || kind == TokenKind::KwImport || kind == TokenKind::At) {
      if (keywordRead || kind == TokenKind::KwImport)
        return; // The next item (a body cannot hold these tokens).
      take();
      // Text before a header (a broken attribute) belongs to that item,
      // whose braces count from here.
      braceDepth = 0;
      keywordRead = header;
      if (header && at(TokenKind::Identifier)) {
        bad.kind = kind == TokenKind::KwKernel ? ast::BadItem::Kernel
                                               : ast::BadItem::Function;
        bad.name = take().text;
      }
      continue;
    }
    // Broken attributes run to their kernel, braces (@autotune's configs)
    // or not; junk before any keyword ends at a '}' or ';'.
    bool mayEnd = keywordRead || !attributesFirst;
    bool closes = kind == TokenKind::RBrace && braceDepth <= 1 && mayEnd;
    // A ';' ends an import, a const, or junk before any keyword.
    bool ends = kind == TokenKind::Semicolon && braceDepth == 0 && mayEnd &&
                (!keywordRead || bad.kind == ast::BadItem::FileLevel);
    take();
    if (closes || ends)
      return;
  }
}

bool Parser::parseKernel(ast::Kernel &kernel) {
  while (at(TokenKind::At)) {
    ast::Attribute attr;
    attr.loc = take().loc;
    Token name, value;
    if (!expectName("an attribute name after '@'", name))
      return false;
    if (name.text == "autotune") {
      if (!parseAutotune(kernel, attr.loc))
        return false;
      continue;
    }
    attr.name = name.text;
    if (!expect(TokenKind::LParen, "(", "after attribute name"))
      return false;
    if (at(TokenKind::Identifier))
      attr.constName = take().text;
    else if (!at(TokenKind::IntLiteral))
      return expectedError("an integer attribute value or a constant name");
    else
      attr.value = take().intValue;
    if (!expect(TokenKind::RParen, ")", "after attribute value"))
      return false;
    kernel.attrs.push_back(std::move(attr));
  }
  if (!at(TokenKind::KwKernel))
    return expectedError(kernel.attrs.empty() ? "'kernel' or '@'"
                                              : "'kernel' after attributes");
  take();
  Token name;
  if (!expectName("a kernel name after 'kernel'", name))
    return false;
  kernel.name = name.text;
  kernel.loc = name.loc;
  if (!expect(TokenKind::LParen, "(", "after kernel name"))
    return false;

  std::map<std::string, Loc> paramLocs;
  while (!at(TokenKind::RParen)) {
    ast::Param param;
    if (!parseParam(param))
      return false;
    if (!checkUnique(paramLocs, param))
      return false;
    kernel.params.push_back(std::move(param));
    if (!consumeIf(TokenKind::Comma)) {
      if (!at(TokenKind::RParen))
        return expectedError("',' or ')' after parameter");
    }
  }
  take(); // ')'
  // Checked before the body so its errors come first, as in the source.
  if (kernel.autotune && !checkAutotune(kernel, diags)) {
    failed = true;
    return false;
  }
  return parseBlock(kernel.body);
}

bool Parser::parseConstDecl(ast::ConstDecl &decl) {
  take(); // 'const'
  Token name;
  if (!expectName("a constant name after 'const'", name))
    return false;
  decl.name = name.text;
  decl.loc = name.loc;
  if (!expect(TokenKind::Equal, "=", "after constant name"))
    return false;
  if (!(decl.value = parseExpr()))
    return false;
  return expect(TokenKind::Semicolon, ";", "after the constant");
}

/// Parameters are a kernel's (`x: *f32`, `n: i32`, `const T: dtype`) or
/// untyped (`x`): a generic parameter takes whatever the caller passes.
bool Parser::parseFunction(ast::Function &fn) {
  take(); // 'fn'
  Token name;
  if (!expectName("a function name after 'fn'", name))
    return false;
  fn.name = name.text;
  fn.loc = name.loc;
  if (!expect(TokenKind::LParen, "(", "after function name"))
    return false;
  std::map<std::string, Loc> paramLocs;
  while (!at(TokenKind::RParen)) {
    ast::Param param;
    bool typed = true;
    if (at(TokenKind::Identifier) && !peek(1).is(TokenKind::Colon)) {
      Token pname = take();
      param.name = pname.text;
      param.loc = pname.loc;
      typed = false;
    } else if (!parseParam(param)) {
      return false;
    }
    if (param.isConst && !param.isTypeParam)
      return errorAt(Token{TokenKind::Identifier, param.name, param.loc},
                     "a function's const parameters must be dtypes "
                     "('const T: dtype'); pass other constants as values");
    if (param.defaultValue)
      return errorAt(Token{TokenKind::Identifier, param.name, param.loc},
                     "function parameters cannot have default values");
    if (!checkUnique(paramLocs, param))
      return false;
    fn.params.push_back(std::move(param));
    fn.paramTyped.push_back(typed);
    if (!consumeIf(TokenKind::Comma) && !at(TokenKind::RParen))
      return expectedError("',' or ')' after parameter");
  }
  take(); // ')'
  if (consumeIf(TokenKind::Arrow)) {
    fn.hasReturnType = true;
    ast::Param &rt = fn.returnType;
    rt.loc = peek().loc;
    if (consumeIf(TokenKind::Star))
      rt.isPointer = true;
    if (at(TokenKind::Identifier) && !parseDType(peek().text, rt.dtype))
      rt.typeRef = take().text;
    else if (!parseDTypeToken(rt.dtype))
      return false;
  }
  return parseBlock(fn.body);
}

template <class F> bool Parser::parseList(const char *what, F &&item) {
  if (!expect(TokenKind::LBracket, "[", std::string("to open ") + what))
    return false;
  while (!at(TokenKind::RBracket)) {
    if (!item())
      return false;
    if (!consumeIf(TokenKind::Comma) && !at(TokenKind::RBracket))
      return expectedError(std::string("',' or ']' in ") + what);
  }
  take(); // ']'
  return true;
}

/// The syntax only; Frontend/Autotune.cpp checks names and values once the
/// parameters are known.
bool Parser::parseAutotune(ast::Kernel &kernel, Loc where) {
  if (kernel.autotune) {
    failed = true;
    diags.error(where, "duplicate @autotune");
    diags.note(kernel.autotune->loc, "previous @autotune is here");
    return false;
  }
  kernel.autotune.emplace();
  ast::AutotuneAttr &tune = *kernel.autotune;
  tune.loc = where;
  if (!expect(TokenKind::LParen, "(", "after 'autotune'"))
    return false;
  std::map<std::string, Loc> seen;
  while (!at(TokenKind::RParen)) {
    Token name;
    if (!expectName("key=, grid= or configs= in @autotune", name))
      return false;
    if (name.text != "key" && name.text != "grid" && name.text != "configs")
      return errorAt(name, "unknown @autotune argument '" + name.text +
                               "' (expected key, grid or configs)");
    if (!seen.emplace(name.text, name.loc).second)
      return errorAt(name, "duplicate @autotune argument '" + name.text + "'");
    if (!expect(TokenKind::Equal, "=", "after '" + name.text + "'"))
      return false;
    bool ok;
    tune.keyGiven |= name.text == "key";
    if (name.text == "key")
      ok = parseList("the key", [&] {
        Token n;
        if (!expectName("a parameter name in the key", n))
          return false;
        tune.key.emplace_back(n.text, n.loc);
        return true;
      });
    else if (name.text == "grid")
      ok = parseList("the grid", [&] {
        ExprPtr e = parseExpr();
        tune.grid.push_back(std::move(e));
        return tune.grid.back() != nullptr;
      });
    else
      ok = parseList("the configs", [&] {
        tune.configLocs.push_back(peek().loc);
        tune.configs.emplace_back();
        return parseTuneConfig(tune.configs.back());
      });
    if (!ok)
      return false;
    if (!consumeIf(TokenKind::Comma) && !at(TokenKind::RParen))
      return expectedError("',' or ')' in @autotune");
  }
  take(); // ')'
  return true;
}

bool Parser::parseTuneConfig(std::vector<ast::TuneSetting> &config) {
  if (!expect(TokenKind::LBrace, "{", "to open a configuration"))
    return false;
  while (!at(TokenKind::RBrace)) {
    Token name;
    if (!expectName("a constant or option name in the configuration", name))
      return false;
    if (!expect(TokenKind::Colon, ":", "after '" + name.text + "'"))
      return false;
    ast::TuneSetting s;
    s.name = name.text;
    s.loc = name.loc;
    if (at(TokenKind::KwTrue) || at(TokenKind::KwFalse))
      s.value = take().kind == TokenKind::KwTrue;
    else if (at(TokenKind::IntLiteral))
      s.value = take().intValue;
    else
      return expectedError("an integer value for '" + name.text + "'");
    config.push_back(s);
    if (!consumeIf(TokenKind::Comma) && !at(TokenKind::RBrace))
      return expectedError("',' or '}' in the configuration");
  }
  take(); // '}'
  return true;
}

bool Parser::parseDTypeToken(DType &dtype) {
  if (at(TokenKind::Identifier) && parseDType(peek().text, dtype)) {
    take();
    return true;
  }
  return expectedError("a dtype (bool, i1, i8, i16, i32, i64, u8, u16, u32, "
                       "u64, f16, bf16, f32, f64, f8e4m3, f8e5m2)");
}

bool Parser::parseParam(ast::Param &param) {
  param.isConst = consumeIf(TokenKind::KwConst);
  Token name;
  if (!expectName("a parameter name", name))
    return false;
  param.name = name.text;
  param.loc = name.loc;
  if (!expect(TokenKind::Colon, ":", "after parameter name"))
    return false;
  if (at(TokenKind::Star)) {
    if (param.isConst)
      return error("a const parameter cannot be a pointer");
    take();
    param.isPointer = true;
  }
  if (!param.isPointer && !param.isConst && at(TokenKind::Identifier) &&
      peek().text == "desc") {
    // desc<T>: a 2-D tensor descriptor (T a dtype or a type parameter).
    take();
    param.isDesc = true;
    if (!expect(TokenKind::Less, "<", "after 'desc'"))
      return false;
    if (at(TokenKind::Identifier) && !parseDType(peek().text, param.dtype))
      param.typeRef = take().text;
    else if (!parseDTypeToken(param.dtype))
      return false;
    return expect(TokenKind::Greater, ">", "to close 'desc<'");
  }
  if (param.isConst && at(TokenKind::Identifier) && peek().text == "dtype") {
    take();
    param.isTypeParam = true;
  } else if (!param.isConst && at(TokenKind::Identifier) &&
             !parseDType(peek().text, param.dtype)) {
    // A type parameter's name; MLIRGen checks that it exists.
    param.typeRef = take().text;
  } else if (!parseDTypeToken(param.dtype)) {
    return false;
  }
  if (at(TokenKind::Equal)) {
    if (!param.isConst)
      return error("only const parameters can have a default value");
    take();
    param.defaultValue = parseExpr();
    if (!param.defaultValue)
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

bool Parser::parseBlock(ast::Block &block) {
  DepthGuard guard(*this);
  if (!checkDepth())
    return false;
  Token open;
  if (!expect(TokenKind::LBrace, "{", "to open a block", &open))
    return false;
  while (!at(TokenKind::RBrace)) {
    if (at(TokenKind::Eof))
      return expectedError("'}' to close the block " + opened(open.loc));
    StmtPtr stmt = parseStmt();
    if (!stmt)
      return false;
    block.push_back(std::move(stmt));
  }
  take(); // '}'
  return true;
}

StmtPtr Parser::parseStmt() {
  const Token &tok = peek();
  switch (tok.kind) {
  case TokenKind::KwLet: {
    auto stmt = std::make_unique<Stmt>(Stmt::Let, take().loc);
    if (at(TokenKind::LParen)) { // `let (a, b) = f(x);`
      if (!parseTargets(*stmt))
        return nullptr;
    } else {
      Token name;
      if (!expectName("a variable name after 'let'", name))
        return nullptr;
      stmt->name = name.text;
    }
    if (!expect(TokenKind::Equal, "=", "after variable name"))
      return nullptr;
    if (!(stmt->value = parseExpr()))
      return nullptr;
    if (!expect(TokenKind::Semicolon, ";", "after the statement"))
      return nullptr;
    return stmt;
  }
  case TokenKind::KwFor:
    return parseFor();
  case TokenKind::KwWhile: {
    DepthGuard guard(*this);
    if (!checkDepth())
      return nullptr;
    auto stmt = std::make_unique<Stmt>(Stmt::While, take().loc);
    if (!(stmt->value = parseExpr()) || !parseBlock(stmt->body))
      return nullptr;
    return stmt;
  }
  case TokenKind::KwBreak:
  case TokenKind::KwContinue: {
    bool isBreak = tok.kind == TokenKind::KwBreak;
    auto stmt = std::make_unique<Stmt>(isBreak ? Stmt::Break : Stmt::Continue,
                                       take().loc);
    if (!expect(TokenKind::Semicolon, ";",
                isBreak ? "after 'break'" : "after 'continue'"))
      return nullptr;
    return stmt;
  }
  case TokenKind::KwIf:
    return parseIf();
  case TokenKind::LParen: {
    if (!atTupleAssign())
      break;
    auto stmt = std::make_unique<Stmt>(Stmt::Assign, tok.loc);
    if (!parseTargets(*stmt))
      return nullptr;
    take(); // '='
    if (!(stmt->value = parseExpr()) ||
        !expect(TokenKind::Semicolon, ";", "after the statement"))
      return nullptr;
    return stmt;
  }
  case TokenKind::KwReturn: {
    auto stmt = std::make_unique<Stmt>(Stmt::Return, take().loc);
    if (!at(TokenKind::Semicolon) && !(stmt->value = parseExpr()))
      return nullptr;
    if (at(TokenKind::Comma)) { // `return a, b;`: several results.
      Loc loc = stmt->value->loc;
      if (!(stmt->value = parseTupleRest(loc, std::move(stmt->value),
                                         TokenKind::Semicolon)))
        return nullptr;
    }
    if (!expect(TokenKind::Semicolon, ";", "after 'return'"))
      return nullptr;
    return stmt;
  }
  case TokenKind::KwConst: {
    ast::ConstDecl decl;
    if (!parseConstDecl(decl))
      return nullptr;
    auto stmt = std::make_unique<Stmt>(Stmt::Const, decl.loc);
    stmt->name = decl.name;
    stmt->value = std::move(decl.value);
    return stmt;
  }
  case TokenKind::Identifier: {
    if (tok.text == "static_assert" && peek(1).is(TokenKind::LParen)) {
      auto stmt = std::make_unique<Stmt>(Stmt::StaticAssert, take().loc);
      take(); // '('
      Token message;
      if (!(stmt->value = parseExpr()) ||
          !expect(TokenKind::Comma, ",", "after the static_assert condition") ||
          !expect(TokenKind::StringLiteral, "\"message\"",
                  "in static_assert", &message) ||
          !expect(TokenKind::RParen, ")", "to close static_assert") ||
          !expect(TokenKind::Semicolon, ";", "after the statement"))
        return nullptr;
      stmt->op = message.text;
      return stmt;
    }
    const char *op = nullptr;
    switch (peek(1).kind) {
    case TokenKind::Equal:
      op = "";
      break;
    case TokenKind::PlusEqual:
      op = "+";
      break;
    case TokenKind::MinusEqual:
      op = "-";
      break;
    case TokenKind::StarEqual:
      op = "*";
      break;
    case TokenKind::SlashEqual:
      op = "/";
      break;
    case TokenKind::SlashSlashEqual:
      op = "//";
      lastFloorDiv = peek(1).loc;
      break;
    default:
      break;
    }
    if (!op)
      break;
    Token name = take();
    take(); // the assignment operator
    auto stmt = std::make_unique<Stmt>(Stmt::Assign, name.loc);
    stmt->name = name.text;
    stmt->op = op;
    if (!(stmt->value = parseExpr()))
      return nullptr;
    if (!expect(TokenKind::Semicolon, ";", "after the statement"))
      return nullptr;
    return stmt;
  }
  default:
    break;
  }

  // Anything that cannot start an expression gets a statement-level message;
  // "expected expression" would be misleading for a stray '}' or keyword.
  switch (tok.kind) {
  case TokenKind::Identifier:
  case TokenKind::IntLiteral:
  case TokenKind::FloatLiteral:
  case TokenKind::KwTrue:
  case TokenKind::KwFalse:
  case TokenKind::StringLiteral:
  case TokenKind::LParen:
  case TokenKind::LBracket:
  case TokenKind::Minus:
  case TokenKind::Bang:
  case TokenKind::Tilde:
  case TokenKind::Error:
    break;
  default:
    expectedError("a statement");
    return nullptr;
  }
  auto stmt = std::make_unique<Stmt>(Stmt::ExprStmt, tok.loc);
  if (!(stmt->value = parseExpr()))
    return nullptr;
  if (!expect(TokenKind::Semicolon, ";", "after the statement"))
    return nullptr;
  return stmt;
}

StmtPtr Parser::parseFor() {
  auto stmt = std::make_unique<Stmt>(Stmt::For, take().loc);
  Token name;
  if (!expectName("a loop variable after 'for'", name))
    return nullptr;
  stmt->name = name.text;
  if (!expect(TokenKind::KwIn, "in", "after loop variable"))
    return nullptr;
  if (at(TokenKind::Identifier) && peek().text == "static_range") {
    take();
    stmt->kind = Stmt::StaticFor;
  } else if (!expect(TokenKind::KwRange, "range",
                     "or 'static_range' after 'in'")) {
    return nullptr;
  }
  if (!expect(TokenKind::LParen, "(", "after 'range'"))
    return nullptr;
  ExprPtr bounds[3];
  int count = 0;
  bool keywords = false;
  while (true) {
    // Keyword options after the bounds, in Triton's spellings:
    // `num_stages=N`, the pipeline depth for this loop (1 to 8), and
    // `warp_specialize=0|1`, whether its ring gets a producer warp(group)
    // (tl.range's warp_specialize), an integer literal each.
    if (at(TokenKind::Identifier) &&
        (peek().text == "num_stages" || peek().text == "warp_specialize") &&
        peek(1).is(TokenKind::Equal)) {
      Token kw = take();
      take(); // '='
      bool stages = kw.text == "num_stages";
      if (stmt->kind == Stmt::StaticFor)
        return errorAt(kw, "static_range() takes no " + kw.text), nullptr;
      if (count == 0)
        return errorAt(kw, kw.text + "= comes after the range's bounds"),
               nullptr;
      if (!at(TokenKind::IntLiteral))
        return expectedError("an integer after '" + kw.text + "='"), nullptr;
      Token n = take();
      if (stages && (n.intValue < 1 || n.intValue > 8))
        return errorAt(n, "num_stages must be 1 to 8, got " + n.text),
               nullptr;
      if (!stages && n.intValue != 0 && n.intValue != 1)
        return errorAt(n, "warp_specialize takes 0 or 1, got " + n.text),
               nullptr;
      (stages ? stmt->numStages : stmt->warpSpecialize) = n.intValue;
      keywords = true;
    } else {
      if (count == 3)
        return error("range() takes at most 3 arguments"), nullptr;
      if (keywords)
        return error("range()'s bounds come before num_stages= and "
                     "warp_specialize="),
               nullptr;
      if (!(bounds[count++] = parseExpr()))
        return nullptr;
    }
    bool comma = consumeIf(TokenKind::Comma);
    if (at(TokenKind::RParen))
      break;
    if (!comma)
      return expectedError("',' or ')' in range()"), nullptr;
  }
  take(); // ')'
  if (count == 1) {
    // range(n) means range(0, n); the synthesized 0 points at the bound so
    // that errors about it land somewhere sensible.
    stmt->lo = std::make_unique<Expr>(Expr::IntLit, bounds[0]->loc);
    stmt->hi = std::move(bounds[0]);
  } else {
    stmt->lo = std::move(bounds[0]);
    stmt->hi = std::move(bounds[1]);
    stmt->step = std::move(bounds[2]);
  }
  if (!parseBlock(stmt->body))
    return nullptr;
  return stmt;
}

StmtPtr Parser::parseIf() {
  DepthGuard guard(*this);
  if (!checkDepth())
    return nullptr;
  auto stmt = std::make_unique<Stmt>(Stmt::If, take().loc);
  if (!(stmt->value = parseExpr()))
    return nullptr;
  if (!parseBlock(stmt->body))
    return nullptr;
  if (!consumeIf(TokenKind::KwElse))
    return stmt;
  stmt->hasElse = true;
  if (at(TokenKind::KwIf)) {
    StmtPtr elseIf = parseIf();
    if (!elseIf)
      return nullptr;
    stmt->elseBody.push_back(std::move(elseIf));
    return stmt;
  }
  if (!at(TokenKind::LBrace))
    return expectedError("'{' or 'if' after 'else'"), nullptr;
  if (!parseBlock(stmt->elseBody))
    return nullptr;
  return stmt;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// Binary operators by precedence level, loosest first.
struct BinaryOp {
  TokenKind kind;
  const char *spelling;
};
static const std::vector<std::vector<BinaryOp>> &binaryLevels() {
  static const std::vector<std::vector<BinaryOp>> levels = {
      {{TokenKind::PipePipe, "||"}},
      {{TokenKind::AmpAmp, "&&"}},
      {{TokenKind::Pipe, "|"}},
      {{TokenKind::Caret, "^"}},
      {{TokenKind::Amp, "&"}},
      {{TokenKind::EqualEqual, "=="}, {TokenKind::NotEqual, "!="}},
      {{TokenKind::Less, "<"},
       {TokenKind::LessEqual, "<="},
       {TokenKind::Greater, ">"},
       {TokenKind::GreaterEqual, ">="}},
      {{TokenKind::LessLess, "<<"}, {TokenKind::GreaterGreater, ">>"}},
      {{TokenKind::Plus, "+"}, {TokenKind::Minus, "-"}},
      {{TokenKind::Star, "*"},
       {TokenKind::Slash, "/"},
       {TokenKind::SlashSlash, "//"},
       {TokenKind::Percent, "%"}},
  };
  return levels;
}

ExprPtr Parser::parseExpr() {
  DepthGuard guard(*this);
  if (!checkDepth())
    return nullptr;
  return parseBinary(0);
}

ExprPtr Parser::parseBinary(int level) {
  const auto &levels = binaryLevels();
  if (level == int(levels.size()))
    return parseUnary();
  ExprPtr lhs = parseBinary(level + 1);
  if (!lhs)
    return nullptr;
  // Each operator in a left-associative chain adds one level to the tree, so
  // it counts against the height budget until the chain is done.
  int chain = 0;
  ExprPtr result;
  while (true) {
    const BinaryOp *match = nullptr;
    for (const BinaryOp &op : levels[level])
      if (at(op.kind))
        match = &op;
    if (!match)
      break;
    ++chain;
    ++height;
    if (!checkDepth())
      break;
    Token opTok = take();
    if (opTok.is(TokenKind::SlashSlash))
      lastFloorDiv = opTok.loc;
    ExprPtr rhs = parseBinary(level + 1);
    if (!rhs)
      break;
    auto node = std::make_unique<Expr>(Expr::Binary, opTok.loc);
    node->op = match->spelling;
    node->operands.push_back(std::move(lhs));
    node->operands.push_back(std::move(rhs));
    lhs = std::move(node);
  }
  height -= chain;
  if (failed)
    return nullptr;
  return lhs;
}

ExprPtr Parser::parseUnary() {
  const char *op = nullptr;
  if (at(TokenKind::Minus))
    op = "-";
  else if (at(TokenKind::Bang))
    op = "!";
  else if (at(TokenKind::Tilde))
    op = "~";
  if (!op)
    return parsePower();

  DepthGuard guard(*this);
  if (!checkDepth())
    return nullptr;
  Loc loc = take().loc;
  ExprPtr operand = parseUnary();
  if (!operand)
    return nullptr;
  // Fold `-1` into a literal so that constants such as `const K: i32 = -1`
  // stay literals. Literals never exceed INT64_MAX, so negation is safe.
  if (*op == '-' && operand->kind == Expr::IntLit) {
    operand->intValue = -operand->intValue;
    operand->loc = loc;
    return operand;
  }
  if (*op == '-' && operand->kind == Expr::FloatLit) {
    operand->floatValue = -operand->floatValue;
    operand->loc = loc;
    return operand;
  }
  auto node = std::make_unique<Expr>(Expr::Unary, loc);
  node->op = op;
  node->operands.push_back(std::move(operand));
  return node;
}

/// power := postfix ('**' unary)?: as in Python, `**` binds tighter than a
/// unary operator on its left (`-x ** 2` is `-(x ** 2)`) and looser than
/// one on its right (`2 ** -1`), and it groups to the right
/// (`2 ** 3 ** 2` is `2 ** 9`).
ExprPtr Parser::parsePower() {
  ExprPtr base = parsePostfix();
  if (!base || !at(TokenKind::StarStar))
    return base;
  DepthGuard guard(*this);
  if (!checkDepth())
    return nullptr;
  Token opTok = take();
  ExprPtr exponent = parseUnary();
  if (!exponent)
    return nullptr;
  auto node = std::make_unique<Expr>(Expr::Binary, opTok.loc);
  node->op = "**";
  node->operands.push_back(std::move(base));
  node->operands.push_back(std::move(exponent));
  return node;
}

ExprPtr Parser::parsePostfix() {
  ExprPtr expr = parsePrimary();
  if (!expr)
    return nullptr;
  // Each postfix step wraps the tree once more, so it counts as height.
  int chain = 0;
  while (true) {
    if (at(TokenKind::LParen)) {
      if (expr->kind != Expr::Name)
        return error("only named functions can be called"), nullptr;
      Loc open = take().loc;
      auto call = std::make_unique<Expr>(Expr::Call, expr->loc);
      call->name = expr->name;
      if (!parseArgs(*call, open))
        return nullptr;
      expr = std::move(call);
      continue;
    }
    if (!at(TokenKind::Dot) && !at(TokenKind::LBracket))
      break;
    ++chain;
    ++height;
    if (!checkDepth())
      break;
    if (at(TokenKind::Dot)) {
      take();
      Token name;
      if (!expectName("a method name after '.'", name))
        break;
      // `x.T` is `trans(x)`, NumPy's and Triton's spelling of a transpose;
      // `x.shape` is `shape(x)`, the tile's shape as a constant array.
      if ((name.text == "T" || name.text == "shape") &&
          !at(TokenKind::LParen)) {
        auto call = std::make_unique<Expr>(Expr::Call, name.loc);
        call->name = name.text == "T" ? "trans" : "shape";
        call->isMethod = true;
        call->operands.push_back(std::move(expr));
        expr = std::move(call);
        continue;
      }
      if (!at(TokenKind::LParen)) {
        expectedError("'(' after method name '" + name.text + "'");
        break;
      }
      Loc open = take().loc;
      auto call = std::make_unique<Expr>(Expr::Call, name.loc);
      call->name = name.text;
      call->isMethod = true;
      call->operands.push_back(std::move(expr));
      if (!parseArgs(*call, open))
        break;
      expr = std::move(call);
    } else {
      Token lbracket = take();
      auto index = std::make_unique<Expr>(Expr::Index, lbracket.loc);
      index->operands.push_back(std::move(expr));
      if (!parseSubscript(*index))
        break;
      expr = std::move(index);
    }
  }
  height -= chain;
  if (failed)
    return nullptr;
  return expr;
}

bool Parser::parseArgs(Expr &call, Loc open) {
  // The '(' has been consumed.
  std::map<std::string, Loc> seen;
  while (!at(TokenKind::RParen)) {
    if (at(TokenKind::Identifier) && peek(1).is(TokenKind::Equal)) {
      Token name = take();
      take(); // '='
      if (!seen.emplace(name.text, name.loc).second)
        return errorAt(name, "duplicate keyword argument '" + name.text + "'");
      ast::KwArg kw;
      kw.name = name.text;
      kw.loc = name.loc;
      if (!(kw.value = parseExpr()))
        return false;
      call.kwargs.push_back(std::move(kw));
    } else {
      if (!call.kwargs.empty())
        return error("positional argument after keyword argument");
      ExprPtr arg = parseExpr();
      if (!arg)
        return false;
      call.operands.push_back(std::move(arg));
    }
    if (!consumeIf(TokenKind::Comma) && !at(TokenKind::RParen))
      return expectedError("',' or ')' to close the call " + opened(open));
  }
  take(); // ')'
  return true;
}

bool Parser::parseSubscript(Expr &index) {
  // The '[' has been consumed.
  while (true) {
    if (at(TokenKind::Colon))
      index.index.push_back(ast::IndexEntry::Keep);
    else if (at(TokenKind::KwNone))
      index.index.push_back(ast::IndexEntry::NewAxis);
    else {
      // An index into a constant array; MLIRGen checks it is one.
      ExprPtr value = parseExpr();
      if (!value)
        return false;
      index.index.push_back(ast::IndexEntry::Value);
      index.operands.push_back(std::move(value));
    }
    if (index.index.back() != ast::IndexEntry::Value)
      take();
    if (consumeIf(TokenKind::Comma))
      continue;
    if (consumeIf(TokenKind::RBracket))
      return true;
    return expectedError("',' or ']' to close the subscript " +
                         opened(index.loc));
  }
}

ExprPtr Parser::parseTupleRest(Loc loc, ExprPtr first, TokenKind close) {
  auto t = std::make_unique<Expr>(Expr::Tuple, loc);
  t->operands.push_back(std::move(first));
  while (consumeIf(TokenKind::Comma)) {
    if (at(close))
      break;
    ExprPtr e = parseExpr();
    if (!e)
      return nullptr;
    t->operands.push_back(std::move(e));
  }
  if (close == TokenKind::RParen &&
      !expect(TokenKind::RParen, ")", "to close the tuple " + opened(loc)))
    return nullptr;
  return t;
}

bool Parser::parseTargets(Stmt &stmt) {
  take(); // '('
  while (true) {
    Token name;
    if (!expectName("a name to unpack into", name))
      return false;
    stmt.names.push_back(name.text);
    stmt.nameLocs.push_back(name.loc);
    if (consumeIf(TokenKind::RParen))
      return true;
    if (!expect(TokenKind::Comma, ",", "or ')' between the names"))
      return false;
  }
}

/// Whether the tokens from here read `( name, name, ... ) =`: a tuple
/// assignment rather than an expression statement.
bool Parser::atTupleAssign() {
  size_t i = 0;
  if (!peek(i++).is(TokenKind::LParen))
    return false;
  while (true) {
    if (!peek(i++).is(TokenKind::Identifier))
      return false;
    if (peek(i).is(TokenKind::RParen))
      return peek(i + 1).is(TokenKind::Equal);
    if (!peek(i++).is(TokenKind::Comma))
      return false;
  }
}

ExprPtr Parser::parsePrimary() {
  const Token &tok = peek();
  switch (tok.kind) {
  case TokenKind::IntLiteral: {
    auto e = std::make_unique<Expr>(Expr::IntLit, tok.loc);
    e->intValue = tok.intValue;
    take();
    return e;
  }
  case TokenKind::FloatLiteral: {
    auto e = std::make_unique<Expr>(Expr::FloatLit, tok.loc);
    e->floatValue = tok.floatValue;
    take();
    return e;
  }
  case TokenKind::KwTrue:
  case TokenKind::KwFalse: {
    auto e = std::make_unique<Expr>(Expr::BoolLit, tok.loc);
    e->intValue = tok.kind == TokenKind::KwTrue;
    take();
    return e;
  }
  case TokenKind::Identifier: {
    DType dtype;
    ExprPtr e;
    // A dtype name is a value only when not called: `f32(x)` stays a Call so
    // that the semantic layer can reject it with a precise message.
    if (parseDType(tok.text, dtype) && !peek(1).is(TokenKind::LParen)) {
      e = std::make_unique<Expr>(Expr::DTypeRef, tok.loc);
      e->dtype = dtype;
    } else {
      e = std::make_unique<Expr>(Expr::Name, tok.loc);
    }
    e->name = tok.text;
    take();
    return e;
  }
  case TokenKind::LParen: {
    Loc loc = take().loc;
    ExprPtr e = parseExpr();
    if (!e)
      return nullptr;
    if (at(TokenKind::Comma)) // `(a, b)`, `(a,)`: a tuple.
      return parseTupleRest(loc, std::move(e), TokenKind::RParen);
    if (!expect(TokenKind::RParen, ")", "to close the '(' " + opened(loc)))
      return nullptr;
    return e;
  }
  case TokenKind::LBracket: {
    auto list = std::make_unique<Expr>(Expr::List, take().loc);
    while (!at(TokenKind::RBracket)) {
      ExprPtr e = parseExpr();
      if (!e)
        return nullptr;
      list->operands.push_back(std::move(e));
      if (!consumeIf(TokenKind::Comma) && !at(TokenKind::RBracket))
        return expectedError("',' or ']' to close the list " +
                             opened(list->loc)),
               nullptr;
    }
    take(); // ']'
    return list;
  }
  case TokenKind::StringLiteral: {
    auto e = std::make_unique<Expr>(Expr::String, tok.loc);
    e->name = tok.text;
    take();
    return e;
  }
  case TokenKind::KwNone:
    return error("'None' is only allowed in subscripts"), nullptr;
  default:
    return expectedError("an expression"), nullptr;
  }
}

} // namespace

bool parseModule(const std::string &source, Diagnostics &diags,
                 ast::Module &module, int fileId) {
  Parser parser(source, diags, fileId);
  return parser.parseFile(module);
}

std::string syntaxErrorsFor(const ast::Module &module,
                            const std::string &kernel) {
  if (module.badItems.empty())
    return "";
  // The fns the kernel reaches through calls (names of builtins and of
  // missing fns included: they match no bad item).
  std::set<std::string> reached;
  auto scan = [&](const ast::Block &body, std::vector<std::string> &work) {
    ast::forEachExpr(body, [&](const ast::Expr &e) {
      if (e.kind == ast::Expr::Call && reached.insert(e.name).second)
        work.push_back(e.name);
    });
  };
  std::vector<std::string> work;
  for (const ast::Kernel &k : module.kernels)
    if (k.name == kernel)
      scan(k.body, work);
  while (!work.empty()) {
    std::string name = work.back();
    work.pop_back();
    for (const ast::Function &f : module.functions)
      if (f.name == name)
        scan(f.body, work);
  }
  std::string text;
  for (const ast::BadItem &b : module.badItems) {
    bool stops = kernel.empty() || b.kind == ast::BadItem::FileLevel ||
                 (b.kind == ast::BadItem::Kernel && b.name == kernel) ||
                 (b.kind == ast::BadItem::Function && reached.count(b.name));
    if (stops)
      text += b.diagnostics;
  }
  return text;
}

bool parseDType(const std::string &name, DType &dtype) {
  static const std::pair<const char *, DType> table[] = {
      {"bool", DType::I1}, {"i1", DType::I1},     {"i8", DType::I8},
      {"i16", DType::I16}, {"i32", DType::I32},   {"i64", DType::I64},
      {"f16", DType::F16}, {"bf16", DType::BF16}, {"f32", DType::F32},
      {"f64", DType::F64}, {"u8", DType::U8},     {"u16", DType::U16},
      {"u32", DType::U32}, {"u64", DType::U64},
      {"f8e4m3", DType::F8E4M3}, {"f8e5m2", DType::F8E5M2},
      // Triton's names for the same two types.
      {"float8e4nv", DType::F8E4M3}, {"float8e5", DType::F8E5M2},
  };
  for (const auto &entry : table) {
    if (name == entry.first) {
      dtype = entry.second;
      return true;
    }
  }
  return false;
}

} // namespace sparsetile
