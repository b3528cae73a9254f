//===- LoopTrips.h - An scf.for's trip count, as IR ------------*- C++ -*-===//
//
// Shared by tile-pipeline-tma (the ring's loop runs over the original
// loop's iterations) and tile-induction-pointers (a carried pointer's value
// after the loop).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TRANSFORMS_LOOPTRIPS_H
#define SPARSETILE_TRANSFORMS_LOOPTRIPS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace sparsetile {

/// n = max(0, ceil((hi - lo) / step)) of an i32 loop, built at `b`'s
/// insertion point from the loop's own bounds.
inline mlir::Value tripCount(mlir::OpBuilder &b, mlir::scf::ForOp loop) {
  using namespace mlir;
  Location l = loop.getLoc();
  auto c = [&](int64_t v) {
    return b.create<arith::ConstantIntOp>(l, b.getI32Type(), v);
  };
  Value lo = loop.getLowerBound(), hi = loop.getUpperBound(),
        step = loop.getStep();
  Value span = b.create<arith::SubIOp>(l, hi, lo);
  Value n = b.create<arith::DivSIOp>(
      l, b.create<arith::AddIOp>(l, span, b.create<arith::SubIOp>(l, step, c(1))),
      step);
  return b.create<arith::MaxSIOp>(l, n, c(0));
}

} // namespace sparsetile

#endif // SPARSETILE_TRANSFORMS_LOOPTRIPS_H
