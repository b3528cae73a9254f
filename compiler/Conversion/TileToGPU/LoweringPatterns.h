//===- LoweringPatterns.h - One lowering per kind of op ---------*- C++ -*-===//
//
// convert-tile-to-gpu lowers each op by the pattern registered for its kind,
// as Triton's TritonGPUToLLVM does: each family's file registers its own
// (Distributor::populate*Patterns, listed in TileToGPU.cpp), and the driver
// knows none of them. A pattern writes the op's per-thread elements, as
// many as the TileTypeConverter gives its result types (the driver checks
// that, and the layout, after every op).
//
// The driver is a walk in program order over the kernel rather than MLIR's
// dialect conversion: an op's operands that are pure functions of indices
// are evaluated at the coordinates the op needs them (Distributor::evalAt),
// which reads the unconverted IR of their definitions.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_CONVERSION_TILETOGPU_LOWERINGPATTERNS_H
#define SPARSETILE_CONVERSION_TILETOGPU_LOWERINGPATTERNS_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/TypeID.h"
#include "llvm/ADT/DenseMap.h"

#include <cassert>
#include <functional>

namespace sparsetile::detail {

class Distributor;

class LoweringPatterns {
public:
  using Lowering =
      std::function<mlir::LogicalResult(Distributor &, mlir::Operation *)>;

  /// Ops of kind `Op` are lowered by `fn` (a Distributor member).
  template <typename Op> void add(mlir::LogicalResult (Distributor::*fn)(Op)) {
    add(mlir::TypeID::get<Op>(), [fn](Distributor &d, mlir::Operation *op) {
      return (d.*fn)(llvm::cast<Op>(op));
    });
  }
  /// Ops of kinds `Ops` are all lowered by `fn`, which takes the operation.
  template <typename... Ops>
  void addEach(mlir::LogicalResult (Distributor::*fn)(mlir::Operation *)) {
    (add(mlir::TypeID::get<Ops>(),
         [fn](Distributor &d, mlir::Operation *op) { return (d.*fn)(op); }),
     ...);
  }

  /// The pattern for `op`'s kind; null if none is registered.
  const Lowering *lookup(mlir::Operation *op) const {
    auto it = table.find(op->getName().getTypeID());
    return it == table.end() ? nullptr : &it->second;
  }

private:
  void add(mlir::TypeID kind, Lowering fn) {
    [[maybe_unused]] bool fresh = table.try_emplace(kind, std::move(fn)).second;
    assert(fresh && "two patterns for one kind of op");
  }
  llvm::DenseMap<mlir::TypeID, Lowering> table;
};

} // namespace sparsetile::detail

#endif // SPARSETILE_CONVERSION_TILETOGPU_LOWERINGPATTERNS_H
