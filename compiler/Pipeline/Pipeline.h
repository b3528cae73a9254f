//===- Pipeline.h - The MLIR context sparsetile compiles in -----*- C++ -*-===//
//
// The dialect registry shared by the pipeline and tile-opt, so both see the
// same dialects, ConvertToLLVM interfaces and translations.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_PIPELINE_PIPELINE_H
#define SPARSETILE_PIPELINE_PIPELINE_H

#include "mlir/IR/DialectRegistry.h"

namespace sparsetile {

/// Registers every dialect, interface and translation the pipeline uses.
void registerAll(mlir::DialectRegistry &registry);

} // namespace sparsetile

#endif // SPARSETILE_PIPELINE_PIPELINE_H
