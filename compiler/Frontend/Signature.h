//===- Signature.h - A kernel's parameters, without MLIR --------*- C++ -*-===//
//
// What a kernel takes, as the runtime and `stc --list` see it: read off the
// AST alone, so that listing kernels and checking launch arguments need no
// MLIR (and the frontend library stays MLIR-free).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_FRONTEND_SIGNATURE_H
#define SPARSETILE_FRONTEND_SIGNATURE_H

#include "Frontend/AST.h"
#include "sparsetile/Compiler.h"

#include <map>
#include <string>

namespace sparsetile {

/// The run-time parameters and constants of `kernel`, in declaration order,
/// with type parameters resolved from `constants` or their defaults.
KernelSignature
signatureOf(const ast::Kernel &kernel,
            const std::map<std::string, std::string> &constants = {});

} // namespace sparsetile

#endif // SPARSETILE_FRONTEND_SIGNATURE_H
