//===- MLIRGen.h - Emit the tile dialect from the AST -----------*- C++ -*-===//
//
// MLIRGen is the front end's semantic layer: it resolves names, folds
// compile-time constants, infers types and shapes (broadcasting, promotion)
// and emits one kernel as a func.func of tile-dialect, arith, math and scf
// ops. Every user error is reported with its source location. The
// implementation is split by concern; MLIRGenImpl.h lists its files.
// signatureOf, which needs no MLIR, is in Signature.h.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_FRONTEND_MLIRGEN_H
#define SPARSETILE_FRONTEND_MLIRGEN_H

#include "Frontend/AST.h"
#include "sparsetile/Compiler.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace sparsetile {

/// Emits `kernel`, specialized for `options` (constants, divisibility, warps),
/// into a new module. Returns null after reporting errors to `diags`.
/// `module` supplies the file-level constants and functions (imports
/// already merged in).
mlir::OwningOpRef<mlir::ModuleOp> emitTileIR(mlir::MLIRContext &context,
                                             const ast::Module &module,
                                             const ast::Kernel &kernel,
                                             const CompileOptions &options,
                                             Diagnostics &diags);

} // namespace sparsetile

#endif // SPARSETILE_FRONTEND_MLIRGEN_H
