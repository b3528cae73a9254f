//===- RingMmaSync.cpp - mma.sync on the ring's stages (sm_80 .. sm_89) ---===//
//
// Lowers tile.ring_dot {mma_sync}. On targets without wgmma the pointer
// ring is the same as on sm_90 (every thread's cp.async fills a stage in
// the swizzled panels TMA would write; WgmmaRing.cpp), and this reads it:
// each warp loads the fragments of its part of the [M, N] tile (MmaLayout,
// DotToMMA.cpp) with ldmatrix and multiplies them with mma.sync.m16n8k16
// into f32 accumulators that stay in registers. The op is synchronous, so
// it releases the stage it read as soon as its MMAs are issued. In the
// chained form (PipelineChain.cpp: attention) A comes from registers
// instead, held with whole rows a warp, where two n8 accumulator tiles are
// the A fragment of a K step of 16 (see below).
//
// Where a fragment lies. A block of `rows` stored rows is kept as panels of
// P = swizzle / 2 columns (64, or 32 at the 64-byte swizzle); its element
// (r, c) is at byte
//   (c / P) * rows * 2P + r * 2P + (((c % P) / 8) ^ s(r)) * 16 + (c % 8) * 2
// with s(r) = r % 8 (128-byte swizzle) or (r / 2) % 4 (64-byte). ldmatrix
// reads 8 x 8 matrices whose rows are 16 contiguous bytes; each lane names
// the row of one matrix it supplies, 8 aligned columns, which the swizzle
// keeps together. With lane = 8 j + i (matrix j, its row i), and lo = i,
// h1 = j % 2, h2 = j / 2, the four matrices are, per operand as stored:
//   A K-major ([M, K] rows)  x4:        row m0 + lo + 8 h1, col k0 + 8 h2
//   A M-major ([K, M] rows)  x4.trans:  row k0 + lo + 8 h2, col m0 + 8 h1
//     (a0a1, a2a3, a4a5, a6a7: rows 0-7 / 8-15 of k 0-7, then of k 8-15)
//   B K-major ([N, K] rows)  x4:        row n0 + lo + 8 h2, col k0 + 8 h1
//   B N-major ([K, N] rows)  x4.trans:  row k0 + lo + 8 h1, col n0 + 8 h2
//     (b0, b1 of the n8 tile at n0, then of the one at n0 + 8; a warp with
//      an odd number of n8 tiles reads its last one with x2, lanes 0-15)
// Every row offset but the lane's is a multiple of 8, so s(r) is the
// lane's own, and a read's address is the stage's, plus a loop-invariant
// term of the lane, the warp and the constant column, plus the constant
// rows' bytes as the instruction's immediate: a few terms an operand (one a
// column of the K step or the warp's N range), not one a read.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

namespace {

/// One operand's block in the stage and the lane's place in its reads.
struct SwizzledBlock {
  Value base;           ///< The block's shared address (i32).
  int64_t rows = 0;     ///< Stored rows.
  int64_t rowBytes = 0; ///< The swizzle: 128 or 64.
  Value rowLane;        ///< lo + 8 h of the lane (0..15).
  Value colLane8;       ///< The lane's column unit, 0 or 1.
  Value swizzle;        ///< s(rowLane), s(r) for every row r of the lane.
  /// The warp's offsets along the stored rows and columns (null: none).
  Value rowWarp, colWarp;
  /// Loop-invariant lane terms by constant column: all of a read's
  /// address but the stage, the block's offset and the constant rows.
  std::map<int64_t, Value> terms;
};

} // namespace

