//===- SharedMemory.h - Where a kernel's shared memory goes -----*- C++ -*-===//
//
// One plan of a kernel's shared memory, read by every pass that needs it:
// tile-pipeline-tma and its chained form size their rings by
// ringStageBudget, tile-warp-specialize asks whether a second block fits by
// the plan's ring part, and convert-tile-to-gpu lays the block out by the
// plan and reports its total in the kernel's #tile.launch (which the
// runtime launches with). Offsets are bytes from the ring base, the first
// 1 KB boundary of the block's shared memory (the 128-byte swizzle's
// period):
//
//   ring        stages x stage_bytes                      (#tile.ring)
//   barriers    `full` then `empty` mbarriers, 8 B a stage each
//   queue       the persistent tile queue, 128 B          (tile.next_tile)
//   TMA store   staging at a 1 KB boundary                (tile.desc_store tma)
//   warp staging  a store area per consumer warp          (persistent
//   epilogues) exchanges   layout conversions and reductions across warps
//
// The exchanges reuse the ring's bytes unless the ring must stay intact
// while they run: a warp-specialized kernel (the producer refills the ring
// during the consumers' epilogue) or a ring `apart` (attention's softmax
// exchanges while the ring holds later blocks); then they follow it, one
// area per consumer group.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_DIALECT_TILE_SHAREDMEMORY_H
#define SPARSETILE_DIALECT_TILE_SHAREDMEMORY_H

#include "Dialect/Tile/TileDialect.h"

#include "llvm/ADT/DenseSet.h"

namespace sparsetile::tile {

/// What convert-tile-to-gpu knows of the kernel's shape when it plans.
struct SharedMemoryFacts {
  bool specialized = false; ///< tile.warp_specialize: a producer warpgroup.
  bool persistent = false;  ///< @persistent: the ring refills in epilogues.
  bool tileQueue = false;   ///< tile.next_tile hands out the tiles.
  int64_t consumerWarps = 0, consumerGroups = 1, blocksPerSM = 1;
};

struct SharedMemoryPlan {
  static constexpr int64_t kQueueBytes = 128;
  /// One warp's store staging area: 16 rows of 128 bytes, each padded by 16.
  static constexpr int64_t kWarpStagingBytes = 16 * (128 + 16);

  int64_t stages = 0, stageBytes = 0;
  int64_t fullBarriersAt = 0, emptyBarriersAt = 0;
  /// After the barriers; its bytes are counted for a warp-specialized
  /// kernel with a tile queue, the only kind that has one.
  int64_t queueAt = 0;
  int64_t tmaStoreAt = -1, warpStagingAt = -1; ///< -1: none.
  /// The ring's part: the ring, its barriers and what follows it above,
  /// plus the 1 KB of slack for aligning the ring base (0 without a ring).
  int64_t ringPartBytes = 0;
  /// Where the exchanges start, from the block's first byte: ringPartBytes
  /// when they follow the ring, 0 when they reuse its bytes.
  int64_t exchangesAt = 0;

  /// The block's shared memory with `exchangeBytes` of exchanges a
  /// consumer group (16-byte aligned areas when there are several groups).
  int64_t total(int64_t exchangeBytes, int64_t consumerGroups) const;
};

/// The plan of `kernel` (a func with the tile.kernel attribute, after the
/// pipeline passes).
SharedMemoryPlan planSharedMemory(mlir::Operation *kernel,
                                  const SharedMemoryFacts &facts);

/// The ring's part as planSharedMemory counts it for a kernel that is not
/// persistent and has no tile queue (what tile-warp-specialize weighs for a
/// second block on the SM): ring, barriers, TMA store staging, slack.
int64_t ringPartBytes(RingAttr ring, mlir::Operation *kernel);

/// A block's shared memory less the ring base's alignment slack (1 KB) and
/// a 64-byte margin for the mbarriers: the most any ring's stages take (a
/// pipeline candidate whose two stages exceed it is declined before its
/// kernel's budget is asked).
constexpr int64_t kMaxRingStageBytes = kSharedMemoryPerBlock - 1024 - 64;

/// The exchange convert-tile-to-gpu stages a `dot`'s 16-bit operands in for
/// mma.sync (DotToMMA.cpp, SparseDotToMMA.cpp): A [m, k] and B [k, n] (a 2:4
/// sparse A: its k/2 values a row and k/16 i16 of metadata a row; its B as
/// loaded, [n, k] when transposed) in rows padded by kMmaStagingPad
/// elements, so that ldmatrix's eight row reads fall in distinct banks;
/// metadata rows are not padded. Up to kMmaStagingLimit (what every
/// supported GPU grants a block: sm_86's and sm_89's 99 KB). The ops do not
/// restate this: a tiling past it does not compile, and a kernel's total is
/// in its #tile.launch.
constexpr int64_t kMmaStagingPad = 8;
constexpr int64_t kMmaStagingLimit = 99 * 1024;
constexpr int64_t mmaStagingBytes(int64_t m, int64_t k, int64_t n) {
  return (m * (k + kMmaStagingPad) + k * (n + kMmaStagingPad)) * 2;
}
constexpr int64_t sparseMmaStagingBytes(int64_t m, int64_t k, int64_t n,
                                        bool bTransposed) {
  return (m * (k / 2 + kMmaStagingPad) +
          (bTransposed ? n * (k + kMmaStagingPad) : k * (n + kMmaStagingPad)) +
          m * (k / 16)) *
         2;
}

/// The most shared memory one exchange of `kernel` may take, from its tile
/// types alone, before convert-tile-to-gpu lowers it: the analysis the
/// pipeline passes plan a ring's room beside the exchanges by, and the bound
/// convert-tile-to-gpu checks every reservation against (a larger one is a
/// compiler bug, reported as an error). Per kind of exchange:
///   - a tile moved to other threads (a layout conversion, a scan's or an
///     atomic's exchange, any materialized tile read at other coordinates):
///     its rows x cols elements (cols its last dimension; booleans a byte)
///     in rows padded by at most 16 bytes (ExchangeLayout.h's candidates);
///   - a scalar atomic's old value, which its replicas read;
///   - a reduction across warps: each warp's partial results, with an
///     argmax's i32 indices, at most one per element of its source;
///   - a dot on mma.sync (or mma.sp): its staged operands (mmaStagingBytes,
///     sparseMmaStagingBytes).
/// Ring stages, their barriers and the store staging areas are the plan's
/// (planSharedMemory), not exchanges; so are `onRing`'s ops, which a
/// pipeline pass is about to put on its ring (their loads and dots, whose
/// operands will not be staged).
int64_t exchangeBound(mlir::Operation *kernel,
                      const llvm::DenseSet<mlir::Operation *> &onRing = {});

/// The bytes a pipeline pass may give a ring's stages in `kernel`: a
/// block's shared memory less the ring base's alignment slack, a margin for
/// the mbarriers, the TMA stores' staging, and `besides` (exchanges that
/// need room of their own while the ring holds blocks).
int64_t ringStageBudget(mlir::Operation *kernel, int64_t besides = 0);

} // namespace sparsetile::tile

#endif // SPARSETILE_DIALECT_TILE_SHAREDMEMORY_H
