//===- PipelineChain.cpp - The pointer ring for loops of chained dots -----===//
//
// tile-pipeline-tma's second form (sm_90a, and with mma_sync sm_80 .. sm_89:
// every dot synchronous, A from registers in mma.sync's layout with whole
// rows a warp, RingMmaSync.cpp): a loop whose dots read their B
// (and maybe A) through pointer loads in the body, and whose body computes
// with the dots' results, as attention does:
//
//   scf.for %n = lo to hi step s iter_args(%m, %l, %acc) {
//     %k = tile.load %k_ptrs(%n)         %v = tile.load %v_ptrs(%n)
//     %s = tile.dot %q, trans(%k), 0      (A in registers: loop-invariant)
//     ... online softmax on %s: %p, %alpha, %m', %l' ...
//     %o = tile.dot %p, %v, %acc * %alpha (A in registers: computed)
//     scf.yield %m', %l', %o
//   }
//
// The loop stays where it is. Every pointer load that feeds a dot lands in
// one ring stage an iteration (tile.ring_copy_ptrs: every thread's cp.async
// in the 128-byte-swizzled layout of a TMA block), filled ahead of use, and
// each dot becomes a synchronous tile.ring_dot (its result is complete
// when the softmax reads it) reading that stage. An A the loop does not
// load stays in registers: a loop-invariant one moves into wgmma's
// register-A layout once, before the ring fills (tile.wgmma_operand); P
// is computed in the first dot's accumulator layout, which is that layout
// already. With g = base + i the ring's running iteration (tile.ring_base):
//
//   before the loop: for s < S: if s < n: fill iteration s
//   iteration i:     wait for stage g % S, parity (g / S) & 1
//                    the body, its dots as ring_dots; the last one
//                    releases stage g % S
//                    if i >= L and i - L + S < n: fill iteration i - L + S
//                    (into the stage iteration i - L released; L, the lag,
//                    is 1 where S >= 3 and 0 with two stages: fillLag)
//                    An asynchronous last dot (asyncLastDot) is waited
//                    for by the next iteration's first, which releases
//                    its stage: the lag is then 2 where S >= 3 and 1 with
//                    two stages (asyncFillLag), and the refill follows
//                    that first dot.
//   after the loop:  ring_advance n (and a block barrier)
//
// where filling iteration j (ring iteration g' = base + j) waits until
// stage g' % S was released, parity ((g' / S) & 1) ^ 1 (a fresh mbarrier's
// previous phase counts as complete), then copies the blocks of iteration
// j, whose pointers the body's pure ops compute from the induction value
// alone (cloned). Several such loops (attention's unmasked and masked key
// blocks) share the ring, its phases continuing through ring_base. The
// kernel's exchanges reuse the ring's bytes after each loop, or, when the
// loops themselves may exchange (mayExchangeInLoops), get room of their
// own after the ring (#tile.ring<..., apart = true>), which the stage count
// leaves for them.
//
//===----------------------------------------------------------------------===//

#include "Transforms/PipelineRing.h"
#include "Transforms/LoopTrips.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace sparsetile::pipeline_ring {

/// One dot of a chain loop: B (and A, unless `a` is empty: then A comes
/// from registers) loaded through pointers in the body.
struct ChainDot {
  DotOp dot;
  std::optional<Operand> a;
  Operand b;
  int64_t aOffset = 0, bOffset = 0;
};

struct Chain {
  scf::ForOp loop;
  SmallVector<ChainDot> dots;
  SmallVector<Operation *> slice; ///< Pure ops computing the pointers.
  int64_t stageBytes = 0;
  /// The blocks a stage holds, in their order there.
  SmallVector<Operand *> blocks() {
    SmallVector<Operand *> out;
    for (ChainDot &d : dots) {
      if (d.a)
        out.push_back(&*d.a);
      out.push_back(&d.b);
    }
    return out;
  }
};

