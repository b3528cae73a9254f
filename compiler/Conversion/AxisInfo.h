//===- AxisInfo.h - Contiguity and alignment of tile values -----*- C++ -*-===//
//
// A forward analysis over a tile-dialect kernel that tells the distribution
// pass when a tile access may use wide (up to 16-byte) vector loads and
// stores. For each integer or pointer value it tracks, along the tile's last
// dimension, in aligned groups:
//
//   contiguity   values come in runs of this many consecutive integers
//                (pointers: consecutive elements);
//   divisibility the first value of each run is a multiple of this (for
//                pointers, in bytes);
//   constancy    values are equal within aligned groups of this size.
//
// All three are powers of two. This is the same idea as Triton's AxisInfo,
// cut down to what the distribution pass uses.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_CONVERSION_AXISINFO_H
#define SPARSETILE_CONVERSION_AXISINFO_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"

namespace sparsetile {

struct AxisInfo {
  /// "Unbounded": scalars are constant along any tile dimension.
  static constexpr int64_t kMax = int64_t(1) << 30;
  int64_t contiguity = 1;
  int64_t divisibility = 1;
  int64_t constancy = 1;
  /// Every element is >= 0 (index arithmetic from arange and non-negative
  /// constants): what makes a signed remainder keep its runs.
  bool nonNegative = false;
};

/// What holds for a value that is either `x` or `y` (a loop-carried value,
/// an scf.if result): the lattice's meet. `unitBytes` is what one step of a
/// run moves (pointers: the pointee's bytes).
AxisInfo meet(const AxisInfo &x, const AxisInfo &y, int64_t unitBytes = 1);

class AxisInfoAnalysis {
public:
  explicit AxisInfoAnalysis(mlir::func::FuncOp func);
  /// The facts about `v`; conservative ({1, 1, 1}) if unknown.
  AxisInfo get(mlir::Value v) const;
  /// The widest access, in elements of `bytes` bytes and at most
  /// `maxElems`, these facts allow through `ptr` under `mask` (null: none):
  /// contiguous, aligned, one mask value, and no more than 16 bytes.
  int64_t accessWidth(mlir::Value ptr, mlir::Value mask, int64_t maxElems,
                      int64_t bytes) const;

private:
  void visitBlock(mlir::Block &block);
  void visitFor(mlir::scf::ForOp forOp);
  void visit(mlir::Operation *op);
  llvm::DenseMap<mlir::Value, AxisInfo> info;
  /// Op visits left before loops stop iterating to a fixed point.
  int64_t budget = 1 << 20;
};

} // namespace sparsetile

#endif // SPARSETILE_CONVERSION_AXISINFO_H
