//===- Layouts.cpp - Thread layouts and per-thread values -----------------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Holds where each element of a tile lives (the canonical
// layout of a shape, the coordinates of every slot) and how the elements a
// thread owns are obtained: looked up, recomputed at other coordinates when
// the value is a pure function of indices, or gathered through shared memory
// when it is not (Exchange.cpp). Element-wise ops are cloned once per slot
// here, because evaluating a value at given coordinates is what makes them
// element-wise.
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/Hashing.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

//===----------------------------------------------------------------------===//
// Layout helpers
//===----------------------------------------------------------------------===//

Layout Distributor::layoutOf(ArrayRef<int64_t> shape, int64_t vec) const {
  Layout l;
  l.shape.assign(shape.begin(), shape.end());
  for (int64_t d : shape)
    l.elems *= d;
  if (shape.empty())
    return l;
  l.vec = std::min<int64_t>(vec ? vec : vecElems, shape.back());
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
    t = entry.create<arith::AndIOp>(loc(), t,
                                    cst(l.threads - 1, tid.getType()));
  if (l.vec > 1)
    t = entry.create<arith::ShLIOp>(loc(), t,
                                    cst(llvm::Log2_64(l.vec), tid.getType()));
  tidTerms[key] = t;
  return t;
}

const Coords &Distributor::canonical(ArrayRef<int64_t> shape, int64_t vec) {
  // Keyed by the run the shape allows: a request for runs longer than its
  // last dimension is the same layout.
  Layout l = layoutOf(shape, vec);
  auto key = std::make_pair(SmallVector<int64_t>(shape), l.vec);
  auto it = canonicalCoords.find(key);
  if (it != canonicalCoords.end())
    return *it->second;
  auto c = std::make_unique<Coords>();
  c->shape = key.first;
  c->blockedVec = l.vec;
  Value tt = tidTerm(l);
  Type i32t = entry.getI32Type();
  int64_t vecBits = llvm::Log2_64(l.vec);
  for (int64_t s = 0; s < l.perThread(); ++s) {
    // The slot's flat index is tt | k: the thread's part, whose low vecBits
    // bits are zero, and the slot's constant part k. Above the chunk only
    // k's repetition bits count: slots of one chunk share that index, so
    // CSE leaves one copy of what they compute from it (a row's search in a
    // [N, 4] tile held whole by its thread).
    int64_t k = l.constFlat(s);
    Value flat, flatAbove;
    auto flatIndex = [&](bool above) {
      Value &v = above ? flatAbove : flat;
      int64_t part = above ? k & ~(l.vec - 1) : k;
      if (!v)
        v = part ? Value(entry.create<arith::OrIOp>(loc(), tt, cst(part, i32t)))
                 : tt;
      return v;
    };
    SmallVector<Value> dims;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t lo = l.shift(d), bits = llvm::Log2_64(shape[d]);
      // Inside the chunk (the flat index's low vecBits bits), a coordinate
      // is the same in every thread: a constant, so that what a slot
      // computes from it (shift amounts, byte positions) folds before LLVM
      // sees it.
      if (d > 0 && lo + bits <= vecBits) {
        dims.push_back(cst((k >> lo) & (shape[d] - 1), i32t));
        continue;
      }
      Value v = flatIndex(lo >= vecBits);
      if (lo)
        v = entry.create<arith::ShRUIOp>(loc(), v, cst(lo, i32t));
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
// Layouts in the IR
//===----------------------------------------------------------------------===//

const Coords *Distributor::coordsFor(Type t) {
  Attribute enc = encodingOf(t);
  auto shape = shapeOf(t);
  if (!enc || shape.empty())
    return nullptr;
  if (auto bl = dyn_cast<BlockedLayoutAttr>(enc)) {
    Layout l = layoutOf(shape, bl.getVec());
    if (l.vec != bl.getVec() || l.threads != bl.getThreads())
      return nullptr;
    return &canonical(shape, l.vec);
  }
  if (shape.size() == 2)
    if (auto mma = dyn_cast<MmaLayoutAttr>(enc)) {
      auto ml = mmaLayout(shape, mma.getWarpsM(), mma.getWarpsN());
      if (failed(ml))
        return nullptr;
      return &(*ml)->coords;
    }
  if (shape.size() == 2 && isa<WgmmaLayoutAttr>(enc) &&
      wgmmaGroups(shape[0], shape[1], numThreads) ==
          cast<WgmmaLayoutAttr>(enc).getGroups())
    return wgmmaLayout(shape);
  if (auto sl = dyn_cast<SliceLayoutAttr>(enc)) {
    if (sl.getAxis() < 0 || sl.getAxis() > int64_t(shape.size()))
      return nullptr;
    SmallVector<int64_t> parentShape(shape);
    parentShape.insert(parentShape.begin() + sl.getAxis(), sl.getSize());
    const Coords *parent = coordsFor(RankedTensorType::get(
        parentShape, elementType(t), sl.getParent()));
    if (!parent)
      return nullptr;
    if (int64_t vec = parent->blockedVec;
        vec && reducesInThread(parentShape, sl.getAxis(), layoutParams(vec)))
      return &inThreadSlice(parentShape, sl.getAxis(), vec);
    const HeldReduction *h = heldReduction(*parent, sl.getAxis());
    return h ? &h->out : nullptr;
  }
  return nullptr;
}

LogicalResult Distributor::checkLayouts(Operation *op) {
  for (Value r : op->getResults()) {
    Attribute enc = encodingOf(r.getType());
    // Unlaid-out IR (tile-opt tests of this pass alone); broadcasts left to
    // their users; transposes evaluated where used.
    if (!enc || deferred.count(r) || (!dist.count(r) && !assigned.count(r)))
      continue;
    if (&coordsOf(r) != coordsFor(r.getType()))
      return op->emitOpError("is held in another layout than its type's ")
             << enc
             << " (tile-assign-layouts gives each op the layout lowering "
                "holds it in; a type written by hand or by another pass "
                "must too)";
    // What a pattern wrote is what the type converter says a thread holds.
    auto it = dist.find(r);
    std::optional<int64_t> n = converter->elementsPerThread(r.getType());
    if (it != dist.end() && (!n || size_t(*n) != it->second.size()))
      return op->emitOpError("holds ")
             << it->second.size() << " elements a thread where its type "
             << r.getType() << " has " << (n ? *n : int64_t(-1))
             << " (an internal error of convert-tile-to-gpu)";
  }
  return success();
}

LogicalResult Distributor::lowerConvertLayout(ConvertLayoutOp op) {
  const Coords *at = coordsFor(op.getType());
  if (!at)
    return op.emitOpError("cannot hold a tile of this shape in ")
           << encodingOf(op.getType());
  Value r = op.getResult();
  dist[r] = evalAt(op.getSrc(), *at);
  if (at != &canonical(shapeOf(r.getType())))
    assigned[r] = at;
  return success();
}

/// Shape ops whose source is already where the result's layout wants it
/// (or is wanted elsewhere anyway) cost nothing here; the others are pure
/// and evaluated at their result's coordinates.
LogicalResult Distributor::lowerShapeOp(Operation *op) {
  // A row vector held in a tensor-core layout (a reduction of a dot's
  // result: attention's row max) broadcast back over its rows is evaluated
  // where it is used, at the user's coordinates, where every thread holds
  // its rows already; lowered here it would move through shared memory
  // into the canonical layout, which nothing reads.
  if (isa<ExpandDimsOp, BroadcastOp>(op) &&
      (assigned.count(op->getOperand(0)) ||
       deferred.count(op->getOperand(0)))) {
    deferred.insert(op->getResult(0));
    return success();
  }
  if (auto ed = dyn_cast<ExpandDimsOp>(op);
      ed && !assigned.count(ed.getSrc())) {
    // Same flat order and same owner: nothing moves.
    Layout from = layoutOf(shapeOf(ed.getSrc().getType()));
    Layout to = layoutOf(shapeOf(ed.getType()));
    if (from.vec == to.vec && from.threads == to.threads) {
      // Copied out first: get() returns a reference into `dist`, which the
      // insertion below may reallocate (ASan heap-use-after-free, found by
      // fuzz_compile).
      Elems src = get(ed.getSrc());
      dist[ed.getResult()] = std::move(src);
      return success();
    }
  }
  if (auto rs = dyn_cast<ReshapeOp>(op); rs && !assigned.count(rs.getSrc())) {
    // Shapes whose canonical layouts have the same vector width and thread
    // count give every flat index the same owner and slot: nothing moves.
    // Other reshapes are evaluated at the result's coordinates (evalAt),
    // through shared memory for a materialized source.
    Layout from = layoutOf(shapeOf(rs.getSrc().getType()));
    Layout to = layoutOf(shapeOf(rs.getType()));
    if (from.vec == to.vec && from.threads == to.threads &&
        dist.count(rs.getSrc())) {
      Elems src = get(rs.getSrc());
      dist[rs.getResult()] = std::move(src);
      return success();
    }
  }
  // A transpose is evaluated where it is used: dot writes its source to
  // shared memory transposed, and anything else goes through evalAt.
  if (isa<TransOp>(op))
    return success();
  return lowerPure(op);
}

LogicalResult Distributor::lowerPure(Operation *op) {
  Location l = op->getLoc();
  Value r = op->getResult(0);
  if (!isa<RankedTensorType>(r.getType())) {
    // A scalar op: clone it with scalar operands.
    SmallVector<Elems> operands;
    for (Value v : op->getOperands())
      operands.push_back(get(v));
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      dist[r] = {isFP8(r.getType()) ? constantOf(cast<TypedAttr>(c.getValue()))
                                    : b.clone(*op)->getResult(0)};
      return success();
    }
    if (isa<tile::AssumeOp>(op)) { // A promise to AxisInfo: the value itself.
      dist[r] = operands[0];
      return success();
    }
    if (auto ap = dyn_cast<AddPtrOp>(op)) {
      Type elt = regType(cast<PointerType>(ap.getType()).getPointee());
      if (elt.isInteger(1))
        elt = b.getI8Type();
      dist[r] = {b.create<LLVM::GEPOp>(
          l, LLVM::LLVMPointerType::get(b.getContext(), 1), elt, operands[0][0],
          ValueRange{operands[1][0]})};
      return success();
    }
    dist[r] = cloneElementwise(op, operands, 1);
    return success();
  }
  // Where the result's layout says: element-wise math on a value held in
  // another layout (a dot result) stays in it (tile-assign-layouts).
  const Coords *at = coordsFor(r.getType());
  if (!at)
    return op->emitOpError("cannot hold its result in ")
           << encodingOf(r.getType());
  dist[r] = evalAt(r, *at);
  if (at != &canonical(shapeOf(r.getType())))
    assigned[r] = at;
  return success();
}

void Distributor::populateLayoutPatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerConvertLayout);
  p.addEach<ExpandDimsOp, BroadcastOp, ReshapeOp, TransOp>(
      &Distributor::lowerShapeOp);
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Elems &Distributor::get(Value v) {
  auto it = dist.find(v);
  if (it == dist.end() && deferred.count(v)) {
    // A broadcast left to its users (lowerShapeOp), wanted whole after all.
    Elems e = evalAt(v, canonical(shapeOf(v.getType())));
    it = dist.try_emplace(v, std::move(e)).first;
  }
  assert(it != dist.end() && "value used before it was lowered");
  return it->second;
}

