//===- PipelineTMA.cpp - Software-pipelined TMA + wgmma K loops -----------===//
//
// tile-pipeline-tma rewrites the K loop of a GEMM-like kernel (sm_90a),
//
//   scf.for %k = lo to hi step s iter_args(%acc = %init) {
//     <scalar ops: block positions from %k, maybe index-list loads>
//     %a = tile.desc_load %da[...]          (or trans(desc_load))
//     %b = tile.desc_load %db[...]          (or trans(desc_load))
//     scf.yield tile.dot(%a, %b, %acc)      (or tile.sparse_dot)
//   }
//
// into a ring of S shared-memory stages (S = 2..4, as many as fit; each
// stage holds one iteration's blocks, 128-byte swizzled) with two mbarriers
// per stage: `full` (its copies landed: one arrival plus the copies' bytes)
// and `empty` (every consumer warp finished the MMAs that read it).
//
// The generated kernel, in its default warp-specialized form (after
// tile-warp-specialize splits the roles; n = the loop's trip count, g = the
// ring's running iteration, base + i):
//
//   all threads:  ring_init (mbarriers, block barrier)
//   producer warpgroup (its own pruned copy of the kernel):
//     for each tile (one, or the persistent loop's):
//       for i < n:  block positions of iteration i (list loads first)
//                   wait empty[g % S], parity ((g / S) & 1) ^ 1
//                     (the first S uses pass: a fresh mbarrier's previous
//                      phase counts as complete)
//                   arm full[g % S] with the stage's bytes; TMA copies
//       ring_advance n
//   consumer warps:
//     for each tile:
//       for i < n:  wait full[g % S], parity (g / S) & 1
//                   wgmma fence; async wgmmas (the first of a zero-
//                   initialized loop with scale-d = 0); commit;
//                   wait_group 1 (iteration i - 1 done); lane 0 of each
//                   warp arrives on empty[(g - 1) % S]
//       wait_group 0; release the last stage; ring_advance n
//       epilogue (n == 0: zeros)
//     A sparse_dot's loop runs iterations in pairs (two ring_dots, then an
//     odd last one in a loop of its own): sparse wgmma reads its metadata
//     registers asynchronously, and only distinct ops get distinct
//     registers, so the pairs are what lets it keep wait_group 1
//     (tile.ring_dot's meta_alternates). At a K step of 64 the values are
//     one 64-byte-swizzled panel and the 8-byte metadata rows come in the
//     16-byte box of a step pair (copied at column (k / 16) & -8; the
//     ring_dot of iteration i reads half i % 2: meta_col, meta_pitch).
//
// Phases and stages continue from one loop to the next through
// tile.ring_base / tile.ring_advance, so a persistent kernel's producer
// runs into the next tile while the consumers store this one. Kernels with
// @warp_specialize(0) get the older form, where thread 0 of the block
// issues the copies S iterations ahead from inside the consumers' loop
// (pipeline() below). Loops that do not match are left alone; the
// tile-expand-desc-load pass turns their desc_loads into plain loads.
//
// Operands loaded through pointers fill the stages with cp.async: every
// thread's from inside the consumers' loop (pipeline()), or, where that
// ring would hold one block an SM anyway or the kernel says
// @warp_specialize(1), a producer warpgroup's in the form above, its
// address arithmetic split first (PipelineAddresses.cpp); its
// ring_copy_ptrs and mbarrier arrivals take the place of the TMA copies.
//
// On targets without TMA and wgmma (`cp-async`: sm_80 .. sm_89) only the
// pointer-operand form exists: pipeline() with every thread's cp.async
// filling the stages, each ring_dot a synchronous mma_sync one that
// releases the stage it read (RingMmaSync.cpp), or the chained form's
// (PipelineChain.cpp) likewise.
//
// A dot inside an `if` of its loop (`if kept(k) { acc = dot(...) }`) takes
// the pointer ring too: a skipped iteration's fill copies nothing and every
// thread arrives on its stage (tile.ring_arrive), and its ring_dot, given
// the condition as `enabled`, runs no MMA but still releases its stage.
//
// Which loops match, and the remarks on those that do not, are
// PipelineMatch.cpp's (a Candidate, PipelineRing.h); how an operand is
// copied, PipelineOperands.cpp's.
//
//===----------------------------------------------------------------------===//

#include "Conversion/AxisInfo.h"
#include "Conversion/PerfRemarks.h"
#include "Dialect/Tile/TileDialect.h"
#include "Dialect/Tile/TileLayouts.h"
#include "Transforms/LoopTrips.h"
#include "Transforms/Passes.h"
#include "Transforms/PipelineRing.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace sparsetile {
#define GEN_PASS_DEF_PIPELINETMA
#include "Transforms/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::pipeline_ring;


