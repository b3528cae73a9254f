//===- StagedStores.cpp - Tensor-core tiles stored via shared memory ------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h; tile.store itself in Memory.cpp). A wgmma accumulator holds
// pairs of adjacent columns (and a transposed one single elements of an
// output row), so storing it where it lives takes narrow stores. These move
// it through shared memory first, so that the global stores are 16-byte
// vectors of whole rows:
//   - stageForStore: the whole tile through the drained TMA ring, in a
//     warp-specialized kernel that is not persistent;
//   - warpStagedStore / warpStagedTransposedStore: warp by warp through
//     areas of their own, in a persistent kernel, whose producer is already
//     filling the ring with the next tile's operands.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

/// How a store of tile `v` is staged through shared memory (below): which
/// held tile is written there, whether transposed, and whether a cast is
/// deferred until after the read-back. `src` is null when `v` is already
/// canonical, so nothing needs staging.
///
/// A transposed tile (the 2:4 GEMM stores its [I, M] accumulator into an
/// [M, I] row-major output as `trans(acc.to(T))`) is staged before its
/// f32-to-16-bit conversion: with the conversions ahead of the shared
/// stores, ptxas serializes the kernel's wgmma (C7514), while storing the
/// accumulator registers themselves passes (bench/NOTES.md, the 2:4 staging
/// bisection). Untransposed tiles keep the narrower staging, which
/// measured well and moves half the bytes, except in kernels with sparse
/// wgmma: there the conversions ahead of the shared stores made ptxas
/// serialize the wgmmas too (C7514, the weight-gradient GEMM with a bf16
/// dW), and staging the f32 accumulator keeps them overlapped.
Distributor::StagePlan Distributor::planStaging(Value v) {
  StagePlan plan;
  Value held = v;
  if (auto tr = v.getDefiningOp<TransOp>()) {
    held = tr.getSrc();
    plan.transposed = true;
  }
  if (&coordsOf(held) == &canonical(shapeOf(held.getType())))
    return plan;
  plan.src = held;
  plan.elt = regType(elementType(held.getType()));
  if (!plan.transposed && !sparseWgmma && (specialized || !ringThreadCopies))
    return plan;
  if (auto cast = held.getDefiningOp<arith::TruncFOp>();
      cast && dist.count(cast.getIn()) &&
      &coordsOf(cast.getIn()) == &coordsOf(held)) {
    plan.src = cast.getIn();
    plan.elt = elementType(plan.src.getType());
    plan.cast = cast;
  }
  return plan;
}

/// Element `e` read back from a staging area, with the plan's deferred cast
/// (if any) applied.
Value Distributor::castAfterReadBack(const StagePlan &plan, Value e) {
  return plan.cast ? cloneElementwise(plan.cast, {Elems{e}}, 1)[0] : e;
}

/// The vector width (elements) a store of a tensor-core-layout tile gets
/// when staged through shared memory into the canonical layout; 0 when it
/// cannot be staged. A wgmma accumulator holds pairs of adjacent columns, so
/// storing it where it lives takes 4-byte stores (for 16-bit outputs; a
/// transposed tile takes element stores) that throttle the LSU pipe while
/// no tensor-core work runs (bench/NOTES.md, ncu of the forward); staged, a
/// warp writes whole 16-byte vectors of one row. The staging area is the
/// TMA ring, which is free once every consumer has drained it -- only in a
/// warp-specialized, non-persistent kernel, where the producer has no next
/// tile to load into it.
int64_t Distributor::stagedStoreWidth(StoreOp op, const StagePlan &plan) {
  bool drained = specialized ? inConsumer : ringThreadCopies > 0 && !ringHolds;
  if (!plan.src || !drained || persistent || !ringBase)
    return 0;
  auto shape = shapeOf(op.getValue().getType());
  Type elt = elementType(op.getValue().getType());
  if (shape.size() != 2 || elt.isInteger(1))
    return 0;
  int64_t bytes = std::max<unsigned>(1, elt.getIntOrFloatBitWidth() / 8);
  int64_t stagedBytes = plan.elt.getIntOrFloatBitWidth() / 8;
  int64_t pitch = shape[1] + 16 / stagedBytes;
  if (shape[0] * pitch * stagedBytes > ringStages * ringStageBytes)
    return 0;
  Layout l = layoutOf(shape);
  if (l.threads != numThreads)
    return 0;
  int64_t width = accessWidth(op.getPtr(), op.getMask(), l.vec, bytes);
  // Worth it only when the canonical store is wider than the pairs.
  return width * bytes >= 8 ? width : 0;
}