const Coords &Distributor::coordsOf(Value v) {
  if (auto it = assigned.find(v); it != assigned.end())
    return *it->second;
  return canonical(shapeOf(v.getType()));
}

/// Whether evaluating pure `v` at other coordinates would repeat more than
/// kRecomputeLimit operations of its defining chain (loads and other
/// materialized values end it). Index expressions take a few dozen at
/// most; a Philox expansion takes hundreds, which one exchange through
/// shared memory beats (bench/NOTES.md, "mvue24's shared Philox").
bool Distributor::costlyToRecompute(Value v) {
  if (auto it = costly.find(v); it != costly.end())
    return it->second;
  llvm::SmallPtrSet<Operation *, 32> seen;
  SmallVector<Value> work{v};
  bool result = false;
  while (!work.empty() && !result) {
    Value x = work.pop_back_val();
    Operation *d = x.getDefiningOp();
    if (!isa<RankedTensorType>(x.getType()) || !d || !isPureIndexOp(d) ||
        !seen.insert(d).second)
      continue;
    result = int64_t(seen.size()) > kRecomputeLimit;
    for (Value o : d->getOperands())
      work.push_back(o);
  }
  costly[v] = result;
  return result;
}

/// Ops that generate indices or rearrange elements, with no arithmetic of
/// their own: evaluating one elsewhere costs what evaluating its source
/// does.
bool Distributor::isShapeOp(Operation *op) {
  return isa<ArangeOp, SplatOp, ExpandDimsOp, BroadcastOp, TransOp, ReshapeOp,
             tile::AssumeOp, ConvertLayoutOp>(op);
}

