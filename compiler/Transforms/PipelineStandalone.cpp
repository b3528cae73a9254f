//===- PipelineStandalone.cpp - A dot outside loops, as a K loop of one ---===//
//
// Part of tile-pipeline-tma (PipelineTMA.cpp). The ring takes a K loop
// whose body loads a dot's operands and accumulates; a dot written outside
// any loop (one [M, K] x [K, N] product of two pointer loads) would
// otherwise run as mma.sync with its operands staged by the threads, never
// as wgmma. Cloned, with its loads, into a loop of one iteration, it is the
// form the ring takes: the operands land through cp.async in one swizzled
// stage and wgmma reads them there.
//
//===----------------------------------------------------------------------===//

#include "Transforms/PipelineRing.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace sparsetile::pipeline_ring {

/// The op chain that produces dot operand `v` (a tile.load through
/// pointers, or a trans of one), each op used by the next alone; empty when
/// `v` is produced otherwise.
static SmallVector<Operation *> loadChain(Value v) {
  SmallVector<Operation *> chain;
  Operation *def = v.getDefiningOp();
  if (auto t = dyn_cast_or_null<TransOp>(def)) {
    if (!t->hasOneUse())
      return {};
    chain.push_back(t);
    def = t.getSrc().getDefiningOp();
  }
  auto load = dyn_cast_or_null<LoadOp>(def);
  if (!load || !load->hasOneUse() ||
      !isa<RankedTensorType>(load.getResult().getType()))
    return {};
  chain.push_back(load);
  return chain;
}

/// Whether the loads in `chain` may run where `dot` is: nothing between
/// them and it writes memory or waits (a store, an atomic, a barrier).
static bool movableTo(ArrayRef<Operation *> chain, Operation *dot) {
  for (Operation *op : chain) {
    if (op->getBlock() != dot->getBlock())
      return false;
    for (Operation *o = op->getNextNode(); o && o != dot; o = o->getNextNode())
      if (!isMemoryEffectFree(o) && !isa<LoadOp>(o))
        return false;
  }
  return true;
}

std::pair<scf::ForOp, DotOp> cloneIntoOneTripLoop(func::FuncOp func) {
  // Kernels with a dot in a loop keep that loop's ring (one ring a kernel).
  bool loopDots = func.walk([](Operation *op) {
                        return isa<DotOp, SparseDotOp>(op) &&
                                       op->getParentOfType<scf::ForOp>()
                                   ? WalkResult::interrupt()
                                   : WalkResult::advance();
                      })
                      .wasInterrupted();
  if (loopDots)
    return {};
  for (DotOp dot : func.getBody().front().getOps<DotOp>()) {
    SmallVector<Operation *> a = loadChain(dot.getA()),
                             b = loadChain(dot.getB());
    if (a.empty() || b.empty() || !movableTo(a, dot) || !movableTo(b, dot))
      continue;
    OpBuilder ob(dot);
    Location l = dot.getLoc();
    Value one = i32c(ob, l, 1);
    auto loop = ob.create<scf::ForOp>(l, i32c(ob, l, 0), one, one,
                                      ValueRange{dot.getAcc()});
    // One iteration fills one stage; the ring has two at least.
    loop->setAttr("tile.num_stages", ob.getI32IntegerAttr(2));
    loop->setAttr(kOneTripAttr, ob.getUnitAttr());
    OpBuilder lb = OpBuilder::atBlockEnd(loop.getBody());
    IRMapping map;
    map.map(dot.getAcc(), loop.getRegionIterArgs()[0]);
    for (auto chain : {a, b})
      for (Operation *op : llvm::reverse(chain)) // The load first.
        lb.clone(*op, map);
    Operation *body = lb.clone(*dot, map);
    lb.create<scf::YieldOp>(l, body->getResult(0));
    return {loop, dot};
  }
  return {};
}

void replaceByOneTripLoop(DotOp dot, scf::ForOp loop) {
  dot.getResult().replaceAllUsesWith(loop.getResult(0));
  SmallVector<Operation *> dead{dot};
  for (Value v : {dot.getA(), dot.getB()})
    for (Operation *op : loadChain(v))
      dead.push_back(op);
  for (Operation *op : dead) // Users first: the dot, a trans, its load.
    op->erase();
}

} // namespace sparsetile::pipeline_ring
