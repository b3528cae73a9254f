//===- DotToMMA.cpp - tile.dot on tensor cores (mma.sync) -----------------===//
//
// Lowers tile.dot for the distribution pass: both operands are staged in
// padded shared memory, each warp loads fragments with ldmatrix and issues
// mma.sync.m16n8k16, and the accumulator stays in registers in the
// tensor-core layout (MmaLayout), which the rest of the pass keeps for
// values computed from it.
//
//===----------------------------------------------------------------------===//

#include "Conversion/PerfRemarks.h"
#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

//===----------------------------------------------------------------------===//
// Tensor cores
//===----------------------------------------------------------------------===//

/// The accumulator layout of mma.sync m16n8k16 for an [M, N] tile: warps
/// split the tile into a warpsM x warpsN grid; each warp covers repM x repN
/// instruction tiles of 16 x 8, holding 4 f32 per lane in each:
///   (row = lane / 4 + 8 * (e / 2), col = 2 * (lane % 4) + e % 2).
/// The mma.sync layout of a dot's [m, n] result, or a located error.
FailureOr<Distributor::MmaLayout *>
Distributor::dotLayout(Operation *op, int64_t m, int64_t n) {
  auto ml = mmaLayout({m, n});
  if (failed(ml))
    return op->emitOpError("an [")
           << m << ", " << n << "] product cannot be split over "
           << numThreads / 32 << " warps; use a larger tile or fewer warps";
  return ml;
}

/// Reserves `bytes` of shared memory for staging a dot's operands
/// (SharedMemory.h's mmaStagingBytes). Above 48 KB the kernel takes dynamic
/// shared memory; 99 KB is what every supported GPU grants (sm_86/sm_89;
/// sm_80 and sm_90 allow more). The refusal is what the ops report for a
/// tiling that needs more.
LogicalResult Distributor::reserveStaging(Operation *op, int64_t bytes) {
  constexpr int64_t kLimit = kMmaStagingLimit;
  if (bytes > kLimit)
    return op->emitOpError("needs ")
           << bytes << " bytes of shared memory to stage its operands; the "
           << "limit is " << kLimit / 1024 << " KB (use smaller tiles)";
  reserveShared(bytes);
  return success();
}

FailureOr<Distributor::MmaLayout *>
Distributor::mmaLayout(ArrayRef<int64_t> shape, int64_t warpsM,
                       int64_t warpsN) {
  int64_t m = shape[0], n = shape[1];
  if (!warpsM) {
    auto warps = mmaWarps(m, n, numThreads); // M first, then N.
    if (!warps)
      return failure();
    std::tie(warpsM, warpsN) = *warps;
  }
  if (!mmaSplits(m, n, warpsM, warpsN, numThreads))
    return failure();
  auto key = std::make_tuple(m, n, warpsM, warpsN);
  if (auto it = mmaLayouts.find(key); it != mmaLayouts.end())
    return it->second.get();
  auto ml = std::make_unique<MmaLayout>();
  ml->warpsM = warpsM;
  ml->warpsN = warpsN;
  ml->repM = m / (16 * ml->warpsM);
  ml->repN = n / (8 * ml->warpsN);
  ml->coords.shape = {m, n};

  Type i32t = entry.getI32Type();
  auto c = [&](int64_t v) { return cst(v, i32t); };
  Location l = loc();
  Value lane = entry.create<arith::AndIOp>(l, tid, c(31));
  Value warp = entry.create<arith::ShRUIOp>(l, tid, c(5));
  Value wm = entry.create<arith::RemUIOp>(l, warp, c(ml->warpsM));
  Value wn = entry.create<arith::DivUIOp>(l, warp, c(ml->warpsM));
  ml->rowBase = entry.create<arith::MulIOp>(l, wm, c(ml->repM * 16));
  ml->colBase = entry.create<arith::MulIOp>(l, wn, c(ml->repN * 8));
  Value laneRow = entry.create<arith::ShRUIOp>(l, lane, c(2));
  Value laneCol = entry.create<arith::ShLIOp>(
      l, entry.create<arith::AndIOp>(l, lane, c(3)), c(1));
  Value row0 = entry.create<arith::AddIOp>(l, ml->rowBase, laneRow);
  Value col0 = entry.create<arith::AddIOp>(l, ml->colBase, laneCol);
  for (int64_t im = 0; im < ml->repM; ++im)
    for (int64_t in = 0; in < ml->repN; ++in)
      for (int64_t e = 0; e < 4; ++e) {
        Value r = entry.create<arith::AddIOp>(l, row0, c(im * 16 + 8 * (e / 2)));
        Value cc = entry.create<arith::AddIOp>(l, col0, c(in * 8 + e % 2));
        ml->coords.at.push_back({r, cc});
      }
  if (!laneLo8) {
    laneLo8 = entry.create<arith::AndIOp>(l, lane, c(7));
    laneHalf = entry.create<arith::AndIOp>(
        l, entry.create<arith::ShRUIOp>(l, lane, c(3)), c(1));
    laneQuad = entry.create<arith::ShRUIOp>(l, lane, c(4));
  }
  return (mmaLayouts[key] = std::move(ml)).get();
}