bool Distributor::isPureIndexOp(Operation *op) {
  if (isShapeOp(op) || isa<AddPtrOp>(op))
    return true;
  StringRef ns = op->getDialect() ? op->getDialect()->getNamespace() : "";
  // ub.poison: a ring loop's unused initial accumulator (PipelineTMA.cpp).
  return (ns == "arith" || ns == "math" || ns == "ub") &&
         op->getNumRegions() == 0 && op->getNumResults() == 1;
}

Value Distributor::constantOf(TypedAttr attr) {
  if (auto f = dyn_cast<FloatAttr>(attr); f && isFP8(f.getType()))
    attr = b.getIntegerAttr(b.getI8Type(),
                            f.getValue().bitcastToAPInt().getZExtValue());
  return b.create<arith::ConstantOp>(loc(), attr);
}

Elems Distributor::convertFP8(Type from, Type to, const Elems &x, size_t n) {
  // LLVM selects the fp8 cvt instructions on sm_89 from PTX ISA 8.1 on (on
  // sm_90 from 7.8): a kernel that converts asks for 8.1.
  minPtx = std::max<int64_t>(minPtx, 81);
  Location l = loc();
  auto at = [&](const Elems &e, size_t i) { return e.size() == 1 ? e[0] : e[i]; };
  auto floatWidth = [](Type t) { return cast<FloatType>(t).getWidth(); };
  // Element-wise between two non-fp8 float types, through f32 where neither
  // holds the other (f16 <-> bf16).
  auto plain = [&](Type f, Type t, const Elems &e) {
    Elems out;
    for (size_t i = 0; i < n; ++i) {
      Value v = at(e, i);
      if (f == t) {
        out.push_back(v);
        continue;
      }
      if (floatWidth(f) == 16 && floatWidth(t) == 16)
        v = b.create<arith::ExtFOp>(l, b.getF32Type(), v);
      if (floatWidth(f) < floatWidth(t))
        out.push_back(b.create<arith::ExtFOp>(l, t, v));
      else if (v.getType() != t)
        out.push_back(b.create<arith::TruncFOp>(l, t, v));
      else
        out.push_back(v);
    }
    return out;
  };
  auto f16 = b.getF16Type(), f32 = b.getF32Type();
  Elems cur(x.begin(), x.end());
  Type curTy = from;
  if (isFP8(from)) {
    // 1. fp8 pairs -> f16x2 (cvt.rn.f16x2.e4m3x2 / .e5m2x2), exact.
    auto halfTy = VectorType::get({2}, f16);
    Elems wide;
    for (size_t i = 0; i < n; i += 2) {
      Value lo = at(cur, i), hi = i + 1 < n ? at(cur, i + 1) : lo;
      Value h = NVVM::ConvertF8x2ToF16x2Op::create(
          b, l, halfTy, packVector(b, l, {lo, hi}), /*relu=*/false, from);
      for (size_t j = 0; j < 2 && i + j < n; ++j)
        wide.push_back(b.create<LLVM::ExtractElementOp>(l, h, i32(int32_t(j))));
    }
    if (!isFP8(to))
      return plain(f16, to, wide);
    cur = std::move(wide);
    curTy = f16;
  }
  // 2. to fp8 from f32 pairs (cvt.rn.satfinite.e4m3x2.f32 / .e5m2x2),
  // rounding once; other float types reach f32 first.
  Elems single = plain(curTy, f32, cur);
  Elems out;
  auto bytesTy = VectorType::get({2}, b.getI8Type());
  for (size_t i = 0; i < n; i += 2) {
    Value lo = single[i], hi = i + 1 < n ? single[i + 1] : lo;
    // The instruction puts its first operand in the high byte.
    Value p = NVVM::ConvertF32x2ToF8x2Op::create(
        b, l, bytesTy, hi, lo, NVVM::FPRoundingMode::RN,
        NVVM::SaturationMode::SATFINITE, /*relu=*/false, to);
    for (size_t j = 0; j < 2 && i + j < n; ++j)
      out.push_back(b.create<LLVM::ExtractElementOp>(l, p, i32(int32_t(j))));
  }
  return out;
}