static std::optional<Chain> matchChain(scf::ForOp loop, int64_t warps,
                                       const AxisInfoAnalysis &axis,
                                       std::string &why, bool mmaSync,
                                       int64_t lessBudget) {
  auto decline = [&](std::string reason) -> std::optional<Chain> {
    why = std::move(reason);
    return std::nullopt;
  };
  if (warps % 4 && !mmaSync)
    return decline("@num_warps(" + std::to_string(warps) +
                   ") is not a multiple of 4 (wgmma runs on warpgroups)");
  std::string declined =
      pointerRingDeclined(loop->getParentOfType<func::FuncOp>());
  if (!declined.empty())
    return decline(declined);
  Block *body = loop.getBody();
  Chain c;
  c.loop = loop;
  bool nested = false, sparse = false;
  loop.walk([&](Operation *op) {
    if (!isa<DotOp, SparseDotOp>(op))
      return;
    sparse |= isa<SparseDotOp>(op);
    nested |= op->getBlock() != body;
    if (auto d = dyn_cast<DotOp>(op); d && d->getBlock() == body)
      c.dots.push_back({d, std::nullopt, Operand()});
  });
  if (c.dots.empty())
    return decline("the loop has no dot");
  if (nested || sparse)
    return decline("a dot of the loop is inside an `if` or an inner loop, or "
                   "is a sparse_dot; the ring takes dots of the loop body "
                   "itself");
  int64_t groups = warps / 4;
  for (ChainDot &d : c.dots) {
    // ldmatrix reads a transposed B (attention's K) of one 32-column panel.
    auto b = operandOf(d.dot.getB(), body, why, /*halfPanel=*/false,
                       /*pointerHalfPanel=*/mmaSync, /*isB=*/true);
    if (!b)
      return std::nullopt;
    if (!b->ptrLoad)
      return decline("a dot's B is a load_block; with other work in the "
                     "loop the ring takes operands loaded through pointers");
    d.b = *b;
    Value aIn = d.dot.getA();
    Value aSrc = aIn;
    if (auto t = aSrc.getDefiningOp<TransOp>())
      aSrc = t.getSrc();
    if (auto l = aSrc.getDefiningOp<LoadOp>(); l && l->getBlock() == body) {
      auto a = operandOf(aIn, body, why);
      if (!a)
        return std::nullopt;
      d.a = *a;
    }
    auto at = cast<RankedTensorType>(aIn.getType());
    auto bt = cast<RankedTensorType>(d.dot.getB().getType());
    auto rt = cast<RankedTensorType>(d.dot.getType());
    int64_t m = rt.getDimSize(0), n = rt.getDimSize(1), k = at.getDimSize(1);
    Type e = bt.getElementType();
    if (at.getElementType() != e || !rt.getElementType().isF32())
      return decline("a dot's operands differ in type or its result is not "
                     "f32");
    // mma.sync: whole rows a warp (its register A is the accumulator of
    // an [M, K] product held so).
    if (mmaSync && (m % (16 * warps) || n % 8 || n > 256 || k % 16))
      return decline("a dot is [" + std::to_string(m) + ", " +
                     std::to_string(n) + "] over K = " + std::to_string(k) +
                     " with " + std::to_string(warps) +
                     " warps; the ring's mma.sync needs M a multiple of " +
                     std::to_string(16 * warps) +
                     " (whole rows a warp), N a multiple of 8 up to 256 "
                     "and K of 16");
    if (!mmaSync &&
        ((m != 64 * groups && m != 128 * groups) || n % 8 || n > 256 || k % 16))
      return decline("a dot is [" + std::to_string(m) + ", " +
                     std::to_string(n) + "] over K = " + std::to_string(k) +
                     " with " + std::to_string(warps) +
                     " warps; the ring needs M = " +
                     std::to_string(64 * groups) + " or " +
                     std::to_string(128 * groups) +
                     ", N a multiple of 8 up to 256 and K of 16");
    if (!d.b.trans && n % 64)
      return decline("B (not transposed) needs N a multiple of 64");
    if (d.a && d.a->trans && m % 64)
      return decline("a transposed A needs M a multiple of 64");
    for (Operand *o : {d.a ? &*d.a : nullptr, &d.b})
      if (o && !copiesInRuns(*o, axis, why))
        return std::nullopt;
  }
  // The pointers of a later iteration are computed ahead: from the
  // induction value and values defined outside the loop only, by pure ops
  // of the body.
  llvm::SetVector<Operation *> needed;
  SmallVector<Value> work;
  for (Operand *o : c.blocks()) {
    work.push_back(o->ptrLoad.getPtr());
    if (Value m = o->ptrLoad.getMask())
      work.push_back(m);
    if (Value other = o->ptrLoad.getOther())
      work.push_back(other);
  }
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v);
        arg && arg.getOwner() == body && arg != loop.getInductionVar())
      return decline("an operand's pointers depend on a value the loop "
                     "carries; the ring computes them iterations ahead");
    Operation *def = v.getDefiningOp();
    if (!def || def->getBlock() != body || needed.contains(def))
      continue;
    if (def->getNumRegions() || !isMemoryEffectFree(def))
      return decline("an operand's pointers come from a load, a region or "
                     "an op with side effects in the loop");
    needed.insert(def);
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  for (Operation &op : body->without_terminator())
    if (needed.contains(&op))
      c.slice.push_back(&op);
  for (Operand *o : c.blocks())
    c.stageBytes += o->bytes();
  if (c.stageBytes > (kMaxRingStageBytes - lessBudget) / 2)
    return decline("one stage takes " + std::to_string(c.stageBytes) +
                   " bytes; two do not fit in shared memory");
  return c;
}

