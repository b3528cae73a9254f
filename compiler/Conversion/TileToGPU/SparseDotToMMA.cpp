//===- SparseDotToMMA.cpp - tile.sparse_dot on sparse tensor cores --------===//
//
// Lowers tile.sparse_dot (A 2:4 sparse along K, given compressed as values
// [M, K/2] plus i16 metadata [M, K/16]) to
//   mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.{bf16,f16}
// for sm_80 and newer. It follows the dense lowering (DotToMMA.cpp): the
// operands are staged in shared memory, each warp loads its fragments with
// ldmatrix, and the accumulator stays in registers in the m16n8k16 C-fragment
// layout (MmaLayout), which is also the C fragment of m16n8k32, so values
// computed from a sparse dot mix freely with dense ones.
//
// Operand layout of one m16n8k32 instruction (16-bit types; g = lane / 4,
// t = lane % 4):
//  - A (compressed 16 x 16): the dense m16n8k16 A fragment, one ldmatrix.x4;
//  - B (32 x 8): rows 2t, 2t+1, +8, +16, +24 of column g: one ldmatrix.x4.trans
//    whose lane i addresses row i of the 32-row slice. When b is trans(x)
//    (a linear layer's X^T), x [N, K] is staged as it is, K contiguous, and a
//    plain ldmatrix.x4 reads the same fragment (lane i addresses row i % 8,
//    columns 8 (i / 8)..+7): no element-wise transposing stores;
//  - metadata (one i32 per lane, sparsity selector 0): lanes with t = 0 and
//    t = 1 supply it; lane (g, t) holds, in its low half, the 2-bit indices of
//    row g, dense columns 16t..16t+15 of the slice, and in its high half the
//    same for row g + 8. That is exactly one i16 of the row-major [M, K/16]
//    metadata tile per half, so the lowering only gathers two i16 per lane.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

/// mma.sp::ordered_metadata first appeared in PTX ISA 8.5.
static constexpr int64_t kOrderedMetadataPtx = 85;

