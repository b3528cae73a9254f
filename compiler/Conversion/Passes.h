//===- Passes.h - sparsetile's passes ---------------------------*- C++ -*-===//
//
// Declarations generated from Passes.td: createTileToGPU() and the
// registration hook tile-opt uses.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_CONVERSION_PASSES_H
#define SPARSETILE_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace sparsetile {

#define GEN_PASS_DECL
#include "Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Conversion/Passes.h.inc"

} // namespace sparsetile

#endif // SPARSETILE_CONVERSION_PASSES_H
