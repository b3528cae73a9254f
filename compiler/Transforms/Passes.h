//===- Passes.h - sparsetile's tile-to-tile passes --------------*- C++ -*-===//
//
// Declarations generated from Passes.td (createPersistent(),
// createPipelineTMA(), createClusterMulticast(), createExpandDescLoad(),
// createWarpSpecialize(), createPingPong()) and the registration hook
// tile-opt uses.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TRANSFORMS_PASSES_H
#define SPARSETILE_TRANSFORMS_PASSES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace sparsetile {

/// tile-assign-layouts on one kernel, unless its tiles have layouts
/// already; convert-tile-to-gpu runs it on a kernel that has none.
mlir::LogicalResult assignLayouts(mlir::func::FuncOp kernel);

#define GEN_PASS_DECL
#include "Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Transforms/Passes.h.inc"

} // namespace sparsetile

#endif // SPARSETILE_TRANSFORMS_PASSES_H
