//===- ParserTest.cpp - Tests of the tile DSL lexer and parser ------------===//
//
// Checks the AST the parser builds for valid kernels (structure, precedence,
// printing), one test per front-end error message (exact location, message,
// source line and caret), and that malformed input of every kind fails
// cleanly: no crash, hang or stack overflow.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Parser.h"
#include "Frontend/AST.h"
#include "Frontend/Diagnostics.h"
#include "Frontend/Lexer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

using namespace sparsetile;

namespace {

/// Parses `source`, expecting success; prints diagnostics otherwise.
ast::Module parseOk(const std::string &source) {
  Diagnostics diags("t.tile", source);
  ast::Module module;
  bool ok = parseModule(source, diags, module);
  EXPECT_TRUE(ok) << diags.str();
  EXPECT_EQ(diags.str(), "");
  return module;
}

/// Parses `source`, expecting failure; returns the diagnostics text.
std::string parseFail(const std::string &source) {
  Diagnostics diags("t.tile", source);
  ast::Module module;
  EXPECT_FALSE(parseModule(source, diags, module));
  EXPECT_EQ(diags.errors(), 1);
  return diags.str();
}

/// The exact text Diagnostics produces for one error: location, message,
/// the source line and a caret under column `col`.
std::string expected(int line, int col, const std::string &message,
                     const std::string &sourceLine) {
  return "t.tile:" + std::to_string(line) + ":" + std::to_string(col) +
         ": error: " + message + "\n  " + sourceLine + "\n  " +
         std::string(col - 1, ' ') + "^\n";
}

/// Parses a single-kernel body `stmts` and returns its statements' AST text.
std::string printBody(const std::string &stmts) {
  ast::Module m =
      parseOk("kernel k(a: i32, b: i32, c: i32) {\n" + stmts + "\n}\n");
  if (m.kernels.size() != 1)
    return "";
  std::string text = ast::print(m.kernels[0]);
  // Drop the kernel and parameter lines.
  size_t pos = 0;
  for (int i = 0; i < 4; ++i)
    pos = text.find('\n', pos) + 1;
  return text.substr(pos);
}

const char *kAddKernel = R"(# Adds two vectors.
@num_warps(4)
kernel add(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = offs < n;   # mask
  store(out + offs, load(x + offs, mask=m, other=0.0) + load(y + offs, mask=m), mask=m);
}
)";

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

std::vector<Token> lexAll(const std::string &source) {
  Lexer lexer(source);
  std::vector<Token> tokens;
  while (true) {
    tokens.push_back(lexer.next());
    if (tokens.back().is(TokenKind::Eof) || tokens.size() > 1000)
      break;
  }
  return tokens;
}

TEST(Lexer, NumbersAndLocations) {
  auto toks = lexAll("42 0xFF 1.0 .5 1e-6 2.5E+3 3. 9223372036854775807\n"
                     "  x_1 <<= #c\n#c\n>=");
  ASSERT_EQ(toks.size(), 13u);
  EXPECT_EQ(toks[0].kind, TokenKind::IntLiteral);
  EXPECT_EQ(toks[0].intValue, 42);
  EXPECT_EQ(toks[1].intValue, 255);
  EXPECT_EQ(toks[2].kind, TokenKind::FloatLiteral);
  EXPECT_EQ(toks[2].floatValue, 1.0);
  EXPECT_EQ(toks[3].floatValue, 0.5);
  EXPECT_EQ(toks[4].floatValue, 1e-6);
  EXPECT_EQ(toks[5].floatValue, 2500.0);
  EXPECT_EQ(toks[6].kind, TokenKind::FloatLiteral);
  EXPECT_EQ(toks[6].floatValue, 3.0);
  EXPECT_EQ(toks[7].intValue, INT64_MAX);
  EXPECT_EQ(toks[8].kind, TokenKind::Identifier);
  EXPECT_EQ(toks[8].text, "x_1");
  EXPECT_EQ(toks[8].loc.line, 2);
  EXPECT_EQ(toks[8].loc.col, 3);
  EXPECT_EQ(toks[9].kind, TokenKind::LessLess);
  EXPECT_EQ(toks[10].kind, TokenKind::Equal);
  EXPECT_EQ(toks[11].kind, TokenKind::GreaterEqual);
  EXPECT_EQ(toks[11].loc.line, 4);
  EXPECT_EQ(toks[11].loc.col, 1);
  EXPECT_EQ(toks[12].kind, TokenKind::Eof);
}

TEST(Lexer, KeywordsAndOperators) {
  auto toks = lexAll("kernel let const for in range if else return true "
                     "false None += -= *= /= && || != == ! ~ & | ^ % @");
  TokenKind kinds[] = {
      TokenKind::KwKernel,   TokenKind::KwLet,      TokenKind::KwConst,
      TokenKind::KwFor,      TokenKind::KwIn,       TokenKind::KwRange,
      TokenKind::KwIf,       TokenKind::KwElse,     TokenKind::KwReturn,
      TokenKind::KwTrue,     TokenKind::KwFalse,    TokenKind::KwNone,
      TokenKind::PlusEqual,  TokenKind::MinusEqual, TokenKind::StarEqual,
      TokenKind::SlashEqual, TokenKind::AmpAmp,     TokenKind::PipePipe,
      TokenKind::NotEqual,   TokenKind::EqualEqual, TokenKind::Bang,
      TokenKind::Tilde,      TokenKind::Amp,        TokenKind::Pipe,
      TokenKind::Caret,      TokenKind::Percent,    TokenKind::At,
      TokenKind::Eof};
  ASSERT_EQ(toks.size(), sizeof(kinds) / sizeof(kinds[0]));
  for (size_t i = 0; i < toks.size(); ++i)
    EXPECT_EQ(toks[i].kind, kinds[i]) << i;
}

//===----------------------------------------------------------------------===//
// Successful parses
//===----------------------------------------------------------------------===//

