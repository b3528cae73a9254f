//===- TileToGPU.cpp - Distribute tiles over the threads of a block -------===//
//
// Implements the convert-tile-to-gpu pass (see Passes.td for the layout it
// chooses); tile.dot's lowering is in DotToMMA.cpp, the shared state in
// Distributor.h. The pass is a direct walk rather than a pattern rewrite: every
// tile value maps to the list of scalars the current thread owns, in the
// canonical layout of its shape, and each op is lowered once, in order,
// into a new gpu.func. Control flow (scf.for/scf.if) is rebuilt with the
// flattened per-thread values as iter_args/results.
//
// Values that are pure functions of indices (arange, splat, constants and
// arithmetic on them) can be evaluated at any coordinates, so a shape change
// recomputes them instead of moving data. Other values (loads, reductions,
// loop-carried values) change layout through shared memory.
//
//===----------------------------------------------------------------------===//

#include "Conversion/Passes.h"
#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MathExtras.h"

#include <deque>
#include <map>

namespace sparsetile {
#define GEN_PASS_DEF_TILETOGPU
#include "Conversion/Passes.h.inc"
} // namespace sparsetile

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

using namespace sparsetile::detail;

//===----------------------------------------------------------------------===//
// Layout helpers
//===----------------------------------------------------------------------===//

Layout Distributor::layoutOf(ArrayRef<int64_t> shape) const {
  Layout l;
  l.shape.assign(shape.begin(), shape.end());
  for (int64_t d : shape)
    l.elems *= d;
  if (shape.empty())
    return l;
  l.vec = std::min<int64_t>(vecElems, shape.back());
  int64_t chunks = l.elems / l.vec;
  l.threads = std::min<int64_t>(numThreads, chunks);
  l.reps = chunks / l.threads;
  return l;
}

/// Constants live in the prologue so every later op can use them.
Value Distributor::cst(int64_t v, Type t) {
  auto key = std::make_pair(v, t.getAsOpaquePointer());
  auto it = constants.find(key);
  if (it != constants.end())
    return it->second;
  Value c = entry.create<arith::ConstantOp>(loc(), entry.getIntegerAttr(t, v));
  constants[key] = c;
  return c;
}

/// (tid mod threads) * vec: the thread's part of every flat index.
Value Distributor::tidTerm(const Layout &l) {
  auto key = std::make_pair(l.vec, l.threads);
  auto it = tidTerms.find(key);
  if (it != tidTerms.end())
    return it->second;
  Value t = tid;
  if (l.threads < numThreads)
    t = entry.create<arith::AndIOp>(loc(), t, cst(l.threads - 1, tid.getType()));
  if (l.vec > 1)
    t = entry.create<arith::ShLIOp>(loc(), t,
                                    cst(llvm::Log2_64(l.vec), tid.getType()));
  tidTerms[key] = t;
  return t;
}

const Coords &Distributor::canonical(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> key(shape);
  auto it = canonicalCoords.find(key);
  if (it != canonicalCoords.end())
    return *it->second;
  auto c = std::make_unique<Coords>();
  c->shape = key;
  Layout l = layoutOf(shape);
  Value tt = tidTerm(l);
  Type i32t = entry.getI32Type();
  for (int64_t s = 0; s < l.perThread(); ++s) {
    Value flat = tt;
    if (int64_t k = l.constFlat(s))
      flat = entry.create<arith::OrIOp>(loc(), tt, cst(k, i32t));
    SmallVector<Value> dims;
    for (size_t d = 0; d < shape.size(); ++d) {
      Value v = flat;
      if (int64_t sh = l.shift(d))
        v = entry.create<arith::ShRUIOp>(loc(), v, cst(sh, i32t));
      if (d > 0)
        v = entry.create<arith::AndIOp>(loc(), v, cst(shape[d] - 1, i32t));
      dims.push_back(v);
    }
    c->at.push_back(dims);
  }
  return *(canonicalCoords[key] = std::move(c));
}