/// Moves the tile a store writes into the canonical layout through the
/// (drained) ring, as `plan` says: every consumer thread writes the
/// elements it holds into a row-major tile of the stored shape whose rows
/// are padded by 16 bytes (so the pairs a warp writes fall in distinct
/// banks), then reads whole vectors of the canonical layout.
Elems Distributor::stageForStore(Value v, const StagePlan &plan) {
  auto shape = shapeOf(v.getType());
  Type elt = plan.elt;
  int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
  int64_t pitch = shape[1] + 16 / bytes;
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext(), 3);
  Value base = b.create<LLVM::IntToPtrOp>(loc(), ptrTy, ringBase);
  auto at = [&](Value row, Value col) {
    Value flat = b.create<arith::AddIOp>(
        loc(), b.create<arith::MulIOp>(loc(), row, i32(pitch)), col);
    return b.create<LLVM::GEPOp>(loc(), ptrTy, elt, base, ValueRange{flat});
  };
  // Every consumer has waited for its last wgmma; after this barrier none
  // reads the ring any more.
  barrier();
  const Coords &own = coordsOf(plan.src);
  Elems &vals = get(plan.src);
  for (size_t s = 0; s < vals.size(); ++s) {
    ArrayRef<Value> rc = own.at[s];
    Value p = plan.transposed ? at(rc[1], rc[0]) : at(rc[0], rc[1]);
    b.create<LLVM::StoreOp>(loc(), vals[s], p, bytes);
  }
  barrier();
  const Coords &c = canonical(shape);
  int64_t vec = std::min<int64_t>(layoutOf(shape).vec, 16 / bytes);
  auto vecTy = VectorType::get({vec}, elt);
  Elems out;
  for (size_t s = 0; s < c.at.size(); s += vec) {
    Value x = b.create<LLVM::LoadOp>(loc(), vecTy, at(c.at[s][0], c.at[s][1]),
                                     vec * bytes);
    for (int64_t i = 0; i < vec; ++i) {
      Value e = b.create<LLVM::ExtractElementOp>(
          loc(), x, b.create<arith::ConstantOp>(loc(), b.getI32IntegerAttr(i)));
      out.push_back(castAfterReadBack(plan, e));
    }
  }
  // A later exchange or staged store may reuse the area.
  barrier();
  return out;
}

/// Stores `vals` (elements of type `elt`, at coordinates `at` of the stored
/// tile) as vectors of `width` consecutive elements, each under its one
/// mask value: the global side of the per-warp staged stores below.
void Distributor::storeVectors(StoreOp op, const Elems &vals, const Coords &at,
                               int64_t width, Type elt) {
  Elems ptrs = evalAt(op.getPtr(), at);
  Elems masks = op.getMask() ? evalAt(op.getMask(), at) : Elems();
  int64_t bytes = width * elt.getIntOrFloatBitWidth() / 8;
  for (size_t base = 0; base < vals.size(); base += width) {
    Value x =
        packVector(b, loc(), ArrayRef<Value>(vals).slice(base, size_t(width)));
    if (masks.empty()) {
      b.create<LLVM::StoreOp>(loc(), x, ptrs[base], bytes);
      continue;
    }
    b.create<scf::IfOp>(loc(), masks[base], [&](OpBuilder &ob, Location) {
      ob.create<LLVM::StoreOp>(loc(), x, ptrs[base], bytes);
      ob.create<scf::YieldOp>(loc());
    });
  }
}

/// The first accumulator row this warp holds in the wgmma layout of
/// `reps` m64 blocks per warpgroup: g * 64 reps + 16 q for warp q of
/// warpgroup g (the layout itself is in WgmmaRing.cpp).
Value Distributor::wgmmaWarpRow(int64_t reps) {
  Value warp = b.create<arith::ShRUIOp>(loc(), tid, i32(5));
  // Operands named in the order g++ builds them (see ExpandDescLoad.cpp).
  Value c16 = i32(16);
  Value warpRow = b.create<arith::MulIOp>(
      loc(), b.create<arith::AndIOp>(loc(), warp, i32(3)), c16);
  Value cGroup = i32(64 * reps);
  Value groupRow = b.create<arith::MulIOp>(
      loc(), b.create<arith::ShRUIOp>(loc(), warp, i32(2)), cGroup);
  return b.create<arith::AddIOp>(loc(), groupRow, warpRow);
}