LogicalResult Distributor::lowerSparseDot(SparseDotOp op) {
  // 1. Stage vals [M, K/2], b [K, N] (x [N, K] for b = trans(x)) and meta
  // [M, K/16] in shared memory;
  // 2. per 32-deep K step, each warp loads A fragments (ldmatrix.x4), its two
  // metadata halves and B fragments (ldmatrix.x4.trans, or .x4 from x) and
  // issues one mma.sp per 16 x 8 instruction tile; 3. the accumulator stays
  // in registers.
  auto sv = shapeOf(op.getVals().getType()), sb = shapeOf(op.getB().getType());
  int64_t m = sv[0], kh = sv[1], k = 2 * kh, n = sb[1], km = k / 16;
  // b = trans(x): stage x [N, K] untransposed (see the file comment).
  Value bSrc = op.getB();
  auto bTrans = bSrc.getDefiningOp<TransOp>();
  if (bTrans)
    bSrc = bTrans.getSrc();
  Type e = elementType(op.getVals().getType());
  auto ml = dotLayout(op, m, n);
  if (failed(ml))
    return failure();
  MmaLayout &L = **ml;
  // Rows of vals and b are padded by 8 elements (16 bytes) so ldmatrix's
  // eight row reads fall in distinct banks; metadata rows are not (each lane
  // reads two i16, and padding would misalign the tile's vector stores).
  // Every region starts at a multiple of 8 elements: 16-byte aligned.
  int64_t lda = kh + kMmaStagingPad, ldb = (bTrans ? k : n) + kMmaStagingPad,
          ldm = km;
  int64_t bBase = m * lda, mBase = bBase + (bTrans ? n : k) * ldb;
  if (failed(reserveStaging(op, sparseMmaStagingBytes(m, k, n, bool(bTrans)))))
    return failure();
  minPtx = std::max(minPtx, kOrderedMetadataPtx);

  writeTileToShared(op.getVals(), 0, lda);
  writeTileToShared(bSrc, bBase, ldb);
  writeTileToShared(op.getMeta(), mBase, ldm);
  barrier();

  Elems acc = evalAt(op.getAcc(), L.coords);
  MLIRContext *ctx = b.getContext();
  Type i32t = b.getI32Type(), i16t = b.getI16Type(), f32t = b.getF32Type();
  auto s4 = LLVM::LLVMStructType::getLiteral(ctx, {i32t, i32t, i32t, i32t});
  auto f4 = LLVM::LLVMStructType::getLiteral(ctx, {f32t, f32t, f32t, f32t});
  auto ptxType = e.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  auto ldShape = NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8);
  auto ldElt =
      NVVM::LdStMatrixEltTypeAttr::get(ctx, NVVM::LdStMatrixEltType::B16);
  auto add = [&](Value x, Value y) -> Value {
    return b.create<arith::AddIOp>(loc(), x, y);
  };
  auto mul = [&](Value x, int64_t c) -> Value {
    return b.create<arith::MulIOp>(loc(), x, i32(c));
  };
  // ldmatrix.x4 at shared element `idx`, as four mma operand registers
  // (mma takes f16 pairs as vector<2xf16> and bf16 pairs as i32).
  auto ldmatrix4 = [&](Value idx, NVVM::MMALayout layout) {
    Value frag = b.create<NVVM::LdMatrixOp>(
        loc(), s4, smemPtr(idx, e), b.getI32IntegerAttr(4),
        NVVM::MMALayoutAttr::get(ctx, layout), ldShape, ldElt);
    SmallVector<Value, 4> regs;
    for (int64_t i = 0; i < 4; ++i) {
      Value x =
          b.create<LLVM::ExtractValueOp>(loc(), frag, ArrayRef<int64_t>{i});
      if (e.isF16())
        x = b.create<LLVM::BitcastOp>(loc(), VectorType::get({2}, e), x);
      regs.push_back(x);
    }
    return regs;
  };

  // Lane-dependent parts of the addresses.
  Value lane = b.create<arith::AndIOp>(loc(), tid, i32(31));
  Value aRow =
      add(L.rowBase,
          add(laneLo8, b.create<arith::ShLIOp>(loc(), laneHalf, i32(3))));
  Value aCol = b.create<arith::ShLIOp>(loc(), laneQuad, i32(3));
  Value group = b.create<arith::ShRUIOp>(loc(), lane, i32(2));
  Value metaRow = add(L.rowBase, group);
  Value metaCol = b.create<arith::AndIOp>(loc(), lane, i32(1));
  Value selector = i32(0);
  auto loadMeta = [&](Value row, Value col) -> Value {
    Value idx = add(add(mul(row, ldm), col), i32(mBase));
    Value h = b.create<LLVM::LoadOp>(loc(), i16t, smemPtr(idx, i16t), 2);
    return b.create<arith::ExtUIOp>(loc(), i32t, h);
  };

  for (int64_t kk = 0; kk < k / 32; ++kk) {
    SmallVector<SmallVector<Value, 4>> aFrag(L.repM);
    SmallVector<Value> meta(L.repM);
    for (int64_t im = 0; im < L.repM; ++im) {
      Value row = add(aRow, i32(im * 16));
      Value col = add(aCol, i32(kk * 16));
      aFrag[im] = ldmatrix4(add(mul(row, lda), col), NVVM::MMALayout::row);
      Value mrow = add(metaRow, i32(im * 16));
      Value mcol = add(metaCol, i32(kk * 2));
      Value lo = loadMeta(mrow, mcol);
      Value hi = loadMeta(add(mrow, i32(8)), mcol);
      meta[im] = b.create<arith::OrIOp>(
          loc(), lo, b.create<arith::ShLIOp>(loc(), hi, i32(16)));
    }
    for (int64_t in = 0; in < L.repN; ++in) {
      SmallVector<Value, 4> bFrag;
      if (bTrans) {
        Value row = add(L.colBase, add(laneLo8, i32(in * 8)));
        Value col = add(
            b.create<arith::ShLIOp>(
                loc(), b.create<arith::ShRUIOp>(loc(), lane, i32(3)), i32(3)),
            i32(kk * 32));
        bFrag = ldmatrix4(add(add(mul(row, ldb), col), i32(bBase)),
                          NVVM::MMALayout::row);
      } else {
        Value row = add(lane, i32(kk * 32));
        Value col = add(L.colBase, i32(in * 8));
        bFrag = ldmatrix4(add(add(mul(row, ldb), col), i32(bBase)),
                          NVVM::MMALayout::col);
      }
      for (int64_t im = 0; im < L.repM; ++im) {
        int64_t slot = (im * L.repN + in) * 4;
        SmallVector<Value, 4> c(acc.begin() + slot, acc.begin() + slot + 4);
        auto mma = NVVM::MmaSpOp::create(
            b, loc(), f4, aFrag[im], bFrag, c, meta[im], selector, {16, 8, 32},
            std::nullopt, std::array<NVVM::MMATypes, 2>{ptxType, ptxType});
        mma.setOrderedMetadataAttr(b.getUnitAttr());
        for (int64_t i = 0; i < 4; ++i)
          acc[slot + i] = b.create<LLVM::ExtractValueOp>(loc(), mma.getResult(),
                                                         ArrayRef<int64_t>{i});
      }
    }
  }
  // Other warps may still read the operands: no one reuses shared memory
  // until all are done.
  barrier();
  dist[op.getResult()] = acc;
  assigned[op.getResult()] = &L.coords;
  return success();
}

void Distributor::populateSparseDotPatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerSparseDot);
}