std::string chainDeclined(scf::ForOp loop, int64_t warps,
                          const AxisInfoAnalysis &axis, bool mmaSync,
                          int64_t lessBudget) {
  std::string why;
  return matchChain(loop, warps, axis, why, mmaSync, lessBudget) ? std::string()
                                                                 : why;
}

/// Whether anything in the chains' loops may move data through shared
/// memory (a layout conversion, a reduction across warps) while the ring
/// holds blocks. Then the exchanges need room of their own (#tile.ring's
/// `apart`, as much as SharedMemory.h's exchangeBound); otherwise they
/// reuse the ring's bytes after each loop and the ring is a stage deeper
/// (attention at D 128: three stages of 64 KB instead of two). What stays where
/// it is: the chains' loads and dots, element-wise math and index arithmetic,
/// broadcasts (evaluated at their users' coordinates), and row reductions of a
/// tensor-core accumulator (the threads of a row share a warp in wgmma's
/// and in the chain's mma.sync layouts). convert-tile-to-gpu refuses a
/// kernel that exchanges while the ring holds blocks, so a case missed here
/// is a compile error, not a race.
/// The chains' dots and the loads (and transposes) of their operands: what
/// the ring takes over, which neither exchanges nor stages.
static llvm::DenseSet<Operation *> ringOps(ArrayRef<Chain> chains) {
  llvm::DenseSet<Operation *> ring;
  for (const Chain &c : chains)
    for (const ChainDot &d : c.dots) {
      ring.insert(d.dot);
      for (const Operand *o : {d.a ? &*d.a : nullptr, &d.b})
        if (o) {
          ring.insert(o->ptrLoad);
          if (o->trans)
            ring.insert(o->trans);
        }
    }
  return ring;
}

static bool mayExchangeInLoops(ArrayRef<Chain> chains,
                               const llvm::DenseSet<Operation *> &ring) {
  auto isTile = [](Value v) { return isa<RankedTensorType>(v.getType()); };
  for (const Chain &c : chains) {
    WalkResult r = scf::ForOp(c.loop).getBody()->walk([&](Operation *op) {
      if (ring.contains(op) || (llvm::none_of(op->getOperands(), isTile) &&
                                llvm::none_of(op->getResults(), isTile)))
        return WalkResult::advance();
      StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
      if ((ns == "arith" || ns == "math") && !op->getNumRegions())
        return WalkResult::advance();
      if (isa<SplatOp, BroadcastOp, ExpandDimsOp, ArangeOp, AddPtrOp,
              tile::AssumeOp, scf::YieldOp>(op))
        return WalkResult::advance();
      if (auto red = dyn_cast<ReduceOp>(op);
          red && red.getKind() != ReduceKind::Argmax &&
          red.getAxis() + 1 ==
              cast<RankedTensorType>(red.getSrc().getType()).getRank())
        return WalkResult::advance();
      return WalkResult::interrupt();
    });
    if (r.wasInterrupted())
      return true;
  }
  return false;
}

/// How many iterations a stage waits, once released, before the loop
/// refills it. Refilling the stage this iteration released makes every
/// thread wait at its end for the slowest warpgroup's last dot; refilling
/// the one the iteration before released leaves the warpgroups an
/// iteration of slack, but fills only S - 2 iterations ahead. With two
/// stages that is none: iteration i + 1's blocks would be copied at the
/// end of iteration i and waited for at once (attention at D 128, 128 keys:
/// 375 TFLOP/s so, 399 refilling at once); with more, the slack is worth
/// more than the extra iteration ahead (D 64, 64 keys, causal, as many
/// stages as fit: 329 TFLOP/s against 247; bench/NOTES.md, "Attention: the
/// ring refilled an iteration ahead").
static int64_t fillLag(int64_t stages) { return stages >= 3 ? 1 : 0; }

