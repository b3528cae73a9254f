//===- SharedMemory.cpp - Where a kernel's shared memory goes -------------===//
//
// The plan described in SharedMemory.h.
//
//===----------------------------------------------------------------------===//

#include "Dialect/Tile/SharedMemory.h"

#include <algorithm>

using namespace mlir;

namespace sparsetile::tile {

/// The slack for rounding the block's first byte up to the ring base.
static constexpr int64_t kAlignSlack = 1024;
/// A ring's mbarriers: `full` and `empty`, 8 bytes each, a stage.
static constexpr int64_t kBarrierBytesPerStage = 16;

static int64_t roundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

int64_t SharedMemoryPlan::total(int64_t exchangeBytes,
                                int64_t consumerGroups) const {
  if (!exchangesAt)
    return std::max(ringPartBytes, exchangeBytes);
  int64_t exchanges = consumerGroups > 1
                          ? roundUp(exchangeBytes, 16) * consumerGroups
                          : exchangeBytes;
  return exchangesAt + exchanges;
}

SharedMemoryPlan planSharedMemory(Operation *kernel,
                                  const SharedMemoryFacts &facts) {
  SharedMemoryPlan p;
  auto ring = kernel->getAttrOfType<RingAttr>(kRingAttr);
  if (!ring)
    return p;
  p.stages = ring.getStages();
  p.stageBytes = ring.getStageBytes();
  p.fullBarriersAt = p.stages * p.stageBytes;
  p.emptyBarriersAt = p.fullBarriersAt + 8 * p.stages;
  // From here `end` counts from the block's first byte (slack included).
  int64_t end = p.stages * (p.stageBytes + kBarrierBytesPerStage) + kAlignSlack;
  p.queueAt = end - kAlignSlack;
  if (facts.specialized) {
    if (facts.tileQueue)
      end += SharedMemoryPlan::kQueueBytes;
    if (int64_t tmaStaging = tmaStoreStagingBytes(kernel)) {
      p.tmaStoreAt = roundUp(end - kAlignSlack, 1024);
      end = p.tmaStoreAt + kAlignSlack + tmaStaging;
    }
    // A persistent kernel's producer refills the ring during the epilogue,
    // so its stores stage through areas of their own, one per consumer
    // warp, when they fit beside the ring (on the block's share of the SM
    // when more than one block is resident).
    int64_t staging = facts.consumerGroups * facts.consumerWarps *
                      SharedMemoryPlan::kWarpStagingBytes;
    int64_t limit = facts.blocksPerSM > 1
                        ? kSharedMemoryPerSM / facts.blocksPerSM -
                              kSharedMemoryReservedPerBlock
                        : kSharedMemoryPerBlock;
    if (facts.persistent && end + staging <= limit) {
      p.warpStagingAt = end - kAlignSlack;
      end += staging;
    }
  }
  p.ringPartBytes = end;
  if (facts.specialized || ring.getApart())
    p.exchangesAt = end;
  return p;
}

/// A tile of `type` moved through shared memory: rows x cols elements in
/// rows padded by at most 16 bytes (0 for tiles of pointers, which are
/// recomputed where needed, and for non-tiles).
static int64_t movedTileBytes(Type type) {
  auto rt = dyn_cast<RankedTensorType>(type);
  if (!rt || rt.getRank() == 0 || !rt.getElementType().isIntOrFloat())
    return 0;
  int64_t bytes =
      std::max<int64_t>(1, rt.getElementType().getIntOrFloatBitWidth() / 8);
  int64_t cols = rt.getShape().back(), rows = rt.getNumElements() / cols;
  return rows * (cols * bytes + (rows > 1 ? 16 : 0));
}

int64_t exchangeBound(Operation *kernel,
                      const llvm::DenseSet<Operation *> &onRing) {
  int64_t most = 0;
  auto note = [&](int64_t bytes) { most = std::max(most, bytes); };
  kernel->walk([&](Operation *op) {
    if (onRing.contains(op))
      return;
    for (Type t : op->getResultTypes())
      note(movedTileBytes(t));
    for (Region &r : op->getRegions())
      for (Block &b : r)
        for (BlockArgument a : b.getArguments())
          note(movedTileBytes(a.getType())); // Loop-carried tiles.
    if (isa<AtomicRMWOp, AtomicCASOp>(op))
      for (Type t : op->getResultTypes())
        if (t.isIntOrFloat()) // A scalar's old value, read by the replicas.
          note(std::max<int64_t>(1, t.getIntOrFloatBitWidth() / 8));
    if (auto red = dyn_cast<ReduceOp>(op)) {
      auto src = cast<RankedTensorType>(red.getSrc().getType());
      int64_t bytes = src.getElementType().getIntOrFloatBitWidth() / 8;
      bool arg = red.getKind() == ReduceKind::Argmax;
      note(src.getNumElements() * (bytes + (arg ? 4 : 0)));
    } else if (auto dot = dyn_cast<DotOp>(op)) {
      auto sa = cast<RankedTensorType>(dot.getA().getType()).getShape();
      auto sb = cast<RankedTensorType>(dot.getB().getType()).getShape();
      note(mmaStagingBytes(sa[0], sa[1], sb[1]));
    } else if (auto sp = dyn_cast<SparseDotOp>(op)) {
      auto sv = cast<RankedTensorType>(sp.getVals().getType()).getShape();
      auto sb = cast<RankedTensorType>(sp.getB().getType()).getShape();
      note(sparseMmaStagingBytes(sv[0], 2 * sv[1], sb[1],
                                 bool(sp.getB().getDefiningOp<TransOp>())));
    }
  });
  return most;
}

int64_t ringPartBytes(RingAttr ring, Operation *kernel) {
  return ring.getStages() * (ring.getStageBytes() + kBarrierBytesPerStage) +
         kAlignSlack + tmaStoreStagingBytes(kernel);
}

int64_t ringStageBudget(Operation *kernel, int64_t besides) {
  return kMaxRingStageBytes - tmaStoreStagingBytes(kernel) - besides;
}

} // namespace sparsetile::tile