TEST(Parser, AddKernel) {
  ast::Module m = parseOk(kAddKernel);
  ASSERT_EQ(m.kernels.size(), 1u);
  const ast::Kernel &k = m.kernels[0];
  EXPECT_EQ(k.name, "add");
  EXPECT_EQ(k.loc.line, 3);
  EXPECT_EQ(k.loc.col, 8);
  ASSERT_EQ(k.attrs.size(), 1u);
  EXPECT_EQ(k.attrs[0].name, "num_warps");
  EXPECT_EQ(k.attrs[0].value, 4);
  ASSERT_EQ(k.params.size(), 5u);
  EXPECT_TRUE(k.params[0].isPointer);
  EXPECT_EQ(k.params[0].dtype, DType::F32);
  EXPECT_FALSE(k.params[3].isPointer);
  EXPECT_EQ(k.params[3].dtype, DType::I32);
  EXPECT_TRUE(k.params[4].isConst);
  ASSERT_TRUE(k.params[4].defaultValue);
  EXPECT_EQ(k.params[4].defaultValue->intValue, 1024);
  ASSERT_EQ(k.body.size(), 3u);
  EXPECT_EQ(k.body[0]->kind, ast::Stmt::Let);
  EXPECT_EQ(k.body[2]->kind, ast::Stmt::ExprStmt);

  EXPECT_EQ(ast::print(m), R"(kernel add @num_warps(4)
  param x: *f32
  param y: *f32
  param out: *f32
  param n: i32
  param const BLOCK: i32 = 1024
  let offs
    binary +
      binary *
        call program_id
          int 0
        name BLOCK
      call arange
        int 0
        name BLOCK
  let m
    binary <
      name offs
      name n
  expr
    call store
      binary +
        name out
        name offs
      binary +
        call load
          binary +
            name x
            name offs
          kwarg mask
            name m
          kwarg other
            float 0.0
        call load
          binary +
            name y
            name offs
          kwarg mask
            name m
      kwarg mask
        name m
)");
}

TEST(Parser, Precedence) {
  EXPECT_EQ(printBody("let r = a + b * c;"), R"(  let r
    binary +
      name a
      binary *
        name b
        name c
)");
  // Left associativity.
  EXPECT_EQ(printBody("let r = a - b - c;"), R"(  let r
    binary -
      binary -
        name a
        name b
      name c
)");
  // Every level, loosest first, written loosest-last so that each operator
  // must bind tighter than the one to its left.
  EXPECT_EQ(
      printBody("let r = a || a && a | a ^ a & a == a < a << a + a * !a;"),
      R"(  let r
    binary ||
      name a
      binary &&
        name a
        binary |
          name a
          binary ^
            name a
            binary &
              name a
              binary ==
                name a
                binary <
                  name a
                  binary <<
                    name a
                    binary +
                      name a
                      binary *
                        name a
                        unary !
                          name a
)");
  // Parentheses override; unary binds tighter than binary, looser than
  // postfix.
  EXPECT_EQ(printBody("let r = (a + b) * -c.f() % ~c;"), R"(  let r
    binary %
      binary *
        binary +
          name a
          name b
        unary -
          method f
            name c
      unary ~
        name c
)");
  EXPECT_EQ(printBody("let r = a != b >= c >> a;"), R"(  let r
    binary !=
      name a
      binary >=
        name b
        binary >>
          name c
          name a
)");
}

TEST(Parser, MethodCallsAndSubscripts) {
  ast::Module m =
      parseOk("kernel k(x: *f16) { let y = x.to(f32)[:, None].sum(axis=1); }");
  const ast::Expr &sum = *m.kernels[0].body[0]->value;
  EXPECT_EQ(sum.kind, ast::Expr::Call);
  EXPECT_EQ(sum.name, "sum");
  EXPECT_TRUE(sum.isMethod);
  ASSERT_EQ(sum.operands.size(), 1u);
  ASSERT_EQ(sum.kwargs.size(), 1u);
  EXPECT_EQ(sum.kwargs[0].name, "axis");
  const ast::Expr &index = *sum.operands[0];
  EXPECT_EQ(index.kind, ast::Expr::Index);
  ASSERT_EQ(index.index.size(), 2u);
  EXPECT_EQ(index.index[0], ast::IndexEntry::Keep);
  EXPECT_EQ(index.index[1], ast::IndexEntry::NewAxis);
  const ast::Expr &to = *index.operands[0];
  EXPECT_EQ(to.name, "to");
  ASSERT_EQ(to.operands.size(), 2u);
  EXPECT_EQ(to.operands[0]->kind, ast::Expr::Name);
  EXPECT_EQ(to.operands[1]->kind, ast::Expr::DTypeRef);
  EXPECT_EQ(to.operands[1]->dtype, DType::F32);
  EXPECT_EQ(ast::print(m), R"(kernel k
  param x: *f16
  let y
    method sum
      index [:, None]
        method to
          name x
          dtype f32
      kwarg axis
        int 1
)");
}

TEST(Parser, LiteralsAndLists) {
  EXPECT_EQ(printBody("let z = zeros([32, 64,], bf16);\n"
                      "let f = full([], 1024.0, f64) + 0.1 + 1e-6 + true + "
                      "false + -1 + -2.5 + 0x10;"),
            R"(  let z
    call zeros
      list
        int 32
        int 64
      dtype bf16
  let f
    binary +
      binary +
        binary +
          binary +
            binary +
              binary +
                binary +
                  call full
                    list
                    float 1024.0
                    dtype f64
                  float 0.1
                float 1e-06
              bool true
            bool false
          int -1
        float -2.5
      int 16
)");
}

