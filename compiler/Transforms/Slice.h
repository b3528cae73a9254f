//===- Slice.h - Keep only what some ops need ------------------*- C++ -*-===//
//
// Shared by tile-warp-specialize (the producer's copy of the kernel) and
// tile-pingpong (a consumer group's pass over the other group's tile).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TRANSFORMS_SLICE_H
#define SPARSETILE_TRANSFORMS_SLICE_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace sparsetile {

/// Erases from `block` (recursively) every op that is not a root and that no
/// root needs. Liveness: a root is live; an op is live if a live op uses
/// its result, if it contains a live op, or if it terminates a region of a
/// live op; a loop is live if a live op uses its induction variable or an
/// iter_arg; the block's own terminator stays. Ops outside `block` are left
/// alone.
void sliceToRoots(mlir::Block &block,
                  llvm::function_ref<bool(mlir::Operation *)> isRoot);

} // namespace sparsetile

#endif // SPARSETILE_TRANSFORMS_SLICE_H
