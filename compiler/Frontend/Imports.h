//===- Imports.h - `import "file.tile";` ------------------------*- C++ -*-===//
//
// Resolves a parsed file's imports: each imported file is read (from the
// texts the caller already holds, else from disk), parsed with its own file
// id in Diagnostics (so its errors point into it), and its file-level
// constants and functions are appended to the importing module. Paths are
// relative to the importing file's folder. A file imported twice (a diamond)
// is merged once; a file that imports itself, directly or not, is an error.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_FRONTEND_IMPORTS_H
#define SPARSETILE_FRONTEND_IMPORTS_H

#include "AST.h"
#include "Diagnostics.h"

#include <cstddef>
#include <map>
#include <string>

namespace sparsetile {

/// Merges the imports of `module` (parsed from `filename`) into it. `texts`
/// maps resolved paths to file contents: entries present are used as they
/// are, the others are read from disk and added, so on return it holds every
/// file the compile used. Returns false after reporting a located error.
bool resolveImports(ast::Module &module, const std::string &filename,
                    std::map<std::string, std::string> &texts,
                    Diagnostics &diags);

/// The path an `import "path";` in `importer` names.
std::string importPath(const std::string &importer, const std::string &path);

/// The largest imported file, in bytes (the biggest example is 70 KB).
constexpr size_t kMaxImportBytes = size_t(1) << 20;

/// Reads the imported file `path`: a regular file of at most
/// kMaxImportBytes, opened without blocking. On failure `why` says what is
/// wrong, never what the file holds.
bool readImportFile(const std::string &path, std::string &content,
                    std::string &why);

} // namespace sparsetile

#endif // SPARSETILE_FRONTEND_IMPORTS_H