TEST(Parser, Statements) {
  EXPECT_EQ(printBody("let s = 0;\n"
                      "for i in range(a) { s += i; }\n"
                      "for j in range(a, b) { s -= j; }\n"
                      "for j in range(a, b, 2,) { s *= j; s /= 2; s = 1; }\n"
                      "if s > 0 { return; } else if s < 0 { s = 0; } else { "
                      "s = 1; }\n"
                      "if a {}\n"
                      "store(c, s);"),
            R"(  let s
    int 0
  for i
    lo
      int 0
    hi
      name a
    body
      assign s +=
        name i
  for j
    lo
      name a
    hi
      name b
    body
      assign s -=
        name j
  for j
    lo
      name a
    hi
      name b
    step
      int 2
    body
      assign s *=
        name j
      assign s /=
        int 2
      assign s =
        int 1
  if
    binary >
      name s
      int 0
    then
      return
    else
      if
        binary <
          name s
          int 0
        then
          assign s =
            int 0
        else
          assign s =
            int 1
  if
    name a
    then
  expr
    call store
      name c
      name s
)");
  ast::Module m = parseOk("kernel k(n: i32) {\n  for i in range(n) {}\n"
                          "  if n {} else if n {}\n  n += 1;\n}");
  const ast::Stmt &loop = *m.kernels[0].body[0];
  ASSERT_TRUE(loop.lo);
  EXPECT_EQ(loop.lo->kind, ast::Expr::IntLit);
  EXPECT_EQ(loop.lo->intValue, 0);
  EXPECT_EQ(loop.lo->loc.line, 2);
  EXPECT_EQ(loop.lo->loc.col, 18);
  EXPECT_FALSE(loop.step);
  const ast::Stmt &ifs = *m.kernels[0].body[1];
  EXPECT_TRUE(ifs.hasElse);
  ASSERT_EQ(ifs.elseBody.size(), 1u);
  EXPECT_EQ(ifs.elseBody[0]->kind, ast::Stmt::If);
  EXPECT_FALSE(ifs.elseBody[0]->hasElse);
  const ast::Stmt &assign = *m.kernels[0].body[2];
  EXPECT_EQ(assign.kind, ast::Stmt::Assign);
  EXPECT_EQ(assign.op, "+");
  EXPECT_EQ(assign.name, "n");
  EXPECT_EQ(assign.loc.line, 4);
  EXPECT_EQ(assign.loc.col, 3);
}

TEST(Parser, ParamsAndAttributes) {
  ast::Module m = parseOk(
      "@num_warps(8) @unknown_attr(0x10)\n"
      "kernel k(const A: f32 = 0.5, const B: bool = true, const C: i64,\n"
      "         const D: i32 = BLOCK * 2, p: *bf16, q: i1,) {}\n"
      "kernel empty() {}\n");
  ASSERT_EQ(m.kernels.size(), 2u);
  const ast::Kernel &k = m.kernels[0];
  ASSERT_EQ(k.attrs.size(), 2u);
  EXPECT_EQ(k.attrs[1].name, "unknown_attr");
  EXPECT_EQ(k.attrs[1].value, 16);
  EXPECT_EQ(k.params[2].name, "C");
  EXPECT_FALSE(k.params[2].defaultValue);
  EXPECT_EQ(k.params[2].dtype, DType::I64);
  EXPECT_EQ(k.params[5].dtype, DType::I1);
  EXPECT_EQ(ast::print(m), R"(kernel k @num_warps(8) @unknown_attr(16)
  param const A: f32 = 0.5
  param const B: i1 = true
  param const C: i64
  param const D: i32 =
    binary *
      name BLOCK
      int 2
  param p: *bf16
  param q: i1
kernel empty
)");
}

TEST(Parser, ParseDType) {
  const std::pair<const char *, DType> cases[] = {
      {"bool", DType::I1}, {"i1", DType::I1},     {"i8", DType::I8},
      {"i16", DType::I16}, {"i32", DType::I32},   {"i64", DType::I64},
      {"f16", DType::F16}, {"bf16", DType::BF16}, {"f32", DType::F32},
      {"f64", DType::F64}};
  for (const auto &c : cases) {
    DType t = DType::I8;
    EXPECT_TRUE(parseDType(c.first, t)) << c.first;
    EXPECT_EQ(t, c.second) << c.first;
  }
  DType t;
  EXPECT_FALSE(parseDType("f8", t));
  EXPECT_FALSE(parseDType("", t));
  EXPECT_FALSE(parseDType("F32", t));
}

TEST(Parser, EmptyFileAndCommentsOnly) {
  EXPECT_TRUE(parseOk("").kernels.empty());
  EXPECT_TRUE(parseOk("# nothing\n# here\n").kernels.empty());
}

TEST(Parser, DeepButLegalNesting) {
  std::string expr = std::string(50, '(') + "a" + std::string(50, ')');
  parseOk("kernel k(a: i32) { let x = " + expr + "; }");
  std::string chain = "a";
  for (int i = 0; i < 100; ++i)
    chain += " + a";
  parseOk("kernel k(a: i32) { let x = " + chain + "; }");
}

//===----------------------------------------------------------------------===//
// Errors: one test per message, checking location, text, line and caret.
//===----------------------------------------------------------------------===//

TEST(Errors, FullFormat) {
  EXPECT_EQ(parseFail("kernel k() {\n  let x = 1\n}\n"),
            "t.tile:3:1: error: expected ';' after the statement, found '}'\n"
            "  }\n"
            "  ^\n");
  EXPECT_EQ(parseFail("kernel k() {\n\tlet x = $;\n}"),
            "t.tile:2:10: error: unexpected character '$'\n"
            "   let x = $;\n"
            "           ^\n");
}

TEST(Errors, UnexpectedCharacter) {
  EXPECT_EQ(parseFail("kernel k() { let x = a $ b; }"),
            expected(1, 24, "unexpected character '$'",
                     "kernel k() { let x = a $ b; }"));
  EXPECT_EQ(
      parseFail("kernel k() {\x01}"),
      expected(1, 13, "unexpected character '\\x01'", "kernel k() {\x01}"));
}

TEST(Errors, LexerErrorBeatsParserError) {
  // The '`' is where the parser would complain anyway; the lexer's message
  // says more than "expected an expression".
  EXPECT_EQ(
      parseFail("kernel k() { let x = `; }"),
      expected(1, 22, "unexpected character '`'", "kernel k() { let x = `; }"));
  // A parse error before a bad character is reported, not the character.
  EXPECT_EQ(parseFail("kernel k() { let = $; }"),
            expected(1, 18, "expected a variable name after 'let', found '='",
                     "kernel k() { let = $; }"));
}

TEST(Errors, IntegerTooLarge) {
  EXPECT_EQ(parseFail("kernel k() { let x = 9223372036854775808; }"),
            expected(1, 22,
                     "integer literal '9223372036854775808' does not fit in "
                     "64 bits",
                     "kernel k() { let x = 9223372036854775808; }"));
  EXPECT_EQ(parseFail("kernel k() { let x = 0x8000000000000000; }"),
            expected(1, 22,
                     "integer literal '0x8000000000000000' does not fit in "
                     "64 bits",
                     "kernel k() { let x = 0x8000000000000000; }"));
  parseOk("kernel k() { let x = 0x7FFFFFFFFFFFFFFF; }");
}

