//===- Memory.cpp - Loads and stores of distributed tiles -----------------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Lowers tile.load and tile.store to per-thread global memory
// accesses, as wide as the axis analysis allows (contiguity, divisibility
// and one mask value per access), with bool tiles stored as bytes.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// Scalars a load gives where its mask is false.
static Value zeroOf(OpBuilder &b, Location loc, Type t) {
  return b.create<arith::ConstantOp>(loc, b.getZeroAttr(t));
}

/// The widest access, in elements of `bytes` bytes and at most `maxElems`,
/// that AxisInfo allows for these pointers: contiguous, aligned, one mask
/// value, and no more than 16 bytes.
int64_t Distributor::accessWidth(Value ptr, Value mask, int64_t maxElems,
                                 int64_t bytes) {
  AxisInfo pi = axis.get(ptr);
  int64_t width =
      std::min({maxElems, pi.contiguity,
                std::max<int64_t>(1, pi.divisibility / bytes), 16 / bytes});
  if (mask)
    width = std::min(width, axis.get(mask).constancy);
  return std::max<int64_t>(width, 1);
}

LogicalResult Distributor::lowerLoad(LoadOp op) {
  Type elt = elementType(op.getType());
  bool isBool = elt.isInteger(1);
  Type memElt = isBool ? b.getI8Type() : elt;
  int64_t bytes = std::max<unsigned>(1, memElt.getIntOrFloatBitWidth() / 8);
  Elems ptrs = canonicalElems(op.getPtr());
  Elems masks = op.getMask() ? canonicalElems(op.getMask()) : Elems();
  Elems others = op.getOther() ? canonicalElems(op.getOther()) : Elems();
  size_t n = ptrs.size();

  int64_t width = 1;
  if (auto shape = shapeOf(op.getType()); !shape.empty() && !isBool)
    width = accessWidth(op.getPtr(), op.getMask(), layoutOf(shape).vec, bytes);

  Elems out;
  for (size_t base = 0; base < n; base += width) {
    Type accTy = width == 1 ? memElt : Type(VectorType::get({width}, memElt));
    auto doLoad = [&](OpBuilder &ob) -> Value {
      return ob.create<LLVM::LoadOp>(loc(), accTy, ptrs[base], width * bytes);
    };
    auto fallback = [&](OpBuilder &ob) -> Value {
      auto otherAt = [&](size_t i) -> Value {
        Value o = others.empty() ? zeroOf(ob, loc(), elt) : others[i];
        return isBool ? ob.create<arith::ExtUIOp>(loc(), memElt, o) : o;
      };
      if (width == 1)
        return otherAt(base);
      Value vec = ob.create<LLVM::PoisonOp>(loc(), accTy);
      for (int64_t i = 0; i < width; ++i)
        vec = ob.create<LLVM::InsertElementOp>(
            loc(), vec, otherAt(base + i),
            ob.create<arith::ConstantOp>(loc(), ob.getI32IntegerAttr(i)));
      return vec;
    };
    Value loaded;
    if (masks.empty()) {
      loaded = doLoad(b);
    } else {
      auto ifOp = b.create<scf::IfOp>(
          loc(), masks[base],
          [&](OpBuilder &ob, Location) {
            ob.create<scf::YieldOp>(loc(), doLoad(ob));
          },
          [&](OpBuilder &ob, Location) {
            ob.create<scf::YieldOp>(loc(), fallback(ob));
          });
      loaded = ifOp.getResult(0);
    }
    for (int64_t i = 0; i < width; ++i) {
      Value x = width == 1
                    ? loaded
                    : b.create<LLVM::ExtractElementOp>(loc(), loaded, i32(i))
                          .getResult();
      if (isBool)
        x = b.create<arith::TruncIOp>(loc(), elt, x);
      out.push_back(x);
    }
  }
  dist[op.getResult()] = out;
  return success();
}

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
/// measured well and moves half the bytes.
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
  plan.elt = elementType(held.getType());
  if (!plan.transposed)
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
  if (!plan.src || !specialized || !inConsumer || persistent || !ringBase)
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
      out.push_back(plan.cast ? cloneElementwise(plan.cast, {Elems{e}}, 1)[0]
                              : e);
    }
  }
  // A later exchange or staged store may reuse the area.
  barrier();
  return out;
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
/// contiguous bytes of each of 4 rows), so that few values stay live.
/// Returns false, emitting nothing, when the store does not qualify (then
/// the caller stores the pairs where they are held).
bool Distributor::warpStagedStore(StoreOp op, const StagePlan &plan) {
  if (warpStagingAt < 0 || !inConsumer || !plan.src || plan.transposed)
    return false;
  auto shape = shapeOf(op.getValue().getType());
  const Coords *held = &coordsOf(plan.src);
  if (shape.size() != 2 || held != wgmmaLayout(shape))
    return false;
  Type elt = plan.elt;
  int64_t bytes = elt.getIntOrFloatBitWidth() / 8;
  if (bytes != 2 && bytes != 4)
    return false;
  int64_t m = shape[0], n = shape[1], vec = 16 / bytes, chunk = 128 / bytes;
  if (n % chunk)
    return false;
  int64_t width = accessWidth(op.getPtr(), op.getMask(), vec, bytes);
  if (width * bytes < 8)
    return false;
  int64_t groups = numThreads / 128, reps = m / (64 * groups);
  int64_t pitch = 128 + 16; // bytes per staged row

  Value lane = b.create<arith::AndIOp>(loc(), tid, i32(31));
  Value warp = b.create<arith::ShRUIOp>(loc(), tid, i32(5));
  Value area = b.create<arith::AddIOp>(
      loc(), ringBase,
      b.create<arith::AddIOp>(
          loc(), i32(warpStagingAt),
          b.create<arith::MulIOp>(loc(), warp, i32(kWarpStagingBytes))));
  // This warp's first row: g * 64 reps + 16 q.
  Value row0 = b.create<arith::AddIOp>(
      loc(),
      b.create<arith::MulIOp>(
          loc(), b.create<arith::ShRUIOp>(loc(), warp, i32(2)), i32(64 * reps)),
      b.create<arith::MulIOp>(
          loc(), b.create<arith::AndIOp>(loc(), warp, i32(3)), i32(16)));
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
  auto pairTy = VectorType::get({2}, elt);
  auto vecTy = VectorType::get({vec}, elt);
  Elems vals = get(plan.src);
  // Stores one chunk's read-back elements (at `at`) as `width`-element
  // vectors, under the store's mask.
  auto storeChunk = [&](const Elems &out, Coords &at) {
    Elems ptrs = evalAt(op.getPtr(), at);
    Elems masks = op.getMask() ? evalAt(op.getMask(), at) : Elems();
    for (size_t base = 0; base < out.size(); base += width) {
      Value x = b.create<LLVM::PoisonOp>(loc(), VectorType::get({width}, elt));
      for (int64_t i = 0; i < width; ++i)
        x = b.create<LLVM::InsertElementOp>(
            loc(), x, out[base + i],
            b.create<arith::ConstantOp>(loc(), b.getI32IntegerAttr(i)));
      if (masks.empty()) {
        b.create<LLVM::StoreOp>(loc(), x, ptrs[base], width * bytes);
        continue;
      }
      b.create<scf::IfOp>(loc(), masks[base], [&](OpBuilder &ob, Location) {
        ob.create<LLVM::StoreOp>(loc(), x, ptrs[base], width * bytes);
        ob.create<scf::YieldOp>(loc());
      });
    }
  };
  for (int64_t r = 0; r < reps; ++r) {
    for (int64_t c = 0; c < n / chunk; ++c) {
      if (r || c)
        warpSync(); // The previous chunk's reads are done.
      for (int64_t jj = 0; jj < chunk / 8; ++jj) {
        for (int64_t h = 0; h < 2; ++h) {
          int64_t s = (r * (n / 8) + c * (chunk / 8) + jj) * 4 + 2 * h;
          Value pair = b.create<LLVM::PoisonOp>(loc(), pairTy);
          for (int64_t e = 0; e < 2; ++e)
            pair = b.create<LLVM::InsertElementOp>(
                loc(), pair, vals[s + e],
                b.create<arith::ConstantOp>(loc(), b.getI32IntegerAttr(e)));
          Value at = b.create<arith::AddIOp>(
              loc(),
              b.create<arith::MulIOp>(
                  loc(), b.create<arith::AddIOp>(loc(), pairRow, i32(8 * h)),
                  i32(pitch)),
              b.create<arith::AddIOp>(loc(), pairCol, i32(8 * jj * bytes)));
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
          out.push_back(b.create<LLVM::ExtractElementOp>(
              loc(), x,
              b.create<arith::ConstantOp>(loc(), b.getI32IntegerAttr(k))));
          chunkAt.at.push_back(
              {row, b.create<arith::AddIOp>(loc(), readColElems,
                                            i32(c * chunk + k))});
        }
      }
      storeChunk(out, chunkAt);
    }
  }
  // The next store's writes come after this one's reads.
  warpSync();
  return true;
}