Value Distributor::flatOf(ArrayRef<Value> coords, ArrayRef<int64_t> shape) {
  Layout l = layoutOf(shape);
  Value flat;
  for (size_t d = 0; d < shape.size(); ++d) {
    Value v = coords[d];
    if (int64_t sh = l.shift(d))
      v = b.create<arith::ShLIOp>(loc(), v, i32(sh));
    flat = flat ? Value(b.create<arith::OrIOp>(loc(), flat, v)) : v;
  }
  return flat ? flat : i32(0);
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Elems &Distributor::get(Value v) {
  auto it = dist.find(v);
  assert(it != dist.end() && "value used before it was lowered");
  return it->second;
}

const Coords &Distributor::coordsOf(Value v) {
  if (auto it = assigned.find(v); it != assigned.end())
    return *it->second;
  return canonical(shapeOf(v.getType()));
}

bool Distributor::isPureIndexOp(Operation *op) {
  if (isa<ArangeOp, SplatOp, ExpandDimsOp, BroadcastOp, AddPtrOp, TransOp>(op))
    return true;
  StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
  // ub.poison: a ring loop's unused initial accumulator (PipelineTMA.cpp).
  return (ns == "arith" || ns == "math" || ns == "ub") &&
         op->getNumRegions() == 0 && op->getNumResults() == 1;
}

Elems Distributor::cloneElementwise(Operation *op, ArrayRef<Elems> operands,
                                    size_t n) {
  Elems out;
  Type rt = elementType(op->getResult(0).getType());
  // The GPU-to-NVVM patterns turn f32 math.sqrt into sqrt.approx; the DSL
  // promises CUDA's default, a correctly rounded sqrt: libdevice's
  // __nv_fsqrt_rn.
  if (isa<math::SqrtOp>(op) && rt.isF32()) {
    auto fn = libdeviceFunction("__nv_fsqrt_rn", rt);
    for (size_t i = 0; i < n; ++i) {
      const Elems &e = operands[0];
      out.push_back(b.create<LLVM::CallOp>(op->getLoc(), fn,
                                           ValueRange{e.size() == 1 ? e[0] : e[i]})
                        .getResult());
    }
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    OperationState st(op->getLoc(), op->getName());
    for (const Elems &e : operands)
      st.addOperands(e.size() == 1 ? e[0] : e[i]);
    st.addTypes(rt);
    st.addAttributes(op->getAttrs());
    out.push_back(b.create(st)->getResult(0));
  }
  return out;
}

/// Declares (once) a unary libdevice function `type name(type)`; the PTX
/// emitter links libdevice for it.
LLVM::LLVMFuncOp Distributor::libdeviceFunction(StringRef name, Type type) {
  if (auto f = gpuModule.lookupSymbol<LLVM::LLVMFuncOp>(name))
    return f;
  OpBuilder mb(gpuModule.getContext());
  mb.setInsertionPointToStart(gpuModule.getBody());
  return mb.create<LLVM::LLVMFuncOp>(
      gpuModule.getLoc(), name, LLVM::LLVMFunctionType::get(type, {type}));
}

/// The elements of `v` at coordinates `c` (one per slot of `c`).
Elems Distributor::evalAt(Value v, const Coords &c) {
  size_t n = c.at.size();
  if (!isa<RankedTensorType>(v.getType()))
    return Elems(n, get(v)[0]);
  auto key = std::make_pair(v.getAsOpaquePointer(), &c);
  if (auto it = memo.find(key); it != memo.end())
    return it->second;
  if (&c == &coordsOf(v))
    if (auto it = dist.find(v); it != dist.end())
      return it->second;

  Operation *def = v.getDefiningOp();
  Elems out;
  if (!def || !isPureIndexOp(def)) {
    // A materialized value at other coordinates: move it through shared
    // memory.
    out = gather(v, c);
  } else if (auto ar = dyn_cast<ArangeOp>(def)) {
    for (auto &slot : c.at)
      out.push_back(ar.getStart() == 0
                        ? slot[0]
                        : b.create<arith::AddIOp>(loc(), slot[0],
                                                  i32(ar.getStart()))
                              .getResult());
  } else if (auto sp = dyn_cast<SplatOp>(def)) {
    out = Elems(n, get(sp.getSrc())[0]);
  } else if (auto cstOp = dyn_cast<arith::ConstantOp>(def)) {
    auto dense = cast<DenseElementsAttr>(cstOp.getValue());
    Value s = b.create<arith::ConstantOp>(
        loc(), cast<TypedAttr>(dense.getSplatValue<Attribute>()));
    out = Elems(n, s);
  } else if (auto tr = dyn_cast<TransOp>(def)) {
    Coords &sc = derivedCoords.emplace_back();
    sc.shape = {c.shape[1], c.shape[0]};
    for (auto &slot : c.at)
      sc.at.push_back({slot[1], slot[0]});
    out = evalAt(tr.getSrc(), sc);
  } else if (auto ed = dyn_cast<ExpandDimsOp>(def)) {
    Coords &sc = derivedCoords.emplace_back();
    sc.shape.assign(shapeOf(ed.getSrc().getType()).begin(),
                    shapeOf(ed.getSrc().getType()).end());
    for (auto &slot : c.at) {
      SmallVector<Value> d(slot);
      d.erase(d.begin() + ed.getAxis());
      sc.at.push_back(d);
    }
    out = evalAt(ed.getSrc(), sc);
  } else if (auto bc = dyn_cast<BroadcastOp>(def)) {
    auto srcShape = shapeOf(bc.getSrc().getType());
    Coords &sc = derivedCoords.emplace_back();
    sc.shape.assign(srcShape.begin(), srcShape.end());
    for (auto &slot : c.at) {
      SmallVector<Value> d(slot);
      for (size_t i = 0; i < d.size(); ++i)
        if (srcShape[i] == 1)
          d[i] = i32(0);
      sc.at.push_back(d);
    }
    out = evalAt(bc.getSrc(), sc);
  } else if (auto ap = dyn_cast<AddPtrOp>(def)) {
    Elems p = evalAt(ap.getPtr(), c), o = evalAt(ap.getOffset(), c);
    Type elt = cast<PointerType>(elementType(ap.getType())).getPointee();
    if (elt.isInteger(1))
      elt = b.getI8Type();
    auto ptrTy = LLVM::LLVMPointerType::get(b.getContext(), 1);
    for (size_t i = 0; i < n; ++i)
      out.push_back(b.create<LLVM::GEPOp>(loc(), ptrTy, elt, p[i],
                                          ValueRange{o[i]}));
  } else {
    SmallVector<Elems> operands;
    for (Value operand : def->getOperands())
      operands.push_back(evalAt(operand, c));
    out = cloneElementwise(def, operands, n);
  }
  memo[key] = out;
  return out;
}

Value Distributor::smemPtr(Value flat, Type elt) {
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext(), 3);
  return b.create<LLVM::GEPOp>(loc(), ptrTy, elt, smemBase, ValueRange{flat});
}

