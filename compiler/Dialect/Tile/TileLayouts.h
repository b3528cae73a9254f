//===- TileLayouts.h - What the layout attributes mean ----------*- C++ -*-===//
//
// The rules that choose a tile's layout and the coordinates each layout
// gives every thread, in one place: tile-assign-layouts reads them to put
// the layouts into the IR, and convert-tile-to-gpu to hold each value where
// its layout says (it builds the same coordinates as SSA values). Shared
// memory's side (#tile.shared on the ring's copies and wgmma operands) is
// checked here too: checkSharedLayouts.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_DIALECT_TILE_TILELAYOUTS_H
#define SPARSETILE_DIALECT_TILE_TILELAYOUTS_H

#include "Dialect/Tile/TileDialect.h"

#include <deque>
#include <optional>
#include <vector>

namespace sparsetile::tile {

/// What every layout of a kernel follows from.
struct LayoutParams {
  /// The threads a tile is spread over: num_warps * 32 (in a ping-pong
  /// kernel, one consumer group's).
  int64_t numThreads = 128;
  /// A blocked run: 16 bytes of the narrowest type the kernel moves through
  /// global memory (at most 8 elements, 16 of fp8), or `@thread_run`.
  int64_t vecElems = 4;
};

/// The kernel's parameters. Fails, with an error on the kernel, for
/// `@thread_run` in a kernel with tensor-core ops (their operands are staged
/// for the default runs).
mlir::FailureOr<LayoutParams> kernelLayoutParams(mlir::func::FuncOp kernel);

/// The blocked layout of a tile of `shape`: runs of min(vecElems, last
/// dimension), over as many threads as there are runs, up to numThreads.
BlockedLayoutAttr blockedLayout(mlir::MLIRContext *ctx,
                                llvm::ArrayRef<int64_t> shape,
                                const LayoutParams &p);

/// The warp grid (warps_m, warps_n) of an [m, n] mma.sync accumulator:
/// M is split first (rows of A stay in one warp), then N. None if N does not
/// split over the remaining warps in 8-column fragments.
std::optional<std::pair<int64_t, int64_t>> mmaWarps(int64_t m, int64_t n,
                                                     int64_t numThreads);

/// Whether a warps_m x warps_n grid of numThreads / 32 warps splits an
/// [m, n] mma.sync accumulator into whole 16 x 8 fragments a warp.
bool mmaSplits(int64_t m, int64_t n, int64_t warpsM, int64_t warpsN,
               int64_t numThreads);

/// The warp grid of a ring's mma.sync dot (tile.ring_dot with mma_sync):
/// warp tiles as square in fragments as the shape allows, so that the
/// warps share the stage's ldmatrix reads (Triton's rule for mma v2): each
/// doubling goes to the dimension with more fragments a warp. None if the
/// warps do not split [m, n].
std::optional<std::pair<int64_t, int64_t>>
mmaWarpsBalanced(int64_t m, int64_t n, int64_t numThreads);

/// The warpgroups of an [m, n] wgmma accumulator: 64 or 128 rows for each
/// of numThreads / 128 groups, n a multiple of 8. None if it does not fit.
std::optional<int64_t> wgmmaGroups(int64_t m, int64_t n, int64_t numThreads);

/// Whether reducing `axis` of a blocked tile of `shape` combines only the
/// elements of one thread (the reduced dimension lies within its runs and
/// repetitions), so that the result can stay where they were.
bool reducesInThread(llvm::ArrayRef<int64_t> shape, int64_t axis,
                     const LayoutParams &p);

/// A coordinate's value in each thread t < numThreads.
using ThreadValues = llvm::SmallVector<int32_t>;

/// How a reduction along `axis` runs where its source is held (a tensor-core
/// accumulator's row max): slot s of a thread combines into output
/// groupOf[s], then the lanes that differ in laneMask's bits combine by
/// butterfly shuffles. Output g keeps the coordinates of source slot
/// firstSlot[g] without `axis`.
struct HeldReductionPlan {
  llvm::SmallVector<int64_t> groupOf;
  llvm::SmallVector<size_t> firstSlot;
  int64_t laneMask = 0;
};

/// The plan for a source whose slot s holds, in dimension d, coordinate
/// slots[s][d] in every thread; none when an output's elements are not all
/// in one warp's lane group and one slot group of each of its threads.
std::optional<HeldReductionPlan>
planHeldReduction(llvm::ArrayRef<llvm::SmallVector<const ThreadValues *>> slots,
                  llvm::ArrayRef<int64_t> shape, int64_t axis,
                  int64_t numThreads);

/// The coordinates of every slot of a tile of `shape` laid out as `layout`,
/// in every thread: at[slot][dim] points into `values`.
struct ThreadCoords {
  std::deque<ThreadValues> values;
  std::vector<llvm::SmallVector<const ThreadValues *>> at;
};

/// The coordinates of a blocked, mma or wgmma layout, or of a slice of one
/// that planHeldReduction accepts; none for shapes the layout does not fit.
std::optional<ThreadCoords> threadCoords(mlir::Attribute layout,
                                         llvm::ArrayRef<int64_t> shape,
                                         int64_t numThreads);

/// A tile type's layout (its encoding); null when it has none.
mlir::Attribute encodingOf(mlir::Type type);

/// `type` with its layout replaced by `layout` (scalars stay as they are).
mlir::Type withLayout(mlir::Type type, mlir::Attribute layout);

/// The shared-memory side of the contract: every tile.ring_dot of `kernel`
/// reads its A and B blocks in the #tile.shared layout that each
/// tile.ring_copy and tile.ring_copy_ptrs filling that stage offset wrote
/// them in. An error at the ring_dot, naming the copy, otherwise.
mlir::LogicalResult checkSharedLayouts(mlir::func::FuncOp kernel);

} // namespace sparsetile::tile

#endif // SPARSETILE_DIALECT_TILE_TILELAYOUTS_H