/// This warp's staging area (a shared-memory address) and the first
/// accumulator row it holds in the wgmma layout (wgmmaWarpRow).
std::pair<Value, Value> Distributor::warpStagingArea(int64_t reps) {
  // The area is the block's warp's (both ping-pong groups store at once).
  Value blockWarp = b.create<arith::ShRUIOp>(loc(), blockTid, i32(5));
  Value area = b.create<arith::AddIOp>(
      loc(), ringBase,
      b.create<arith::AddIOp>(
          loc(), i32(smem.warpStagingAt),
          b.create<arith::MulIOp>(loc(), blockWarp,
                                  i32(SharedMemoryPlan::kWarpStagingBytes))));
  return {area, wgmmaWarpRow(reps)};
}

/// The store of a wgmma accumulator tile in a persistent warp-specialized
/// kernel, staged per warp: the ring is not free there (the producer fills
/// it with the next tile's operands during the epilogue), and a barrier
/// over all consumers would hold every warp for the slowest. In the wgmma
/// layout warp q of warpgroup g holds whole rows: 16 of each m64 block, at
/// g * M/G + 64 r + 16 q. So each warp moves its own rows through a private
/// area of 16 rows x 128 bytes (rows padded by 16 bytes: the pairs a warp
/// writes fall in distinct banks, and so do the 16-byte vectors a quarter
/// warp reads), one 128-byte column chunk at a time:
///   write the chunk's pairs; bar.warp.sync; read 4 rows x 8 vectors of
///   16 bytes per instruction (4 per lane); bar.warp.sync
/// and stores the chunk's 16-byte vectors right away (a warp covers 128
/// contiguous bytes of each of 4 rows), so that few values stay live. With
/// a deferred cast (plan.cast: f32 staged, 16-bit stored) each vector is
/// converted after the read-back and leaves as 8 bytes.
/// Returns false, emitting nothing, when the store does not qualify (then
/// the caller stores the pairs where they are held).
bool Distributor::warpStagedStore(StoreOp op, const StagePlan &plan) {
  if (smem.warpStagingAt < 0 || !inConsumer || !plan.src)
    return false;
  if (plan.transposed)
    return warpStagedTransposedStore(op, plan);
  auto shape = shapeOf(op.getValue().getType());
  const Coords *held = &coordsOf(plan.src);
  if (shape.size() != 2 || held != wgmmaLayout(shape))
    return false;
  Type elt = plan.elt, stored = elementType(op.getValue().getType());
  int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
  if (bytes != 2 && bytes != 4)
    return false;
  int64_t m = shape[0], n = shape[1], vec = 16 / bytes, chunk = 128 / bytes;
  if (n % chunk)
    return false;
  // Narrower stores than 16 bytes when the output's alignment or mask is
  // not known in 8s (a ragged K, a row stride not a multiple of 8): still
  // staged, as warpStagedTransposedStore is, since the alternative (each
  // held pair stored where the wgmma layout holds it) spilled in the
  // persistent dX (16 bytes, 32 with LISTED).
  int64_t width = accessWidth(op.getPtr(), op.getMask(), vec,
                              stored.getIntOrFloatBitWidth() / 8);
  int64_t groups = numThreads / 128, reps = m / (64 * groups);
  int64_t pitch = 128 + 16; // bytes per staged row

  Value lane = b.create<arith::AndIOp>(loc(), tid, i32(31));
  auto [area, row0] = warpStagingArea(reps);
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext(), 3);
  auto sharedAt = [&](Value byteOffset) {
    Value a = b.create<arith::AddIOp>(loc(), area, byteOffset);
    return b.create<LLVM::IntToPtrOp>(loc(), ptrTy, a);
  };
  auto warpSync = [&] { inlinePtx("bar.warp.sync -1;", "~{memory}", {}); };
  // Written pair (lane, e / 2) of 8-column group jj: row lane / 4 + 8 (e / 2),
  // columns 8 jj + 2 (lane % 4) + {0, 1}.
  Value pairRow = b.create<arith::ShRUIOp>(loc(), lane, i32(2));
  Value pairCol = b.create<arith::MulIOp>(
      loc(), b.create<arith::AndIOp>(loc(), lane, i32(3)), i32(2 * bytes));
  // Read vector i: row lane / 8 + 4 i, bytes 16 (lane % 8) .. + 15.
  Value readRow = b.create<arith::ShRUIOp>(loc(), lane, i32(3));
  Value readCol = b.create<arith::MulIOp>(
      loc(), b.create<arith::AndIOp>(loc(), lane, i32(7)), i32(16));
  Value readColElems = b.create<arith::MulIOp>(
      loc(), b.create<arith::AndIOp>(loc(), lane, i32(7)), i32(vec));
  auto vecTy = VectorType::get({vec}, elt);
  Elems vals = get(plan.src);
  for (int64_t r = 0; r < reps; ++r) {
    for (int64_t c = 0; c < n / chunk; ++c) {
      if (r || c)
        warpSync(); // The previous chunk's reads are done.
      for (int64_t jj = 0; jj < chunk / 8; ++jj) {
        for (int64_t h = 0; h < 2; ++h) {
          int64_t s = (r * (n / 8) + c * (chunk / 8) + jj) * 4 + 2 * h;
          Value pair = packVector(b, loc(), ArrayRef<Value>(vals).slice(s, 2));
          Value colAt =
              b.create<arith::AddIOp>(loc(), pairCol, i32(8 * jj * bytes));
          Value cPitch = i32(pitch);
          Value rowAt = b.create<arith::MulIOp>(
              loc(), b.create<arith::AddIOp>(loc(), pairRow, i32(8 * h)),
              cPitch);
          Value at = b.create<arith::AddIOp>(loc(), rowAt, colAt);
          b.create<LLVM::StoreOp>(loc(), pair, sharedAt(at), 2 * bytes);
        }
      }
      warpSync();
      Elems out;
      Coords &chunkAt = derivedCoords.emplace_back();
      chunkAt.shape = {m, n};
      for (int64_t i = 0; i < 4; ++i) {
        Value lrow = b.create<arith::AddIOp>(loc(), readRow, i32(4 * i));
        Value at = b.create<arith::AddIOp>(
            loc(), b.create<arith::MulIOp>(loc(), lrow, i32(pitch)), readCol);
        Value x = b.create<LLVM::LoadOp>(loc(), vecTy, sharedAt(at), 16);
        Value row = b.create<arith::AddIOp>(
            loc(), row0, b.create<arith::AddIOp>(loc(), lrow, i32(64 * r)));
        for (int64_t k = 0; k < vec; ++k) {
          Value e = b.create<LLVM::ExtractElementOp>(
              loc(), x,
              b.create<arith::ConstantOp>(loc(), b.getI32IntegerAttr(k)));
          out.push_back(castAfterReadBack(plan, e));
          chunkAt.at.push_back(
              {row, b.create<arith::AddIOp>(loc(), readColElems,
                                            i32(c * chunk + k))});
        }
      }
      storeVectors(op, out, chunkAt, width, stored);
    }
  }
  // The next store's writes come after this one's reads.
  warpSync();
  return true;
}