namespace {

/// Clones the scalar ops that compute block positions for induction value
/// `iv` (or only `ops` of them, such as the guard's condition); the
/// returned mapping gives the clones of the desc_load operands.
IRMapping cloneSlice(OpBuilder &b, Candidate &c, Value iv,
                     std::optional<ArrayRef<Operation *>> ops = std::nullopt) {
  IRMapping map;
  map.map(c.loop.getInductionVar(), iv);
  for (Operation *op : ops ? *ops : ArrayRef<Operation *>(c.slice))
    b.clone(*op, map);
  return map;
}

/// Arms `stage` and issues the copies of the iteration `map` describes.
void issue(OpBuilder &b, Location l, Candidate &c, IRMapping &map, Value stage,
           ArrayRef<int64_t> offsets) {
  if (c.a.ptrLoad) {
    // Every thread copies its part; each one's arrival (when its copies
    // landed) completes the stage, no byte count to arm. An iteration the
    // guard skips copies nothing, and every thread arrives all the same.
    OpBuilder::InsertionGuard ig(b);
    if (c.guard) {
      auto kept = b.create<scf::IfOp>(
          l, map.lookupOrDefault(c.guard.getCondition()), /*withElse=*/true);
      OpBuilder eb = kept.getElseBodyBuilder();
      for (size_t i = 0; i < c.operands().size(); ++i)
        eb.create<RingArriveOp>(l, stage);
      b.setInsertionPoint(kept.thenBlock()->getTerminator());
    }
    for (auto [o, offset] : llvm::zip(c.operands(), offsets)) {
      Value mask = o->ptrLoad.getMask();
      b.create<RingCopyPtrsOp>(
          l, stage, map.lookupOrDefault(o->ptrLoad.getPtr()),
          mask ? map.lookupOrDefault(mask) : Value(), offset, o->rows, o->cols,
          o->layout(b.getContext()));
    }
    return;
  }
  b.create<RingExpectOp>(l, stage, c.stageBytes());
  for (auto [o, offset] : llvm::zip(c.operands(), offsets)) {
    Value col = map.lookupOrDefault(o->load.getCol());
    // A widened metadata box starts at the 16-byte unit holding the block.
    if (o->widened())
      col = b.create<arith::AndIOp>(l, col, i32c(b, l, -o->boxCols));
    b.create<RingCopyOp>(l, stage, o->load.getDesc(),
                         map.lookupOrDefault(o->load.getRow()), col, offset,
                         o->rows, o->boxCols, o->layout(b.getContext()),
                         /*multicast=*/false);
  }
}

/// The ring's shape for candidate `c`: stage count (at least two: a stage
/// is refilled one iteration after it was read) and stage layout (A, B,
/// then the metadata; offsets stay 1024-aligned for the swizzled operands,
/// whose sizes are multiples of 8 x 128 bytes). Recorded on the kernel.
struct RingShape {
  int64_t stages, aOffset, bOffset, metaOffset;
  SmallVector<int64_t> offsets() const { return {aOffset, bOffset, metaOffset}; }
};

/// The ring's stage count for candidate `c`: `wantStages` (0: by default)
/// within the kernel's budget. A ring its consumers fill (pointer operands
/// without a producer) is pointerRingStages deep by default, others as
/// deep as fit up to kMaxStages.
int64_t ringStages(Candidate &c, func::FuncOp func, int64_t wantStages,
                   int64_t lessBudget, bool producer) {
  int64_t stageBytes = c.stageBytes();
  // `for k in range(lo, hi, step, num_stages=N)` (tile.num_stages on the
  // loop, Triton's per-loop spelling) overrides the kernel's num_stages.
  // The ring needs two stages at least (one is refilled while the other is
  // read), so N = 1 gives two, as the kernel-wide option does.
  if (auto perLoop = c.loop->getAttrOfType<IntegerAttr>("tile.num_stages"))
    wantStages = perLoop.getInt();
  // TMA stores stage their blocks beside the ring (markTmaStores).
  int64_t budget = ringStageBudget(func) - lessBudget;
  int64_t byDefault =
      c.a.ptrLoad && !producer ? pointerRingStages(stageBytes) : kMaxStages;
  return std::max<int64_t>(2, std::min(wantStages > 0 ? wantStages : byDefault,
                                       budget / stageBytes));
}

RingShape ringShape(Candidate &c, func::FuncOp func, int64_t wantStages,
                    int64_t lessBudget = 0, bool producer = false) {
  int64_t stageBytes = c.stageBytes();
  RingShape r;
  r.stages = ringStages(c, func, wantStages, lessBudget, producer);
  r.aOffset = 0;
  r.bOffset = c.a.bytes();
  r.metaOffset = r.bOffset + c.b.bytes();
  OpBuilder b(func.getContext());
  // A pointer ring's stage is filled by one tile.ring_copy_ptrs an operand
  // (issue()), each thread arriving once per op.
  int64_t threadCopies = c.a.ptrLoad ? int64_t(c.operands().size()) : 0;
  func->setAttr(kRingAttr, RingAttr::get(b.getContext(), r.stages, stageBytes,
                                         threadCopies, /*apart=*/false));
  return r;
}

/// Whether the ring the block's threads would fill for pointer operands
/// leaves no room for a second block on the SM. Such a block has no other
/// to run while its threads wait for their copies, so a producer warpgroup
/// that issues them pays: the parity matmul at 128 x 256 tiles ran 4-6%
/// faster with one (four stages) at 2048^3-8192^3, where at 128 x 128 (two
/// blocks an SM copying) it ran 13-15% slower (bench/NOTES.md, "A producer
/// warpgroup for pointer rings").
bool copyingRingFillsSM(Candidate &c, func::FuncOp func, int64_t wantStages) {
  int64_t stages = ringStages(c, func, wantStages, 0, /*producer=*/false);
  RingAttr copying = RingAttr::get(func.getContext(), stages, c.stageBytes(),
                                   int64_t(c.operands().size()), false);
  return 2 * (ringPartBytes(copying, func) + kSharedMemoryReservedPerBlock) >
         kSharedMemoryPerSM;
}

/// Makes the kernel's block stores TMA stores (tile.desc_store's `tma`)
/// where the consumers can hand a tile to the copy engine and go on: a
/// persistent warp-specialized kernel with one consumer group (ping-pong
/// groups would store two tiles at once) and no cluster. A stored block
/// must be 16-bit, at most 256 rows and whole 64-column panels (the
/// swizzled box), of a descriptor the kernel takes as a parameter (the
/// runtime encodes its box). The others stay plain masked stores. Their
/// staging area is then left out of the ring's budget (ringShape).
void markTmaStores(func::FuncOp func) {
  auto flag = [&](const char *attr) {
    auto a = func->getAttrOfType<IntegerAttr>(attr);
    return a ? a.getInt() : 0;
  };
  if (!flag(kPersistentAttr) || flag(kPingPongAttr) || flag(kClusterAttr) > 1)
    return;
  func.walk([&](DescStoreOp op) {
    auto t = cast<RankedTensorType>(op.getValue().getType());
    if (t.getElementTypeBitWidth() == 16 && t.getDimSize(0) <= 256 &&
        t.getDimSize(0) % 8 == 0 && t.getDimSize(1) % 64 == 0 &&
        isa<BlockArgument>(op.getDesc()))
      op.setTma(true);
  });
}

/// Where iteration `i`'s metadata starts in a widened box: (i % 2) * K/16
/// columns (widenedMetaLoop); null when the box is the block.
Value metaCol(OpBuilder &b, const Candidate &c, Value i) {
  if (!c.meta || !c.meta->widened())
    return Value();
  Location l = i.getLoc();
  return b.create<arith::MulIOp>(l,
                                 b.create<arith::AndIOp>(l, i, i32c(b, l, 1)),
                                 i32c(b, l, c.meta->cols));
}

/// A widened metadata box's row pitch, for the ring_dots that read it (null
/// when the rows are K/16 i16, as loaded).
IntegerAttr metaPitch(OpBuilder &b, const Candidate &c) {
  if (!c.meta || !c.meta->widened())
    return IntegerAttr();
  return b.getI64IntegerAttr(c.meta->boxCols);
}

/// Moves the ring's `loop` under its own entry test (0 < n) and gives the
/// test's result: what `drain` builds after the loop, or `init` where the
/// loop does not run. The path that skips the loop then never merges `init`
/// with the accumulator in flight before the drain's wait, which ptxas
/// answered by moving `init` into the registers the last wgmma writes
/// (C7515) or by serializing the wgmmas (C7514).
Value underEntryTest(OpBuilder &b, Location l, scf::ForOp loop, Value n,
                     Value init, function_ref<Value(OpBuilder &)> drain) {
  auto guard = b.create<scf::IfOp>(
      l, TypeRange{init.getType()},
      b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, i32c(b, l, 0), n),
      /*withElseRegion=*/true);
  Block *then = &guard.getThenRegion().front();
  loop->moveBefore(then, then->end());
  OpBuilder tb = OpBuilder::atBlockEnd(then);
  tb.create<scf::YieldOp>(l, ValueRange{drain(tb)});
  OpBuilder eb = OpBuilder::atBlockEnd(&guard.getElseRegion().front());
  eb.create<scf::YieldOp>(l, ValueRange{init});
  return guard.getResult(0);
}

