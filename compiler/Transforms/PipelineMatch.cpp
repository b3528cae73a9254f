//===- PipelineMatch.cpp - Which K loops tile-pipeline-tma takes ----------===//
//
// The K loop form's matcher: a loop whose one carried value is a dot's
// accumulator (in the body, or in an `if` there whose else keeps it), over
// load_block or pointer operands, with only scalar work (block positions,
// masks, pointer tiles) beside it. What it finds is a Candidate, which
// PipelineTMA.cpp turns into a ring; where it declines, the reason goes
// into the dot's performance remark (pipelineRemarks, at the end).
//
//===----------------------------------------------------------------------===//

#include "Conversion/AxisInfo.h"
#include "Conversion/PerfRemarks.h"
#include "Dialect/Tile/TileDialect.h"
#include "Dialect/Tile/TileLayouts.h"
#include "Transforms/LoopTrips.h"
#include "Transforms/PipelineRing.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace sparsetile::pipeline_ring {

/// The metadata block of a sparse_dot: [M, K/16] i16 loaded as one box with
/// 16-byte-multiple rows (TMA without swizzling). A K = 64 step's 8-byte rows
/// are widened to the 16-byte box of two steps, which TMA needs to start on
/// a 16-byte boundary: so the block's column must be k / 16 for a loop over
/// k from a multiple of 128 in steps of 64, making the step's half of the
/// box its parity (widenedMetaLoop checks; tile.ring_dot's meta_col).
static std::optional<Operand> metaOf(Value v, Block *body) {
  Operand o;
  o.swizzle = false;
  if (auto r = v.getDefiningOp<ReshapeOp>();
      r && r->hasOneUse() && r->getBlock() == body) {
    auto to = cast<RankedTensorType>(r.getType()).getShape();
    auto from = cast<RankedTensorType>(r.getSrc().getType()).getShape();
    if (to.size() != 2 || from.size() != 2 || from[1] % to[1] || from[1] % 8)
      return std::nullopt;
    o.reshape = r;
    v = r.getSrc();
  }
  o.load = v.getDefiningOp<DescLoadOp>();
  if (!o.load || !o.load->hasOneUse() || o.load->getBlock() != body)
    return std::nullopt;
  auto shape = cast<RankedTensorType>(o.load.getType()).getShape();
  o.rows = shape[0];
  o.cols = shape[1];
  o.boxCols = o.cols == 4 ? 8 : o.cols;
  if (o.boxCols % 8 || o.cols > 256 || o.rows > 256)
    return std::nullopt;
  return o;
}

/// Whether `loop`'s widened metadata block sits at column k / 16 of an
/// induction k that starts at a multiple of 128 and steps by 64: then
/// iteration i's block is half i % 2 of the aligned box at (k / 16) & ~7.
static bool widenedMetaLoop(scf::ForOp loop, Operand meta) {
  // The column may also be (k / 16) % 8: the word within a block of the
  // metadata layout blocked by K steps of 128 (sparse24.tile's meta_at).
  Value col = meta.load.getCol();
  if (auto rem = col.getDefiningOp<arith::RemSIOp>();
      rem && getConstantIntValue(rem.getRhs()) == 8)
    col = rem.getLhs();
  auto div = col.getDefiningOp<arith::DivSIOp>();
  auto lo = getConstantIntValue(loop.getLowerBound());
  return div && div.getLhs() == loop.getInductionVar() &&
         getConstantIntValue(div.getRhs()) == 16 && lo && *lo % 128 == 0 &&
         getConstantIntValue(loop.getStep()) == 64;
}

/// The `if` of `loop`'s body that holds its dot, as a kernel skips
/// iterations: `scf.if %c -> acc { ...; yield dot(a, b, acc) } else {
/// yield acc }`, whose result the loop yields as its one value; else null.
scf::IfOp guardOf(scf::ForOp loop) {
  if (loop.getNumRegionIterArgs() != 1)
    return {};
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  auto guard = yield.getOperand(0).getDefiningOp<scf::IfOp>();
  if (!guard || guard->getBlock() != loop.getBody() ||
      guard.getNumResults() != 1 || !guard.elseBlock() ||
      guard.elseYield().getOperand(0) != loop.getRegionIterArgs()[0] ||
      guard.elseBlock()->getOperations().size() != 1 ||
      !guard.getResult(0).hasOneUse())
    return {};
  return guard;
}

