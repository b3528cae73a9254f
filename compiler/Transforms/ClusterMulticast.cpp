//===- ClusterMulticast.cpp - Share a ring operand across a cluster -------===//
//
// tile-cluster-multicast runs after tile-pipeline-tma on kernels marked
// @cluster(C > 1). Their C programs (consecutive along axis 0) form one
// thread block cluster; when both load the same block of one dot operand
// at every step of the ring, that block can be copied once for all of them
// (TMA multicast), which halves its reads from L2 at C = 2.
//
// The pass proves "the same block at every step" from the IR: the block
// positions the producer's tile.ring_copy ops use, and the bounds of the
// loops around them, are computed only from constants, kernel arguments,
// the induction variables of such loops, tile.cluster_id, num_programs and
// loads from addresses of that kind, never from program_id or
// tile.cluster_rank. Then it marks every ring_copy of that operand
// `multicast` (B when it qualifies, else A, with sparse A's metadata when
// its positions qualify too). convert-tile-to-gpu lowers the rest: the
// ranks split the block's panels and each copy lands in every program;
// every program's consumers release a stage in all of them (WgmmaRing.cpp).
//
// A kernel without a ring just runs in clusters (cluster_id/cluster_rank).
// Refused, with a located error: a ring that is not warp-specialized or a
// persistent kernel (the tile queue does not hand out tiles in pairs), and
// a ring where neither operand's blocks are provably shared.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/TileDialect.h"
#include "Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseSet.h"

namespace sparsetile {
#define GEN_PASS_DEF_CLUSTERMULTICAST
#include "Transforms/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

/// Decides whether values are the same in every program of a cluster.
class Uniformity {
public:
  bool of(Value v) {
    if (auto it = known.find(v); it != known.end())
      return it->second;
    known[v] = false; // a cycle through a loop-carried value: not proven
    return known[v] = compute(v);
  }

private:
  bool compute(Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (isa<func::FuncOp>(owner))
        return true; // a kernel argument
      // An scf.for's induction variable, when its bounds are uniform.
      auto loop = dyn_cast<scf::ForOp>(owner);
      return loop && v == loop.getInductionVar() &&
             of(loop.getLowerBound()) && of(loop.getUpperBound()) &&
             of(loop.getStep());
    }
    Operation *def = v.getDefiningOp();
    if (isa<ProgramIdOp, ClusterRankOp>(def) || def->getNumRegions())
      return false;
    return llvm::all_of(def->getOperands(), [&](Value o) { return of(o); });
  }

  llvm::DenseMap<Value, bool> known;
};

/// The loops around `op` up to `top` run the same trips in every program.
bool uniformTrips(Operation *op, Operation *top, Uniformity &u) {
  for (Operation *p = op->getParentOp(); p && p != top; p = p->getParentOp()) {
    auto loop = dyn_cast<scf::ForOp>(p);
    if (!loop || !u.of(loop.getLowerBound()) || !u.of(loop.getUpperBound()) ||
        !u.of(loop.getStep()))
      return false;
  }
  return true;
}

LogicalResult shareOperand(func::FuncOp func) {
  auto ring = func->getAttrOfType<RingAttr>(kRingAttr);
  if (!ring)
    return success(); // no ring: the programs only run in clusters
  ProducerOp producer;
  func.walk([&](ProducerOp p) { producer = p; });
  RingDotOp dot;
  func.walk([&](RingDotOp d) { dot = d; });
  auto persistent = func->getAttrOfType<IntegerAttr>(kPersistentAttr);
  if (!producer || !dot || (persistent && persistent.getInt()))
    return func.emitError("@cluster(2) needs the warp-specialized ring and "
                          "one program per tile (@persistent(0))");

  // The producer's copies of each operand, by their offset in a stage.
  Uniformity u;
  llvm::DenseMap<int64_t, SmallVector<RingCopyOp>> copies;
  producer.walk([&](RingCopyOp c) { copies[c.getOffset()].push_back(c); });
  auto shared = [&](std::optional<uint64_t> offset) {
    if (!offset || !copies.count(int64_t(*offset)))
      return false;
    return llvm::all_of(copies[int64_t(*offset)], [&](RingCopyOp c) {
      return u.of(c.getRow()) && u.of(c.getCol()) &&
             uniformTrips(c, producer, u);
    });
  };
  auto mark = [&](uint64_t offset) {
    for (RingCopyOp c : copies[int64_t(offset)])
      c.setMulticast(true);
  };
  if (shared(dot.getBOffset())) {
    mark(dot.getBOffset());
  } else if (shared(dot.getAOffset())) {
    mark(dot.getAOffset());
    if (shared(dot.getMetaOffset()))
      mark(*dot.getMetaOffset());
  } else {
    return dot.emitError(
        "@cluster: the programs of a cluster must load the same block of "
        "one dot operand, but both operands' block positions (or the ring's "
        "trip count) depend on program_id or cluster_rank (compute them "
        "from cluster_id)");
  }
  return success();
}

struct ClusterMulticastPass
    : public sparsetile::impl::ClusterMulticastBase<ClusterMulticastPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      auto cluster = func->getAttrOfType<IntegerAttr>(kClusterAttr);
      if (cluster && cluster.getInt() > 1 && failed(shareOperand(func)))
        return signalPassFailure();
    }
  }
};

} // namespace