/// Writes tile `x` ([R, C] f16/bf16) to shared memory at element offset
/// `base`, row-major with leading dimension `ld` (C + 8: the padding keeps
/// ldmatrix's eight row reads in distinct banks).
void Distributor::writeTileToShared(Value x, int64_t base, int64_t ld) {
  // A transposed operand is written from its source, element by element at
  // transposed positions: one trip through shared memory instead of two.
  bool transposed = false;
  if (auto tr = x.getDefiningOp<TransOp>()) {
    x = tr.getSrc();
    transposed = true;
  }
  auto shape = shapeOf(x.getType());
  Type e = elementType(x.getType());
  Layout l = layoutOf(shape);
  const Coords &at = canonical(shape);
  Elems vals = canonicalElems(x);
  if (isFP8(e)) { // Staged as f16, which holds every fp8 value exactly.
    vals = convertFP8(e, b.getF16Type(), vals, vals.size());
    e = b.getF16Type();
  }
  int64_t width = std::min<int64_t>(l.vec, 8); // <= 16 bytes of 16-bit data
  if (transposed) {
    // Element j of a thread's chunk (source row r, columns c0..c0+vec-1)
    // goes to shared row c0 + j, column r. Written in lockstep, lanes with
    // different chunks would all hit the bank of row c0 + j; each lane
    // instead starts at j = lane % 8, spreading a warp's stores over rows.
    int64_t vec = l.vec;
    Value rot = b.create<arith::AndIOp>(loc(), tid, i32(vec - 1));
    for (int64_t s0 = 0; s0 < int64_t(vals.size()); s0 += vec) {
      for (int64_t i = 0; i < vec; ++i) {
        Value j = b.create<arith::AndIOp>(
            loc(), b.create<arith::AddIOp>(loc(), rot, i32(i)), i32(vec - 1));
        Value x0 = vals[s0];
        for (int64_t jj = 1; jj < vec; ++jj)
          x0 = b.create<arith::SelectOp>(
              loc(),
              b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::eq, j,
                                      i32(jj)),
              vals[s0 + jj], x0);
        Value srow = b.create<arith::AddIOp>(loc(), at.at[s0][1], j);
        Value idx = b.create<arith::AddIOp>(
            loc(), b.create<arith::MulIOp>(loc(), srow, i32(ld)), at.at[s0][0]);
        idx = b.create<arith::AddIOp>(loc(), idx, i32(base));
        b.create<LLVM::StoreOp>(loc(), x0, smemPtr(idx, e), 2);
      }
    }
    return;
  }
  for (int64_t s = 0; s < int64_t(vals.size()); s += width) {
    Value idx = b.create<arith::AddIOp>(
        loc(), b.create<arith::MulIOp>(loc(), at.at[s][0], i32(ld)),
        at.at[s][1]);
    idx = b.create<arith::AddIOp>(loc(), idx, i32(base));
    Value x0 = vals[s];
    if (width > 1)
      x0 = packVector(b, loc(), ArrayRef<Value>(vals).slice(s, size_t(width)));
    b.create<LLVM::StoreOp>(loc(), x0, smemPtr(idx, e), width * 2);
  }
}

SmallVector<Value, 4> Distributor::loadFragments(Value ptr, int64_t count,
                                                 bool trans, Type elt) {
  MLIRContext *ctx = b.getContext();
  Type i32t = b.getI32Type();
  Type st =
      count == 4
          ? LLVM::LLVMStructType::getLiteral(ctx, {i32t, i32t, i32t, i32t})
          : LLVM::LLVMStructType::getLiteral(ctx, {i32t, i32t});
  Value frag = b.create<NVVM::LdMatrixOp>(
      loc(), st, ptr, b.getI32IntegerAttr(int32_t(count)),
      NVVM::MMALayoutAttr::get(ctx, trans ? NVVM::MMALayout::col
                                          : NVVM::MMALayout::row),
      NVVM::LdStMatrixShapeAttr::get(ctx, 8, 8),
      NVVM::LdStMatrixEltTypeAttr::get(ctx, NVVM::LdStMatrixEltType::B16));
  SmallVector<Value, 4> regs;
  for (int64_t i = 0; i < count; ++i) {
    Value x = b.create<LLVM::ExtractValueOp>(loc(), frag, ArrayRef<int64_t>{i});
    if (elt.isF16())
      x = b.create<LLVM::BitcastOp>(loc(), VectorType::get({2}, elt), x);
    regs.push_back(x);
  }
  return regs;
}