TEST(Errors, MissingHexDigits) {
  EXPECT_EQ(parseFail("kernel k() { let x = 0x; }"),
            expected(1, 22, "expected hex digits after '0x'",
                     "kernel k() { let x = 0x; }"));
}

TEST(Errors, MissingExponentDigits) {
  EXPECT_EQ(parseFail("kernel k() { let x = 1e+; }"),
            expected(1, 22, "expected digits in the exponent of '1e+'",
                     "kernel k() { let x = 1e+; }"));
}

TEST(Errors, InvalidCharacterInNumber) {
  EXPECT_EQ(parseFail("kernel k() { let x = 12ab; }"),
            expected(1, 22, "invalid character 'a' in number '12'",
                     "kernel k() { let x = 12ab; }"));
}

TEST(Errors, FloatOutOfRange) {
  EXPECT_EQ(parseFail("kernel k() { let x = 1e999; }"),
            expected(1, 22, "float literal '1e999' is out of range",
                     "kernel k() { let x = 1e999; }"));
}

TEST(Errors, ExpectedKernel) {
  EXPECT_EQ(
      parseFail("let x = 1;"),
      expected(1, 1, "expected 'kernel' or '@', found 'let'", "let x = 1;"));
}

TEST(Errors, ExpectedKernelAfterAttributes) {
  EXPECT_EQ(parseFail("@num_warps(4)\n"),
            expected(2, 1,
                     "expected 'kernel' after attributes, found end of file",
                     ""));
}

TEST(Errors, ExpectedAttributeName) {
  EXPECT_EQ(parseFail("@(4) kernel k() {}"),
            expected(1, 2, "expected an attribute name after '@', found '('",
                     "@(4) kernel k() {}"));
}

TEST(Errors, ExpectedAttributeParen) {
  EXPECT_EQ(parseFail("@num_warps 4 kernel k() {}"),
            expected(1, 12, "expected '(' after attribute name, found '4'",
                     "@num_warps 4 kernel k() {}"));
}

TEST(Errors, ExpectedAttributeValue) {
  EXPECT_EQ(parseFail("@num_warps(,) kernel k() {}"),
            expected(1, 12,
                     "expected an integer attribute value or a constant name, "
                     "found ','",
                     "@num_warps(,) kernel k() {}"));
}

TEST(Errors, ExpectedAttributeClose) {
  EXPECT_EQ(parseFail("@num_warps(4 kernel k() {}"),
            expected(1, 14,
                     "expected ')' after attribute value, found 'kernel'",
                     "@num_warps(4 kernel k() {}"));
}

TEST(Errors, ExpectedKernelName) {
  EXPECT_EQ(parseFail("kernel (x: i32) {}"),
            expected(1, 8, "expected a kernel name after 'kernel', found '('",
                     "kernel (x: i32) {}"));
}

TEST(Errors, ExpectedParamList) {
  EXPECT_EQ(parseFail("kernel k {}"),
            expected(1, 10, "expected '(' after kernel name, found '{'",
                     "kernel k {}"));
}

TEST(Errors, DuplicateKernel) {
  EXPECT_EQ(parseFail("kernel k() {}\nkernel k() {}\n"),
            expected(2, 8, "duplicate kernel 'k'", "kernel k() {}") +
                "t.tile:1:8: note: previous definition is here\n"
                "  kernel k() {}\n"
                "         ^\n");
}

TEST(Errors, DuplicateParameter) {
  EXPECT_EQ(parseFail("kernel k(x: i32, const x: i32) {}"),
            expected(1, 24, "duplicate parameter 'x'",
                     "kernel k(x: i32, const x: i32) {}") +
                "t.tile:1:10: note: previous parameter is here\n"
                "  kernel k(x: i32, const x: i32) {}\n"
                "           ^\n");
}

TEST(Errors, ExpectedParamName) {
  EXPECT_EQ(parseFail("kernel k(const 3: i32) {}"),
            expected(1, 16, "expected a parameter name, found '3'",
                     "kernel k(const 3: i32) {}"));
}

TEST(Errors, ExpectedParamColon) {
  EXPECT_EQ(parseFail("kernel k(x i32) {}"),
            expected(1, 12, "expected ':' after parameter name, found 'i32'",
                     "kernel k(x i32) {}"));
}

TEST(Errors, ConstPointer) {
  EXPECT_EQ(parseFail("kernel k(const x: *f32) {}"),
            expected(1, 19, "a const parameter cannot be a pointer",
                     "kernel k(const x: *f32) {}"));
}

TEST(Errors, ExpectedDType) {
  // A name that is not a dtype parses as a type parameter (`x: *T`), which
  // MLIRGen resolves; a const parameter has no such option.
  EXPECT_EQ(parseFail("kernel k(const N: float) {}"),
            expected(1, 19,
                     "expected a dtype (bool, i1, i8, i16, i32, i64, u8, u16, u32, "
                            "u64, f16, "
                     "bf16, f32, f64, f8e4m3, f8e5m2), found 'float'",
                     "kernel k(const N: float) {}"));
}

TEST(Errors, DefaultOnNonConst) {
  EXPECT_EQ(parseFail("kernel k(n: i32 = 4) {}"),
            expected(1, 17, "only const parameters can have a default value",
                     "kernel k(n: i32 = 4) {}"));
}

TEST(Errors, ExpectedParamSeparator) {
  EXPECT_EQ(parseFail("kernel k(x: i32 y: i32) {}"),
            expected(1, 17, "expected ',' or ')' after parameter, found 'y'",
                     "kernel k(x: i32 y: i32) {}"));
}

TEST(Errors, ExpectedBlock) {
  EXPECT_EQ(parseFail("kernel k() let"),
            expected(1, 12, "expected '{' to open a block, found 'let'",
                     "kernel k() let"));
}