/// The ring's prologue: iterations 0 .. stages - 1 of `n` each fill their
/// stage if there is such an iteration. Where the blocks' positions are
/// loaded (a pointer ring over a kept-block list, as block-sparse kernels
/// read `kidx[i]`), a loop of `stages` iterations or more fills them all in
/// one straight block, the loads first: under a branch each (and LLVM sinks
/// each load into its branch) every copy waited on its own load, and a
/// short loop does not hide those latencies in a row before its first MMA.
template <typename IvAt>
void fillPrologue(OpBuilder &b, Location l, Candidate &c, Value n,
                  int64_t stages, ArrayRef<int64_t> offsets, IvAt ivAt) {
  auto eachIfLive = [&](OpBuilder &ob) {
    for (int64_t s = 0; s < stages; ++s) {
      Value si = i32c(ob, l, s);
      Value live =
          ob.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, si, n);
      auto ifOp = ob.create<scf::IfOp>(l, live, /*withElse=*/false);
      OpBuilder ib = ifOp.getThenBodyBuilder();
      IRMapping map = cloneSlice(ib, c, ivAt(ib, si));
      issue(ib, l, c, map, si, offsets);
    }
  };
  bool loadsPositions = c.a.ptrLoad && llvm::any_of(c.slice, [](Operation *op) {
                          return isa<LoadOp>(op);
                        });
  if (!loadsPositions)
    return eachIfLive(b);
  auto full =
      b.create<scf::IfOp>(l,
                          b.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge,
                                                  n, i32c(b, l, stages)),
                          /*withElse=*/true);
  OpBuilder tb = full.getThenBodyBuilder();
  SmallVector<IRMapping> maps;
  for (int64_t s = 0; s < stages; ++s)
    maps.push_back(cloneSlice(tb, c, ivAt(tb, i32c(tb, l, s))));
  for (int64_t s = 0; s < stages; ++s)
    issue(tb, l, c, maps[s], i32c(tb, l, s), offsets);
  OpBuilder eb = full.getElseBodyBuilder();
  eachIfLive(eb);
}

