//===- Slice.h - Keep only what some ops need ------------------*- C++ -*-===//
//
// Shared by tile-warp-specialize (the producer's copy of the kernel) and
// tile-pingpong (a consumer group's pass over the other group's tile); the
// loop-invariant slices by tile-induction-pointers (the offset it hoists)
// and tile-pipeline-tma (a producer's address arithmetic it splits).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TRANSFORMS_SLICE_H
#define SPARSETILE_TRANSFORMS_SLICE_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Block.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>

namespace sparsetile {

/// Erases from `block` (recursively) every op that is not a root and that no
/// root needs. Liveness: a root is live; an op is live if a live op uses
/// its result, if it contains a live op, or if it terminates a region of a
/// live op; a loop is live if a live op uses its induction variable or an
/// iter_arg; the block's own terminator stays. Ops outside `block` are left
/// alone.
void sliceToRoots(mlir::Block &block,
                  llvm::function_ref<bool(mlir::Operation *)> isRoot);

/// The ops of `loop`'s body that `v` is computed from, in body order, when
/// they are all pure and depend on nothing else of the body (the induction
/// variable and the iter_args included); nullopt otherwise. A value from
/// outside the loop has an empty slice.
std::optional<llvm::SmallVector<mlir::Operation *>>
invariantSlice(mlir::scf::ForOp loop, mlir::Value v);

} // namespace sparsetile

#endif // SPARSETILE_TRANSFORMS_SLICE_H