TEST(Errors, UnclosedBlock) {
  EXPECT_EQ(
      parseFail("kernel k() {\n  return;\n"),
      expected(3, 1, "expected '}' to close the block opened at 1:12, found end of file", ""));
}

TEST(Errors, ExpectedLetName) {
  EXPECT_EQ(parseFail("kernel k() { let 1 = 2; }"),
            expected(1, 18, "expected a variable name after 'let', found '1'",
                     "kernel k() { let 1 = 2; }"));
}

TEST(Errors, ExpectedLetEquals) {
  EXPECT_EQ(parseFail("kernel k() { let x += 2; }"),
            expected(1, 20, "expected '=' after variable name, found '+='",
                     "kernel k() { let x += 2; }"));
}

TEST(Errors, ExpectedSemicolon) {
  EXPECT_EQ(parseFail("kernel k() { let x = 1 let y = 2; }"),
            expected(1, 24, "expected ';' after the statement, found 'let'",
                     "kernel k() { let x = 1 let y = 2; }"));
}

TEST(Errors, ExpectedSemicolonAfterReturn) {
  // `return value;` parses (functions return values; MLIRGen rejects it in
  // a kernel), so the error is after the value.
  EXPECT_EQ(parseFail("kernel k() { return 1 2; }"),
            expected(1, 23, "expected ';' after 'return', found '2'",
                     "kernel k() { return 1 2; }"));
}

TEST(Errors, ExpectedStatement) {
  EXPECT_EQ(
      parseFail("kernel k() { ; }"),
      expected(1, 14, "expected a statement, found ';'", "kernel k() { ; }"));
}

TEST(Errors, ExpectedLoopVariable) {
  EXPECT_EQ(parseFail("kernel k() { for in range(4) {} }"),
            expected(1, 18, "expected a loop variable after 'for', found 'in'",
                     "kernel k() { for in range(4) {} }"));
}

TEST(Errors, ExpectedIn) {
  EXPECT_EQ(parseFail("kernel k() { for i range(4) {} }"),
            expected(1, 20, "expected 'in' after loop variable, found 'range'",
                     "kernel k() { for i range(4) {} }"));
}

TEST(Errors, ExpectedRange) {
  EXPECT_EQ(parseFail("kernel k() { for i in 4 {} }"),
            expected(1, 23,
                     "expected 'range' or 'static_range' after 'in', found '4'",
                     "kernel k() { for i in 4 {} }"));
}

TEST(Errors, ExpectedRangeParen) {
  EXPECT_EQ(parseFail("kernel k() { for i in range 4 {} }"),
            expected(1, 29, "expected '(' after 'range', found '4'",
                     "kernel k() { for i in range 4 {} }"));
}

TEST(Errors, TooManyRangeArguments) {
  EXPECT_EQ(parseFail("kernel k() { for i in range(0, 8, 2, 1) {} }"),
            expected(1, 38, "range() takes at most 3 arguments",
                     "kernel k() { for i in range(0, 8, 2, 1) {} }"));
}

TEST(Errors, ExpectedRangeSeparator) {
  EXPECT_EQ(parseFail("kernel k() { for i in range(0 8) {} }"),
            expected(1, 31, "expected ',' or ')' in range(), found '8'",
                     "kernel k() { for i in range(0 8) {} }"));
}

TEST(Errors, ExpectedElseBody) {
  EXPECT_EQ(parseFail("kernel k(c: bool) { if c {} else return; }"),
            expected(1, 34, "expected '{' or 'if' after 'else', found 'return'",
                     "kernel k(c: bool) { if c {} else return; }"));
}

TEST(Errors, NestingTooDeep) {
  std::string deep = std::string(250, '(') + "1" + std::string(250, ')');
  std::string source = "kernel k() { let x = " + deep + "; }";
  // parseExpr for `let`'s value is level 1, so the 200th '(' opens level 201.
  EXPECT_EQ(parseFail(source),
            expected(1, 22 + 199, "nesting too deep (more than 200 levels)",
                     source));

  std::string blocks = "kernel k(c: bool) {";
  for (int i = 0; i < 300; ++i)
    blocks += "if c {";
  std::string out = parseFail(blocks);
  EXPECT_NE(out.find("error: nesting too deep"), std::string::npos) << out;

  std::string unary = "kernel k() { let x = " + std::string(500, '!') + "a; }";
  out = parseFail(unary);
  EXPECT_NE(out.find("error: nesting too deep"), std::string::npos) << out;

  // A flat chain is not nesting (a sum of 201 terms used to be "nesting
  // too deep"): it has a limit of its own, and says so.
  std::string chain = "kernel k() { let x = a";
  for (int i = 0; i < 500; ++i)
    chain += " + a";
  parseOk(chain + "; }");
  for (int i = 0; i < 600; ++i)
    chain += " + a";
  out = parseFail(chain + "; }");
  EXPECT_NE(out.find("error: expression too long: more than 1000 chained "
                     "operators"),
            std::string::npos)
      << out;

  std::string elseIfs = "kernel k(c: bool) { if c {}";
  for (int i = 0; i < 500; ++i)
    elseIfs += " else if c {}";
  out = parseFail(elseIfs + " }");
  EXPECT_NE(out.find("error: nesting too deep"), std::string::npos) << out;

  std::string methods = "kernel k() { let x = a";
  for (int i = 0; i < 501; ++i)
    methods += ".f()[:]";
  out = parseFail(methods + "; }");
  EXPECT_NE(out.find("error: expression too long"), std::string::npos) << out;
}

TEST(Errors, CallOfNonName) {
  EXPECT_EQ(parseFail("kernel k() { let x = f(1)(2); }"),
            expected(1, 26, "only named functions can be called",
                     "kernel k() { let x = f(1)(2); }"));
}

TEST(Errors, ExpectedMethodName) {
  EXPECT_EQ(parseFail("kernel k() { let x = a.(1); }"),
            expected(1, 24, "expected a method name after '.', found '('",
                     "kernel k() { let x = a.(1); }"));
}

TEST(Errors, ExpectedMethodParen) {
  // (`a.T` and `a.shape` are the two attributes without parentheses.)
  EXPECT_EQ(parseFail("kernel k() { let x = a.size; }"),
            expected(1, 28, "expected '(' after method name 'size', found ';'",
                     "kernel k() { let x = a.size; }"));
}

