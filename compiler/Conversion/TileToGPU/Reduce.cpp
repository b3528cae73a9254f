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
  size_t rank = src.shape.size();
  if (src.ownerThreads || rank < 2 || src.at.empty() ||
      !llvm::isPowerOf2_64(uint64_t(numThreads)) || numThreads < 32)
    return nullptr;
  // The slots of one output hold the same non-reduced coordinates in
  // every thread.
  using Table = const SmallVector<int32_t> *;
  auto r = std::make_unique<HeldReduction>();
  SmallVector<SmallVector<Table>> outKeys;
  SmallVector<Table> reduced;
  for (auto &slot : src.at) {
    SmallVector<Table> keyTabs;
    for (size_t d = 0; d < rank; ++d) {
      Table t = perThread(slot[d]);
      if (!t)
        return nullptr;
      if (int64_t(d) == ax)
        reduced.push_back(t);
      else
        keyTabs.push_back(t);
    }
    auto same = [&](ArrayRef<Table> o) {
      for (size_t i = 0; i < o.size(); ++i)
        if (*o[i] != *keyTabs[i])
          return false;
      return true;
    };
    auto it = llvm::find_if(outKeys, same);
    r->groupOf.push_back(it - outKeys.begin());
    if (it == outKeys.end()) {
      outKeys.push_back(keyTabs);
      SmallVector<Value> dims(slot);
      dims.erase(dims.begin() + ax);
      r->out.at.push_back(dims);
    }
  }
  // Thread bits no output depends on: those lanes combine. Bits past the
  // lane's five would need shared memory.
  int64_t logT = llvm::Log2_64(uint64_t(numThreads)), mask = 0;
  for (int64_t bit = 0; bit < logT; ++bit) {
    bool free = true;
    for (auto &tabs : outKeys)
      for (Table t : tabs)
        for (int64_t i = 0; i < numThreads && free; ++i)
          free = (*t)[i] == (*t)[i ^ (int64_t(1) << bit)];
    if (!free)
      continue;
    if (bit >= 5)
      return nullptr;
    mask |= int64_t(1) << bit;
  }
  // Each output belongs to one lane group, where its elements are distinct
  // and number the whole reduced axis.
  // (The owner of an output: its lane group and its slot there.)
  std::map<SmallVector<int32_t>, std::pair<int64_t, size_t>> owner;
  for (int64_t t = 0; t < numThreads; ++t)
    for (size_t g = 0; g < outKeys.size(); ++g) {
      SmallVector<int32_t> k;
      for (Table tab : outKeys[g])
        k.push_back((*tab)[t]);
      auto here = std::make_pair(t & ~mask, g);
      auto [it, fresh] = owner.emplace(k, here);
      if (!fresh && it->second != here)
        return nullptr;
    }
  for (int64_t t = 0; t < numThreads; ++t) {
    if (t & mask)
      continue;
    for (size_t g = 0; g < outKeys.size(); ++g) {
      std::set<int32_t> seen;
      int64_t count = 0;
      for (int64_t sub = mask;; sub = (sub - 1) & mask) {
        for (size_t s = 0; s < src.at.size(); ++s)
          if (r->groupOf[s] == int64_t(g)) {
            seen.insert((*reduced[s])[t | sub]);
            ++count;
          }
        if (!sub)
          break;
      }
      if (count != src.shape[ax] || int64_t(seen.size()) != count)
        return nullptr;
    }
  }
  r->out.shape.assign(src.shape.begin(), src.shape.end());
  r->out.shape.erase(r->out.shape.begin() + ax);
  r->laneMask = mask;
  found = std::move(r);
  return found.get();
}

LogicalResult Distributor::lowerReduce(ReduceOp op) {
  // A tile held in a tensor-core layout whose rows stay within a warp
  // reduces there (attention's row max and sum over S = Q K^T): no trip
  // through the canonical layout and shared memory.
  if (auto it = assigned.find(op.getSrc());
      it != assigned.end() && op.getKind() != ReduceKind::Argmax)
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
  auto shape = shapeOf(op.getSrc().getType());
  Layout l = layoutOf(shape);
  int64_t ax = op.getAxis();
  ReduceKind kind = op.getKind();
  bool arg = kind == ReduceKind::Argmax;
  Type elt = elementType(op.getSrc().getType());
  Type i32t = b.getI32Type();
  Elems vals = canonicalElems(op.getSrc());
  const Coords &own = canonical(shape);

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
    Coords &at = derivedCoords.emplace_back();
    at.shape = outShape;
    if (l.threads < numThreads)
      at.ownerThreads = l.threads;
    Elems out;
    for (uint64_t key : order) {
      auto &[acc, accIdx] = groups[key];
      out.push_back(arg ? accIdx : acc);
      for (int64_t s = 0; s < l.perThread(); ++s)
        if ((uint64_t(l.constFlat(s)) & ~redMask) == key) {
          SmallVector<Value> dims(own.at[s]);
          dims.erase(dims.begin() + ax);
          at.at.push_back(dims);
          break;
        }
    }
    dist[op.getResult()] = out;
    assigned[op.getResult()] = &at;
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
  smemBytes =
      std::max(smemBytes, outElems * nWarps * (valBytes + (arg ? 4 : 0)));
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