/// Moves a materialized tile to other coordinates through shared memory:
/// every thread writes what it owns, then reads what it needs.
Elems Distributor::gather(Value v, const Coords &c) {
  auto shape = shapeOf(v.getType());
  Layout l = layoutOf(shape);
  Type elt = elementType(v.getType());
  bool isBool = elt.isInteger(1);
  Type memElt = isBool ? b.getI8Type() : elt;
  int64_t bytes = std::max<unsigned>(1, memElt.getIntOrFloatBitWidth() / 8);
  smemBytes = std::max(smemBytes, l.elems * bytes);
  const Coords &own = coordsOf(v);
  Elems &vals = get(v);
  for (size_t s = 0; s < vals.size(); ++s) {
    Value x = vals[s];
    if (isBool)
      x = b.create<arith::ExtUIOp>(loc(), memElt, x);
    b.create<LLVM::StoreOp>(loc(), x, smemPtr(flatOf(own.at[s], shape), memElt));
  }
  barrier();
  Elems out;
  for (auto &slot : c.at) {
    Value x = b.create<LLVM::LoadOp>(loc(), memElt,
                                     smemPtr(flatOf(slot, shape), memElt));
    if (isBool)
      x = b.create<arith::TruncIOp>(loc(), elt, x);
    out.push_back(x);
  }
  barrier();
  return out;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// Scalars a load gives where its mask is false.
static Value zeroOf(OpBuilder &b, Location loc, Type t) {
  return b.create<arith::ConstantOp>(loc, b.getZeroAttr(t));
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

  // The widest access AxisInfo allows: contiguous, aligned, one mask value.
  int64_t width = 1;
  if (auto shape = shapeOf(op.getType()); !shape.empty() && !isBool) {
    Layout l = layoutOf(shape);
    AxisInfo pi = axis.get(op.getPtr());
    width = std::min({l.vec, pi.contiguity,
                      std::max<int64_t>(1, pi.divisibility / bytes),
                      16 / bytes});
    if (op.getMask())
      width = std::min(width, axis.get(op.getMask()).constancy);
    width = std::max<int64_t>(width, 1);
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
      Value x = width == 1 ? loaded
                           : b.create<LLVM::ExtractElementOp>(loc(), loaded,
                                                              i32(i))
                                 .getResult();
      if (isBool)
        x = b.create<arith::TruncIOp>(loc(), elt, x);
      out.push_back(x);
    }
  }
  dist[op.getResult()] = out;
  return success();
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
  Elems ptrs = isTile ? evalAt(op.getPtr(), *at) : get(op.getPtr());
  Elems vals = isTile ? evalAt(op.getValue(), *at) : get(op.getValue());
  Elems masks = !op.getMask()  ? Elems()
                : isTile ? evalAt(op.getMask(), *at)
                         : get(op.getMask());
  size_t n = ptrs.size();

  int64_t width = 1;
  Value replicaGuard;
  if (isTile && !canonicalAt) {
    // Tensor-core layout: element pairs (2k, 2k+1) are adjacent columns.
    AxisInfo pi = axis.get(op.getPtr());
    width = std::min({int64_t(2), pi.contiguity,
                      std::max<int64_t>(1, pi.divisibility / bytes)});
    if (op.getMask())
      width = std::min(width, axis.get(op.getMask()).constancy);
    if (isBool)
      width = 1;
  } else if (auto shape = shapeOf(op.getPtr().getType()); !shape.empty()) {
    Layout l = layoutOf(shape);
    if (!isBool) {
      AxisInfo pi = axis.get(op.getPtr());
      width = std::min({l.vec, pi.contiguity,
                        std::max<int64_t>(1, pi.divisibility / bytes),
                        16 / bytes});
      if (op.getMask())
        width = std::min(width, axis.get(op.getMask()).constancy);
      width = std::max<int64_t>(width, 1);
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
  case ReduceKind::Argmax:
    break;
  }
  llvm_unreachable("argmax combines pairs");
}

LogicalResult Distributor::lowerReduce(ReduceOp op) {
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
    // Take the later element only if strictly greater: first max wins.
    Value gt = b.create<arith::CmpFOp>(loc(), arith::CmpFPredicate::OGT, v, acc);
    if (!isa<FloatType>(elt))
      gt = b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::sgt, v, acc);
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
      auto shfl = [&](Value x) {
        return b
            .create<gpu::ShuffleOp>(loc(), x, i32(1 << bit), i32(32),
                                    gpu::ShuffleMode::XOR)
            .getShuffleResult();
      };
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
    wr = b.create<arith::OrIOp>(
        loc(), wr, b.create<arith::ShLIOp>(loc(), bitv, i32(i)));
  }

  SmallVector<int64_t> outShape(shape);
  outShape.erase(outShape.begin() + ax);
  int64_t outElems = 1;
  for (int64_t d : outShape)
    outElems *= d;
  int64_t valBytes = elt.getIntOrFloatBitWidth() / 8;
  smemBytes = std::max(smemBytes, outElems * nWarps * (valBytes + (arg ? 4 : 0)));
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
            loc(), LLVM::LLVMPointerType::get(b.getContext(), 3), elt,
            smemBase, ValueRange{idxBase});
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

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

