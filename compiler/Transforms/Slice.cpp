//===- Slice.cpp - Keep only what some ops need ---------------------------===//

#include "Transforms/Slice.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

void sparsetile::sliceToRoots(Block &block,
                              llvm::function_ref<bool(Operation *)> isRoot) {
  llvm::DenseSet<Operation *> live;
  SmallVector<Operation *> work;
  // Only ops inside `block` are marked: what lies outside stays anyway.
  auto mark = [&](Operation *op) {
    if (op && block.findAncestorOpInBlock(*op) && live.insert(op).second)
      work.push_back(op);
  };
  block.walk([&](Operation *op) {
    if (isRoot(op))
      mark(op);
  });
  if (!block.empty() && block.back().hasTrait<OpTrait::IsTerminator>())
    mark(&block.back());
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value v : op->getOperands()) {
      if (Operation *def = v.getDefiningOp())
        mark(def);
      else
        // A loop's induction variable or iter_arg.
        mark(cast<BlockArgument>(v).getOwner()->getParentOp());
    }
    mark(op->getParentOp());
    for (Region &r : op->getRegions())
      for (Block &b : r)
        if (!b.empty() && b.back().hasTrait<OpTrait::IsTerminator>())
          mark(&b.back());
  }
  SmallVector<Operation *> dead;
  block.walk<WalkOrder::PostOrder>([&](Operation *op) {
    if (!live.contains(op))
      dead.push_back(op);
  });
  for (Operation *op : dead) {
    op->dropAllUses();
    op->erase();
  }
}