TEST(Errors, DuplicateKeywordArgument) {
  EXPECT_EQ(parseFail("kernel k() { load(p, mask=m, mask=m); }"),
            expected(1, 30, "duplicate keyword argument 'mask'",
                     "kernel k() { load(p, mask=m, mask=m); }"));
}

TEST(Errors, PositionalAfterKeyword) {
  EXPECT_EQ(parseFail("kernel k() { store(p, mask=m, v); }"),
            expected(1, 31, "positional argument after keyword argument",
                     "kernel k() { store(p, mask=m, v); }"));
}

TEST(Errors, ExpectedArgumentSeparator) {
  EXPECT_EQ(parseFail("kernel k() { store(p v); }"),
            expected(1, 22, "expected ',' or ')' to close the call opened at 1:19, found 'v'",
                     "kernel k() { store(p v); }"));
}

TEST(Errors, UnsupportedSubscript) {
  // `x[0]` parses (constant arrays take indices; MLIRGen rejects them on
  // tiles), an empty subscript does not.
  EXPECT_EQ(parseFail("kernel k() { let y = x[]; }"),
            expected(1, 24, "expected an expression, found ']'",
                     "kernel k() { let y = x[]; }"));
}

TEST(Errors, ExpectedSubscriptSeparator) {
  EXPECT_EQ(parseFail("kernel k() { let y = x[: None]; }"),
            expected(1, 26, "expected ',' or ']' to close the subscript opened at 1:23, found 'None'",
                     "kernel k() { let y = x[: None]; }"));
}

TEST(Errors, UnclosedParen) {
  EXPECT_EQ(parseFail("kernel k() { let y = (a + b; }"),
            expected(1, 28, "expected ')' to close the '(' opened at 1:22, found ';'",
                     "kernel k() { let y = (a + b; }"));
}

TEST(Errors, ExpectedListSeparator) {
  EXPECT_EQ(parseFail("kernel k() { let y = zeros([1 2], f32); }"),
            expected(1, 31, "expected ',' or ']' to close the list opened at 1:28, found '2'",
                     "kernel k() { let y = zeros([1 2], f32); }"));
}

TEST(Errors, NoneOutsideSubscript) {
  EXPECT_EQ(parseFail("kernel k() { let y = None; }"),
            expected(1, 22, "'None' is only allowed in subscripts",
                     "kernel k() { let y = None; }"));
}

TEST(Errors, ExpectedExpression) {
  EXPECT_EQ(parseFail("kernel k() { let y = * 2; }"),
            expected(1, 22, "expected an expression, found '*'",
                     "kernel k() { let y = * 2; }"));
  EXPECT_EQ(parseFail("kernel k() { let y = 1 +"),
            expected(1, 25, "expected an expression, found end of file",
                     "kernel k() { let y = 1 +"));
}

//===----------------------------------------------------------------------===//
// Robustness
//===----------------------------------------------------------------------===//

/// Parses arbitrary input; the property under test is only that this
/// returns. Returns whether the parse succeeded, checking that failure always
/// comes with exactly one error per bad item (the parser recovers after
/// each), and that the items that parsed print.
bool parseAnything(const std::string &source) {
  Diagnostics diags("t.tile", source);
  ast::Module module;
  bool ok = parseModule(source, diags, module);
  EXPECT_EQ(ok, !diags.hadError()) << source;
  (void)ast::print(module);
  if (!ok) {
    EXPECT_EQ(diags.errors(), int(module.badItems.size())) << source;
    for (const ast::BadItem &b : module.badItems)
      EXPECT_NE(b.diagnostics.find(": error: "), std::string::npos) << source;
  }
  return ok;
}

TEST(Robustness, MalformedInputs) {
  std::string source = std::string(kAddKernel) +
                       "kernel k2(a: *f16, const B: i32 = -1) {\n"
                       "  let t = a.to(f32)[:, None] * 2.5e0;\n"
                       "  for i in range(0, B, 2) { if i == 0 { t += 1; } "
                       "else if i { t = ~t; } else { return; } }\n"
                       "}\n";
  ASSERT_TRUE(parseAnything(source));
  // Every proper prefix either parses (if it ends between kernels) or fails.
  size_t okCount = 0;
  for (size_t n = 0; n < source.size(); ++n)
    okCount += parseAnything(source.substr(0, n));
  EXPECT_LE(okCount, 40u);

  // Random bytes, and random splices of the valid source's characters, from a
  // fixed seed so failures reproduce.
  std::mt19937 rng(12345);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes(rng() % 200, '\0');
    for (char &c : bytes)
      c = char(rng() % 256);
    parseAnything(bytes);
    std::string mutated = source;
    for (int j = 0; j < 5; ++j) {
      size_t at = rng() % mutated.size();
      mutated[at] = source[rng() % source.size()];
    }
    parseAnything(mutated);
    parseAnything(source.substr(0, rng() % source.size()) +
                  source.substr(rng() % source.size()));
  }

  // Pathological nesting must hit the depth cap, not the stack limit.
  EXPECT_FALSE(
      parseAnything("kernel k() { let x = " + std::string(10000, '(')));
  EXPECT_FALSE(parseAnything("kernel k() { let x = " + std::string(10000, '(') +
                             "1" + std::string(10000, ')') + "; }"));
  EXPECT_FALSE(
      parseAnything("kernel k() { let x = " + std::string(10000, '[') + "; }"));
  EXPECT_FALSE(parseAnything("kernel k() { " + std::string(10000, '-')));
  std::string ifs = "kernel k() {";
  for (int i = 0; i < 10000; ++i)
    ifs += "if c {";
  EXPECT_FALSE(parseAnything(ifs));
}

} // namespace

//===----------------------------------------------------------------------===//
// Issue 47: `//` is floor division, `**` power, `.T` transpose
//===----------------------------------------------------------------------===//

TEST(Parser, FloorDivisionIsAnOperator) {
  EXPECT_EQ(printBody("let x = a // b * c;"), printBody("let x = (a // b) * c;"));
  EXPECT_NE(printBody("let x = a // b;").find("//"), std::string::npos);
  EXPECT_NE(printBody("x //= 2;").find("//"), std::string::npos);
}

