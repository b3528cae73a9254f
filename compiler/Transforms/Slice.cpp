//===- Slice.cpp - Keep only what some ops need ---------------------------===//

#include "Transforms/Slice.h"

#include "mlir/IR/Operation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
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

std::optional<SmallVector<Operation *>>
sparsetile::invariantSlice(scf::ForOp loop, Value v) {
  Block *body = loop.getBody();
  llvm::SetVector<Operation *> ops;
  SmallVector<Value> work = {v};
  while (!work.empty()) {
    Value x = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(x)) {
      if (arg.getOwner() == body)
        return std::nullopt; // The index or a carried value.
      continue;
    }
    Operation *def = x.getDefiningOp();
    if (def->getBlock() != body) {
      if (loop->isAncestor(def))
        return std::nullopt; // Inside a nested region of the body.
      continue;
    }
    if (ops.contains(def))
      continue;
    if (!isMemoryEffectFree(def) || def->getNumRegions())
      return std::nullopt;
    ops.insert(def);
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  SmallVector<Operation *> ordered(ops.begin(), ops.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}
