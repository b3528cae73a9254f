//===- PipelineRing.h - What tile-pipeline-tma's two forms share -*- C++ -*-===//
//
// tile-pipeline-tma has two forms: the GEMM K loop whose only carried value
// is the accumulator (PipelineTMA.cpp: TMA or pointer copies, the warp-
// specialized or the plain ring) and the loop of chained dots whose body
// computes with their results (PipelineChain.cpp: attention). Both take a
// dot operand the same way and share the shared-memory budget.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TRANSFORMS_PIPELINERING_H
#define SPARSETILE_TRANSFORMS_PIPELINERING_H

#include "Conversion/AxisInfo.h"
#include "Dialect/Tile/SharedMemory.h"
#include "Dialect/Tile/TileDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <algorithm>
#include <optional>
#include <string>

namespace sparsetile::pipeline_ring {

using namespace mlir;
using namespace sparsetile::tile;

constexpr int64_t kMaxStages = 4;

/// Marks the loop of one iteration that cloneIntoOneTripLoop builds.
constexpr const char *kOneTripAttr = "tile.one_trip";

/// The depth of a ring filled through pointers (tile.ring_copy_ptrs) when
/// the kernel does not ask for one: stages enough for about 96 KB of copies
/// in flight, three at least (Triton's default) and kMaxStages at most. Its
/// copies are issued by the consumers themselves, so what hides them and
/// the epilogue is a second block on the SM, which four 32 KB stages of a
/// 128 x 128 tile (132 KB) leave no room for and three do: the block-sparse
/// port 0.72-0.90x -> 0.80-0.99x Triton, the 128 x 128 matmul +8-10%. With
/// BK 32 (16-24 KB stages) four stages ran 6-16% faster than three
/// (bench/NOTES.md, "Pointer rings three stages deep").
constexpr int64_t kPointerRingBytes = 96 * 1024;
inline int64_t pointerRingStages(int64_t stageBytes) {
  int64_t stages = (kPointerRingBytes + stageBytes - 1) / stageBytes;
  return std::max<int64_t>(3, std::min(stages, kMaxStages));
}

/// One operand of the dot: a desc_load, possibly transposed, or a load
/// through a tile of pointers (`ptrLoad`; then `load` is null), which every
/// thread copies into the ring with cp.async (tile.ring_copy_ptrs).
struct Operand {
  DescLoadOp load;
  LoadOp ptrLoad;
  TransOp trans; ///< Null when the block is used as loaded.
  int64_t rows = 0, cols = 0;
  /// Columns of the copied box: `cols`, or for metadata rows under 16 bytes
  /// the 8 that TMA's smallest box row holds: the aligned box of two steps,
  /// of which each step reads its half (widenedMetaLoop).
  int64_t boxCols = 0;
  bool swizzle = true; ///< False for sparse metadata: one plain box.
  /// Sparse metadata copied as [rows, boxCols] and viewed row-major as the
  /// dot's [M, k/16] block (the same bytes in shared memory): boxes of
  /// 128-byte rows instead of M rows of 16 bytes (sparse24.tile's
  /// meta_block).
  ReshapeOp reshape;
  int64_t bytes() const { return rows * boxCols * 2; }
  /// The shared layout the block is copied in, and read in by the ring_dot:
  /// panels of 64 columns at the 128-byte swizzle, one of 32 at the 64-byte
  /// swizzle (sparse A's values at K = 64), plain rows for metadata.
  SharedLayoutAttr layout(MLIRContext *ctx) const {
    return SharedLayoutAttr::get(
        ctx, swizzle ? std::min<int64_t>(boxCols, 64) * 2 : 0);
  }
  bool widened() const { return boxCols != cols; }
};

/// The dot operand `v` of a loop with body `body`: a load_block or a load
/// through pointers there, maybe transposed; with `halfPanel` (sparse A's
/// compressed values at K = 64) a load_block of one 32-column panel, with
/// `pointerHalfPanel` (K = 32) a pointer block of one stored K-major: A not
/// transposed, or B (`isB`) transposed. Declined with the reason in `why`.
std::optional<Operand> operandOf(Value v, Block *body, std::string &why,
                                 bool halfPanel = false,
                                 bool pointerHalfPanel = false,
                                 bool isB = false);

/// Whether a pointer operand's addresses come in aligned runs that cp.async
/// can copy (4 bytes at least under one mask value); if not, `why` says so.
bool copiesInRuns(const Operand &o, const AxisInfoAnalysis &axis,
                  std::string &why);

/// Why the kernel has no ring filled by every thread (persistent,
/// ping-pong and cluster kernels need a producer); empty if it may.
std::string pointerRingDeclined(func::FuncOp func);

/// Splits the address arithmetic `loop` computes from its index into a
/// part computed from values outside the loop and the index's splatted term
/// (PipelineAddresses.cpp), for a producer warpgroup that computes every
/// address. True if anything changed.
bool splitUniformTerms(scf::ForOp loop);

/// A tile of zeros (splat of a 0.0 constant, or a zero dense constant).
bool isZeroTile(Value v);

Value i32c(OpBuilder &b, Location l, int64_t v);

/// The original loop's induction value at iteration `i`: lo + i * step.
Value inductionAt(OpBuilder &b, scf::ForOp loop, Value i);

/// Pipelines every loop of chained dots over pointer operands in `func`
/// (PipelineChain.cpp) on one ring. The dots of loops it leaves say why in
/// their remarks (chainDeclined). With `mmaSync` (targets without wgmma)
/// the dots are mma.sync ring_dots; `lessBudget` is the shared memory the
/// target lacks against sm_90's.
void pipelineChains(func::FuncOp func, int64_t warps,
                    const AxisInfoAnalysis &axis, int64_t wantStages,
                    bool mmaSync = false, int64_t lessBudget = 0);
/// Why `loop` is no chain loop (the remark on its dots), or empty.
std::string chainDeclined(scf::ForOp loop, int64_t warps,
                          const AxisInfoAnalysis &axis, bool mmaSync = false,
                          int64_t lessBudget = 0);

/// The first dot of `func`'s body (outside any loop) whose A and B are
/// pointer loads (or trans of them) used by it alone, with no write or
/// barrier between them and it, cloned with its loads into a loop of one
/// iteration placed at the dot (tile.num_stages = 2, the loop carrying the
/// dot's accumulator): the form tile-pipeline-tma pipelines as a K loop
/// (PipelineStandalone.cpp). Nothing when `func` has a dot in a loop (that
/// loop's ring comes first) or no such dot. The caller keeps the loop with
/// replaceByOneTripLoop if the ring takes it, or erases it.
std::pair<scf::ForOp, DotOp> cloneIntoOneTripLoop(func::FuncOp func);
/// Replaces `dot` by the result of its clone `loop`, erasing the dot and
/// its loads.
void replaceByOneTripLoop(DotOp dot, scf::ForOp loop);

/// A K loop the ring can take (PipelineMatch.cpp), with what was found in
/// it; PipelineTMA.cpp builds its ring.
struct Candidate {
  scf::ForOp loop;
  Operation *dot;                 ///< tile.dot or tile.sparse_dot.
  Operand a, b;                   ///< A (sparse: its compressed values) and B.
  std::optional<Operand> meta;    ///< Sparse A's metadata.
  SmallVector<Operation *> slice; ///< Scalar ops computing block positions.
  /// A dot inside an `if` of its loop (`if kept(k) { acc = dot(...) }`,
  /// SparseDrop's skipped blocks): the if, and the ops of `slice` that
  /// compute its condition (the consumers recompute it for the iteration
  /// they run). Null `guard` for a dot in the loop body itself.
  scf::IfOp guard;
  SmallVector<Operation *> guardSlice;
  int64_t stageBytes() const {
    return a.bytes() + b.bytes() + (meta ? meta->bytes() : 0);
  }
  SmallVector<Operand *> operands() {
    SmallVector<Operand *> ops = {&a, &b};
    if (meta)
      ops.push_back(&*meta);
    return ops;
  }
};

/// The `if` of `loop`'s body that holds its dot, as a kernel skips
/// iterations: `scf.if %c -> acc { ...; yield dot(a, b, acc) } else {
/// yield acc }`, whose result the loop yields as its one value; else null.
scf::IfOp guardOf(scf::ForOp loop);

/// `loop` as a Candidate for the K loop ring, `warps` being the kernel's;
/// where it is declined, `why` says the first reason (for the remark on the
/// dots left to mma.sync). With `mmaSync` (a target without TMA and wgmma)
/// only pointer operands qualify, and the tile must split over the warps as
/// mma.sync's accumulator layout does. `lessBudget`: the shared memory the
/// target lacks against sm_90's.
std::optional<Candidate> match(scf::ForOp loop, int64_t warps,
                               const AxisInfoAnalysis &axis, std::string &why,
                               bool mmaSync = false, int64_t lessBudget = 0);

/// The performance remarks on the dots tile-pipeline-tma left alone in
/// `func` (Language.md, "Performance remarks"), each with the first reason
/// its loop was declined: `tma` (sm_90: mma.sync with plain loads) or
/// `cpAsync` (the cp.async targets: an unpipelined loop).
void pipelineRemarks(func::FuncOp func, int64_t warps, bool tma, bool cpAsync,
                     int64_t lessBudget);

} // namespace sparsetile::pipeline_ring

#endif // SPARSETILE_TRANSFORMS_PIPELINERING_H