TEST(Parser, OldCommentIsALocatedError) {
  EXPECT_EQ(parseFail("kernel k() {\n  let x = 1; // old comment\n}\n"),
            expected(2, 14,
                     "'//' is floor division, as in Python and Triton, not a "
                     "comment: comments start with '#'",
                     "  let x = 1; // old comment"));
  // A `//` whose right side is prose fails on its line: reported at `//`.
  std::string d = parseFail("kernel k(a: i32) {\n  let x = a // half of a\n}\n");
  EXPECT_EQ(d.rfind("t.tile:2:13: error: '//' is floor division", 0), 0u) << d;
}

TEST(Parser, PowerAndTranspose) {
  // -x ** 2 is -(x ** 2); ** groups to the right.
  EXPECT_EQ(printBody("let x = -a ** 2;"), printBody("let x = -(a ** 2);"));
  EXPECT_EQ(printBody("let x = a ** b ** c;"), printBody("let x = a ** (b ** c);"));
  EXPECT_EQ(printBody("let x = a.T;"), printBody("let x = a.trans();"));
}

//===----------------------------------------------------------------------===//
// File-level declarations, static_range, static_assert (issue 14)
//===----------------------------------------------------------------------===//

TEST(Declarations, ImportsConstantsAndFunctions) {
  ast::Module m = parseOk("import \"common.tile\";\n"
                          "const PAIRS = [[0, 1], [0, 2]];\n"
                          "fn f(x, p: *f32, const T: dtype) -> T {\n"
                          "  return x;\n"
                          "}\n"
                          "kernel k() {}\n");
  ASSERT_EQ(m.imports.size(), 1u);
  EXPECT_EQ(m.imports[0].path, "common.tile");
  ASSERT_EQ(m.constants.size(), 1u);
  EXPECT_EQ(m.constants[0].name, "PAIRS");
  EXPECT_EQ(m.constants[0].value->kind, ast::Expr::List);
  ASSERT_EQ(m.functions.size(), 1u);
  const ast::Function &f = m.functions[0];
  EXPECT_EQ(f.name, "f");
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_FALSE(f.paramTyped[0]);
  EXPECT_TRUE(f.paramTyped[1]);
  EXPECT_TRUE(f.params[1].isPointer);
  EXPECT_TRUE(f.params[2].isTypeParam);
  EXPECT_TRUE(f.hasReturnType);
  EXPECT_EQ(f.returnType.typeRef, "T");
  ASSERT_EQ(f.body.size(), 1u);
  EXPECT_EQ(f.body[0]->kind, ast::Stmt::Return);
  ASSERT_NE(f.body[0]->value, nullptr);
  EXPECT_EQ(m.kernels.size(), 1u);
}

TEST(Declarations, StaticStatements) {
  ast::Module m = parseOk("kernel k() {\n"
                          "  const N = 4;\n"
                          "  static_assert(N > 2, \"big enough\");\n"
                          "  for i in static_range(1, N, 2) { let y = T[i][0]; }\n"
                          "}\n");
  const ast::Block &b = m.kernels[0].body;
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0]->kind, ast::Stmt::Const);
  EXPECT_EQ(b[1]->kind, ast::Stmt::StaticAssert);
  EXPECT_EQ(b[1]->op, "big enough");
  EXPECT_EQ(b[2]->kind, ast::Stmt::StaticFor);
  ASSERT_NE(b[2]->step, nullptr);
  const ast::Expr &idx = *b[2]->body[0]->value;
  EXPECT_EQ(idx.kind, ast::Expr::Index);
  ASSERT_EQ(idx.index.size(), 1u);
  EXPECT_EQ(idx.index[0], ast::IndexEntry::Value);
  EXPECT_EQ(idx.operands.size(), 2u); // The base and the index.
}

TEST(Errors, DeclarationSyntax) {
  EXPECT_EQ(parseFail("import common;"),
            expected(1, 8, "expected '\"path\"' after 'import', found 'common'",
                     "import common;"));
  EXPECT_EQ(parseFail("fn f(x = 1) {}"),
            expected(1, 8, "expected ',' or ')' after parameter, found '='",
                     "fn f(x = 1) {}"));
  EXPECT_EQ(parseFail("kernel k() { static_assert(true); }"),
            expected(1, 32,
                     "expected ',' after the static_assert condition, found ')'",
                     "kernel k() { static_assert(true); }"));
  EXPECT_EQ(parseFail("kernel k() { static_assert(true, \"x); }"),
            expected(1, 34, "unterminated string",
                     "kernel k() { static_assert(true, \"x); }"));
}

//===----------------------------------------------------------------------===//
// Recovery: one bad item does not hide the others (issue 47)
//===----------------------------------------------------------------------===//

/// Parses `source`, expecting syntax errors; returns the module.
ast::Module parseWithErrors(const std::string &source, int errors) {
  Diagnostics diags("t.tile", source);
  ast::Module module;
  EXPECT_FALSE(parseModule(source, diags, module));
  EXPECT_EQ(diags.errors(), errors) << diags.str();
  return module;
}

/// `m` holds the one kernel `good`, and kernel `bad` as its one bad item.
void expectKernelBesideBadKernel(const ast::Module &m, const char *good,
                                 const char *bad) {
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(m.kernels[0].name, good);
  ASSERT_EQ(m.badItems.size(), 1u);
  EXPECT_EQ(m.badItems[0].kind, ast::BadItem::Kernel);
  EXPECT_EQ(m.badItems[0].name, bad);
}

TEST(Recovery, ABadKernelLeavesTheOthers) {
  std::string src = "kernel a(x: *f32) {\n"
                    "  let y = load(x) * ;\n"
                    "  if true { store(x, y); }\n"
                    "}\n"
                    "kernel b(x: *f32) { store(x, 1.0); }\n";
  ast::Module m = parseWithErrors(src, 1);
  expectKernelBesideBadKernel(m, "b", "a");
  EXPECT_EQ(m.badItems.at(0).diagnostics,
            expected(2, 21, "expected an expression, found ';'",
                     "  let y = load(x) * ;"));
  EXPECT_EQ(syntaxErrorsFor(m, "b"), "");
  EXPECT_EQ(syntaxErrorsFor(m, "a"), m.badItems.at(0).diagnostics);
  // No kernel named: the file's only kernel is ambiguous, every error counts.
  EXPECT_EQ(syntaxErrorsFor(m, ""), m.badItems.at(0).diagnostics);
}