/// Concatenates the per-thread elements of `values`, remembering each one's
/// count so results can be split again.
static Elems flatten(ArrayRef<Elems> parts,
                     SmallVectorImpl<size_t> &sizes) {
  Elems out;
  for (const Elems &p : parts) {
    sizes.push_back(p.size());
    out.append(p.begin(), p.end());
  }
  return out;
}

/// The layout a loop-carried or branch-carried value should keep: that of
/// what flows into it (a dot result keeps the tensor-core layout across
/// iterations instead of round-tripping through shared memory each time).
const Coords *Distributor::preferredLayout(Value v, int depth) {
  if (depth > 16 || !isa<RankedTensorType>(v.getType()))
    return nullptr;
  if (auto it = assigned.find(v); it != assigned.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  if (!def)
    return nullptr;
  if (isa<RingDotOp, RingDrainOp>(def))
    return wgmmaLayout(shapeOf(v.getType()));
  if (isa<DotOp, SparseDotOp>(def)) {
    auto ml = mmaLayout(shapeOf(v.getType()));
    return succeeded(ml) ? &(*ml)->coords : nullptr;
  }
  unsigned idx = cast<OpResult>(v).getResultNumber();
  if (auto f = dyn_cast<scf::ForOp>(def))
    return preferredLayout(f.getBody()->getTerminator()->getOperand(idx),
                           depth + 1);
  if (auto i = dyn_cast<scf::IfOp>(def))
    return preferredLayout(i.thenYield().getOperand(idx), depth + 1);
  StringRef ns = def->getDialect() ? def->getDialect()->getNamespace() : "";
  if (ns == "arith" || ns == "math")
    for (Value operand : def->getOperands())
      if (operand.getType() == v.getType() ||
          shapeOf(operand.getType()) == shapeOf(v.getType()))
        if (const Coords *c = preferredLayout(operand, depth + 1))
          return c;
  return nullptr;
}

LogicalResult Distributor::lowerFor(scf::ForOp op) {
  // Each iter_arg keeps the layout of the value the body yields for it.
  auto yieldOp = cast<scf::YieldOp>(op.getBody()->getTerminator());
  SmallVector<const Coords *> layouts;
  SmallVector<Elems> inits;
  for (auto [i, v] : llvm::enumerate(op.getInitArgs())) {
    const Coords *l = nullptr;
    if (isa<RankedTensorType>(v.getType())) {
      l = preferredLayout(yieldOp.getOperand(i));
      if (!l)
        l = &canonical(shapeOf(v.getType()));
      inits.push_back(evalAt(v, *l));
    } else {
      inits.push_back(get(v));
    }
    layouts.push_back(l);
  }
  SmallVector<size_t> sizes;
  Elems flatInits = flatten(inits, sizes);
  auto newFor =
      b.create<scf::ForOp>(loc(), get(op.getLowerBound())[0],
                           get(op.getUpperBound())[0], get(op.getStep())[0],
                           flatInits);
  Block *body = newFor.getBody();
  if (!body->empty())
    body->back().erase();
  dist[op.getInductionVar()] = {newFor.getInductionVar()};
  size_t pos = 0;
  for (auto [i, arg] : llvm::enumerate(op.getRegionIterArgs())) {
    Elems e;
    for (size_t j = 0; j < sizes[i]; ++j)
      e.push_back(newFor.getRegionIterArgs()[pos++]);
    dist[arg] = e;
    if (layouts[i])
      assigned[arg] = layouts[i];
  }
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(body);
    auto savedMemo = std::move(memo);
    memo.clear();
    if (failed(lowerBlock(*op.getBody())))
      return failure();
    Elems ys;
    for (auto [i, v] : llvm::enumerate(yieldOp.getOperands())) {
      Elems e = layouts[i] ? evalAt(v, *layouts[i]) : get(v);
      ys.append(e.begin(), e.end());
    }
    b.create<scf::YieldOp>(loc(), ys);
    memo = std::move(savedMemo);
  }
  pos = 0;
  for (auto [i, r] : llvm::enumerate(op.getResults())) {
    Elems e;
    for (size_t j = 0; j < sizes[i]; ++j)
      e.push_back(newFor.getResult(pos++));
    dist[r] = e;
    if (layouts[i])
      assigned[r] = layouts[i];
  }
  return success();
}