Elems Distributor::cloneElementwise(Operation *op, ArrayRef<Elems> operands,
                                    size_t n) {
  Elems out;
  Type rt = elementType(op->getResult(0).getType());
  // fp8 conversions run on pairs of elements; fp8 values are i8 bits, so a
  // bitcast to or from i8 moves nothing.
  if (isa<arith::ExtFOp, arith::TruncFOp>(op)) {
    Type from = elementType(op->getOperand(0).getType());
    if (isFP8(from) || isFP8(rt))
      return convertFP8(from, rt, operands[0], n);
  }
  if (isa<arith::BitcastOp>(op) &&
      regType(elementType(op->getOperand(0).getType())) == regType(rt)) {
    for (size_t i = 0; i < n; ++i)
      out.push_back(operands[0].size() == 1 ? operands[0][0] : operands[0][i]);
    return out;
  }
  if (auto c = dyn_cast<arith::ConstantOp>(op); c && isFP8(rt))
    return Elems(n, constantOf(cast<TypedAttr>(c.getValue())));
  rt = regType(rt);
  // Pointer elements (a select between pointer tiles) are global pointers.
  if (isa<PointerType>(rt))
    rt = LLVM::LLVMPointerType::get(b.getContext(), 1);
  // The GPU-to-NVVM patterns turn f32 math.sqrt into sqrt.approx; the DSL
  // promises CUDA's default, a correctly rounded sqrt: libdevice's
  // __nv_fsqrt_rn.
  if (isa<math::SqrtOp>(op) && rt.isF32()) {
    auto fn = libdeviceFunction("__nv_fsqrt_rn", rt);
    for (size_t i = 0; i < n; ++i) {
      const Elems &e = operands[0];
      out.push_back(
          b.create<LLVM::CallOp>(op->getLoc(), fn,
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
  return mb.create<LLVM::LLVMFuncOp>(gpuModule.getLoc(), name,
                                     LLVM::LLVMFunctionType::get(type, {type}));
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
  // Index arithmetic is recomputed at the new coordinates; a long pure
  // chain that is already materialized (a Philox expansion feeding a
  // reshape) moves instead, as a loaded value does. Shape ops pass the
  // question on to their source, so the move happens once, at the
  // arithmetic.
  if (!def || !isPureIndexOp(def) ||
      (!isShapeOp(def) && dist.count(v) && costlyToRecompute(v))) {
    // A materialized value at other coordinates: every thread may already
    // hold the elements it needs (an in-thread reduction read back at its
    // rows, a [Q, 1] tile at the rows of a [Q, N] one); if not, move it
    // through shared memory.
    if (std::optional<Elems> held = heldAt(v, c))
      out = std::move(*held);
    else
      out = gather(v, c);
  } else if (auto ar = dyn_cast<ArangeOp>(def)) {
    for (auto &slot : c.at)
      out.push_back(ar.getStart() == 0
                        ? slot[0]
                        : b.create<arith::AddIOp>(loc(), slot[0],
                                                  i32(int32_t(ar.getStart())))
                              .getResult());
  } else if (auto sp = dyn_cast<SplatOp>(def)) {
    out = Elems(n, get(sp.getSrc())[0]);
  } else if (auto cstOp = dyn_cast<arith::ConstantOp>(def)) {
    auto dense = cast<DenseElementsAttr>(cstOp.getValue());
    out = Elems(n, constantOf(cast<TypedAttr>(dense.getSplatValue<Attribute>())));
  } else if (auto as = dyn_cast<tile::AssumeOp>(def)) {
    out = evalAt(as.getSrc(), c); // A promise to AxisInfo, nothing to run.
  } else if (auto cv = dyn_cast<ConvertLayoutOp>(def)) {
    out = evalAt(cv.getSrc(), c); // The same tile, wherever it is wanted.
  } else if (auto tr = dyn_cast<TransOp>(def)) {
    Coords &sc = derivedCoords.emplace_back();
    sc.shape = {c.shape[1], c.shape[0]};
    for (auto &slot : c.at)
      sc.at.push_back({slot[1], slot[0]});
    out = evalAt(tr.getSrc(), sc);
  } else if (auto rs = dyn_cast<ReshapeOp>(def)) {
    // Row-major order is kept: the source element at the same flat index.
    auto srcShape = shapeOf(rs.getSrc().getType());
    Layout sl = layoutOf(srcShape);
    Coords &sc = derivedCoords.emplace_back();
    sc.shape.assign(srcShape.begin(), srcShape.end());
    for (auto &slot : c.at) {
      Value flat = flatOf(slot, c.shape);
      SmallVector<Value> d;
      for (size_t i = 0; i < srcShape.size(); ++i) {
        Value v = flat;
        if (int64_t sh = sl.shift(i))
          v = b.create<arith::ShRUIOp>(loc(), v, i32(sh));
        if (i > 0)
          v = b.create<arith::AndIOp>(loc(), v, i32(srcShape[i] - 1));
        d.push_back(v);
      }
      sc.at.push_back(d);
    }
    out = evalAt(rs.getSrc(), sc);
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
    Type elt = regType(cast<PointerType>(elementType(ap.getType())).getPointee());
    if (elt.isInteger(1))
      elt = b.getI8Type();
    auto ptrTy = LLVM::LLVMPointerType::get(b.getContext(), 1);
    for (size_t i = 0; i < n; ++i)
      out.push_back(
          b.create<LLVM::GEPOp>(loc(), ptrTy, elt, p[i], ValueRange{o[i]}));
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
  elt = regType(elt);
  auto ptrTy = LLVM::LLVMPointerType::get(b.getContext(), 3);
  return b.create<LLVM::GEPOp>(loc(), ptrTy, elt, smemBase, ValueRange{flat});
}

/// The value of the i32 coordinate `coord` in each thread t < numThreads,
/// when it is computed from the thread id and constants alone (as the
/// layouts' coordinates are); null otherwise.
const SmallVector<int32_t> *Distributor::perThread(Value coord) {
  if (auto it = threadValues.find(coord); it != threadValues.end())
    return it->second.get();
  std::unique_ptr<SmallVector<int32_t>> out;
  auto known = [&](Value x) { return x == coord ? nullptr : perThread(x); };
  if (coord == tid) {
    out = std::make_unique<SmallVector<int32_t>>();
    for (int64_t t = 0; t < numThreads; ++t)
      out->push_back(int32_t(t));
  } else if (Operation *def = coord.getDefiningOp();
             def && coord.getType().isInteger(32)) {
    if (auto c = dyn_cast<arith::ConstantOp>(def)) {
      if (auto ia = dyn_cast<IntegerAttr>(c.getValue()))
        out = std::make_unique<SmallVector<int32_t>>(numThreads,
                                                     int32_t(ia.getInt()));
    } else if (def->getNumOperands() == 2 &&
               isa<arith::AndIOp, arith::OrIOp, arith::XOrIOp, arith::ShLIOp,
                   arith::ShRUIOp, arith::ShRSIOp, arith::AddIOp, arith::SubIOp,
                   arith::MulIOp, arith::DivUIOp, arith::RemUIOp>(def)) {
      const SmallVector<int32_t> *x = known(def->getOperand(0));
      const SmallVector<int32_t> *y = x ? known(def->getOperand(1)) : nullptr;
      if (y) {
        out = std::make_unique<SmallVector<int32_t>>(numThreads);
        for (int64_t t = 0; t < numThreads && out; ++t) {
          uint32_t a = uint32_t((*x)[t]), c = uint32_t((*y)[t]);
          uint32_t r = 0;
          if (isa<arith::AndIOp>(def))
            r = a & c;
          else if (isa<arith::OrIOp>(def))
            r = a | c;
          else if (isa<arith::XOrIOp>(def))
            r = a ^ c;
          else if (isa<arith::AddIOp>(def))
            r = a + c;
          else if (isa<arith::SubIOp>(def))
            r = a - c;
          else if (isa<arith::MulIOp>(def))
            r = a * c;
          else if (c >= 32 &&
                   isa<arith::ShLIOp, arith::ShRUIOp, arith::ShRSIOp>(def))
            out.reset(); // poison in LLVM: no claim
          else if (isa<arith::ShLIOp>(def))
            r = a << c;
          else if (isa<arith::ShRUIOp>(def))
            r = a >> c;
          else if (isa<arith::ShRSIOp>(def))
            r = uint32_t(int32_t(a) >> c);
          else if (c == 0)
            out.reset();
          else
            r = isa<arith::DivUIOp>(def) ? a / c : a % c;
          if (out)
            (*out)[t] = int32_t(r);
        }
      }
    }
  }
  return (threadValues[coord] = std::move(out)).get();
}

/// The elements of materialized `v` at coordinates `c` when every thread
/// already holds them: each slot of `c` names, in every thread, the same
/// element as some slot of v's own layout. Decided by evaluating both
/// coordinate sets in every thread; nullopt when they cannot be evaluated
/// or some element lives in another thread.
std::optional<Elems> Distributor::heldAt(Value v, const Coords &c) {
  const Coords &own = coordsOf(v);
  if (own.shape != c.shape || c.at.empty())
    return std::nullopt;
  auto dist_ = dist.find(v);
  if (dist_ == dist.end() || dist_->second.size() != own.at.size())
    return std::nullopt;
  // Slots of `own` by a hash of their coordinates in all threads.
  auto slotHash = [&](ArrayRef<Value> dims) -> std::optional<llvm::hash_code> {
    llvm::hash_code h = llvm::hash_value(dims.size());
    for (Value d : dims) {
      const SmallVector<int32_t> *vals = perThread(d);
      if (!vals)
        return std::nullopt;
      h = llvm::hash_combine(
          h, llvm::hash_combine_range(vals->begin(), vals->end()));
    }
    return h;
  };
  auto same = [&](ArrayRef<Value> a, ArrayRef<Value> o) {
    for (size_t d = 0; d < a.size(); ++d)
      if (a[d] != o[d] && *perThread(a[d]) != *perThread(o[d]))
        return false;
    return true;
  };
  std::multimap<size_t, size_t> bySlot;
  for (size_t j = 0; j < own.at.size(); ++j) {
    auto h = slotHash(own.at[j]);
    if (!h)
      return std::nullopt;
    bySlot.emplace(size_t(*h), j);
  }
  Elems out;
  for (auto &slot : c.at) {
    auto h = slotHash(slot);
    if (!h)
      return std::nullopt;
    auto [lo, hi] = bySlot.equal_range(size_t(*h));
    auto match = std::find_if(
        lo, hi, [&](const auto &kv) { return same(slot, own.at[kv.second]); });
    if (match == hi)
      return std::nullopt;
    out.push_back(dist_->second[match->second]);
  }
  return out;
}

/// The longest run (a power of two up to maxElems) in which the slots of
/// `c` come in aligned groups of adjacent elements along the last dimension
/// in every thread: slot g*w + i at the coordinates of slot g*w plus i
/// there. A store of a tile held at `c` may write each group as one vector.
/// The wgmma and mma layouts hold column pairs (2); a reduction's result
/// held in place holds one element per row group (1). 1 when a coordinate
/// cannot be evaluated per thread.
int64_t Distributor::heldRun(const Coords &c, int64_t maxElems) {
  if (c.at.empty() || c.shape.empty())
    return 1;
  size_t last = c.shape.size() - 1;
  auto runOf = [&](int64_t w) {
    if (c.at.size() % size_t(w))
      return false;
    for (size_t g = 0; g < c.at.size(); g += size_t(w))
      for (int64_t i = 1; i < w; ++i) {
        ArrayRef<Value> a = c.at[g], o = c.at[g + size_t(i)];
        for (size_t d = 0; d <= last; ++d) {
          const SmallVector<int32_t> *x = perThread(a[d]);
          const SmallVector<int32_t> *y = perThread(o[d]);
          if (!x || !y)
            return false;
          int32_t step = d == last ? int32_t(i) : 0;
          for (size_t t = 0; t < x->size(); ++t)
            if ((*y)[t] != (*x)[t] + step || (d == last && (*x)[t] % w))
              return false;
        }
      }
    return true;
  };
  int64_t w =
      int64_t(llvm::PowerOf2Ceil(uint64_t(std::max<int64_t>(1, maxElems))));
  while (w > 1 && (w > maxElems || !runOf(w)))
    w /= 2;
  return w;
}
