//===- Reduce.cpp - Reductions across threads and warps -------------------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Lowers tile.reduce: in-thread combining, warp shuffles,
// then shared memory across warps, which also hands each result element to
// the thread that owns it in the result's layout.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <set>

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

Value Distributor::combine(ReduceKind kind, Value a, Value c) {
  bool f = isa<FloatType>(a.getType());
  switch (kind) {
  case ReduceKind::Sum:
    return f ? Value(b.create<arith::AddFOp>(loc(), a, c))
             : Value(b.create<arith::AddIOp>(loc(), a, c));
  case ReduceKind::Max:
    return f ? Value(b.create<arith::MaximumFOp>(loc(), a, c))
             : Value(b.create<arith::MaxSIOp>(loc(), a, c));
  case ReduceKind::Min:
    return f ? Value(b.create<arith::MinimumFOp>(loc(), a, c))
             : Value(b.create<arith::MinSIOp>(loc(), a, c));
  case ReduceKind::Or:
    return b.create<arith::OrIOp>(loc(), a, c);
  case ReduceKind::And:
    return b.create<arith::AndIOp>(loc(), a, c);
  case ReduceKind::Xor:
    return b.create<arith::XOrIOp>(loc(), a, c);
  case ReduceKind::Argmax:
    break;
  }
  llvm_unreachable("argmax combines pairs");
}

/// `x` from the lane whose id differs in `bit`. Shuffles move 32 bits; an
/// i64 moves as its two halves.
Value Distributor::shuffleXor(Value x, int64_t bit) {
  auto shfl = [&](Value v) {
    return b
        .create<gpu::ShuffleOp>(loc(), v, i32(1 << bit), i32(32),
                                gpu::ShuffleMode::XOR)
        .getShuffleResult();
  };
  if (!x.getType().isInteger(64))
    return shfl(x);
  Type i32t = b.getI32Type(), i64t = b.getI64Type();
  Value lo = shfl(b.create<arith::TruncIOp>(loc(), i32t, x));
  Value hi = shfl(b.create<arith::TruncIOp>(
      loc(), i32t, b.create<arith::ShRUIOp>(loc(), x, cst(32, i64t))));
  // Operands named in the order g++ builds them (see ExpandDescLoad.cpp).
  Value c32 = cst(32, i64t);
  Value high = b.create<arith::ShLIOp>(
      loc(), b.create<arith::ExtUIOp>(loc(), i64t, hi), c32);
  Value low = b.create<arith::ExtUIOp>(loc(), i64t, lo);
  return b.create<arith::OrIOp>(loc(), low, high);
}

const Distributor::HeldReduction *
Distributor::heldReduction(const Coords &src, int64_t ax) {
  auto key = std::make_pair(&src, ax);
  if (auto it = heldReductions.find(key); it != heldReductions.end())
    return it->second.get();
  std::unique_ptr<HeldReduction> &found = heldReductions[key]; // null: no
  if (src.ownerThreads)
    return nullptr;
  // The plan (TileLayouts.h, which tile-assign-layouts asks the same
  // question of) from the coordinates' values in every thread.
  std::vector<SmallVector<const ThreadValues *>> tables;
  for (auto &slot : src.at) {
    SmallVector<const ThreadValues *> &dims = tables.emplace_back();
    for (Value coord : slot) {
      dims.push_back(perThread(coord));
      if (!dims.back())
        return nullptr;
    }
  }
  auto plan = planHeldReduction(tables, src.shape, ax, numThreads);
  if (!plan)
    return nullptr;
  auto r = std::make_unique<HeldReduction>();
  r->groupOf = plan->groupOf;
  r->laneMask = plan->laneMask;
  for (size_t s : plan->firstSlot) {
    SmallVector<Value> dims(src.at[s]);
    dims.erase(dims.begin() + ax);
    r->out.at.push_back(dims);
  }
  r->out.shape.assign(src.shape.begin(), src.shape.end());
  r->out.shape.erase(r->out.shape.begin() + ax);
  found = std::move(r);
  return found.get();
}