/// Checks the loop against the pattern above; `warps` is the kernel's.
/// Where a loop is declined, `why` says the first reason (for the remark on
/// the dots left to mma.sync: pipelineRemarks). With `mmaSync` (a target
/// without TMA and wgmma) only pointer operands qualify, and the tile must
/// split over the warps as mma.sync's accumulator layout does. `lessBudget`:
/// the shared memory the target lacks against sm_90's (as ringShape takes).
std::optional<Candidate> match(scf::ForOp loop, int64_t warps,
                               const AxisInfoAnalysis &axis, std::string &why,
                               bool mmaSync, int64_t lessBudget) {
  auto decline = [&](std::string reason) -> std::optional<Candidate> {
    why = std::move(reason);
    return std::nullopt;
  };
  if (loop.getNumRegionIterArgs() != 1)
    return decline("the loop carries " +
                   std::to_string(loop.getNumRegionIterArgs()) +
                   " values; the ring takes loops whose only carried value "
                   "is the accumulator (acc = dot(a, b, acc))");
  if (warps % 4 && !mmaSync)
    return decline("@num_warps(" + std::to_string(warps) +
                   ") is not a multiple of 4 (wgmma runs on warpgroups)");
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  // The dot's block: the body, or the then-block of an `if` in the body
  // whose else yields the accumulator unchanged (guardOf).
  Block *dotBlock = body;
  scf::IfOp guard = guardOf(loop);
  Operation *dot = guard ? guard.thenYield().getOperand(0).getDefiningOp()
                         : yield.getOperand(0).getDefiningOp();
  if (guard)
    dotBlock = guard.thenBlock();
  if (!dot || !isa<DotOp, SparseDotOp>(dot) || dot->getBlock() != dotBlock ||
      !dot->hasOneUse())
    return decline("the loop does not yield a dot of its body as its "
                   "accumulator (acc = dot(a, b, acc), used only there, or "
                   "under an `if` whose else keeps acc)");
  Candidate c;
  c.loop = loop;
  c.dot = dot;
  c.guard = guard;
  Value accIn, aIn, bIn;
  int64_t k;
  if (auto d = dyn_cast<DotOp>(dot)) {
    accIn = d.getAcc(), aIn = d.getA(), bIn = d.getB();
    k = cast<RankedTensorType>(aIn.getType()).getDimSize(1);
  } else {
    auto sd = cast<SparseDotOp>(dot);
    accIn = sd.getAcc(), aIn = sd.getVals(), bIn = sd.getB();
    k = 2 * cast<RankedTensorType>(aIn.getType()).getDimSize(1);
    c.meta = metaOf(sd.getMeta(), body);
    // Sparse wgmma reads A K-major (no transposed sparse operand), k32
    // steps; A's compressed block is whole 64-column panels (K % 128), or
    // one panel of K = 64.
    if (mmaSync)
      return decline("a sparse_dot is pipelined on sm_90 only (sparse "
                     "wgmma); here it runs as mma.sp with plain loads");
    if (guard)
      return decline("a sparse_dot inside an `if` of its loop is not "
                     "pipelined (only a dot over pointer loads is)");
    if (!c.meta || aIn.getDefiningOp<TransOp>() || (k % 128 && k != 64))
      return decline("a sparse_dot needs its metadata from load_block, A "
                     "not transposed and K a multiple of 128 (or 64)");
    if (c.meta->widened() &&
        (c.meta->reshape || !widenedMetaLoop(loop, *c.meta)))
      return decline("the sparse_dot's metadata column is not k / 16 of a "
                     "loop from a multiple of 128 in steps of 64");
  }
  if (accIn != loop.getRegionIterArgs()[0])
    return decline("the dot's accumulator is not the loop's carried value");
  // A K step of 32 through pointers: A, and a transposed B, are one
  // 64-byte swizzled panel, which wgmma (and ldmatrix) read K-major.
  auto a = operandOf(aIn, dotBlock, why, /*halfPanel=*/bool(c.meta),
                     /*pointerHalfPanel=*/!c.meta, /*isB=*/false);
  if (!a)
    return std::nullopt;
  auto b = operandOf(bIn, dotBlock, why, /*halfPanel=*/false,
                     /*pointerHalfPanel=*/true, /*isB=*/true);
  if (!b)
    return std::nullopt;
  c.a = *a;
  c.b = *b;
  bool pointers = bool(c.a.ptrLoad) || bool(c.b.ptrLoad);
  // A skipped iteration's copies are left out by the threads that would
  // issue them (ring_arrive): the pointer ring's, not thread 0's TMA.
  if (guard && !pointers)
    return decline("a dot inside an `if` of its loop is pipelined over "
                   "loads through pointers, not load_block");
  if (mmaSync && !pointers)
    return decline("load_block operands are copied by TMA, which is sm_90's; "
                   "here only operands loaded through pointers are "
                   "pipelined (cp.async)");
  if (pointers) {
    if (!c.a.ptrLoad || !c.b.ptrLoad)
      return decline("one operand is a load_block and the other a load "
                     "through pointers; the ring takes two of one kind");
    std::string declined =
        pointerRingDeclined(loop->getParentOfType<func::FuncOp>());
    if (!declined.empty())
      return decline(declined);
    for (Operand *o : {&c.a, &c.b})
      if (!copiesInRuns(*o, axis, why))
        return std::nullopt;
  }
  auto acc = cast<RankedTensorType>(accIn.getType()).getShape();
  int64_t m = acc[0], n = acc[1];
  if (mmaSync && (!mmaWarpsBalanced(m, n, warps * 32) || n > 256 || k % 16))
    return decline("the tile is [" + std::to_string(m) + ", " +
                   std::to_string(n) + "] with " + std::to_string(warps) +
                   " warps; mma.sync's layout needs M a multiple of 16 and N "
                   "of 8 a warp, N at most 256 and K a multiple of 16");
  // One or two m64 wgmmas per warpgroup (64 or 128 rows each).
  int64_t groups = warps / 4;
  if (!mmaSync &&
      ((m != 64 * groups && m != 128 * groups) || n % 8 || n > 256 || k % 16))
    return decline("the tile is [" + std::to_string(m) + ", " +
                   std::to_string(n) + "] with " + std::to_string(warps) +
                   " warps; the ring needs M = " + std::to_string(64 * groups) +
                   " or " + std::to_string(128 * groups) +
                   " (64 or 128 rows per warpgroup), N a multiple of 8 up "
                   "to 256");
  // A transposed A is stored [K, M]: its 64-column panels split M, which
  // must then be whole warpgroup strips.
  if (c.a.trans && m % 64)
    return decline("a transposed A needs M a multiple of 64");
  if (!c.b.trans && n % 64)
    return decline("B (not transposed) needs N a multiple of 64");
  if (c.stageBytes() > (kMaxRingStageBytes - lessBudget) / 2)
    return decline("one stage takes " + std::to_string(c.stageBytes()) +
                   " bytes; two do not fit in shared memory");

  // Everything else in the body must be scalar work feeding block positions
  // (and the guard's condition); in a guard's then-block, pure work only:
  // the fills compute it whether or not the iteration runs.
  llvm::SetVector<Operation *> needed;
  SmallVector<Value> work;
  if (guard)
    work.push_back(guard.getCondition());
  for (Operand *o : c.operands()) {
    if (o->ptrLoad) {
      work.push_back(o->ptrLoad.getPtr());
      if (Value m = o->ptrLoad.getMask())
        work.push_back(m);
      if (Value other = o->ptrLoad.getOther())
        work.push_back(other);
    } else {
      work.append({o->load.getRow(), o->load.getCol()});
    }
  }
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || (def->getBlock() != body && def->getBlock() != dotBlock) ||
        needed.contains(def))
      continue;
    needed.insert(def);
    for (Value o : def->getOperands())
      work.push_back(o);
  }
  // The body's ops, then (with a guard) those of its then-block: the order
  // in which cloneSlice may clone them.
  SmallVector<Operation *> ops;
  for (Operation &op : body->without_terminator())
    if (&op != guard.getOperation())
      ops.push_back(&op);
  if (guard)
    for (Operation &op : dotBlock->without_terminator())
      ops.push_back(&op);
  for (Operation *opp : ops) {
    Operation &op = *opp;
    if (&op == dot || &op == c.a.load || &op == c.b.load ||
        &op == c.a.ptrLoad.getOperation() ||
        &op == c.b.ptrLoad.getOperation() ||
        &op == c.a.trans.getOperation() || &op == c.b.trans.getOperation() ||
        (c.meta && (&op == c.meta->load.getOperation() ||
                    &op == c.meta->reshape.getOperation())))
      continue;
    // Pointer operands: the tiles of pointers and masks are computed in
    // the body too (pure tile ops), and are cloned S - 1 iterations ahead.
    if (!needed.contains(&op) || op.getNumRegions() ||
        (!pointers && llvm::any_of(op.getResultTypes(), [](Type t) {
          return isa<RankedTensorType>(t);
        })))
      return decline("the loop body does other work than the dot and the "
                     "scalar block positions (tile ops, ifs, loops, or "
                     "values not feeding the loads)");
    bool scalarLoad =
        isa<LoadOp>(op) && !isa<RankedTensorType>(op.getResult(0).getType());
    if (!scalarLoad && !isMemoryEffectFree(&op))
      return decline("the loop body has side effects (stores, atomics)");
    if (op.getBlock() != body && !isMemoryEffectFree(&op))
      return decline("the `if` around the dot loads a scalar (the fills "
                     "compute its block positions whether or not the "
                     "iteration runs); fix: load it before the `if`");
    c.slice.push_back(&op);
  }
  if (guard) {
    // The condition's own ops, in slice order.
    llvm::SetVector<Operation *> cond;
    SmallVector<Value> from{guard.getCondition()};
    while (!from.empty()) {
      Operation *def = from.pop_back_val().getDefiningOp();
      if (!def || def->getBlock() != body || !cond.insert(def))
        continue;
      llvm::append_range(from, def->getOperands());
    }
    for (Operation *op : c.slice)
      if (cond.contains(op))
        c.guardSlice.push_back(op);
  }
  return c;
}

