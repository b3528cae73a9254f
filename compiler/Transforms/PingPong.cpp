//===- PingPong.cpp - Alternate tiles between two consumer groups ---------===//
//
// tile-pingpong (see Passes.td) splits the persistent loop of a
// tile.warp_specialize with consumer_groups = 2 between the two groups:
//
//   consumer {
//     scf.while (%i = 0) { %t = tile.next_tile %i ... } do (%i, %t) {
//       %g = tile.consumer_group
//       scf.if (%i % 2 == %g) {
//         tile.turn_wait %i        // step i - 1's main loop has ended
//         B                        // the tile, as the kernel wrote it,
//                                  // tile.turn_pass %i after its main loop
//         tile.turn_pass %i        // (for paths that skip the loop)
//       } else {
//         B sliced to tile.ring_advance
//       }
//       scf.yield %i + 1
//     }
//   }
//
// Group 0 runs the even steps' tiles, group 1 the odd ones. While one group
// drains, scales and stores its tile, the other runs the next tile's MMAs:
// the epilogue leaves the critical path (CUTLASS's "ping-pong" kernels).
//
// Why the other group's step is not simply skipped: the ring's stage and
// phase come from the running count of ring iterations (tile.ring_base),
// and a tile's trip count is the kernel's own business (SparseDrop's
// kept-block counts). So each group still reads every tile from the queue
// and adds the other group's trip count to its own running count: the
// slice of B that computes the count. It loads a count at most; the
// producer, ahead of both, has already done the same work.
//
// The main loops take turns (tile.turn_wait / tile.turn_pass), as CUTLASS
// orders its ping-pong math warpgroups. Without the order the kernel is
// wrong, not just slower: a ring wait tells phases apart by parity, so a
// group that waits on a stage whose previous use (the other group's) has
// not landed yet would pass at once and read the old data. Found on the
// H100 at p = 0.9, where short tiles let one group run ahead. With the
// order, every earlier use of a stage has been waited on when a group
// starts its loop, and no later one can have happened. What still
// overlaps is what ping-pong is for: one group's epilogue with the other's
// main loop. Each stage is released by the one group that read it (the
// ring's `empty` mbarriers count one group's warps).
//
// On the H100 this ran as fast as cooperative warps on the same 128 x 128
// tile, and slower than the 128 x 256 / 256 x 128 tiles cooperative warps
// can hold (bench/NOTES.md, "Ping-pong consumer warpgroups"), so kernels
// and ops keep it off by default.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileDialect.h"
#include "Transforms/Passes.h"
#include "Transforms/Slice.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace sparsetile {
#define GEN_PASS_DEF_PINGPONG
#include "Transforms/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

/// The persistent loop of the consumers: the scf.while whose condition
/// region takes the next tile.
scf::WhileOp persistentLoop(Block &consumer) {
  for (auto loop : consumer.getOps<scf::WhileOp>()) {
    bool takesTiles = false;
    loop.getBefore().walk([&](NextTileOp) { takesTiles = true; });
    if (takesTiles)
      return loop;
  }
  return {};
}

LogicalResult split(WarpSpecializeOp ws) {
  scf::WhileOp loop = persistentLoop(ws.getConsumer().front());
  if (!loop)
    return ws.emitOpError("ping-pong consumers need the persistent loop "
                          "(tile-persistent) at the top of their region");
  Block *body = loop.getAfterBody();
  Operation *yield = body->getTerminator();

  // What the step's increment needs stays outside the `if`.
  llvm::SetVector<Operation *> keep;
  SmallVector<Operation *> work = {yield};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp();
          def && def->getBlock() == body && keep.insert(def))
        work.push_back(def);
  }

  Location l = loop.getLoc();
  OpBuilder b = OpBuilder::atBlockBegin(body);
  Value step = body->getArgument(0);
  Value group = b.create<ConsumerGroupOp>(l, b.getI32Type());
  Value two = b.create<arith::ConstantOp>(l, b.getI32IntegerAttr(2));
  Value mine =
      b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq,
                              b.create<arith::RemUIOp>(l, step, two), group);
  auto ifOp = b.create<scf::IfOp>(l, mine, /*withElseRegion=*/true);
  for (Operation &op : llvm::make_early_inc_range(llvm::make_range(
           std::next(ifOp->getIterator()), yield->getIterator())))
    if (keep.contains(&op))
      op.moveBefore(ifOp);

  // The tile's own group runs B as written ...
  Block *then = ifOp.thenBlock();
  SmallVector<Operation *> ops;
  for (Operation &op :
       llvm::make_range(std::next(ifOp->getIterator()), yield->getIterator()))
    ops.push_back(&op);
  for (Operation *op : ops)
    op->moveBefore(then->getTerminator());

  // Its main loop takes its turn: it starts after the previous step's, and
  // passes the turn on once the last loop that waits on the ring ended.
  OpBuilder tb = OpBuilder::atBlockBegin(then);
  tb.create<TurnWaitOp>(l, step);
  RingWaitOp lastWait;
  then->walk([&](RingWaitOp w) { lastWait = w; });
  if (lastWait) {
    Operation *loop = lastWait;
    for (Operation *p = lastWait->getParentOp(); p != ifOp;
         p = p->getParentOp())
      if (isa<scf::ForOp>(p))
        loop = p;
    tb.setInsertionPointAfter(loop);
    tb.create<TurnPassOp>(l, step);
  }
  tb.setInsertionPoint(then->getTerminator());
  tb.create<TurnPassOp>(l, step);

  // ... the other only counts the ring iterations it would have used.
  Block *other = ifOp.elseBlock();
  OpBuilder eb = OpBuilder::atBlockBegin(other);
  eb.setInsertionPoint(other->getTerminator());
  IRMapping map;
  for (Operation *op : ops)
    eb.clone(*op, map);
  sliceToRoots(*other, [](Operation *op) { return isa<RingAdvanceOp>(op); });
  return success();
}

struct PingPongPass : public sparsetile::impl::PingPongBase<PingPongPass> {
  void runOnOperation() override {
    SmallVector<WarpSpecializeOp> found;
    getOperation().walk([&](WarpSpecializeOp ws) {
      if (ws.getConsumerGroups() > 1)
        found.push_back(ws);
    });
    for (WarpSpecializeOp ws : found)
      if (failed(split(ws)))
        return signalPassFailure();
  }
};

} // namespace
