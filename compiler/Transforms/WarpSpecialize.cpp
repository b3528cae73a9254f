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
// Pruning is a liveness walk over B' (sliceToRoots, Slice.h): the roots are
// the producer's ring ops (acquire, expect, copy, and a pointer ring's
// ring_copy_ptrs / ring_arrive) and the ring's running count
// (ring_advance). Everything else (the consumers' loop, MMAs, stores) is
// erased. A pointer ring's producer keeps the tile math of its addresses
// and masks, which tile-assign-layouts spreads over the producer's 128
// threads.
//
// `@pingpong(1)` kernels get two consumer groups of `num_warps` warps
// (consumer_groups = 2); tile-pingpong then splits the tiles between them.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/SharedMemory.h"
#include "Dialect/Tile/TileDialect.h"
#include "Transforms/Passes.h"
#include "Transforms/Slice.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace sparsetile {
#define GEN_PASS_DEF_WARPSPECIALIZE
#include "Transforms/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

/// The consumers' registers when a producer warpgroup keeps `producerRegs`
/// in a block of `consumerThreads` + 128 threads alone on its SM. The
/// block starts with the cap ptxas gives every thread (64 K registers /
/// threads, in steps of 8); the consumers may take no more than what the
/// producer frees (setmaxnreg.inc would wait forever for more).
int64_t consumerRegsFor(int64_t consumerThreads, int64_t producerRegs) {
  int64_t threads = consumerThreads + 128;
  int64_t entry = std::min<int64_t>(65536 / threads / 8 * 8, 248);
  int64_t regs = (threads * entry - 128 * producerRegs) / consumerThreads;
  return std::min<int64_t>(regs / 8 * 8, 248);
}

/// A pointer ring's producer threads after setmaxnreg: each holds the
/// global addresses of its cp.async copies (a 128 x 256 x 64 f16 stage is
/// 24 copies a thread) and their masks, where a TMA producer holds a few
/// block positions.
constexpr int64_t kPointerProducerRegs = 112;

LogicalResult specialize(func::FuncOp func, int64_t producerRegs) {
  Block &entry = func.getBody().front();
  auto init = dyn_cast<RingInitOp>(&entry.front());
  if (!init)
    return func.emitOpError("a warp-specialized ring needs tile.ring_init "
                            "first in the kernel");
  int64_t warps = 4;
  if (auto w = func->getAttrOfType<IntegerAttr>(kNumWarpsAttr))
    warps = w.getInt();
  int64_t groups = 1;
  if (auto pp = func->getAttrOfType<IntegerAttr>(kPingPongAttr);
      pp && pp.getInt()) {
    // Alternate tiles need the persistent loop to alternate over, and
    // whole warpgroups (wgmma, setmaxnreg) that fit the register file
    // twice with their accumulators.
    auto persistent = func->getAttrOfType<IntegerAttr>(kPersistentAttr);
    if (!persistent || !persistent.getInt())
      return func.emitOpError("@pingpong(1) needs @persistent(1): the two "
                              "consumer groups take alternate tiles of its "
                              "loop");
    if (warps != 4)
      return func.emitOpError("@pingpong(1) runs two groups of one "
                              "warpgroup each: it needs @num_warps(4), got ")
             << warps;
    if (auto c = func->getAttrOfType<IntegerAttr>(kClusterAttr);
        c && c.getInt() > 1)
      return func.emitOpError("@pingpong(1) does not combine with @cluster");
    groups = 2;
  }
  // A ring that leaves room for a second block on the SM gets it (e.g.
  // SparseDrop's dX: 128 x 128 tiles, three stages), with a one-warp
  // producer and no register moves: two blocks of 8 + 4 warps would cap
  // every thread at 80 registers, too few for a wgmma's accumulators.
  // A pointer ring's producer (thread_copies) copies with all of its 128
  // threads and holds the copies' addresses: it keeps a whole warpgroup
  // and more registers, one block an SM. (A one-warp producer beside a
  // second block spilled: 64 addresses a thread at 128 x 128 x 64.)
  auto ring = func->getAttrOfType<RingAttr>(kRingAttr);
  bool pointerRing = ring && ring.getThreadCopies() > 0;
  if (pointerRing)
    producerRegs = kPointerProducerRegs;
  int64_t blocks = 1;
  if (ring && groups == 1 && !pointerRing) {
    if (2 * (ringPartBytes(ring, func) + kSharedMemoryReservedPerBlock) <=
        kSharedMemoryPerSM)
      blocks = 2;
  }
  OpBuilder b(init->getContext());
  b.setInsertionPointAfter(init);
  IntegerAttr prodRegs, consRegs;
  if (blocks == 1) {
    prodRegs = b.getI32IntegerAttr(int32_t(producerRegs));
    consRegs = b.getI32IntegerAttr(
        int32_t(consumerRegsFor(32 * warps * groups, producerRegs)));
  }
  auto ws = b.create<WarpSpecializeOp>(
      func.getLoc(), b.getI32IntegerAttr(blocks == 1 ? 4 : 1), prodRegs,
      consRegs, b.getI32IntegerAttr(int32_t(blocks)),
      b.getI32IntegerAttr(int32_t(groups)));
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
  sliceToRoots(*producer, [](Operation *op) {
    return isa<RingAcquireOp, RingExpectOp, RingCopyOp, RingCopyPtrsOp,
               RingArriveOp, RingAdvanceOp>(op);
  });

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