/// Whether `loop` yields something other than `dot` as its one value.
static bool yieldsOtherThanDot(scf::ForOp loop, Operation *dot) {
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  return yield.getNumOperands() != 1 ||
         yield.getOperand(0) != dot->getResult(0);
}

/// Performance remarks on the dots this pass left alone (Language.md,
/// "Performance remarks"): on sm_90 (`tma`) each falls back to mma.sync
/// with plain loads, and the first reason its loop was declined is the one
/// to fix; on the cp.async targets a K loop the ring did not take is
/// remarked with that reason; without either no K loop is pipelined.
void pipelineRemarks(func::FuncOp func, int64_t warps, bool tma, bool cpAsync,
                     int64_t lessBudget) {
  // The kernel as this pass left it; analysed only if a dot is remarked.
  std::optional<AxisInfoAnalysis> axis;
  func.walk([&](Operation *dot) {
    if (!isa<DotOp, SparseDotOp>(dot))
      return;
    auto loop = dot->getParentOfType<scf::ForOp>();
    // The dot is the loop's own: in its body, or in the `if` that guards it.
    scf::IfOp guard = loop ? guardOf(loop) : scf::IfOp();
    bool own = loop && (dot->getParentOp() == loop ||
                        (guard && dot->getParentOp() == guard.getOperation()));
    if (!tma) {
      if (!own)
        return;
      std::string why = "PTX ISA 7.8 or newer is needed for the cp.async ring "
                        "(--ptx-version)";
      if (cpAsync) {
        AxisInfoAnalysis &ax = axis ? *axis : axis.emplace(func);
        if (match(loop, warps, ax, why, /*mmaSync=*/true, lessBudget))
          why = "another K loop of this kernel already has the ring (one "
                "ring per kernel)";
        else if (loop.getNumRegionIterArgs() != 1 ||
                 (!guard && yieldsOtherThanDot(loop, dot))) {
          // Not a GEMM K loop: why the chained-dot form declined it.
          std::string chain =
              chainDeclined(loop, warps, ax, /*mmaSync=*/true, lessBudget);
          why = chain.empty() ? "another loop of this kernel already has "
                                "the ring, of another kind (one ring per "
                                "kernel)"
                              : chain;
        }
      }
      emitPerfRemark(loop, "unpipelined-loop",
                     "this loop's dot operands are loaded in each iteration, "
                     "not software-pipelined, so num_stages has no effect "
                     "here: " +
                         why);
      return;
    }
    std::string why;
    if (!loop)
      why = "the dot is not in a `for` loop, and the ring takes one outside "
            "loops only when A and B are pointer loads used by it alone, "
            "with no store or barrier between them and it, in a kernel "
            "with no dot in a loop, and wgmma takes its shape";
    else if (!own)
      why = "the dot is inside an `if` (or another region) of its loop; the "
            "ring takes a dot in the loop body itself, or in an `if` there "
            "whose else keeps the accumulator";
    else if (match(loop, warps, axis ? *axis : axis.emplace(func), why))
      why = "another K loop of this kernel already has the ring (one ring "
            "per kernel)";
    else if (loop.getNumRegionIterArgs() != 1 ||
             (!guard && yieldsOtherThanDot(loop, dot))) {
      // Not a GEMM K loop: why the chained-dot form declined it.
      std::string chain = chainDeclined(loop, warps, *axis);
      why = chain.empty() ? "another loop of this kernel already has the "
                            "ring, of another kind (one ring per kernel)"
                          : chain;
    }
    emitPerfRemark(dot, "mma-sync",
                   Twine(isa<DotOp>(dot) ? "dot" : "sparse_dot") +
                       " runs as mma.sync with plain loads on sm_90, not "
                       "the TMA/wgmma ring (num_stages has no effect on "
                       "it): " +
                       why);
  });
}

} // namespace sparsetile::pipeline_ring