/// The lag with an asynchronous last dot, whose stage the next iteration's
/// first dot releases. At lag 1 the refill takes the stage released in this
/// iteration, so each warpgroup waits there until the other one's P V is
/// done too: the two run in step, and ncu put 6.6% of attention's stall
/// samples on that wait (D 128, N 16384). With three stages or more the
/// refill takes the one released an iteration earlier (lag 2, filling one
/// iteration ahead): the warpgroups drift apart, one's softmax under the
/// other's wgmmas, and attention at D 128 ran 1.13-1.22x faster (bench/
/// NOTES.md, "Attention: the refill away from the other warpgroup").
static int64_t asyncFillLag(int64_t stages) { return stages >= 3 ? 2 : 1; }

/// Copies iteration `j`'s blocks into ring iteration `g`'s stage, once
/// every thread released it.
static void fill(OpBuilder &b, Location l, Chain &c, Value j, Value g,
                 int64_t stages) {
  Value sN = i32c(b, l, stages);
  Value stage = b.create<arith::RemSIOp>(l, g, sN);
  Value parity = b.create<arith::XOrIOp>(
      l,
      b.create<arith::AndIOp>(l, b.create<arith::DivSIOp>(l, g, sN),
                              i32c(b, l, 1)),
      i32c(b, l, 1));
  b.create<RingAcquireOp>(l, stage, parity);
  IRMapping map;
  map.map(c.loop.getInductionVar(), inductionAt(b, c.loop, j));
  for (Operation *op : c.slice)
    b.clone(*op, map);
  int64_t offset = 0;
  for (Operand *o : c.blocks()) {
    Value mask = o->ptrLoad.getMask();
    b.create<RingCopyPtrsOp>(l, stage, map.lookupOrDefault(o->ptrLoad.getPtr()),
                             mask ? map.lookupOrDefault(mask) : Value(), offset,
                             o->rows, o->cols, o->layout(b.getContext()));
    offset += o->bytes();
  }
}

/// The loop-carried accumulator of `c`'s last dot when that dot may run
/// asynchronously: its result only flows back through the loop (the yield
/// is its one use), the chain has a dot before it to wait for it in the
/// next iteration, and the body uses the carried value only after that
/// first dot. Null otherwise.
static Value asyncLastDot(Chain &c) {
  if (c.dots.size() < 2)
    return {};
  DotOp last = c.dots.back().dot, first = c.dots.front().dot;
  Value r = last.getResult();
  if (!r.hasOneUse())
    return {};
  auto yield = dyn_cast<scf::YieldOp>(*r.getUsers().begin());
  if (!yield || yield->getParentOp() != c.loop)
    return {};
  unsigned at = r.getUses().begin()->getOperandNumber();
  Value carried = c.loop.getRegionIterArgs()[at];
  for (Operation *user : carried.getUsers()) {
    Operation *top = c.loop.getBody()->findAncestorOpInBlock(*user);
    if (!top || !first->isBeforeInBlock(top))
      return {};
  }
  return carried;
}