const Coords &Distributor::inThreadSlice(ArrayRef<int64_t> shape, int64_t ax,
                                         int64_t vec) {
  Layout l = layoutOf(shape, vec);
  auto key = std::make_tuple(SmallVector<int64_t>(shape), ax, l.vec);
  if (auto it = inThreadSlices.find(key); it != inThreadSlices.end())
    return *it->second;
  const Coords &own = canonical(shape, l.vec);
  int64_t redLo = l.shift(ax), redBits = llvm::Log2_64(shape[ax]);
  uint64_t redMask = ((uint64_t(1) << redBits) - 1) << redLo;
  auto c = std::make_unique<Coords>();
  c->shape.assign(shape.begin(), shape.end());
  c->shape.erase(c->shape.begin() + ax);
  if (l.threads < numThreads)
    c->ownerThreads = l.threads;
  // An output's group: the slots whose flat index differs in the reduced
  // bits only (constant parts: the thread's part is the same in all).
  std::set<uint64_t> seen;
  for (int64_t s = 0; s < l.perThread(); ++s)
    if (seen.insert(uint64_t(l.constFlat(s)) & ~redMask).second) {
      SmallVector<Value> dims(own.at[s]);
      dims.erase(dims.begin() + ax);
      c->at.push_back(dims);
    }
  return *(inThreadSlices[key] = std::move(c));
}