LogicalResult Distributor::lowerRingMmaSync(RingDotOp op) {
  auto shape = shapeOf(op.getType());
  int64_t m = shape[0], n = shape[1], k = op.getK();
  // The warp grid is the result type's (tile-assign-layouts: as square
  // warp tiles as fit, or whole rows a warp with a register A).
  auto enc = dyn_cast_or_null<MmaLayoutAttr>(encodingOf(op.getType()));
  if (!enc)
    return op.emitOpError("with mma_sync holds its result in an mma.sync "
                          "layout, not ")
           << encodingOf(op.getType());
  auto ml = mmaLayout(shape, enc.getWarpsM(), enc.getWarpsN());
  if (failed(ml))
    return op.emitOpError("an [")
           << m << ", " << n << "] product cannot be split as " << enc;
  MmaLayout &L = **ml;
  SharedLayoutAttr aLayout = op.getALayoutAttr(), bLayout = op.getBLayout();
  for (SharedLayoutAttr sl : {aLayout, bLayout})
    if (sl && sl.getSwizzle() != 128 && sl.getSwizzle() != 64)
      return op.emitOpError("reads swizzled panels (64 or 128 bytes), got ")
             << sl;
  if (k % 16)
    return op.emitOpError("needs K a multiple of 16, got ") << k;
  Type e = op.getOperandType();
  bool aK = op.getAKmajor(), bK = op.getBKmajor();
  Elems acc = evalAt(op.getAcc(), L.coords);
  // `accumulate` false: start from zero (a zero-initialized chain's first
  // dot, whose acc is poison).
  if (Value a = op.getAccumulate()) {
    Value on = get(a)[0];
    Value zero = b.create<arith::ConstantOp>(loc(), b.getF32FloatAttr(0.0f));
    for (Value &x : acc)
      x = b.create<arith::SelectOp>(loc(), on, x, zero);
  }
  Value stage = get(op.getStage())[0];

  // A register A [M, K] in mma.sync's layout with whole rows a warp (the
  // result's warp grid, warps_n = 1): its n8 tiles 2 s and 2 s + 1 hold the
  // A fragment of K step s (registers a0a1, a2a3 the rows r and r + 8 of
  // tile 2 s; a4a5, a6a7 of tile 2 s + 1), pairs of elements packed.
  SmallVector<SmallVector<SmallVector<Value, 4>>> regA; // [im][step]
  if (Value a = op.getA()) {
    auto al = mmaLayout({m, k}, L.warpsM, L.warpsN);
    if (L.warpsN != 1 || failed(al) || (*al)->repM != L.repM)
      return op.emitOpError("a register A needs whole rows a warp "
                            "(#tile.mma<warps_m = warps, warps_n = 1>), got ")
             << enc;
    Elems av = evalAt(a, (*al)->coords);
    int64_t tilesK = k / 8;
    auto pair = [&](int64_t slot) -> Value {
      Value v = packVector(b, loc(), {av[slot], av[slot + 1]});
      return e.isF16() ? v
                       : b.create<LLVM::BitcastOp>(loc(), b.getI32Type(), v)
                             .getResult();
    };
    regA.resize(L.repM);
    for (int64_t im = 0; im < L.repM; ++im)
      for (int64_t st = 0; st < k / 16; ++st) {
        int64_t t0 = (im * tilesK + 2 * st) * 4, t1 = t0 + 4;
        regA[im].push_back({pair(t0), pair(t0 + 2), pair(t1), pair(t1 + 2)});
      }
  }

  // With `enabled`, the reads and MMAs run under an `if` whose else keeps
  // the accumulators; the stage is released on both paths (below).
  // Lane 0 releases the stage for its warp: on the skipped path the warp's
  // lanes meet first, as ldmatrix (aligned) makes them meet on the other,
  // so that every lane's arrival on this stage's fill precedes the release.
  scf::IfOp guard = openSkippable(op, acc, "bar.warp.sync -1;");

  // Lane parts: lo = lane % 8, h1 = (lane / 8) % 2, h2 = lane / 16.
  Value lo = laneLo8, h1 = laneHalf, h2 = laneQuad;
  auto add = [&](Value x, Value y) -> Value {
    return b.create<arith::AddIOp>(loc(), x, y);
  };
  auto mul = [&](Value x, int64_t c) -> Value {
    return b.create<arith::MulIOp>(loc(), x, i32(c));
  };
  // rowHalf, colHalf: which of h1, h2 moves the lane 8 rows, 8 columns.
  auto block = [&](int64_t offset, int64_t rows, int64_t rowBytes,
                   Value rowHalf, Value colHalf, Value rowWarp, Value colWarp) {
    SwizzledBlock sb;
    sb.base = ringStage(stage, offset);
    sb.rows = rows;
    sb.rowBytes = rowBytes;
    sb.rowLane = add(lo, b.create<arith::ShLIOp>(loc(), rowHalf, i32(3)));
    sb.colLane8 = colHalf;
    sb.swizzle =
        rowBytes == 128
            ? b.create<arith::AndIOp>(loc(), sb.rowLane, i32(7)).getResult()
            : b.create<arith::AndIOp>(
                   loc(), b.create<arith::ShRUIOp>(loc(), sb.rowLane, i32(1)),
                   i32(3))
                  .getResult();
    sb.rowWarp = rowWarp;
    sb.colWarp = colWarp;
    return sb;
  };
  // The lane's row of the read at stored row rowC and column colC (rowC a
  // multiple of 8; colC one of 16 where the lane moves 8 columns) past the
  // warp's offsets: a shared address and a constant byte offset to it.
  auto address = [&](SwizzledBlock &sb, int64_t rowC,
                     int64_t colC) -> std::pair<Value, int64_t> {
    const int64_t p = sb.rowBytes / 2, panelBytes = sb.rows * sb.rowBytes;
    Value &term = sb.terms[colC];
    if (!term) {
      Value row = sb.rowWarp ? add(sb.rowWarp, sb.rowLane) : sb.rowLane;
      Value col = b.create<arith::ShLIOp>(loc(), sb.colLane8, i32(3));
      col = add(sb.colWarp ? add(sb.colWarp, i32(colC)) : i32(colC), col);
      Value unit = b.create<arith::XOrIOp>(
          loc(),
          b.create<arith::ShRUIOp>(
              loc(), b.create<arith::RemUIOp>(loc(), col, i32(p)), i32(3)),
          sb.swizzle);
      term =
          add(add(mul(b.create<arith::DivUIOp>(loc(), col, i32(p)), panelBytes),
                  mul(row, sb.rowBytes)),
              b.create<arith::ShLIOp>(loc(), unit, i32(4)));
    }
    return {add(sb.base, term), rowC * sb.rowBytes};
  };

  // A: M rows (a warp's strip starts at rowBase), K columns.
  SwizzledBlock aBlock;
  if (regA.empty())
    aBlock = aK ? block(op.getAOffset(), m, aLayout.getSwizzle(), h1, h2,
                        L.rowBase, Value())
                : block(op.getAOffset(), k, aLayout.getSwizzle(), h2, h1,
                        Value(), L.rowBase);
  // B: N columns (a warp's start at colBase), K rows.
  SwizzledBlock bBlock = bK ? block(op.getBOffset(), n, bLayout.getSwizzle(),
                                    h2, h1, L.colBase, Value())
                            : block(op.getBOffset(), k, bLayout.getSwizzle(),
                                    h1, h2, Value(), L.colBase);

  // The constant offset goes through a GEP, which becomes the instruction's
  // immediate: one address register a term, not one a read.
  auto ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
  auto ldmatrix = [&](std::pair<Value, int64_t> at, int64_t count, bool trans) {
    Value wide = b.create<arith::ExtUIOp>(loc(), b.getI64Type(), at.first);
    Value ptr = b.create<LLVM::IntToPtrOp>(loc(), ptr3, wide);
    if (at.second)
      ptr = b.create<LLVM::GEPOp>(loc(), ptr3, b.getI8Type(), ptr,
                                  ArrayRef<LLVM::GEPArg>{int32_t(at.second)});
    return loadFragments(ptr, count, trans, e);
  };

  for (int64_t kk = 0; kk < k / 16; ++kk) {
    int64_t k0 = kk * 16;
    SmallVector<SmallVector<Value, 4>> aFrag(L.repM);
    for (int64_t im = 0; im < L.repM; ++im)
      aFrag[im] = !regA.empty() ? regA[im][kk]
                  : aK ? ldmatrix(address(aBlock, im * 16, k0), 4, false)
                       : ldmatrix(address(aBlock, k0, im * 16), 4, true);
    for (int64_t in = 0; in < L.repN; in += 2) {
      // Two n8 tiles a read (x4), or the warp's odd last one (x2).
      int64_t tiles = std::min<int64_t>(2, L.repN - in);
      SmallVector<Value, 4> regs =
          bK ? ldmatrix(address(bBlock, in * 8, k0), 2 * tiles, false)
             : ldmatrix(address(bBlock, k0, in * 8), 2 * tiles, true);
      for (int64_t t = 0; t < tiles; ++t)
        for (int64_t im = 0; im < L.repM; ++im)
          mmaSync(acc, (im * L.repN + in + t) * 4, aFrag[im],
                  {regs[2 * t], regs[2 * t + 1]}, e);
    }
  }
  closeSkippable(guard, acc);
  // The fragments are in registers: the stage may be refilled.
  releaseStage(get(op.getRelease())[0]);
  dist[op.getResult()] = acc;
  assigned[op.getResult()] = &L.coords;
  return success();
}