/// The ring without a producer: the block's threads fill stages (thread 0's
/// TMA copies, or every thread's cp.async) S iterations ahead of the MMAs.
/// With `mmaSync` (targets without wgmma) the dots are synchronous ldmatrix
/// + mma.sync ring_dots, each releasing the stage it read; else a wgmma
/// ring_dot releases the stage of the iteration before, which its
/// wait_group(1) ended. `lessBudget`: shared memory the target lacks
/// against sm_90's.
void pipeline(Candidate &c, func::FuncOp func, int64_t wantStages,
              bool mmaSync = false, int64_t lessBudget = 0) {
  scf::ForOp loop = c.loop;
  Location l = loop.getLoc();
  OpBuilder b(loop);
  RingShape shape = ringShape(c, func, wantStages, lessBudget);
  int64_t stages = shape.stages, aOffset = shape.aOffset,
          bOffset = shape.bOffset, metaOffset = shape.metaOffset;
  SmallVector<int64_t> offsets = shape.offsets();
  Value n = tripCount(b, loop);
  auto ivAt = [&](OpBuilder &bb, Value i) { return inductionAt(bb, loop, i); };

  b.create<RingInitOp>(l);
  fillPrologue(b, l, c, n, stages, offsets, ivAt);

  Value init = loop.getInitArgs()[0];
  // A pointer ring carries its stage and phase through the loop, stepped
  // by compare and select, rather than computing i % S and (i / S) & 1:
  // at three stages those are a multiply-high chain per iteration that
  // ptxas keeps off the uniform datapath, so every wgmma descriptor built
  // from the stage's address took an R2UR and a NOP (bench/NOTES.md,
  // "The pointer ring's stage carried through the loop").
  bool counters = bool(c.a.ptrLoad);
  // A dot outside loops, as a loop of one (PipelineStandalone.cpp), does
  // not materialize a zero accumulator, as the specialized ring does not:
  // zeros moved into the registers its wgmma reads drew ptxas' C7519 (a
  // warpgroup.arrive injected).
  bool zeroInit = loop->hasAttr(kOneTripAttr) && isZeroTile(init);
  // A guarded wgmma dot from zeros likewise: the loop carries whether any
  // iteration ran (`ran`), the first that runs starts from zero
  // (accumulate = ran), and the drained result is zeros if none ran. Zeros
  // carried in drew C7519 once LLVM peeled the first iteration and moved
  // them in after its wgmma fence.
  bool zeroUntilRun = c.guard && !mmaSync && isZeroTile(init);
  SmallVector<Value> inits{
      zeroInit || zeroUntilRun
          ? Value(b.create<ub::PoisonOp>(l, init.getType()))
          : init};
  if (counters)
    inits.append({i32c(b, l, 0), i32c(b, l, 0)});
  if (zeroUntilRun)
    inits.push_back(b.create<arith::ConstantIntOp>(l, b.getI1Type(), 0));
  auto ring = b.create<scf::ForOp>(l, i32c(b, l, 0), n, i32c(b, l, 1), inits);
  {
    // scf.for built with iter_args has no terminator yet.
    OpBuilder lb = OpBuilder::atBlockEnd(ring.getBody());
    Value i = ring.getInductionVar();
    Value sN = i32c(lb, l, stages);
    // Block positions of iteration i - 1 + S, the one this iteration
    // refills, computed first so that their loads (e.g. of a kept-block
    // list) overlap the wait and the MMAs. Clamped to the last iteration:
    // the values are only used when i - 1 + S < n.
    Value next = lb.create<arith::AddIOp>(l, i, i32c(lb, l, stages - 1));
    Value last = lb.create<arith::SubIOp>(l, n, i32c(lb, l, 1));
    IRMapping map =
        cloneSlice(lb, c, ivAt(lb, lb.create<arith::MinSIOp>(l, next, last)));
    // A guarded dot runs when its condition holds for iteration i itself,
    // recomputed here (a mask word's load hits L1) rather than carried
    // through the S - 1 iterations since its fill.
    Value kept;
    if (c.guard)
      kept = cloneSlice(lb, c, ivAt(lb, i), ArrayRef<Operation *>(c.guardSlice))
                 .lookupOrDefault(c.guard.getCondition());
    // (Ops are created in the order they were before the counters, so that
    // the TMA rings' PTX stays as it was.)
    Value stage, phase, prev, prevPhase;
    if (counters) {
      Value one = i32c(lb, l, 1);
      stage = ring.getRegionIterArgs()[1];
      phase = ring.getRegionIterArgs()[2];
      Value first = lb.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, stage,
                                             i32c(lb, l, 0));
      Value before = lb.create<arith::SubIOp>(l, stage, one);
      prev =
          lb.create<arith::SelectOp>(l, first, i32c(lb, l, stages - 1), before);
      Value flipped = lb.create<arith::XOrIOp>(l, phase, one);
      prevPhase = lb.create<arith::SelectOp>(l, first, flipped, phase);
    } else {
      stage = lb.create<arith::RemSIOp>(l, i, sN);
      phase = lb.create<arith::AndIOp>(l, lb.create<arith::DivSIOp>(l, i, sN),
                                       i32c(lb, l, 1));
    }
    // A skipped iteration reads nothing, so it need not wait for its
    // stage's (empty) fill: every thread arrived on it before releasing
    // the stage it read earlier, and the refill of this one acquires it
    // only once every warp released it, so its phase is complete before
    // the next fill's arrivals count.
    if (kept) {
      auto wait = lb.create<scf::IfOp>(l, kept, /*withElse=*/false);
      OpBuilder wb = wait.getThenBodyBuilder();
      wb.create<RingWaitOp>(l, stage, phase);
    } else {
      lb.create<RingWaitOp>(l, stage, phase);
    }
    if (!counters)
      prev = lb.create<arith::RemSIOp>(l, next, sN);
    // The stage iteration i - 1 read (`prev`), released by this ring_dot
    // (by the last one, for mma.sync) and refilled with iteration i - 1 + S
    // once every thread released it.
    Value release =
        mmaSync ? stage
                : lb.create<arith::SelectOp>(
                        l,
                        lb.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge,
                                                 i, i32c(lb, l, 1)),
                        prev, i32c(lb, l, -1))
                      .getResult();
    auto bT =
        cast<RankedTensorType>(c.dot->getOperand(c.meta ? 2 : 1).getType());
    int64_t k = bT.getDimSize(0);
    auto dot = lb.create<RingDotOp>(
        l, c.dot->getResult(0).getType(), stage, release,
        ring.getRegionIterArgs()[0],
        /*accumulate=*/
        zeroInit ? Value(lb.create<arith::CmpIOp>(l, arith::CmpIPredicate::sgt,
                                                  i, i32c(lb, l, 0)))
        : zeroUntilRun ? ring.getRegionIterArgs().back()
                       : Value(),
        metaCol(lb, c, i), /*enabled=*/kept,
        /*a=*/Value(), /*sync=*/mmaSync, aOffset,
        /*a_kmajor=*/!c.a.trans, bOffset,
        /*b_kmajor=*/bool(c.b.trans), k, bT.getElementType(),
        c.meta ? lb.getI64IntegerAttr(metaOffset) : IntegerAttr(),
        /*meta_alternates=*/false, metaPitch(lb, c),
        c.a.layout(lb.getContext()), c.b.layout(lb.getContext()), mmaSync);
    // Operands named in the order g++ builds them (see ExpandDescLoad.cpp).
    Value more =
        lb.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, next, n);
    Value one = i32c(lb, l, 1);
    Value notFirst =
        lb.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge, i, one);
    Value refill = lb.create<arith::AndIOp>(l, notFirst, more);
    auto ifOp = lb.create<scf::IfOp>(l, refill, /*withElse=*/false);
    OpBuilder ib = ifOp.getThenBodyBuilder();
    // Use (i - 1) / S of that stage ended with phase ((i - 1) / S) & 1.
    if (!counters) {
      Value used = ib.create<arith::DivSIOp>(
          l, ib.create<arith::SubIOp>(l, i, i32c(ib, l, 1)), sN);
      prevPhase = ib.create<arith::AndIOp>(l, used, i32c(ib, l, 1));
    }
    ib.create<RingAcquireOp>(l, prev, prevPhase);
    issue(ib, l, c, map, prev, offsets);
    SmallVector<Value> yields{dot.getResult()};
    if (counters) {
      // Stage + 1, wrapping to 0 with the phase flipped.
      Value step = lb.create<arith::AddIOp>(l, stage, one);
      Value wrap =
          lb.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, step, sN);
      yields.push_back(
          lb.create<arith::SelectOp>(l, wrap, i32c(lb, l, 0), step));
      yields.push_back(lb.create<arith::SelectOp>(
          l, wrap, lb.create<arith::XOrIOp>(l, phase, one), phase));
    }
    if (zeroUntilRun)
      yields.push_back(
          lb.create<arith::OrIOp>(l, ring.getRegionIterArgs().back(), kept));
    lb.create<scf::YieldOp>(l, yields);
  }
  b.setInsertionPointAfter(ring);
  Value drained;
  if (counters && !zeroInit) {
    // The loop and its drain under the loop's own entry test (i < n, which
    // LLVM folds into the loop's guard): otherwise the path that skips the
    // loop merges the initial accumulator with the in-flight one before the
    // drain's wait, and ptxas may move it into the registers the last wgmma
    // writes (C7515; it did once the epilogue was staged through the ring).
    drained = underEntryTest(b, l, ring, n, init, [&](OpBuilder &tb) {
      Value result = tb.create<RingDrainOp>(l, init.getType(),
                                            ring.getResult(0), i32c(tb, l, -1));
      if (zeroUntilRun)
        result = tb.create<arith::SelectOp>(l, ring.getResults().back(), result,
                                            init);
      return result;
    });
  } else {
    drained = b.create<RingDrainOp>(l, init.getType(), ring.getResult(0),
                                    i32c(b, l, -1));
    if (zeroInit)
      drained = b.create<arith::SelectOp>(
          l,
          b.create<arith::CmpIOp>(l, arith::CmpIPredicate::sgt, n,
                                  i32c(b, l, 0)),
          drained, init);
  }
  loop.getResult(0).replaceAllUsesWith(drained);
  loop.erase();
}

