//===- InductionPointers.cpp - Carried pointers as functions of the index -===//
//
// tile-induction-pointers (Passes.td): in a loop with a dot, an iter_arg of
// pointers that the loop advances by a loop-invariant offset each iteration
// (`a_ptrs += BK`, Triton's tutorial GEMM) becomes `p0 + inc * t`, t the
// iteration number. The loop is left carrying what it carried besides, and
// tile-pipeline-tma can then compute the loads' pointers iterations ahead.
//
// `inc` may be computed inside the body (the front end splats the offset
// where `+=` is written) as long as everything it depends on is defined
// outside the loop: those pure ops are cloned before the loop. The carried
// pointer's old value stays in use where the body used it; the iter_arg
// itself is dropped (the loop yields it unchanged, which scf.for's
// canonicalization removes), and a use of the loop's final pointer reads
// `p0 + inc * trips`.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileDialect.h"
#include "Transforms/LoopTrips.h"
#include "Transforms/Passes.h"
#include "Transforms/Slice.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace sparsetile {
#define GEN_PASS_DEF_INDUCTIONPOINTERS
#include "Transforms/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

/// inc * n, with the scalar n splatted to inc's shape when inc is a tile.
Value scaled(OpBuilder &b, Location l, Value inc, Value n) {
  Type t = inc.getType();
  Type elt = getElementTypeOrSelf(t);
  if (elt != n.getType())
    n = b.create<arith::ExtSIOp>(l, elt, n);
  if (isa<RankedTensorType>(t))
    n = b.create<SplatOp>(l, t, n);
  return b.create<arith::MulIOp>(l, inc, n);
}

/// Rewrites the carried pointers of `loop` that qualify; true if any did.
bool rewrite(scf::ForOp loop) {
  if (!loop.getInductionVar().getType().isInteger(32))
    return false;
  bool hasDot = false;
  loop.getBody()->walk([&](Operation *op) {
    hasDot |= isa<DotOp, SparseDotOp>(op);
  });
  if (!hasDot)
    return false;
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  Location l = loop.getLoc();
  bool changed = false;
  for (auto [i, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
    if (!isa<PointerType>(getElementTypeOrSelf(arg.getType())))
      continue;
    auto step = yield.getOperand(i).getDefiningOp<AddPtrOp>();
    if (!step || step.getPtr() != arg || step->getBlock() != loop.getBody())
      continue;
    auto slice = invariantSlice(loop, step.getOffset());
    if (!slice)
      continue;
    // The offset, computed once before the loop.
    OpBuilder before(loop);
    IRMapping map;
    for (Operation *op : *slice)
      before.clone(*op, map);
    Value inc = map.lookupOrDefault(step.getOffset());
    Value init = loop.getInitArgs()[i];

    // In the body: p = p0 + inc * ((iv - lo) / step).
    OpBuilder in = OpBuilder::atBlockBegin(loop.getBody());
    Value t = in.create<arith::DivSIOp>(
        l,
        in.create<arith::SubIOp>(l, loop.getInductionVar(),
                                 loop.getLowerBound()),
        loop.getStep());
    Value current = in.create<AddPtrOp>(l, arg.getType(), init,
                                        scaled(in, l, inc, t));
    arg.replaceUsesWithIf(current, [&](OpOperand &use) {
      return use.getOwner() != current.getDefiningOp();
    });
    // The loop yields the iter_arg unchanged (canonicalization drops it).
    yield.setOperand(i, arg);
    if (step->use_empty())
      step->erase();
    // The body's own copies of the offset's computation, now dead (they
    // would read as other work in the loop to tile-pipeline-tma).
    for (Operation *op : llvm::reverse(*slice))
      if (op->use_empty())
        op->erase();

    // After the loop: p0 + inc * trips.
    Value result = loop.getResult(i);
    if (!result.use_empty()) {
      OpBuilder after(loop->getBlock(), std::next(loop->getIterator()));
      Value trips = tripCount(after, loop);
      Value last = after.create<AddPtrOp>(l, result.getType(), init,
                                          scaled(after, l, inc, trips));
      result.replaceAllUsesExcept(last, last.getDefiningOp());
    }
    changed = true;
  }
  return changed;
}

struct InductionPointersPass
    : public sparsetile::impl::InductionPointersBase<InductionPointersPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    SmallVector<Operation *> changed;
    for (scf::ForOp loop : loops)
      if (rewrite(loop))
        changed.push_back(loop);
    if (changed.empty())
      return;
    // Drop the iter_args the loops now yield unchanged.
    RewritePatternSet patterns(&getContext());
    scf::ForOp::getCanonicalizationPatterns(patterns, &getContext());
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingOps);
    if (failed(applyOpPatternsGreedily(changed, std::move(patterns), config)))
      return signalPassFailure();
  }
};

} // namespace