LogicalResult Distributor::lowerIf(scf::IfOp op) {
  SmallVector<Type> types;
  SmallVector<size_t> sizes;
  SmallVector<const Coords *> layouts;
  for (auto [i, r] : llvm::enumerate(op.getResults())) {
    const Coords *l = nullptr;
    size_t n = 1;
    if (isa<RankedTensorType>(r.getType())) {
      l = preferredLayout(op.thenYield().getOperand(i));
      if (!l)
        l = &canonical(shapeOf(r.getType()));
      n = l->at.size();
    }
    layouts.push_back(l);
    sizes.push_back(n);
    Type t = elementType(r.getType());
    if (isa<PointerType>(t))
      t = LLVM::LLVMPointerType::get(b.getContext(), 1);
    types.append(n, t);
  }
  auto newIf = b.create<scf::IfOp>(loc(), types, get(op.getCondition())[0],
                                   /*withElse=*/true);
  auto lowerRegion = [&](Region &from, Region &to) -> LogicalResult {
    OpBuilder::InsertionGuard guard(b);
    Block *blk = &to.front();
    if (!blk->empty())
      blk->back().erase();
    b.setInsertionPointToEnd(blk);
    auto savedMemo = std::move(memo);
    memo.clear();
    Elems ys;
    if (!from.empty()) {
      if (failed(lowerBlock(from.front())))
        return failure();
      for (auto [i, v] :
           llvm::enumerate(from.front().getTerminator()->getOperands())) {
        Elems e = layouts[i] ? evalAt(v, *layouts[i]) : get(v);
        ys.append(e.begin(), e.end());
      }
    }
    b.create<scf::YieldOp>(loc(), ys);
    memo = std::move(savedMemo);
    return success();
  };
  if (failed(lowerRegion(op.getThenRegion(), newIf.getThenRegion())) ||
      failed(lowerRegion(op.getElseRegion(), newIf.getElseRegion())))
    return failure();
  size_t pos = 0;
  for (auto [i, r] : llvm::enumerate(op.getResults())) {
    Elems e;
    for (size_t j = 0; j < sizes[i]; ++j)
      e.push_back(newIf.getResult(pos++));
    dist[r] = e;
    if (layouts[i])
      assigned[r] = layouts[i];
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult Distributor::lowerBlock(Block &block) {
  for (Operation &op : block.without_terminator())
    if (failed(lowerOp(&op)))
      return failure();
  return success();
}

LogicalResult Distributor::lowerOp(Operation *op) {
  Location l = op->getLoc();
  if (auto p = dyn_cast<ProgramIdOp>(op)) {
    Value v = b.create<gpu::BlockIdOp>(l, gpu::Dimension(p.getAxis()));
    dist[p.getResult()] = {b.create<arith::IndexCastOp>(l, b.getI32Type(), v)};
    return success();
  }
  if (auto p = dyn_cast<NumProgramsOp>(op)) {
    Value v = b.create<gpu::GridDimOp>(l, gpu::Dimension(p.getAxis()));
    dist[p.getResult()] = {b.create<arith::IndexCastOp>(l, b.getI32Type(), v)};
    return success();
  }
  if (auto ld = dyn_cast<LoadOp>(op))
    return lowerLoad(ld);
  if (auto st = dyn_cast<StoreOp>(op))
    return lowerStore(st);
  if (auto rd = dyn_cast<ReduceOp>(op))
    return lowerReduce(rd);
  if (auto dot = dyn_cast<DotOp>(op))
    return lowerDot(dot);
  if (auto sdot = dyn_cast<SparseDotOp>(op))
    return lowerSparseDot(sdot);
  if (auto x = dyn_cast<DescFieldsOp>(op))
    return lowerDescFields(x);
  if (auto x = dyn_cast<RingInitOp>(op))
    return lowerRingInit(x);
  if (auto x = dyn_cast<RingExpectOp>(op))
    return lowerRingExpect(x);
  if (auto x = dyn_cast<RingCopyOp>(op))
    return lowerRingCopy(x);
  if (auto x = dyn_cast<RingWaitOp>(op))
    return lowerRingWait(x);
  if (auto x = dyn_cast<RingAcquireOp>(op))
    return lowerRingAcquire(x);
  if (auto x = dyn_cast<RingDotOp>(op))
    return lowerRingDot(x);
  if (auto x = dyn_cast<RingDrainOp>(op))
    return lowerRingDrain(x);
  if (auto x = dyn_cast<WarpSpecializeOp>(op))
    return lowerWarpSpecialize(x);
  if (auto x = dyn_cast<RingBaseOp>(op))
    return lowerRingBase(x);
  if (auto x = dyn_cast<RingAdvanceOp>(op))
    return lowerRingAdvance(x);
  if (auto f = dyn_cast<scf::ForOp>(op))
    return lowerFor(f);
  if (auto i = dyn_cast<scf::IfOp>(op))
    return lowerIf(i);
  if (auto ed = dyn_cast<ExpandDimsOp>(op); ed && !assigned.count(ed.getSrc())) {
    // Same flat order and same owner: nothing moves.
    Layout from = layoutOf(shapeOf(ed.getSrc().getType()));
    Layout to = layoutOf(shapeOf(ed.getType()));
    if (from.vec == to.vec && from.threads == to.threads) {
      dist[ed.getResult()] = get(ed.getSrc());
      return success();
    }
  }
  // A transpose is evaluated where it is used: dot writes its source to
  // shared memory transposed, and anything else goes through evalAt.
  if (isa<TransOp>(op))
    return success();
  if (isPureIndexOp(op) || isa<arith::ConstantOp>(op)) {
    Value r = op->getResult(0);
    if (!isa<RankedTensorType>(r.getType())) {
      // A scalar op: clone it with scalar operands.
      SmallVector<Elems> operands;
      for (Value v : op->getOperands())
        operands.push_back(get(v));
      if (isa<arith::ConstantOp>(op)) {
        dist[r] = {b.clone(*op)->getResult(0)};
        return success();
      }
      if (auto ap = dyn_cast<AddPtrOp>(op)) {
        Type elt = cast<PointerType>(ap.getType()).getPointee();
        if (elt.isInteger(1))
          elt = b.getI8Type();
        dist[r] = {b.create<LLVM::GEPOp>(
            l, LLVM::LLVMPointerType::get(b.getContext(), 1), elt,
            operands[0][0], ValueRange{operands[1][0]})};
        return success();
      }
      dist[r] = cloneElementwise(op, operands, 1);
      return success();
    }
    // Element-wise math on a value held in another layout (a dot result)
    // stays in that layout; everything else is canonical.
    const Coords *at = &canonical(shapeOf(r.getType()));
    StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
    if (ns == "arith" || ns == "math")
      for (Value operand : op->getOperands())
        if (auto it = assigned.find(operand);
            it != assigned.end() && it->second->shape == at->shape) {
          at = it->second;
          break;
        }
    dist[r] = evalAt(r, *at);
    if (at != &canonical(shapeOf(r.getType())))
      assigned[r] = at;
    return success();
  }
  return op->emitOpError("cannot be distributed over threads");
}

LogicalResult Distributor::run(gpu::GPUModuleOp module) {
  MLIRContext *ctx = src.getContext();
  gpuModule = module;
  if (auto w = src->getAttrOfType<IntegerAttr>(kNumWarpsAttr))
    numThreads = w.getInt() * 32;
  // One vector width for the whole kernel: 16 bytes of the narrowest type
  // it moves through global memory.
  int64_t minBytes = 4;
  src.walk([&](Operation *op) {
    Value p = isa<LoadOp>(op) ? cast<LoadOp>(op).getPtr()
              : isa<StoreOp>(op) ? cast<StoreOp>(op).getPtr()
                                 : Value();
    if (!p || !isa<RankedTensorType>(p.getType()))
      return;
    Type e = cast<PointerType>(elementType(p.getType())).getPointee();
    minBytes = std::min<int64_t>(
        minBytes, std::max<unsigned>(1, e.getIntOrFloatBitWidth() / 8));
  });
  vecElems = std::min<int64_t>(8, 16 / minBytes);

  // Every element a thread owns becomes straight-line code: a huge tile
  // would compile for minutes and spill. Refuse it with the op's location.
  constexpr int64_t kMaxPerThread = 1024;
  WalkResult tooBig = src.walk([&](Operation *op) {
    for (Type t : op->getResultTypes()) {
      auto shape = shapeOf(t);
      if (shape.empty())
        continue;
      int64_t elems = 1;
      for (int64_t d : shape)
        elems *= d;
      if (elems / numThreads > kMaxPerThread) {
        op->emitError() << "a tile of " << elems << " elements over "
                        << numThreads << " threads is " << elems / numThreads
                        << " elements per thread; the limit is "
                        << kMaxPerThread
                        << " (use a smaller tile or more warps)";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  if (tooBig.wasInterrupted())
    return failure();

  // A warp-specialized kernel has a producer warpgroup besides the
  // numThreads threads its tiles are spread over.
  int64_t blocksPerSM = 1, producerThreads = 0;
  src.walk([&](WarpSpecializeOp ws) {
    specialized = true;
    blocksPerSM = ws.getBlocksPerSm();
    producerThreads = 32 * ws.getProducerWarps();
  });
  int64_t blockThreads = numThreads + producerThreads;

  // The gpu.func, with pointers in the global address space.
  SmallVector<Type> argTypes;
  for (Type t : src.getArgumentTypes())
    argTypes.push_back(isa<PointerType, DescType>(t)
                           ? Type(LLVM::LLVMPointerType::get(ctx, 1))
                           : t);
  b.setInsertionPointToEnd(module.getBody());
  auto gfunc = b.create<gpu::GPUFuncOp>(src.getLoc(), src.getName(),
                                        b.getFunctionType(argTypes, {}));
  gfunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  gfunc.setKnownBlockSizeAttr(
      b.getDenseI32ArrayAttr({int32_t(blockThreads), 1, 1}));
  gfunc->setAttr("nvvm.maxntid",
                 b.getDenseI32ArrayAttr({int32_t(blockThreads), 1, 1}));
  // setmaxnreg only takes effect under a register cap at entry, which
  // .maxntid with .minnctapersm B gives (64 K registers / (B x block)).
  if (specialized)
    gfunc->setAttr("nvvm.minctasm", b.getI32IntegerAttr(int32_t(blocksPerSM)));
  Block &body = gfunc.getBody().front();
  for (unsigned i = 0; i < src.getNumArguments(); ++i)
    dist[src.getArgument(i)] = {body.getArgument(i)};

  // The prologue: thread id and shared memory base; a marker separates it
  // from the body so `entry` keeps inserting before the first body op.
  b.setInsertionPointToStart(&body);
  Value tidIndex = b.create<gpu::ThreadIdOp>(src.getLoc(), gpu::Dimension::x);
  tid = b.create<arith::IndexCastOp>(src.getLoc(), b.getI32Type(), tidIndex);
  smemBase = b.create<LLVM::AddressOfOp>(
      src.getLoc(), LLVM::LLVMPointerType::get(ctx, 3), kSmemSymbol);
  if (auto ring = src->getAttrOfType<RingAttr>(kRingAttr)) {
    ringStages = ring.getStages();
    ringStageBytes = ring.getStageBytes();
    Location l = src.getLoc();
    auto c = [&](int64_t v) -> Value {
      return b.create<arith::ConstantOp>(l, b.getI32IntegerAttr(int32_t(v)));
    };
    Value addr = b.create<arith::TruncIOp>(
        l, b.getI32Type(),
        b.create<LLVM::PtrToIntOp>(l, b.getI64Type(), smemBase));
    ringBase = b.create<arith::AndIOp>(
        l, b.create<arith::AddIOp>(l, addr, c(1023)), c(~int64_t(1023)));
    leader = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::eq, tid, c(0));
    smemBytes = ringStages * (ringStageBytes + 16) + 1024;
    if (specialized) {
      // The producer refills the ring while the consumers run an
      // epilogue: their exchanges go after the ring, not over it.
      ringBytes = smemBytes;
      smemBytes = 0;
      smemBase = b.create<LLVM::GEPOp>(
          l, smemBase.getType(), b.getI8Type(), smemBase,
          ArrayRef<LLVM::GEPArg>{int32_t(ringBytes)});
      ringCount = b.create<LLVM::AllocaOp>(
          l, LLVM::LLVMPointerType::get(ctx), b.getI32Type(), c(1));
      b.create<LLVM::StoreOp>(l, c(0), ringCount);
    }
  }
  Operation *marker =
      b.create<arith::ConstantOp>(src.getLoc(), b.getI32IntegerAttr(0));
  entry.setInsertionPoint(marker);
  b.setInsertionPointToEnd(&body);

  if (failed(lowerBlock(src.getBody().front())))
    return failure();
  b.create<gpu::ReturnOp>(src.getLoc());
  marker->erase();
  smemBytes += ringBytes;
  constexpr int64_t kSmemLimit = 227 * 1024;
  if (smemBytes > kSmemLimit)
    return src.emitError("the kernel needs ")
           << smemBytes << " bytes of shared memory (the ring and "
           << smemBytes - ringBytes << " bytes of exchanges); an SM has "
           << kSmemLimit << " (use fewer stages or smaller tiles)";

  // Shared memory, sized by the largest exchange (or the TMA ring). Static
  // up to the 48 KB limit of static shared memory, dynamic beyond (the
  // runtime passes the size at launch and opts the kernel in).
  OpBuilder mb(ctx);
  mb.setInsertionPointToStart(module.getBody());
  constexpr int64_t kStaticLimit = 48 * 1024;
  bool dynamic = smemBytes > kStaticLimit;
  auto arrayTy = LLVM::LLVMArrayType::get(
      mb.getI8Type(), dynamic ? 0 : std::max<int64_t>(smemBytes, 16));
  mb.create<LLVM::GlobalOp>(
      src.getLoc(), arrayTy, /*isConstant=*/false,
      dynamic ? LLVM::Linkage::External : LLVM::Linkage::Internal, kSmemSymbol,
      Attribute(), /*alignment=*/16, /*addrSpace=*/3);
  gfunc->setAttr(kLaunchAttr,
                 LaunchAttr::get(ctx, blockThreads, dynamic ? 0 : smemBytes,
                                 dynamic ? smemBytes : 0, minPtx));
  return success();
}

namespace {
struct TileToGPUPass : public sparsetile::impl::TileToGPUBase<TileToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> kernels;
    for (auto f : module.getOps<func::FuncOp>())
      if (f->hasAttr(kKernelAttr))
        kernels.push_back(f);
    OpBuilder b(module.getContext());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    b.getUnitAttr());
    for (func::FuncOp f : kernels) {
      b.setInsertionPointToEnd(module.getBody());
      auto gm = b.create<gpu::GPUModuleOp>(f.getLoc(),
                                           (f.getName() + "_module").str());
      AxisInfoAnalysis axis(f);
      Distributor d(f, axis);
      if (failed(d.run(gm)))
        return signalPassFailure();
      f.erase();
    }
  }
};
} // namespace
