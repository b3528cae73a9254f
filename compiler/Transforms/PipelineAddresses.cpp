//===- PipelineAddresses.cpp - A producer's address math, split -----------===//
//
// Part of tile-pipeline-tma (PipelineTMA.cpp). A pointer ring's producer
// warpgroup computes every address of a stage, each iteration. Where the
// body computes them from the loop's index (Triton's pointers from k,
// `b + (k + rk)[:, None] * ldb`), splitUniformTerms splits that arithmetic
// into the part computed from values outside the loop, which LLVM hoists,
// and the splatted index term:
//
//   (s + v) * c  ->  s * c + v * c      (c from outside; s * c one multiply)
//   p + (s + v)  ->  (p + v) + s        (p from outside)
//
// so that each element costs an add an iteration, as pointers carried
// through the loop do (`a_ptrs += BK`, after tile-induction-pointers). As
// written, every element's offset, byte scaling and address were computed
// again each iteration, and the producer of the parity port's k-offsets
// matmul ran 196 PTX instructions a stage against 148 for the carried
// form: the kernel 7-10% slower (bench/NOTES.md, "A producer warpgroup for
// pointer rings"). Only the producer's loop gets it: the same split in
// every dot loop made causal attention at D 64 25% slower (call 4 of
// session 27). Wrapping i32 arithmetic makes both forms equal.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileDialect.h"
#include "Transforms/PipelineRing.h"
#include "Transforms/Slice.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

/// Whether `v` is computed outside `loop`, or in it by pure ops from values
/// that are (the front end splats scalars and writes `a + rm[:, None] *
/// lda` where the load is), so that LLVM can hoist it.
bool invariantIn(scf::ForOp loop, Value v) {
  return invariantSlice(loop, v).has_value();
}

/// `x` = [shape ops](s + v): the splat s of a scalar, the other term v
/// (invariant in the loop), and the shape ops between the sum and `x`
/// (expand_dims, broadcast: `[:, None]`), outermost first.
struct UniformSum {
  SplatOp uniform;
  Value rest;
  SmallVector<Operation *> shape;
};

std::optional<UniformSum> uniformSum(scf::ForOp loop, Value x) {
  UniformSum u;
  while (isa_and_nonnull<ExpandDimsOp, BroadcastOp>(x.getDefiningOp())) {
    u.shape.push_back(x.getDefiningOp());
    x = x.getDefiningOp()->getOperand(0);
  }
  auto sum = x.getDefiningOp<arith::AddIOp>();
  if (!sum)
    return std::nullopt;
  for (int i = 0; i < 2; ++i)
    if (auto sp = sum->getOperand(i).getDefiningOp<SplatOp>();
        sp && invariantIn(loop, sum->getOperand(1 - i))) {
      u.uniform = sp;
      u.rest = sum->getOperand(1 - i);
      return u;
    }
  return std::nullopt;
}

/// v through u's shape ops again.
Value reshaped(OpBuilder &b, const UniformSum &u) {
  Value rest = u.rest;
  for (Operation *op : llvm::reverse(u.shape)) {
    IRMapping map;
    map.map(op->getOperand(0), rest);
    rest = b.clone(*op, map)->getResult(0);
  }
  return rest;
}

} // namespace

namespace sparsetile::pipeline_ring {

bool splitUniformTerms(scf::ForOp loop) {
  Block *body = loop.getBody();
  bool changed = false;
  SmallVector<arith::MulIOp> muls;
  SmallVector<AddPtrOp> adds;
  loop.walk([&](Operation *op) {
    if (op->getNumResults() != 1 ||
        !isa<RankedTensorType>(op->getResult(0).getType()))
      return;
    if (auto mul = dyn_cast<arith::MulIOp>(op))
      muls.push_back(mul);
  });
  for (arith::MulIOp mul : muls)
    for (int side = 0; side < 2; ++side) {
      Value x = mul->getOperand(side), c = mul->getOperand(1 - side);
      auto u = uniformSum(loop, x);
      if (!u || !invariantIn(loop, c))
        continue;
      OpBuilder b(mul);
      Location l = mul.getLoc();
      Value rest = reshaped(b, *u);
      // s * c of a splatted c is the splat of the scalars' product, so that
      // an addptr of it splits below.
      Value sc;
      if (auto cs = c.getDefiningOp<SplatOp>())
        sc = b.create<SplatOp>(
            l, x.getType(),
            b.create<arith::MulIOp>(l, u->uniform.getSrc(), cs.getSrc()));
      else
        sc = b.create<arith::MulIOp>(
            l, b.create<SplatOp>(l, x.getType(), u->uniform.getSrc()), c);
      mul.getResult().replaceAllUsesWith(
          b.create<arith::AddIOp>(l, sc, b.create<arith::MulIOp>(l, rest, c)));
      mul->erase();
      changed = true;
      break;
    }
  loop.walk([&](AddPtrOp add) {
    if (isa<RankedTensorType>(add.getType()))
      adds.push_back(add);
  });
  for (AddPtrOp add : adds) {
    auto u = uniformSum(loop, add.getOffset());
    if (!u || !invariantIn(loop, add.getPtr()))
      continue;
    OpBuilder b(add);
    Location l = add.getLoc();
    Value inner =
        b.create<AddPtrOp>(l, add.getType(), add.getPtr(), reshaped(b, *u));
    Value s =
        b.create<SplatOp>(l, add.getOffset().getType(), u->uniform.getSrc());
    add.getResult().replaceAllUsesWith(
        b.create<AddPtrOp>(l, add.getType(), inner, s));
    add->erase();
    changed = true;
  }
  // What the rewrites left unused would read as other work in the loop.
  if (changed)
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*body)))
      if (op.use_empty() && !op.hasTrait<OpTrait::IsTerminator>() &&
          isMemoryEffectFree(&op) && !op.getNumRegions())
        op.erase();
  return changed;
}

} // namespace sparsetile::pipeline_ring