/// The transposed store of a wgmma accumulator (the 2:4 GEMM's
/// trans(acc.to(T)) into its row-major [M, I] output) in a persistent
/// warp-specialized kernel, staged per warp like warpStagedStore. Warp q of
/// warpgroup g holds accumulator rows g * m/G + 64 r + 16 q + 0..15, i.e. 16
/// consecutive columns of the stored tile, 32 bytes of each of its rows.
/// Unstaged, each element leaves with its own 2-byte store. Staged, the warp
/// takes chunks of 16 accumulator columns (16 stored rows):
///   write its 8 f32 per lane as [16 stored rows][16 values] with rows
///   padded to 80 bytes (the writes of one instruction hit 32 distinct
///   banks); bar.warp.sync; lane l reads stored row l % 16, values
///   8 (l / 16) .. + 7 as two 16-byte loads (row pitch 20 words: the 8 lanes
///   of a quarter warp start in distinct bank quads); converts them and
///   stores them as one 16-byte vector; bar.warp.sync.
/// The values stay f32 until read back (plan.cast after), as stageForStore
/// does: converting before the shared stores made ptxas serialize wgmma.
bool Distributor::warpStagedTransposedStore(StoreOp op, const StagePlan &plan) {
  auto heldShape = shapeOf(plan.src.getType());
  if (heldShape.size() != 2 || &coordsOf(plan.src) != wgmmaLayout(heldShape))
    return false;
  Type staged = plan.elt, stored = elementType(op.getValue().getType());
  if (!staged.isF32() || stored.getIntOrFloatBitWidth() != 16)
    return false;
  int64_t m = heldShape[0], n = heldShape[1];
  constexpr int64_t kChunk = 16, kPitch = 20; // stored rows; words per row
  static_assert(kChunk * kPitch * 4 <= SharedMemoryPlan::kWarpStagingBytes,
                "area too small");
  if (n % kChunk)
    return false;
  // Narrower stores than 16 bytes when the output's alignment or mask is
  // not known in 8s (a ragged I, an odd row stride): still staged, since the
  // alternative, each held value stored where the wgmma layout holds it,
  // takes 128 scattered 2-byte stores and spilled in the persistent 2:4
  // GEMM (84 bytes).
  int64_t width = accessWidth(op.getPtr(), op.getMask(), 8, 2);
  int64_t groups = numThreads / 128, reps = m / (64 * groups);

  Value lane = b.create<arith::AndIOp>(loc(), tid, i32(31));
  auto [area, row0] = warpStagingArea(reps);
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext(), 3);
  auto sharedAt = [&](Value word) {
    Value a = b.create<arith::AddIOp>(
        loc(), area, b.create<arith::MulIOp>(loc(), word, i32(4)));
    return b.create<LLVM::IntToPtrOp>(loc(), ptrTy, a);
  };
  auto warpSync = [&] { inlinePtx("bar.warp.sync -1;", "~{memory}", {}); };
  auto cst = [&](int64_t v) {
    return b.create<arith::ConstantOp>(loc(), b.getI32IntegerAttr(int32_t(v)));
  };
  // Held element (lane, h, e) of 8-column group jj: accumulator row
  // lane / 4 + 8 h (stored column), column 8 jj + 2 (lane % 4) + e (stored
  // row, relative to the chunk).
  Value heldRow = b.create<arith::ShRUIOp>(loc(), lane, i32(2));
  Value heldCol = b.create<arith::MulIOp>(
      loc(), b.create<arith::AndIOp>(loc(), lane, i32(3)), i32(2));
  // Read-back: stored row lane % 16, values 8 (lane / 16) .. + 7.
  Value readRow = b.create<arith::AndIOp>(loc(), lane, i32(15));
  Value readVal = b.create<arith::MulIOp>(
      loc(), b.create<arith::ShRUIOp>(loc(), lane, i32(4)), i32(8));
  auto v4 = VectorType::get({4}, staged);
  Elems vals = get(plan.src);
  for (int64_t r = 0; r < reps; ++r) {
    for (int64_t c = 0; c < n / kChunk; ++c) {
      if (r || c)
        warpSync(); // The previous chunk's reads are done.
      for (int64_t j = 0; j < kChunk / 8; ++j) {
        int64_t jj = c * (kChunk / 8) + j;
        for (int64_t h = 0; h < 2; ++h)
          for (int64_t e = 0; e < 2; ++e) {
            int64_t s = (r * (n / 8) + jj) * 4 + 2 * h + e;
            Value srow =
                b.create<arith::AddIOp>(loc(), heldCol, i32(8 * j + e));
            Value held = b.create<arith::AddIOp>(loc(), heldRow, i32(8 * h));
            Value rowWord = b.create<arith::MulIOp>(loc(), srow, i32(kPitch));
            Value word = b.create<arith::AddIOp>(loc(), rowWord, held);
            b.create<LLVM::StoreOp>(loc(), vals[s], sharedAt(word), 4);
          }
      }
      warpSync();
      Elems out;
      Value base = b.create<arith::AddIOp>(
          loc(), b.create<arith::MulIOp>(loc(), readRow, i32(kPitch)), readVal);
      for (int64_t half = 0; half < 2; ++half) {
        Value x = b.create<LLVM::LoadOp>(
            loc(), v4,
            sharedAt(b.create<arith::AddIOp>(loc(), base, i32(4 * half))), 16);
        for (int64_t k = 0; k < 4; ++k) {
          Value e = b.create<LLVM::ExtractElementOp>(loc(), x, cst(k));
          out.push_back(castAfterReadBack(plan, e));
        }
      }
      // The stored tile's coordinates of those 8 values: row (an
      // accumulator column) c * 16 + lane % 16, columns (accumulator rows)
      // row0 + 64 r + 8 (lane / 16) + k.
      Coords &chunkAt = derivedCoords.emplace_back();
      chunkAt.shape = {n, m};
      Value srow = b.create<arith::AddIOp>(loc(), readRow, i32(c * kChunk));
      Value scol = b.create<arith::AddIOp>(
          loc(), row0, b.create<arith::AddIOp>(loc(), readVal, i32(64 * r)));
      for (int64_t k = 0; k < 8; ++k)
        chunkAt.at.push_back(
            {srow, b.create<arith::AddIOp>(loc(), scol, i32(k))});
      storeVectors(op, out, chunkAt, width, stored);
    }
  }
  // The next store's writes come after this one's reads.
  warpSync();
  return true;
}