TEST(Recovery, ErrorsInHeadersAndEveryItemAreReported) {
  std::string src = "kernel a(x *f32) { store(x, 1.0); }\n"  // header
                    "kernel b(x: *f32) { store(x, 2.0); }\n"
                    "fn f(x) { return x +; }\n"
                    "kernel c(x: *f32) { let z = (1; }\n"
                    "kernel d(x: *f32) { store(x, 3.0); }\n";
  ast::Module m = parseWithErrors(src, 3);
  ASSERT_EQ(m.kernels.size(), 2u);
  EXPECT_EQ(m.kernels[0].name, "b");
  EXPECT_EQ(m.kernels[1].name, "d");
  ASSERT_EQ(m.badItems.size(), 3u);
  EXPECT_EQ(m.badItems[0].name, "a");
  EXPECT_EQ(m.badItems[1].kind, ast::BadItem::Function);
  EXPECT_EQ(m.badItems[1].name, "f");
  EXPECT_EQ(m.badItems[2].name, "c");
  EXPECT_EQ(m.badItems[2].loc.line, 4);
}

TEST(Recovery, AKernelWithoutItsBraceEndsAtTheNextKernel) {
  std::string src = "kernel a(x: *f32) {\n"
                    "  store(x, 1.0);\n"
                    "@num_warps(8)\n"
                    "kernel b(x: *f32) { store(x, 2.0); }\n";
  ast::Module m = parseWithErrors(src, 1);
  ASSERT_EQ(m.kernels.size(), 1u);
  EXPECT_EQ(m.kernels[0].name, "b");
  ASSERT_EQ(m.kernels[0].attrs.size(), 1u); // b keeps its attribute.
  EXPECT_EQ(m.badItems[0].name, "a");
}

TEST(Recovery, ABrokenAttributeBelongsToItsKernel) {
  // Compiling `a` without its @num_warps would be wrong: `a` is bad.
  std::string src = "@num_warps(8\n"
                    "kernel a(x: *f32) { store(x, 1.0); }\n"
                    "kernel b(x: *f32) { store(x, 2.0); }\n";
  ast::Module m = parseWithErrors(src, 1);
  expectKernelBesideBadKernel(m, "b", "a");
}

TEST(Recovery, BadFnsStopTheirCallersOnly) {
  std::string src = "fn broken(x) { return x * ; }\n"
                    "fn wrap(x) { return broken(x); }\n"
                    "kernel direct(x: *f32) { store(x, broken(1.0)); }\n"
                    "kernel indirect(x: *f32) { store(x, load(x).wrap()); }\n"
                    "kernel clean(x: *f32) { store(x, 1.0); }\n";
  ast::Module m = parseWithErrors(src, 1);
  std::string err = m.badItems.at(0).diagnostics;
  EXPECT_NE(err.find("t.tile:1:27: error: expected an expression"),
            std::string::npos)
      << err;
  EXPECT_EQ(syntaxErrorsFor(m, "direct"), err);
  EXPECT_EQ(syntaxErrorsFor(m, "indirect"), err);
  EXPECT_EQ(syntaxErrorsFor(m, "clean"), "");
}

TEST(Recovery, FileLevelErrorsStopEveryKernel) {
  for (const char *decl : {"const N = ;\n", "import common;\n", "junk;\n",
                           "}\n"}) {
    std::string src = std::string(decl) +
                      "kernel k(x: *f32) { store(x, 1.0); }\n";
    Diagnostics diags("t.tile", src);
    ast::Module m;
    EXPECT_FALSE(parseModule(src, diags, m)) << decl;
    ASSERT_EQ(m.badItems.size(), 1u) << decl;
    EXPECT_EQ(m.badItems[0].kind, ast::BadItem::FileLevel) << decl;
    ASSERT_EQ(m.kernels.size(), 1u) << decl; // Parsed, but stopped.
    EXPECT_EQ(syntaxErrorsFor(m, "k"), diags.str()) << decl;
  }
}

TEST(Recovery, DuplicateKernelStopsTheSecond) {
  ast::Module m = parseWithErrors("kernel k(x: *f32) { store(x, 1.0); }\n"
                                  "kernel k(x: *f32) { store(x, 2.0); }\n",
                                  1);
  ASSERT_EQ(m.badItems.size(), 1u);
  EXPECT_NE(syntaxErrorsFor(m, "k").find("duplicate kernel 'k'"),
            std::string::npos);
}

TEST(Recovery, ManyErrorsStopTheParseWithoutPrintingALineEachToken) {
  // One long line of stray braces: each is a bad item printing that line.
  std::string src(100000, '}');
  Diagnostics diags("t.tile", src);
  ast::Module m;
  EXPECT_FALSE(parseModule(src, diags, m));
  EXPECT_EQ(m.badItems.size(), 21u);
  EXPECT_LT(diags.str().size(), 25u * src.size());
  EXPECT_NE(diags.str().find("too many syntax errors"), std::string::npos);
}

TEST(Recovery, ABrokenAutotuneConfigBelongsToItsKernel) {
  // The configuration's braces do not end the item: its kernel does.
  std::string src = "@autotune(key=[n], configs=[{B: 64,, }])\n"
                    "kernel a(x: *f32, n: i32, const B: i32) { return; }\n"
                    "kernel b(x: *f32) { store(x, 2.0); }\n";
  ast::Module m = parseWithErrors(src, 1);
  expectKernelBesideBadKernel(m, "b", "a");
}

TEST(Recovery, ADuplicateKernelSkipsNothingAfterIt) {
  ast::Module m = parseWithErrors("kernel k(x: *f32) { return; }\n"
                                  "kernel k(x: *f32) { return; }\n"
                                  "const N = 4;\n"
                                  "kernel j(x: *f32) { return; }\n",
                                  1);
  EXPECT_EQ(m.constants.size(), 1u);
  EXPECT_EQ(m.kernels.size(), 2u);
}
