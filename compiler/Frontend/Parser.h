//===- Parser.h - Lexer and recursive-descent parser for .tile --*- C++ -*-===//
//
// Turns DSL text into an ast::Module. In each top-level item (a kernel, fn,
// const or import) the parser stops at the first error (reported through
// Diagnostics with file:line:col, the source line and a caret), records the
// item in Module::badItems, skips to the item's end and parses the rest, so
// one bad kernel leaves the others usable. It never crashes, hangs or
// recurses without bound on malformed input: nesting depth is capped and
// every loop consumes a token.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_FRONTEND_PARSER_H
#define SPARSETILE_FRONTEND_PARSER_H

#include "AST.h"
#include "Diagnostics.h"

#include <string>

namespace sparsetile {

/// Parses `source` (whose name and text `diags` already holds) into `module`.
/// Returns false when an item had a syntax error; `module` then holds the
/// items that parsed and Module::badItems the others. `fileId` is the
/// file's id in `diags` (Diagnostics::addFile) for imported files.
bool parseModule(const std::string &source, Diagnostics &diags,
                 ast::Module &module, int fileId = 0);

/// The diagnostics of the syntax errors that stop `kernel` from compiling:
/// its own, those of the fns it calls (directly or through other fns), and
/// those of file-level items (imports, consts, text that names nothing).
/// An empty `kernel` (the file's only kernel) is stopped by every error.
/// Empty when nothing stops it.
std::string syntaxErrorsFor(const ast::Module &module,
                            const std::string &kernel);

/// Parses a dtype spelling ("f32", "bf16", "bool", ...). Returns false if
/// `name` is not a dtype.
bool parseDType(const std::string &name, DType &dtype);

} // namespace sparsetile

#endif // SPARSETILE_FRONTEND_PARSER_H
