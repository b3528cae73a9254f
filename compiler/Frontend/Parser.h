//===- Parser.h - Lexer and recursive-descent parser for .tile --*- C++ -*-===//
//
// Turns DSL text into an ast::Module. The parser stops at the first error
// (reported through Diagnostics with file:line:col, the source line and a
// caret) and returns false. It never crashes, hangs or recurses without bound
// on malformed input: nesting depth is capped and every loop consumes a token.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_FRONTEND_PARSER_H
#define SPARSETILE_FRONTEND_PARSER_H

#include "AST.h"
#include "Diagnostics.h"

#include <string>

namespace sparsetile {

/// Parses `source` (whose name and text `diags` already holds) into `module`.
/// Returns false after reporting the first syntax error. `fileId` is the
/// file's id in `diags` (Diagnostics::addFile) for imported files.
bool parseModule(const std::string &source, Diagnostics &diags,
                 ast::Module &module, int fileId = 0);

/// Parses a dtype spelling ("f32", "bf16", "bool", ...). Returns false if
/// `name` is not a dtype.
bool parseDType(const std::string &name, DType &dtype);

} // namespace sparsetile

#endif // SPARSETILE_FRONTEND_PARSER_H