static void rewrite(Chain &c, int64_t stages,
                    llvm::DenseMap<Value, Value> &operandsHeld, bool mmaSync) {
  scf::ForOp loop = c.loop;
  Location l = loop.getLoc();
  OpBuilder b(loop);
  Value n = tripCount(b, loop);
  Value base = b.create<RingBaseOp>(l, b.getI32Type());
  // A the loop does not change: into the register-A layout once, here.
  for (ChainDot &d : c.dots) {
    Value a = d.dot.getA();
    if (d.a || loop->isAncestor(a.getParentRegion()->getParentOp()))
      continue;
    Value &held = operandsHeld[a];
    if (!held || held.getParentBlock() != loop->getBlock())
      held = b.create<WgmmaOperandOp>(l, a.getType(), a, mmaSync);
    d.dot.getAMutable().assign(held);
  }
  for (int64_t s = 0; s < stages; ++s) {
    Value si = i32c(b, l, s);
    auto live = b.create<scf::IfOp>(
        l, b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, si, n),
        /*withElse=*/false);
    OpBuilder ib = live.getThenBodyBuilder();
    fill(ib, l, c, si, ib.create<arith::AddIOp>(l, base, si), stages);
  }

  Block *body = loop.getBody();
  OpBuilder lb = OpBuilder::atBlockBegin(body);
  Value sN = i32c(lb, l, stages);
  Value i = lb.create<arith::DivSIOp>(
      l,
      lb.create<arith::SubIOp>(l, loop.getInductionVar(),
                               loop.getLowerBound()),
      loop.getStep());
  Value g = lb.create<arith::AddIOp>(l, base, i);
  Value stage = lb.create<arith::RemSIOp>(l, g, sN);
  lb.create<RingWaitOp>(
      l, stage,
      lb.create<arith::AndIOp>(l, lb.create<arith::DivSIOp>(l, g, sN),
                               i32c(lb, l, 1)));
  int64_t offset = 0;
  for (ChainDot &d : c.dots) {
    if (d.a) {
      d.aOffset = offset;
      offset += d.a->bytes();
    }
    d.bOffset = offset;
    offset += d.b.bytes();
  }
  // The last dot (attention's P V) runs asynchronously when the loop only
  // carries its result: the next iteration's first dot, synchronous, waits
  // for it too (wgmma groups complete in order) and then releases the stage
  // it read; its accumulator is waited for (ring_drain in_loop) before the
  // body computes with it. The tensor cores go from one P V to the next
  // S = Q K^T without the warps waiting in between.
  // mma.sync has no asynchronous form.
  Value carried = mmaSync ? Value() : asyncLastDot(c);
  Value prevStage;
  Operation *refillAt = nullptr; // Before the body's end, if set.
  if (carried) {
    Value none = i32c(lb, l, -1);
    Value first = lb.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, i,
                                           i32c(lb, l, 0));
    Value prev = lb.create<arith::RemSIOp>(
        l, lb.create<arith::AddIOp>(l, g, i32c(lb, l, stages - 1)), sN);
    prevStage = lb.create<arith::SelectOp>(l, first, none, prev);
  }
  for (auto [idx, d] : llvm::enumerate(c.dots)) {
    OpBuilder db(d.dot);
    Value acc = d.dot.getAcc(), accumulate;
    // A zero accumulator is wgmma's scale-d = 0 on undefined registers:
    // no instruction but the wgmma defines them (C7515).
    if (isZeroTile(acc)) {
      acc = db.create<ub::PoisonOp>(l, acc.getType());
      accumulate = db.create<arith::ConstantIntOp>(l, db.getI1Type(), 0);
    }
    bool last = idx + 1 == c.dots.size();
    Value release = last && !carried ? stage
                    : idx == 0 && carried ? prevStage
                                          : i32c(db, l, -1);
    auto at = cast<RankedTensorType>(d.dot.getA().getType());
    auto ring = db.create<RingDotOp>(
        l, d.dot.getType(), stage, release, acc, accumulate,
        /*meta_col=*/Value(), /*enabled=*/Value(), d.a ? Value() : d.dot.getA(),
        /*sync=*/!(last && carried), d.aOffset,
        /*a_kmajor=*/!(d.a && d.a->trans), d.bOffset,
        /*b_kmajor=*/bool(d.b.trans), at.getDimSize(1), at.getElementType(),
        IntegerAttr(), /*meta_alternates=*/false, IntegerAttr(),
        d.a ? d.a->layout(db.getContext()) : SharedLayoutAttr(),
        d.b.layout(db.getContext()), mmaSync);
    d.dot.replaceAllUsesWith(ring.getResult());
    if (idx == 0 && carried) {
      OpBuilder wb(ring->getBlock(), std::next(ring->getIterator()));
      auto drained = wb.create<RingDrainOp>(l, carried.getType(), carried,
                                            i32c(wb, l, -1));
      drained.setInLoop(true);
      carried.replaceAllUsesExcept(drained.getResult(), drained);
      refillAt = drained->getNextNode();
    }
  }
  // A synchronous chain releases its stage at the last dot, an asynchronous
  // one the previous iteration's stage at the first. The refill goes right
  // after that first dot, so that its copies run under the rest of the
  // body, into the stage the lag names.
  OpBuilder eb(refillAt ? refillAt : body->getTerminator());
  int64_t lag = carried ? asyncFillLag(stages) : fillLag(stages);
  Value lagged = i32c(eb, l, lag);
  Value next = eb.create<arith::AddIOp>(l, i, i32c(eb, l, stages - lag));
  Value refill = eb.create<arith::AndIOp>(
      l, eb.create<arith::CmpIOp>(l, arith::CmpIPredicate::sge, i, lagged),
      eb.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, next, n));
  auto ifOp = eb.create<scf::IfOp>(l, refill, /*withElse=*/false);
  OpBuilder ib = ifOp.getThenBodyBuilder();
  fill(ib, l, c, next, ib.create<arith::AddIOp>(l, base, next), stages);
  b.setInsertionPointAfter(loop);
  if (carried) {
    // The last iteration's P V: wait for it and release its stage before
    // the next loop's fills need it. The loop goes under its own entry test
    // with the wait inside: otherwise the path that skips the loop moves the
    // initial accumulator into the registers the in-flight P V writes,
    // where the two paths meet, and ptxas serializes every wgmma (C7515).
    unsigned at = cast<BlockArgument>(carried).getArgNumber() - 1;
    // The loop's own entry test (its lowering's first `iv < ub`), so that
    // LLVM folds the loop's guard into this one and no path inside skips it.
    Value nonEmpty = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt,
                                             loop.getLowerBound(),
                                             loop.getUpperBound());
    auto guard = b.create<scf::IfOp>(l, loop.getResultTypes(), nonEmpty,
                                     /*withElseRegion=*/true);
    for (auto [r, g2] : llvm::zip(loop.getResults(), guard.getResults()))
      r.replaceAllUsesWith(g2);
    Block *then = &guard.getThenRegion().front();
    loop->moveBefore(then, then->end());
    OpBuilder tb = OpBuilder::atBlockEnd(then);
    Value lastStage = tb.create<arith::RemSIOp>(
        l,
        tb.create<arith::AddIOp>(
            l, base, tb.create<arith::AddIOp>(l, n, i32c(tb, l, -1))),
        i32c(tb, l, stages));
    auto drained = tb.create<RingDrainOp>(l, loop.getResult(at).getType(),
                                          loop.getResult(at), lastStage);
    SmallVector<Value> outs(loop.getResults());
    outs[at] = drained.getResult();
    tb.create<scf::YieldOp>(l, outs);
    OpBuilder eb2 = OpBuilder::atBlockEnd(&guard.getElseRegion().front());
    eb2.create<scf::YieldOp>(l, loop.getInitArgs());
    b.setInsertionPointAfter(guard);
  }
  b.create<RingAdvanceOp>(l, n);
  // The dots and their operands' loads are gone (fill reads the loads'
  // pointers, so they go last).
  for (ChainDot &d : c.dots) {
    d.dot.erase();
    for (Operand *o : {d.a ? &*d.a : nullptr, &d.b}) {
      if (!o)
        continue;
      if (o->trans)
        o->trans.erase();
      o->ptrLoad.erase();
    }
  }
}

