//===- Scan.cpp - Inclusive prefix scans of distributed tiles -------------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Lowers tile.scan (the DSL's cumsum) in the canonical
// layout, without moving the tile: the coordinate along the scanned axis is
// a range of bits of the flat index (Layout), and each of those bits lies in
// one of three places -- a thread's own slots (vector or repetition bits),
// the lane id, or the warp id.
//
// The scan goes bit by bit, from the lowest: after step j every element
// holds `incl`, the scan of its aligned block of 2^(j+1) elements along the
// axis, and `tot`, that block's total. Step j combines each element with its
// partner (the coordinate with bit j flipped): both take the pair's total,
// and the upper one adds the lower block's total in front of its `incl`. The
// partner's total is read from another slot of the same thread, from
// another lane with a shuffle, or from another warp through shared memory,
// by where bit j lies. Every element thus takes log2(extent) steps, and the
// cross-warp ones cost one exchange each.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

LogicalResult Distributor::lowerScan(ScanOp op) {
  auto shape = shapeOf(op.getSrc().getType());
  Layout l = layoutOf(shape);
  ReduceKind kind = op.getKind();
  Type elt = elementType(op.getSrc().getType());
  Elems incl = canonicalElems(op.getSrc());
  Elems tot = incl;
  int64_t n = l.perThread();
  int64_t logVec = llvm::Log2_64(l.vec), logT = llvm::Log2_64(l.threads);
  int64_t lo = l.shift(op.getAxis());
  int64_t bits = llvm::Log2_64(shape[op.getAxis()]);
  Value tt = tidTerm(l);

  for (int64_t p = lo; p < lo + bits; ++p) {
    if (p < logVec || p >= logVec + logT) {
      // In-thread bit: slot bit p (vector) or p - logT (repetition).
      int64_t sb = p < logVec ? p : p - logT;
      for (int64_t s = 0; s < n; ++s) {
        if ((s >> sb) & 1)
          continue;
        int64_t hi = s | (int64_t(1) << sb);
        Value pair = combine(kind, tot[s], tot[hi]);
        incl[hi] = combine(kind, tot[s], incl[hi]);
        tot[s] = tot[hi] = pair;
      }
      continue;
    }
    // Thread bit tb: the partner is lane ^ (1 << tb), or a warp apart.
    int64_t tb = p - logVec;
    Elems partner(n);
    if (tb < 5) {
      for (int64_t s = 0; s < n; ++s)
        partner[s] = shuffleXor(tot[s], tb);
    } else {
      int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
      reserveShared(l.elems * bytes);
      SmallVector<Value> flats;
      for (int64_t s = 0; s < n; ++s) {
        Value flat = tt;
        if (int64_t k = l.constFlat(s))
          flat = b.create<arith::OrIOp>(loc(), tt, i32(k));
        flats.push_back(flat);
        // Replicas write the same values to the same places.
        b.create<LLVM::StoreOp>(loc(), tot[s], smemPtr(flat, elt));
      }
      barrier();
      for (int64_t s = 0; s < n; ++s) {
        Value other =
            b.create<arith::XOrIOp>(loc(), flats[s], i32(int64_t(1) << p));
        partner[s] = b.create<LLVM::LoadOp>(loc(), elt, smemPtr(other, elt));
      }
      barrier();
    }
    Value upper = b.create<arith::CmpIOp>(
        loc(), arith::CmpIPredicate::ne,
        b.create<arith::AndIOp>(loc(), tid, i32(int64_t(1) << tb)), i32(0));
    for (int64_t s = 0; s < n; ++s) {
      incl[s] = b.create<arith::SelectOp>(
          loc(), upper, combine(kind, partner[s], incl[s]), incl[s]);
      // Sum, max, min and the bitwise kinds commute (IEEE addition too),
      // so both partners compute the same total.
      tot[s] = combine(kind, tot[s], partner[s]);
    }
  }
  dist[op.getResult()] = incl;
  return success();
}

void Distributor::populateScanPatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerScan);
}