LogicalResult Distributor::lowerStore(StoreOp op) {
  Type elt = elementType(op.getValue().getType());
  bool isBool = elt.isInteger(1);
  Type memElt = isBool ? b.getI8Type() : elt;
  int64_t bytes = std::max<unsigned>(1, memElt.getIntOrFloatBitWidth() / 8);
  // Stores happen where the value lives (a dot result stays in the
  // tensor-core layout); pointers and mask are evaluated there.
  bool isTile = isa<RankedTensorType>(op.getValue().getType());
  const Coords *at = isTile ? &coordsOf(op.getValue()) : nullptr;
  bool canonicalAt =
      !isTile || at == &canonical(shapeOf(op.getValue().getType()));
  Elems staged;
  bool transposedAt = false;
  StagePlan plan = isTile ? planStaging(op.getValue()) : StagePlan();
  if (isTile && warpStagedStore(op, plan))
    return success();
  if (stagedStoreWidth(op, plan)) {
    staged = stageForStore(op.getValue(), plan);
    at = &canonical(shapeOf(op.getValue().getType()));
    canonicalAt = true;
  } else if (plan.src && plan.transposed) {
    // Unstaged trans(held): each element is stored from the thread that
    // holds it, at swapped coordinates (evaluating the transpose in the
    // canonical layout would exchange the whole tile through shared memory).
    Value held = op.getValue().getDefiningOp<TransOp>().getSrc();
    Coords &sc = derivedCoords.emplace_back();
    sc.shape.assign(shapeOf(op.getValue().getType()).begin(),
                    shapeOf(op.getValue().getType()).end());
    for (auto &slot : coordsOf(held).at)
      sc.at.push_back({slot[1], slot[0]});
    staged = get(held);
    at = &sc;
    canonicalAt = false;
    transposedAt = true;
  }
  Elems ptrs = isTile ? evalAt(op.getPtr(), *at) : get(op.getPtr());
  Elems vals = !staged.empty() ? staged
               : isTile        ? evalAt(op.getValue(), *at)
                               : get(op.getValue());
  Elems masks = !op.getMask() ? Elems()
                : isTile      ? evalAt(op.getMask(), *at)
                              : get(op.getMask());
  size_t n = ptrs.size();

  int64_t width = 1;
  Value replicaGuard;
  if (isTile && !canonicalAt) {
    // Held elsewhere: a tensor-core layout holds column pairs (adjacent
    // rows, so never one access, when stored transposed); a reduction kept
    // in place holds single elements. Only runs the layout provably holds
    // are vectorized (heldRun), and copies in replicating threads do not
    // store.
    width = isBool || transposedAt
                ? 1
                : accessWidth(op.getPtr(), op.getMask(),
                              heldRun(*at, 16 / bytes), bytes);
    if (at->ownerThreads && at->ownerThreads < numThreads)
      replicaGuard = b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::ult,
                                             tid, i32(at->ownerThreads));
  } else if (auto shape = shapeOf(op.getPtr().getType()); !shape.empty()) {
    Layout l = layoutOf(shape);
    if (!isBool)
      width = accessWidth(op.getPtr(), op.getMask(), l.vec, bytes);
    // Threads that only replicate others' elements do not store.
    if (l.threads < numThreads)
      replicaGuard = b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::ult,
                                             tid, i32(l.threads));
  } else {
    // Every thread holds the same scalar: thread 0 stores it.
    replicaGuard =
        b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::eq, tid, i32(0));
  }

  for (size_t base = 0; base < n; base += width) {
    Value cond = replicaGuard;
    if (!masks.empty())
      cond = cond ? Value(b.create<arith::AndIOp>(loc(), cond, masks[base]))
                  : masks[base];
    auto doStore = [&](OpBuilder &ob) {
      Value x;
      if (width == 1) {
        x = vals[base];
        if (isBool)
          x = ob.create<arith::ExtUIOp>(loc(), memElt, x);
      } else {
        x = ob.create<LLVM::PoisonOp>(loc(), VectorType::get({width}, memElt));
        for (int64_t i = 0; i < width; ++i)
          x = ob.create<LLVM::InsertElementOp>(
              loc(), x, vals[base + i],
              ob.create<arith::ConstantOp>(loc(), ob.getI32IntegerAttr(i)));
      }
      ob.create<LLVM::StoreOp>(loc(), x, ptrs[base], width * bytes);
    };
    if (cond) {
      b.create<scf::IfOp>(loc(), cond, [&](OpBuilder &ob, Location) {
        doStore(ob);
        ob.create<scf::YieldOp>(loc());
      });
    } else {
      doStore(b);
    }
  }
  return success();
}