/// The warp-specialized ring: a tile.producer loop acquires stages and
/// issues their copies; the consumers' loop waits for them and runs the
/// MMAs. Iteration i of this loop is iteration g = base + i of the ring
/// (tile.ring_base), so that the ring's stages and mbarrier phases carry
/// on from one loop to the next in a persistent kernel:
///
///   producer: for i < n: g = base + i
///               acquire stage g % S, parity ((g / S) & 1) ^ 1
///               (the first S uses pass at once: a fresh mbarrier's
///                "previous phase", parity 1, counts as complete)
///               arm the stage and issue iteration i's copies
///   consumers: for i < n: g = base + i
///               wait for stage g % S, parity (g / S) & 1
///               acc = ring_dot (releases stage (g - 1) % S for i >= 1)
///             acc = ring_drain acc (releases the last stage)
///   ring_advance n
void pipelineSpecialized(Candidate &c, func::FuncOp func, int64_t wantStages) {
  scf::ForOp loop = c.loop;
  Location l = loop.getLoc();
  OpBuilder b(loop);
  RingShape shape = ringShape(c, func, wantStages, 0, /*producer=*/true);
  int64_t stages = shape.stages, aOffset = shape.aOffset,
          bOffset = shape.bOffset, metaOffset = shape.metaOffset;
  SmallVector<int64_t> offsets = shape.offsets();
  Value n = tripCount(b, loop);
  auto ivAt = [&](OpBuilder &bb, Value i) { return inductionAt(bb, loop, i); };
  auto stageOf = [&](OpBuilder &bb, Value g) -> Value {
    return bb.create<arith::RemSIOp>(l, g, i32c(bb, l, stages));
  };
  auto phaseOf = [&](OpBuilder &bb, Value g) -> Value {
    return bb.create<arith::AndIOp>(
        l, bb.create<arith::DivSIOp>(l, g, i32c(bb, l, stages)),
        i32c(bb, l, 1));
  };

  // The ring is set up once, by the whole block, before the roles split.
  Block &entry = func.getBody().front();
  if (entry.empty() || !isa<RingInitOp>(entry.front())) {
    OpBuilder fb = OpBuilder::atBlockBegin(&entry);
    fb.create<RingInitOp>(l);
  }
  Value base = b.create<RingBaseOp>(l, b.getI32Type());

  // The producer's loop.
  auto producer = b.create<ProducerOp>(l);
  {
    OpBuilder pb = OpBuilder::atBlockBegin(&producer.getBody().emplaceBlock());
    auto fill = pb.create<scf::ForOp>(l, i32c(pb, l, 0), n, i32c(pb, l, 1));
    OpBuilder lb = OpBuilder::atBlockTerminator(fill.getBody());
    Value i = fill.getInductionVar();
    // Block positions first: their loads (a kept-block list) then overlap
    // the wait for a free stage instead of delaying the copies after it.
    IRMapping map = cloneSlice(lb, c, ivAt(lb, i));
    Value g = lb.create<arith::AddIOp>(l, base, i);
    Value stage = stageOf(lb, g);
    lb.create<RingAcquireOp>(
        l, stage, lb.create<arith::XOrIOp>(l, phaseOf(lb, g), i32c(lb, l, 1)));
    issue(lb, l, c, map, stage, offsets);
  }

  // The consumers' loop. A zero initial accumulator is not materialized:
  // the loop starts from poison and its first MMA ignores it (accumulate =
  // i > 0); a select after the drain gives zeros to an empty loop. So only
  // wgmmas define the accumulator registers between the first MMA and the
  // drain's wait: a mov of zeros on the path that skips the loop would make
  // ptxas serialize every wgmma (C7515).
  Value init = loop.getInitArgs()[0];
  bool zeroInit = isZeroTile(init);
  Value loopInit =
      zeroInit ? Value(b.create<ub::PoisonOp>(l, init.getType())) : init;
  auto bT = cast<RankedTensorType>(c.dot->getOperand(c.meta ? 2 : 1).getType());
  // Iteration i's wait and ring_dot on `acc`.
  auto step = [&](OpBuilder &lb, Value i, Value acc, bool alternates) {
    Value g = lb.create<arith::AddIOp>(l, base, i);
    Value stage = stageOf(lb, g);
    lb.create<RingWaitOp>(l, stage, phaseOf(lb, g));
    Value none = i32c(lb, l, -1);
    Value prevStage =
        stageOf(lb, lb.create<arith::SubIOp>(l, g, i32c(lb, l, 1)));
    Value notFirst = lb.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge, i,
                                              i32c(lb, l, 1));
    Value release = lb.create<arith::SelectOp>(l, notFirst, prevStage, none);
    Value accumulate =
        zeroInit ? Value(lb.create<arith::CmpIOp>(
                       l, arith::CmpIPredicate::sgt, i, i32c(lb, l, 0)))
                 : Value();
    auto dot = lb.create<RingDotOp>(
        l, c.dot->getResult(0).getType(), stage, release, acc, accumulate,
        metaCol(lb, c, i), /*enabled=*/Value(), /*a=*/Value(),
        /*sync=*/false, aOffset,
        /*a_kmajor=*/!c.a.trans, bOffset,
        /*b_kmajor=*/bool(c.b.trans), bT.getDimSize(0), bT.getElementType(),
        c.meta ? lb.getI64IntegerAttr(metaOffset) : IntegerAttr(), alternates,
        metaPitch(lb, c), c.a.layout(lb.getContext()),
        c.b.layout(lb.getContext()));
    return dot.getResult();
  };
  // Dense: one ring_dot per iteration. Sparse: the loop runs pairs of
  // iterations, two ring_dots with their own metadata registers
  // (meta_alternates), so each waits only for the one before it, as dense
  // ring_dots do; a second loop runs the odd last iteration, if any.
  scf::ForOp ring;
  Value result;
  if (!c.meta) {
    ring = b.create<scf::ForOp>(l, i32c(b, l, 0), n, i32c(b, l, 1),
                                ValueRange{loopInit});
    OpBuilder lb = OpBuilder::atBlockEnd(ring.getBody());
    lb.create<scf::YieldOp>(
        l, step(lb, ring.getInductionVar(), ring.getRegionIterArgs()[0],
                false));
    result = ring.getResult(0);
  } else {
    Value pairs = b.create<arith::DivSIOp>(l, n, i32c(b, l, 2));
    ring = b.create<scf::ForOp>(l, i32c(b, l, 0), pairs, i32c(b, l, 1),
                                ValueRange{loopInit});
    {
      OpBuilder lb = OpBuilder::atBlockEnd(ring.getBody());
      Value i0 = lb.create<arith::MulIOp>(l, ring.getInductionVar(),
                                          i32c(lb, l, 2));
      Value d0 = step(lb, i0, ring.getRegionIterArgs()[0], true);
      Value i1 = lb.create<arith::AddIOp>(l, i0, i32c(lb, l, 1));
      lb.create<scf::YieldOp>(l, step(lb, i1, d0, true));
    }
    b.setInsertionPointAfter(ring);
    auto tail = b.create<scf::ForOp>(
        l, b.create<arith::MulIOp>(l, pairs, i32c(b, l, 2)), n,
        i32c(b, l, 1), ValueRange{ring.getResult(0)});
    {
      OpBuilder lb = OpBuilder::atBlockEnd(tail.getBody());
      lb.create<scf::YieldOp>(
          l, step(lb, tail.getInductionVar(), tail.getRegionIterArgs()[0],
                  true));
    }
    ring = tail;
    result = tail.getResult(0);
  }
  b.setInsertionPointAfter(ring);
  Value drained;
  if (c.a.ptrLoad && !c.meta) {
    // A pointer ring's loop and drain sit under the loop's entry test, as
    // pipeline() puts them: with the drained accumulator stored straight
    // from wgmma's registers (no epilogue math), a select of zeros after
    // the drain drew ptxas C7514 (wgmmas serialized).
    drained = underEntryTest(b, l, ring, n, init, [&](OpBuilder &tb) {
      Value end = tb.create<arith::AddIOp>(l, base, n);
      Value last =
          stageOf(tb, tb.create<arith::SubIOp>(l, end, i32c(tb, l, 1)));
      return tb.create<RingDrainOp>(l, init.getType(), result, last)
          .getResult();
    });
    b.create<RingAdvanceOp>(l, n);
  } else {
    Value end = b.create<arith::AddIOp>(l, base, n);
    Value none = i32c(b, l, -1);
    Value lastStage =
        stageOf(b, b.create<arith::SubIOp>(l, end, i32c(b, l, 1)));
    Value any =
        b.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge, n, i32c(b, l, 1));
    Value last = b.create<arith::SelectOp>(l, any, lastStage, none);
    drained = b.create<RingDrainOp>(l, init.getType(), result, last);
    b.create<RingAdvanceOp>(l, n);
    if (zeroInit)
      drained = b.create<arith::SelectOp>(
          l,
          b.create<arith::CmpIOp>(l, arith::CmpIPredicate::sgt, n,
                                  i32c(b, l, 0)),
          drained, init);
  }
  loop.getResult(0).replaceAllUsesWith(drained);
  loop.erase();
}