void pipelineChains(func::FuncOp func, int64_t warps,
                    const AxisInfoAnalysis &axis, int64_t wantStages,
                    bool mmaSync, int64_t lessBudget) {
  SmallVector<Chain> chains;
  func.walk([&](scf::ForOp loop) {
    std::string why;
    if (auto c = matchChain(loop, warps, axis, why, mmaSync, lessBudget))
      chains.push_back(std::move(*c));
  });
  if (chains.empty())
    return;
  // One ring: every stage takes the same number of copy ops (its `full`
  // mbarrier counts them), and holds the largest loop's blocks.
  size_t copies = chains.front().blocks().size();
  int64_t stageBytes = 0;
  for (Chain &c : chains) {
    if (c.blocks().size() != copies)
      return;
    stageBytes = std::max(stageBytes, c.stageBytes);
  }
  // `range(..., num_stages=N)` on the first loop overrides the kernel's.
  if (auto perLoop =
          chains.front().loop->getAttrOfType<IntegerAttr>("tile.num_stages"))
    wantStages = perLoop.getInt();
  llvm::DenseSet<Operation *> ring = ringOps(chains);
  bool apart = mayExchangeInLoops(chains, ring);
  int64_t budget =
      ringStageBudget(func, apart ? exchangeBound(func, ring) : 0) - lessBudget;
  int64_t stages = std::max<int64_t>(
      2, std::min(wantStages > 0 ? wantStages : kMaxStages,
                  budget / stageBytes));
  func->setAttr(kRingAttr, RingAttr::get(func.getContext(), stages, stageBytes,
                                         int64_t(copies), apart));
  OpBuilder fb = OpBuilder::atBlockBegin(&func.getBody().front());
  fb.create<RingInitOp>(func.getLoc());
  llvm::DenseMap<Value, Value> operandsHeld;
  for (Chain &c : chains)
    rewrite(c, stages, operandsHeld, mmaSync);
}

} // namespace sparsetile::pipeline_ring
