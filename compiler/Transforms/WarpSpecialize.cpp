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
// the producer's ring ops (acquire, expect, copy) and the ring's running
// count (ring_advance). Everything else (tile math, the consumers' loop,
// MMAs, stores) is erased.
//
// `@pingpong(1)` kernels get two consumer groups of `num_warps` warps
// (consumer_groups = 2); tile-pingpong then splits the tiles between them.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileDialect.h"
#include "Transforms/Passes.h"
#include "Transforms/Slice.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

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

/// Shared memory an SM offers its blocks, less the 1 KB each reserves.
constexpr int64_t kSmemPerSM = 228 * 1024;

/// The producer's loop over ring iterations reads block positions from
/// memory (SparseDrop's kept-block lists: `load(row + j / per)`), and each
/// read's latency used to stand between two iterations' copies: the load,
/// then the stage wait and the copies that need its value. Profiled on the
/// H100 at p = 0.9 (bench/NOTES.md), the producer waited on that load more
/// than on free stages, while the consumers waited for data. So each such
/// load is issued one iteration ahead: iteration j uses the value loaded
/// during iteration j - 1 (a loop-carried value; the first one is loaded
/// before the loop), and loads j + 1's under the mask j + 1 < upper bound.
/// Only loads whose address is pure arithmetic of the induction variable
/// and of values from outside the loop qualify (side-effect free ops: a
/// division is evaluated one iteration early by the divisor the loop uses).
void prefetchLoads(scf::ForOp loop) {
  SmallVector<LoadOp> loads;
  for (Operation &op : *loop.getBody())
    if (auto l = dyn_cast<LoadOp>(op);
        l && !isa<RankedTensorType>(l.getType()) && !l.getMask())
      loads.push_back(l);
  for (LoadOp load : loads) {
    Block *body = loop.getBody();
    Value iv = loop.getInductionVar();
    // The address's slice in the body.
    llvm::SetVector<Operation *> slice;
    SmallVector<Value> work = {load.getPtr()};
    bool ok = true;
    while (ok && !work.empty()) {
      Value v = work.pop_back_val();
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        ok = arg.getOwner() != body || v == iv;
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (def->getBlock() != body)
        continue; // Defined before the loop.
      if (!isMemoryEffectFree(def) || def->getNumRegions()) {
        ok = false;
        continue;
      }
      if (slice.insert(def))
        llvm::append_range(work, def->getOperands());
    }
    if (!ok)
      continue;
    SmallVector<Operation *> ordered(slice.begin(), slice.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    Location l = load.getLoc();
    // The load of iteration `at` (nothing read when at is past the loop).
    auto loadAt = [&](OpBuilder &b, Value at) -> Value {
      // The slice still names the old loop's induction variable while the
      // new loop is built (its body moves over afterwards).
      IRMapping map;
      map.map(iv, at);
      for (Operation *op : ordered)
        b.clone(*op, map);
      Value inRange = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, at,
                                              loop.getUpperBound());
      Value zero =
          b.create<arith::ConstantOp>(l, b.getZeroAttr(load.getType()));
      return b.create<LoadOp>(
          l, load.getType(), map.lookupOrDefault(load.getPtr()), inRange, zero);
    };
    OpBuilder before(loop);
    Value first = loadAt(before, loop.getLowerBound());
    IRRewriter rewriter(loop.getContext());
    auto grown = loop.replaceWithAdditionalYields(
        rewriter, first, /*replaceInitOperandUsesInLoop=*/false,
        [&](OpBuilder &b, Location, ArrayRef<BlockArgument> args) {
          // Issued first in the iteration, so that its latency overlaps
          // this iteration's stage wait and copies.
          Block *newBody = args[0].getOwner();
          Value newIv = newBody->getArgument(0);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(newBody);
          Value next = b.create<arith::AddIOp>(l, newIv, loop.getStep());
          return SmallVector<Value>{loadAt(b, next)};
        });
    if (failed(grown))
      return;
    loop = cast<scf::ForOp>(grown->getOperation());
    load.replaceAllUsesWith(loop.getRegionIterArgs().back());
    load.erase();
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
  int64_t blocks = 1;
  if (auto ring = func->getAttrOfType<RingAttr>(kRingAttr); groups == 1) {
    int64_t bytes = ring.getStages() * (ring.getStageBytes() + 16) + 1024;
    if (2 * (bytes + 1024) <= kSmemPerSM)
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
    return isa<RingAcquireOp, RingExpectOp, RingCopyOp, RingAdvanceOp>(op);
  });
  SmallVector<scf::ForOp> copyLoops;
  producer->walk([&](scf::ForOp loop) {
    if (llvm::any_of(loop.getBody()->getOperations(),
                     [](Operation &op) { return isa<RingCopyOp>(op); }))
      copyLoops.push_back(loop);
  });
  for (scf::ForOp loop : copyLoops)
    prefetchLoads(loop);

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
