//===- WarpSpecialize.cpp - Producer and consumer warpgroups --------------===//
//
// tile-warp-specialize (see Passes.td) turns a kernel whose ring
// tile-pipeline-tma built with tile.producer ops into
//
//   tile.ring_init
//   tile.warp_specialize producer { B' } consumer { B less tile.producer }
//
// The producer's B' is a copy of the whole body B, pruned to what the copies
// need. Keeping the kernel's own control flow (a persistent loop over tiles,
// an `if` around the K loop, the loop bounds read from a kept-block count)
// is what lets the producer run ahead of the consumers across tiles without
// any hand-off between the roles other than the ring's mbarriers.
//
// Pruning is a liveness walk over B': the roots are the producer's ring ops
// (acquire, expect, copy) and the ring's running count (ring_advance); an
// op is live if a live op uses its result, if it contains a live op, or if
// it terminates a region of a live op. Everything else (tile math, the
// consumers' loop, MMAs, stores) is erased.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileDialect.h"
#include "Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"

namespace sparsetile {
#define GEN_PASS_DEF_WARPSPECIALIZE
#include "Transforms/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

/// Registers per thread the consumers can take once the producer warpgroup
/// kept `producerRegs`: the register file (64 K) shared by the block,
/// rounded down to setmaxnreg's multiple of 8, at most 240.
int64_t consumerRegsFor(int64_t consumerThreads, int64_t producerRegs) {
  int64_t regs = (65536 - 128 * producerRegs) / consumerThreads / 8 * 8;
  return std::min<int64_t>(regs, 240);
}

/// Erases from `block` (recursively) every op the producer does not need.
void prune(Block &block) {
  llvm::DenseSet<Operation *> live;
  SmallVector<Operation *> work;
  auto mark = [&](Operation *op) {
    if (op && live.insert(op).second)
      work.push_back(op);
  };
  block.walk([&](Operation *op) {
    if (isa<RingAcquireOp, RingExpectOp, RingCopyOp, RingAdvanceOp>(op))
      mark(op);
  });
  Operation *top = block.getParentOp();
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value v : op->getOperands()) {
      if (Operation *def = v.getDefiningOp())
        mark(def);
      else if (Operation *owner = cast<BlockArgument>(v).getOwner()
                                      ->getParentOp();
               owner != top)
        mark(owner); // A loop's induction variable or iter_arg.
    }
    if (Operation *parent = op->getParentOp(); parent != top)
      mark(parent);
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

LogicalResult specialize(func::FuncOp func, int64_t producerRegs) {
  Block &entry = func.getBody().front();
  auto init = dyn_cast<RingInitOp>(&entry.front());
  if (!init)
    return func.emitOpError("a warp-specialized ring needs tile.ring_init "
                            "first in the kernel");
  int64_t warps = 4;
  if (auto w = func->getAttrOfType<IntegerAttr>(kNumWarpsAttr))
    warps = w.getInt();
  OpBuilder b(init->getContext());
  b.setInsertionPointAfter(init);
  auto ws = b.create<WarpSpecializeOp>(
      func.getLoc(), producerRegs, consumerRegsFor(32 * warps, producerRegs));
  Block *consumer = &ws.getConsumer().emplaceBlock();
  Block *producer = &ws.getProducer().emplaceBlock();

  // 1. The consumers take the body as it is.
  while (ws->getNextNode() != entry.getTerminator())
    ws->getNextNode()->moveBefore(consumer, consumer->end());

  // 2. The producer gets a copy, its tile.producer ops inlined.
  OpBuilder pb = OpBuilder::atBlockEnd(producer);
  IRMapping map;
  for (Operation &op : *consumer)
    pb.clone(op, map);
  SmallVector<ProducerOp> inlined;
  producer->walk([&](ProducerOp p) { inlined.push_back(p); });
  for (ProducerOp p : inlined) {
    Block &body = p.getBody().front();
    while (!body.empty())
      body.front().moveBefore(p);
    p.erase();
  }
  prune(*producer);

  // 3. ... and the consumers lose them.
  SmallVector<ProducerOp> gone;
  consumer->walk([&](ProducerOp p) { gone.push_back(p); });
  for (ProducerOp p : gone)
    p.erase();
  return ws.verify();
}

struct WarpSpecializePass
    : public sparsetile::impl::WarpSpecializeBase<WarpSpecializePass> {
  using WarpSpecializeBase::WarpSpecializeBase;
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      bool any = false;
      func.walk([&](ProducerOp) { any = true; });
      if (any && failed(specialize(func, producerRegs)))
        return signalPassFailure();
    }
  }
};

} // namespace
