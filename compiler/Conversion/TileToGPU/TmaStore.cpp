//===- TmaStore.cpp - Block stores that leave through the TMA unit --------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Lowers tile.desc_store with `tma`: the epilogue of a
// persistent warp-specialized kernel, which tile-pipeline-tma hands to the
// copy engine so that the consumers start the next tile's main loop while
// the block drains to global memory (issue 11, must-have 4; bench/NOTES.md,
// "The forward's epilogue as a TMA store").
//
//   consumer thread 0: cp.async.bulk.wait_group.read 0
//                      (the previous store has read the staging area)
//   consumers:         barrier
//                      write the held elements, converted, into the staging
//                      area: the descriptor's TMA box, [R rows, 64 columns]
//                      panels with the 128-byte swizzle (16-byte chunk c of
//                      row r at chunk c ^ (r % 8) of the row), so that the 8
//                      rows a warp's pair stores touch fall in distinct banks
//                      fence.proxy.async.shared::cta (the TMA unit reads
//                      through the async proxy)
//                      barrier
//   consumer thread 0: one cp.async.bulk.tensor store per panel, one
//                      bulk group; TMA drops what falls outside the tensor
//   at the consumers' end: thread 0 waits for its groups to complete, so the
//   block does not exit (and free the area) under a running copy.
//
// The staging area is the kernel's (tmaStoreStagingBytes), after the ring
// and the tile queue, 1024-byte aligned.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

LogicalResult Distributor::lowerDescStore(DescStoreOp op) {
  if (!op.getTma())
    return op.emitOpError("without `tma` is tile-expand-desc-load's to "
                          "expand");
  if (!inConsumer || smem.tmaStoreAt < 0 || consumerGroups != 1)
    return op.emitOpError("a TMA store needs the consumers of a persistent "
                          "warp-specialized kernel with one consumer group");
  auto shape = shapeOf(op.getValue().getType());
  Type elt = elementType(op.getValue().getType());
  int64_t rows = shape[0], cols = shape[1];
  if (elt.getIntOrFloatBitWidth() != 16)
    return op.emitOpError("a TMA store takes 16-bit elements");
  const int64_t panelBytes = rows * 128;
  Value area = b.create<arith::AddIOp>(loc(), ringBase, i32(smem.tmaStoreAt));
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext(), 3);
  auto shared = [&](Value byteAddr) {
    return b.create<LLVM::IntToPtrOp>(loc(), ptrTy, byteAddr);
  };

  // The previous store's copies have read the area.
  leaderOnly(
      [&] { inlinePtx("cp.async.bulk.wait_group.read 0;", "~{memory}", {}); });
  barrier();

  Elems vals = get(op.getValue());
  const Coords &at = coordsOf(op.getValue());
  if (&at == wgmmaLayout(shape)) {
    // A wgmma accumulator: element (r, j, e) at row row0 + 64 r + 8 (e / 2),
    // columns 8 j + 2 (lane % 4) + e % 2, where row0 = 64 reps g + 16 q +
    // lane / 4 (WgmmaRing.cpp). Rows are 8-aligned but for lane / 4, so a
    // pair's swizzled chunk is (j % 8) ^ (lane / 4): eight per thread.
    Value lane = b.create<arith::AndIOp>(loc(), tid, i32(31));
    Value laneRow = b.create<arith::ShRUIOp>(loc(), lane, i32(2));
    int64_t groups = numThreads / 128, reps = rows / (64 * groups);
    Value row0 = b.create<arith::AddIOp>(loc(), wgmmaWarpRow(reps), laneRow);
    Value pairByte = b.create<arith::MulIOp>(
        loc(), b.create<arith::AndIOp>(loc(), lane, i32(3)), i32(4));
    Value base = b.create<arith::AddIOp>(
        loc(), area,
        b.create<arith::AddIOp>(
            loc(), b.create<arith::MulIOp>(loc(), row0, i32(128)), pairByte));
    SmallVector<Value> chunk;
    for (int64_t k = 0; k < 8; ++k)
      chunk.push_back(b.create<arith::AddIOp>(
          loc(), base,
          b.create<arith::ShLIOp>(
              loc(), b.create<arith::XOrIOp>(loc(), laneRow, i32(k)), i32(4))));
    for (int64_t r = 0; r < reps; ++r)
      for (int64_t j = 0; j < cols / 8; ++j)
        for (int64_t h = 0; h < 2; ++h) {
          int64_t s = (r * (cols / 8) + j) * 4 + 2 * h;
          Value pair = packVector(b, loc(), ArrayRef<Value>(vals).slice(s, 2));
          int64_t off = (j / 8) * panelBytes + (64 * r + 8 * h) * 128;
          Value addr = b.create<arith::AddIOp>(loc(), chunk[j % 8], i32(off));
          b.create<LLVM::StoreOp>(loc(), pair, shared(addr), 4);
        }
  } else {
    // Any other layout: each element at its swizzled place.
    for (size_t s = 0; s < vals.size(); ++s) {
      Value row = at.at[s][0], col = at.at[s][1];
      Value panel = b.create<arith::ShRUIOp>(loc(), col, i32(6));
      Value c16 = b.create<arith::AndIOp>(
          loc(), b.create<arith::ShRUIOp>(loc(), col, i32(3)), i32(7));
      Value sw = b.create<arith::ShLIOp>(
          loc(),
          b.create<arith::XOrIOp>(loc(), c16,
                                  b.create<arith::AndIOp>(loc(), row, i32(7))),
          i32(4));
      Value byte = b.create<arith::AddIOp>(
          loc(),
          b.create<arith::AddIOp>(
              loc(), b.create<arith::MulIOp>(loc(), panel, i32(panelBytes)),
              b.create<arith::MulIOp>(loc(), row, i32(128))),
          b.create<arith::AddIOp>(
              loc(), sw,
              b.create<arith::MulIOp>(
                  loc(), b.create<arith::AndIOp>(loc(), col, i32(7)), i32(2))));
      b.create<LLVM::StoreOp>(
          loc(), vals[s], shared(b.create<arith::AddIOp>(loc(), area, byte)),
          2);
    }
  }
  // The TMA unit reads the area through the async proxy.
  inlinePtx("fence.proxy.async.shared::cta;", "~{memory}", {});
  barrier();

  Value desc =
      b.create<LLVM::PtrToIntOp>(loc(), b.getI64Type(), get(op.getDesc())[0]);
  Value row = get(op.getRow())[0], col = get(op.getCol())[0];
  leaderOnly([&] {
    // Coordinates are innermost first.
    for (int64_t p = 0; p < cols / 64; ++p)
      inlinePtx("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group "
                "[$0, {$1, $2}], [$3];",
                "l,r,r,r,~{memory}",
                {desc, b.create<arith::AddIOp>(loc(), col, i32(64 * p)), row,
                 b.create<arith::AddIOp>(loc(), area, i32(p * panelBytes))});
    inlinePtx("cp.async.bulk.commit_group;", "~{memory}", {});
  });
  tmaStoresIssued = true;
  return success();
}

void Distributor::populateTmaStorePatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerDescStore);
}
