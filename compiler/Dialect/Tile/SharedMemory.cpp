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

int64_t ringPartBytes(RingAttr ring, Operation *kernel) {
  return ring.getStages() * (ring.getStageBytes() + kBarrierBytesPerStage) +
         kAlignSlack + tmaStoreStagingBytes(kernel);
}

int64_t ringStageBudget(Operation *kernel, int64_t besides) {
  return kMaxRingStageBytes - tmaStoreStagingBytes(kernel) - besides;
}

} // namespace sparsetile::tile