LogicalResult Distributor::lowerReduce(ReduceOp op) {
  // A tile held in a tensor-core layout whose rows stay within a warp
  // reduces there (attention's row max and sum over S = Q K^T): no trip
  // through the canonical layout and shared memory.
  // (A blocked tile whose rows lie in single threads reduces in them below,
  // to the same place.)
  auto shape = shapeOf(op.getSrc().getType());
  int64_t ax = op.getAxis();
  // A blocked source is reduced in its own runs (tile-assign-layouts may
  // give a tile shorter ones than the kernel's: coalesced scalar accesses).
  int64_t vec = blockedVecOf(op.getSrc());
  if (auto it = assigned.find(op.getSrc());
      it != assigned.end() && op.getKind() != ReduceKind::Argmax &&
      !(it->second->blockedVec &&
        reducesInThread(shape, ax, layoutParams(vec))))
    if (const HeldReduction *h = heldReduction(*it->second, op.getAxis())) {
      Elems vals = evalAt(op.getSrc(), *it->second);
      Elems out(h->out.at.size());
      for (size_t s = 0; s < vals.size(); ++s) {
        Value &acc = out[size_t(h->groupOf[s])];
        acc = acc ? combine(op.getKind(), acc, vals[s]) : vals[s];
      }
      for (int64_t bit = 0; bit < 5; ++bit)
        if (h->laneMask & (int64_t(1) << bit))
          for (Value &acc : out)
            acc = combine(op.getKind(), acc, shuffleXor(acc, bit));
      dist[op.getResult()] = out;
      assigned[op.getResult()] = &h->out;
      return success();
    }
  // 1. Combine the elements a thread holds for the same output, 2. combine
  // across lanes with butterfly shuffles, 3. combine across warps through
  // shared memory, which also hands each output element to the thread that
  // owns it in the result's layout.
  Layout l = layoutOf(shape, vec);
  ReduceKind kind = op.getKind();
  bool arg = kind == ReduceKind::Argmax;
  Type elt = elementType(op.getSrc().getType());
  Type i32t = b.getI32Type();
  const Coords &own = canonical(shape, vec);
  Elems vals = evalAt(op.getSrc(), own);

  int64_t redLo = l.shift(ax), redBits = llvm::Log2_64(shape[ax]);
  uint64_t redMask = ((uint64_t(1) << redBits) - 1) << redLo;
  auto isReduced = [&](int64_t bit) { return (redMask >> bit) & 1; };

  // Step 1: group slots by their output (the non-reduced bits of the
  // constant part of the flat index).
  std::map<uint64_t, std::pair<Value, Value>> groups; // key -> (val, idx)
  std::vector<uint64_t> order;
  for (int64_t s = 0; s < l.perThread(); ++s) {
    uint64_t key = uint64_t(l.constFlat(s)) & ~redMask;
    Value v = vals[s], idx = arg ? own.at[s][ax] : Value();
    auto it = groups.find(key);
    if (it == groups.end()) {
      groups[key] = {v, idx};
      order.push_back(key);
      continue;
    }
    auto &[acc, accIdx] = it->second;
    if (!arg) {
      acc = combine(kind, acc, v);
      continue;
    }
    // Take the later element only if strictly greater: first max wins. (An
    // integer argmax used to build a cmpf on its integers too, which failed
    // verification.)
    Value gt = isa<FloatType>(elt)
                   ? Value(b.create<arith::CmpFOp>(
                         loc(), arith::CmpFPredicate::OGT, v, acc))
                   : Value(b.create<arith::CmpIOp>(
                         loc(), arith::CmpIPredicate::sgt, v, acc));
    acc = b.create<arith::SelectOp>(loc(), gt, v, acc);
    accIdx = b.create<arith::SelectOp>(loc(), gt, idx, accIdx);
  }

  // Step 2: lanes whose thread bits fall in the reduced axis.
  int64_t logVec = llvm::Log2_64(l.vec), logT = llvm::Log2_64(l.threads);
  for (int64_t bit = 0; bit < std::min<int64_t>(5, logT); ++bit) {
    if (!isReduced(logVec + bit))
      continue;
    for (uint64_t key : order) {
      auto &[acc, accIdx] = groups[key];
      auto shfl = [&](Value x) { return shuffleXor(x, bit); };
      Value other = shfl(acc);
      if (!arg) {
        acc = combine(kind, acc, other);
        continue;
      }
      Value otherIdx = shfl(accIdx);
      Value gt = isa<FloatType>(elt)
                     ? Value(b.create<arith::CmpFOp>(
                           loc(), arith::CmpFPredicate::OGT, other, acc))
                     : Value(b.create<arith::CmpIOp>(
                           loc(), arith::CmpIPredicate::sgt, other, acc));
      Value eq = isa<FloatType>(elt)
                     ? Value(b.create<arith::CmpFOp>(
                           loc(), arith::CmpFPredicate::OEQ, other, acc))
                     : Value(b.create<arith::CmpIOp>(
                           loc(), arith::CmpIPredicate::eq, other, acc));
      Value lt = b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::slt,
                                         otherIdx, accIdx);
      Value take = b.create<arith::OrIOp>(
          loc(), gt, b.create<arith::AndIOp>(loc(), eq, lt));
      acc = b.create<arith::SelectOp>(loc(), take, other, acc);
      accIdx = b.create<arith::SelectOp>(loc(), take, otherIdx, accIdx);
    }
  }

  SmallVector<int64_t> outShape(shape);
  outShape.erase(outShape.begin() + ax);

  // A reduction within each thread (the reduced axis lies in the slots, as
  // the rows of a [Q, 4] tile do): every thread already holds whole outputs,
  // which stay where they are, at the coordinates of the slots they came
  // from. Reading them back at those rows (x[:, None] against the source's
  // shape) then needs no shared memory (evalAt finds them held).
  bool crossThread = false;
  for (int64_t bit = 0; bit < logT; ++bit)
    crossThread |= isReduced(logVec + bit) != 0;
  if (!crossThread && !outShape.empty()) {
    // The outputs in the order of their groups' first slots, as
    // inThreadSlice lists their coordinates.
    Elems out;
    for (uint64_t key : order) {
      auto &[acc, accIdx] = groups[key];
      out.push_back(arg ? accIdx : acc);
    }
    dist[op.getResult()] = out;
    assigned[op.getResult()] = &inThreadSlice(shape, ax, vec);
    return success();
  }

  // Step 3: warps. wr numbers the warps that hold partials of one output.
  SmallVector<int64_t> warpBits;
  for (int64_t bit = 5; bit < logT; ++bit)
    if (isReduced(logVec + bit))
      warpBits.push_back(bit);
  int64_t nWarps = int64_t(1) << warpBits.size();
  Value wr = i32(0);
  for (size_t i = 0; i < warpBits.size(); ++i) {
    Value bitv = b.create<arith::AndIOp>(
        loc(), b.create<arith::ShRUIOp>(loc(), tid, i32(warpBits[i])), i32(1));
    wr = b.create<arith::OrIOp>(loc(), wr,
                                b.create<arith::ShLIOp>(loc(), bitv, i32(i)));
  }

  int64_t outElems = 1;
  for (int64_t d : outShape)
    outElems *= d;
  int64_t valBytes = elt.getIntOrFloatBitWidth() / 8;
  reserveShared(outElems * nWarps * (valBytes + (arg ? 4 : 0)));
  Value idxBase = i32(outElems * nWarps); // argmax indices follow the values.

  // The output index of a flat input index: drop the reduced bits.
  auto outFlat = [&](Value flat) {
    Value hi = b.create<arith::ShRUIOp>(loc(), flat, i32(redLo + redBits));
    if (redLo)
      hi = b.create<arith::ShLIOp>(loc(), hi, i32(redLo));
    if (!redLo)
      return hi;
    Value lo = b.create<arith::AndIOp>(loc(), flat, i32((1 << redLo) - 1));
    return Value(b.create<arith::OrIOp>(loc(), hi, lo));
  };
  Value tt = tidTerm(l);
  for (uint64_t key : order) {
    auto &[acc, accIdx] = groups[key];
    Value flat = b.create<arith::OrIOp>(loc(), tt, i32(key));
    Value slot = b.create<arith::AddIOp>(
        loc(), b.create<arith::MulIOp>(loc(), outFlat(flat), i32(nWarps)), wr);
    b.create<LLVM::StoreOp>(loc(), acc, smemPtr(slot, elt));
    if (arg) {
      auto base = b.create<LLVM::GEPOp>(
          loc(), LLVM::LLVMPointerType::get(b.getContext(), 3), elt, smemBase,
          ValueRange{idxBase});
      b.create<LLVM::StoreOp>(
          loc(), accIdx,
          b.create<LLVM::GEPOp>(loc(),
                                LLVM::LLVMPointerType::get(b.getContext(), 3),
                                i32t, base, ValueRange{slot}));
    }
  }
  barrier();

  Elems out;
  auto readOut = [&](Value f) {
    Value acc, accIdx;
    for (int64_t w = 0; w < nWarps; ++w) {
      Value slot = b.create<arith::AddIOp>(
          loc(), b.create<arith::MulIOp>(loc(), f, i32(nWarps)), i32(w));
      Value v = b.create<LLVM::LoadOp>(loc(), elt, smemPtr(slot, elt));
      Value idx;
      if (arg) {
        auto base = b.create<LLVM::GEPOp>(
            loc(), LLVM::LLVMPointerType::get(b.getContext(), 3), elt, smemBase,
            ValueRange{idxBase});
        idx = b.create<LLVM::LoadOp>(
            loc(), i32t,
            b.create<LLVM::GEPOp>(loc(),
                                  LLVM::LLVMPointerType::get(b.getContext(), 3),
                                  i32t, base, ValueRange{slot}));
      }
      if (!acc) {
        acc = v;
        accIdx = idx;
        continue;
      }
      if (!arg) {
        acc = combine(kind, acc, v);
        continue;
      }
      // Warps are visited in index order, so strict '>' keeps the first max.
      Value gt = isa<FloatType>(elt)
                     ? Value(b.create<arith::CmpFOp>(
                           loc(), arith::CmpFPredicate::OGT, v, acc))
                     : Value(b.create<arith::CmpIOp>(
                           loc(), arith::CmpIPredicate::sgt, v, acc));
      acc = b.create<arith::SelectOp>(loc(), gt, v, acc);
      accIdx = b.create<arith::SelectOp>(loc(), gt, idx, accIdx);
    }
    out.push_back(arg ? accIdx : acc);
  };
  if (outShape.empty()) {
    readOut(i32(0));
  } else {
    const Coords &oc = canonical(outShape);
    for (auto &slotCoords : oc.at)
      readOut(flatOf(slotCoords, outShape));
  }
  barrier();
  dist[op.getResult()] = out;
  return success();
}

void Distributor::populateReducePatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerReduce);
}