void Distributor::mmaSync(Elems &acc, int64_t slot, ArrayRef<Value> a,
                          ArrayRef<Value> bFrag, Type elt) {
  Type f32t = b.getF32Type();
  auto f4 = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                             {f32t, f32t, f32t, f32t});
  auto ptxType = elt.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
  SmallVector<Value, 4> c(acc.begin() + slot, acc.begin() + slot + 4);
  Value d = NVVM::MmaOp::create(
      b, loc(), f4, a, bFrag, c, {16, 8, 16}, std::nullopt, std::nullopt,
      std::array<NVVM::MMATypes, 2>{ptxType, ptxType},
      std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                     NVVM::MMALayout::col});
  for (int64_t i = 0; i < 4; ++i)
    acc[slot + i] =
        b.create<LLVM::ExtractValueOp>(loc(), d, ArrayRef<int64_t>{i});
}

LogicalResult Distributor::lowerDot(DotOp op) {
  // 1. Stage A [M, K] and B [K, N] in shared memory; 2. each warp loads its
  // fragments with ldmatrix (B transposed on the fly) and issues
  // mma.sync.m16n8k16 per 16 x 8 instruction tile and 16-deep K step; 3. the
  // accumulator stays in registers in the tensor-core layout.
  auto sa = shapeOf(op.getA().getType()), sb = shapeOf(op.getB().getType());
  int64_t m = sa[0], k = sa[1], n = sb[1];
  Type e = elementType(op.getA().getType());
  if (isFP8(e)) {
    // fp8 operands are widened to f16 as they are staged (exact), and the
    // product runs as an f16 one.
    emitPerfRemark(op, "fp8-dot",
                   "dot of fp8 operands runs at the f16 rate: they are "
                   "converted to f16 when staged and multiplied with "
                   "mma.sync.m16n8k16.f16 (native fp8 tensor-core forms, "
                   "mma k32 and wgmma, are not generated yet); the products "
                   "are exact and summed in f32 either way");
    e = b.getF16Type();
  }
  auto ml = dotLayout(op, m, n);
  if (failed(ml))
    return failure();
  MmaLayout &L = **ml;
  int64_t lda = k + kMmaStagingPad, ldb = n + kMmaStagingPad, bBase = m * lda;
  if (failed(reserveStaging(op, mmaStagingBytes(m, k, n))))
    return failure();

  writeTileToShared(op.getA(), 0, lda);
  writeTileToShared(op.getB(), bBase, ldb);
  barrier();

  Elems acc = evalAt(op.getAcc(), L.coords);
  // Lane-dependent parts of the ldmatrix row addresses.
  Value aRow = b.create<arith::AddIOp>(
      loc(), L.rowBase,
      b.create<arith::AddIOp>(loc(), laneLo8,
                              b.create<arith::ShLIOp>(loc(), laneHalf, i32(3))));
  Value aCol = b.create<arith::ShLIOp>(loc(), laneQuad, i32(3));
  Value bRow = b.create<arith::AddIOp>(
      loc(), laneLo8, b.create<arith::ShLIOp>(loc(), laneHalf, i32(3)));

  for (int64_t kk = 0; kk < k / 16; ++kk) {
    SmallVector<SmallVector<Value, 4>> aFrag(L.repM);
    for (int64_t im = 0; im < L.repM; ++im) {
      Value row = b.create<arith::AddIOp>(loc(), aRow, i32(im * 16));
      Value col = b.create<arith::AddIOp>(loc(), aCol, i32(kk * 16));
      Value idx = b.create<arith::AddIOp>(
          loc(), b.create<arith::MulIOp>(loc(), row, i32(lda)), col);
      aFrag[im] = loadFragments(smemPtr(idx, e), 4, /*trans=*/false, e);
    }
    for (int64_t in = 0; in < L.repN; ++in) {
      Value row = b.create<arith::AddIOp>(loc(), bRow, i32(kk * 16));
      Value col = b.create<arith::AddIOp>(loc(), L.colBase, i32(in * 8));
      Value idx = b.create<arith::AddIOp>(
          loc(),
          b.create<arith::AddIOp>(
              loc(), b.create<arith::MulIOp>(loc(), row, i32(ldb)), col),
          i32(bBase));
      SmallVector<Value, 4> bFrag =
          loadFragments(smemPtr(idx, e), 2, /*trans=*/true, e);
      for (int64_t im = 0; im < L.repM; ++im)
        mmaSync(acc, (im * L.repN + in) * 4, aFrag[im], bFrag, e);
    }
  }
  // Other warps may still read the operands: no one reuses shared memory
  // until all are done.
  barrier();
  dist[op.getResult()] = acc;
  assigned[op.getResult()] = &L.coords;
  return success();
}

void Distributor::populateDotPatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerDot);
}
