//===- Autotune.h - Check and read a kernel's @autotune ---------*- C++ -*-===//
//
// `@autotune(key=[...], grid=[...], configs=[{...}, ...])` declares a
// kernel's candidate configurations (Language.md, "Autotuning"). The parser
// reads its syntax; this unit checks it against the kernel's parameters
// (needing no MLIR, so `stc --list` and the runtime's signature reads report
// the same located errors) and turns it into the AutotuneDecl the runtime
// builds an rt::AutotunedKernel from.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_FRONTEND_AUTOTUNE_H
#define SPARSETILE_FRONTEND_AUTOTUNE_H

#include "Frontend/AST.h"
#include "Frontend/Diagnostics.h"
#include "sparsetile/Compiler.h"

namespace sparsetile {

/// Reports the first problem of `kernel.autotune` (which must be set) at its
/// location and returns false: a missing or empty argument, a key that is
/// not an integer parameter, a setting that is neither an integer constant
/// nor an option, a value out of range, a repeated configuration, a grid
/// expression outside the integer subset.
bool checkAutotune(const ast::Kernel &kernel, Diagnostics &diags);

/// The checked declaration as the runtime reads it (see AutotuneDecl).
AutotuneDecl autotuneDecl(const ast::Kernel &kernel);

} // namespace sparsetile

#endif // SPARSETILE_FRONTEND_AUTOTUNE_H
