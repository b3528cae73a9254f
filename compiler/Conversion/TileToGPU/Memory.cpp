//===- Memory.cpp - Loads and stores of distributed tiles -----------------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Lowers tile.load and tile.store to per-thread global memory
// accesses, as wide as the axis analysis allows (contiguity, divisibility
// and one mask value per access), with bool tiles stored as bytes.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/AccessRemarks.h"
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
  return b.create<arith::ConstantOp>(loc, b.getZeroAttr(regType(t)));
}

/// The widest access, in elements of `bytes` bytes and at most `maxElems`,
/// that AxisInfo allows for these pointers: contiguous, aligned, one mask
/// value, and no more than 16 bytes.
int64_t Distributor::accessWidth(Value ptr, Value mask, int64_t maxElems,
                                 int64_t bytes) {
  return axis.accessWidth(ptr, mask, maxElems, bytes);
}

LogicalResult Distributor::lowerLoad(LoadOp op) {
  Type elt = elementType(op.getType());
  bool isBool = elt.isInteger(1);
  Type memElt = isBool ? b.getI8Type() : regType(elt);
  int64_t bytes = std::max<unsigned>(1, memElt.getIntOrFloatBitWidth() / 8);
  // In the blocked layout the result's type names: the kernel's runs, or
  // shorter ones where tile-assign-layouts found the accesses narrower
  // (one element a thread, consecutive threads on consecutive elements).
  auto shape = shapeOf(op.getType());
  const Coords *at = nullptr;
  if (!shape.empty()) {
    at = coordsFor(op.getType());
    if (!at)
      at = &canonical(shape);
    if (!at->blockedVec)
      return op.emitOpError("cannot load into ") << encodingOf(op.getType());
  }
  auto elemsAt = [&](Value v) { return at ? evalAt(v, *at) : get(v); };
  Elems ptrs = elemsAt(op.getPtr());
  Elems masks = op.getMask() ? elemsAt(op.getMask()) : Elems();
  Elems others = op.getOther() ? elemsAt(op.getOther()) : Elems();
  size_t n = ptrs.size();

  int64_t width = 1;
  if (!shape.empty() && !isBool) {
    width = accessWidth(op.getPtr(), op.getMask(), at->blockedVec, bytes);
    // Narrower than the kernel's runs is worth a remark even where the
    // layout was shortened to keep such accesses coalesced.
    remarkNarrowAccess(axis, op, op.getPtr(), op.getMask(),
                       layoutOf(shape).vec, bytes, width);
  }

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
      Elems run;
      for (int64_t i = 0; i < width; ++i)
        run.push_back(otherAt(base + size_t(i)));
      return packVector(ob, loc(), run);
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
  if (at && at != &canonical(shape))
    assigned[op.getResult()] = at;
  return success();
}

LogicalResult Distributor::lowerStore(StoreOp op) {
  Type elt = elementType(op.getValue().getType());
  bool isBool = elt.isInteger(1);
  Type memElt = isBool ? b.getI8Type() : regType(elt);
  int64_t bytes = std::max<unsigned>(1, memElt.getIntOrFloatBitWidth() / 8);
  // Stores happen where the value lives (a dot result stays in the
  // tensor-core layout); pointers and mask are evaluated there.
  bool isTile = isa<RankedTensorType>(op.getValue().getType());
  const Coords *at = isTile ? &coordsOf(op.getValue()) : nullptr;
  bool canonicalAt = !isTile || at->blockedVec;
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
    if (!isBool && !transposedAt)
      remarkNarrowAccess(axis, op, op.getPtr(), op.getMask(),
                         heldRun(*at, 16 / bytes), bytes, width);
    if (at->ownerThreads && at->ownerThreads < numThreads)
      replicaGuard = b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::ult,
                                             tid, i32(at->ownerThreads));
  } else if (auto shape = shapeOf(op.getPtr().getType()); !shape.empty()) {
    Layout l = layoutOf(shape, at->blockedVec);
    if (!isBool) {
      width = accessWidth(op.getPtr(), op.getMask(), l.vec, bytes);
      remarkNarrowAccess(axis, op, op.getPtr(), op.getMask(),
                         layoutOf(shape).vec, bytes, width);
    }
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
        x = packVector(ob, loc(),
                       ArrayRef<Value>(vals).slice(base, size_t(width)));
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

void Distributor::populateMemoryPatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerLoad);
  p.add(&Distributor::lowerStore);
}