struct PipelineTMAPass
    : public sparsetile::impl::PipelineTMABase<PipelineTMAPass> {
  using PipelineTMABase::PipelineTMABase;
  /// The shared memory a block the target lacks against sm_90's (the
  /// `shared-per-block` option; 0 for sm_90), which every budget subtracts.
  int64_t lessBudget() const {
    return sharedPerBlock > 0 ? kSharedMemoryPerBlock - sharedPerBlock : 0;
  }
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func->hasAttr(kKernelAttr))
        continue;
      int64_t warps = 4;
      if (auto w = func->getAttrOfType<IntegerAttr>(kNumWarpsAttr))
        warps = w.getInt();
      if (tma) {
        // One ring per kernel: its mbarriers' phases are not reset between
        // loops, so only the first matching loop is pipelined.
        std::optional<Candidate> found;
        std::string why;
        AxisInfoAnalysis axis(func);
        func.walk([&](scf::ForOp loop) {
          if (!found)
            found = match(loop, warps, axis, why);
        });
        // A dot outside loops takes the ring as a K loop of one iteration
        // (PipelineStandalone.cpp), pointer operands only: no other form
        // would give it wgmma.
        if (!found)
          if (auto [one, dot] = cloneIntoOneTripLoop(func); one) {
            AxisInfoAnalysis oneAxis(func);
            std::string oneWhy;
            found = match(one, warps, oneAxis, oneWhy);
            if (found && found->a.ptrLoad)
              replaceByOneTripLoop(dot, one);
            else {
              found.reset();
              one.erase();
            }
          }
        // Kernels are warp-specialized unless they say
        // @warp_specialize(0): the ring then has no producer warpgroup.
        // The pipelined loop's own `range(..., warp_specialize=0|1)`
        // overrides the kernel's (Triton's tl.range spelling).
        IntegerAttr asked =
            func->getAttrOfType<IntegerAttr>(kWarpSpecializeAttr);
        if (found)
          if (auto perLoop =
                  found->loop->getAttrOfType<IntegerAttr>(kWarpSpecializeAttr))
            asked = perLoop;
        bool specialized = !asked || asked.getInt() != 0;
        auto persistent = func->getAttrOfType<IntegerAttr>(kPersistentAttr);
        if (found && !specialized && persistent && persistent.getInt()) {
          // The plain ring restarts its phases at every loop.
          func.emitError("@persistent(1) needs the warp-specialized ring "
                         "(drop @warp_specialize(0) or the loop's "
                         "warp_specialize=0)");
          return signalPassFailure();
        }
        auto pingpong = func->getAttrOfType<IntegerAttr>(kPingPongAttr);
        if (found && !specialized && pingpong && pingpong.getInt()) {
          // Consumer groups are the consumers of a producer warpgroup.
          func.emitError("@pingpong(1) needs the warp-specialized ring "
                         "(drop @warp_specialize(0) or the loop's "
                         "warp_specialize=0)");
          return signalPassFailure();
        }
        // Operands loaded through pointers: a producer warpgroup issues
        // every cp.async of a stage and the consumers only wait, multiply
        // and release, when the kernel or the loop asks for it
        // (@warp_specialize(1), an autotune configuration's
        // warp_specialize: 1, range(..., warp_specialize=1)) or when the
        // copying form would run one block an SM anyway
        // (copyingRingFillsSM). Otherwise every thread copies and computes,
        // the ring without a producer warpgroup. A dot inside an `if` has
        // the copying form only.
        bool producer = found && found->a.ptrLoad && specialized &&
                        !found->guard &&
                        (asked || copyingRingFillsSM(*found, func, stages));
        // The producer computes every address of a stage: its loop's
        // address arithmetic is split first (PipelineAddresses.cpp), and the
        // loop matched again.
        if (producer && splitUniformTerms(found->loop)) {
          scf::ForOp loop = found->loop;
          AxisInfoAnalysis split(func);
          found = match(loop, warps, split, why);
          if (!found) {
            func.emitError("internal error: a loop's split address "
                           "arithmetic no longer takes the ring: ")
                << why;
            return signalPassFailure();
          }
        }
        if (found && specialized && (!found->a.ptrLoad || producer)) {
          markTmaStores(func);
          pipelineSpecialized(*found, func, stages);
        } else if (found) {
          pipeline(*found, func, stages);
        } else {
          // Loops of chained dots over pointer loads (PipelineChain.cpp).
          pipelineChains(func, warps, axis, stages);
        }
      } else if (cpAsync) {
        // The same ring for pointer operands, read by mma.sync: the first
        // loop that matches, the block's threads copying and computing.
        std::optional<Candidate> found;
        std::string why;
        AxisInfoAnalysis axis(func);
        func.walk([&](scf::ForOp loop) {
          if (!found)
            found =
                match(loop, warps, axis, why, /*mmaSync=*/true, lessBudget());
        });
        if (found)
          pipeline(*found, func, stages, /*mmaSync=*/true, lessBudget());
        else
          pipelineChains(func, warps, axis, stages, /*mmaSync=*/true,
                         lessBudget());
      }
      pipelineRemarks(func, warps, tma, cpAsync, lessBudget());
    }
  }
};

} // namespace
