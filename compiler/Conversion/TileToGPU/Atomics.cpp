//===- Atomics.cpp - Atomic read-modify-write of global memory ------------===//
//
// Part of the convert-tile-to-gpu pass (driver in TileToGPU.cpp, state in
// Distributor.h). Lowers tile.atomic_rmw and tile.atomic_cas to PTX `atom`
// instructions, one per element, written as inline PTX so that the ordering
// and scope qualifiers (`atom.acq_rel.gpu.global.add.u32`) are exactly the
// ones the op carries.
//
// An element must be updated once, however many threads hold it. As for
// stores (Memory.cpp), the canonical layout gives every element one owner
// among the first `threads` threads of its shape; the other threads only
// replicate, and a scalar atomic runs on thread 0. The old values are then
// handed to the replicas through shared memory, when they are used at all.
//
// An add whose old values are unused (`atomic_add(p, v)` as a statement,
// layer norm's partial dW sums) is a `red`: the thread does not wait for
// the old value. On sm_90 f32 runs that AxisInfo proves contiguous, aligned
// and under one mask value go 2 or 4 at a time (red.global.add.v4.f32).
//
//===----------------------------------------------------------------------===//

#include "Conversion/TileToGPU/Distributor.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::detail;

/// The inline-asm register class of a `bits`-wide operand.
static const char *regClass(unsigned bits) {
  return bits == 16 ? "h" : bits == 32 ? "r" : "l";
}

/// `atom.<sem>.<scope>.global`: the qualifiers every instruction below shares.
static std::string atomPrefix(MemSemantic sem, MemScope scope) {
  return ("atom." + stringifyMemSemantic(sem) + "." +
          stringifyMemScope(scope) + ".global")
      .str();
}

/// The PTX text of one atomic read-modify-write of `elt`: $0 the old value,
/// $1 the address, $2 the operand. f32 max/min has no `atom` form; it
/// compares bit patterns instead: a non-negative float orders like its bits
/// as s32, a negative one in reverse like its bits as u32, so a
/// non-negative operand takes max.s32 (min.s32 for min) and a negative one
/// min.u32 (max.u32), which leaves the larger (smaller) float either way.
static std::string rmwText(AtomicKind kind, Type elt, const std::string &atom) {
  unsigned bits = elt.getIntOrFloatBitWidth();
  std::string w = std::to_string(bits);
  switch (kind) {
  case AtomicKind::Add:
    if (elt.isF32())
      return atom + ".add.f32 $0, [$1], $2;";
    if (elt.isF16())
      return atom + ".add.noftz.f16 $0, [$1], $2;";
    if (elt.isBF16())
      return atom + ".add.noftz.bf16 $0, [$1], $2;";
    return atom + ".add.u" + w + " $0, [$1], $2;";
  case AtomicKind::Max:
  case AtomicKind::Min: {
    bool max = kind == AtomicKind::Max;
    if (!elt.isF32())
      return atom + (max ? ".max.s" : ".min.s") + w + " $0, [$1], $2;";
    return "{\n.reg .pred nonneg;\nsetp.ge.s32 nonneg, $2, 0;\n@nonneg " +
           atom + (max ? ".max.s32" : ".min.s32") + " $0, [$1], $2;\n@!nonneg " +
           atom + (max ? ".min.u32" : ".max.u32") + " $0, [$1], $2;\n}";
  }
  case AtomicKind::UMax:
    return atom + ".max.u" + w + " $0, [$1], $2;";
  case AtomicKind::UMin:
    return atom + ".min.u" + w + " $0, [$1], $2;";
  case AtomicKind::Xchg:
    return atom + ".exch.b" + w + " $0, [$1], $2;";
  }
  llvm_unreachable("unknown atomic kind");
}

LogicalResult Distributor::lowerAtomicRMW(AtomicRMWOp op) {
  if (op.isReduction())
    return lowerReductionAdd(op);
  Type elt = elementType(op.getValue().getType());
  std::string text =
      rmwText(op.getKind(), elt, atomPrefix(op.getSem(), op.getScope()));
  return lowerAtomic(op, op.getPtr(), {op.getValue()}, op.getMask(), text);
}

LogicalResult Distributor::lowerAtomicCAS(AtomicCASOp op) {
  Type elt = elementType(op.getValue().getType());
  std::string text = atomPrefix(op.getSem(), op.getScope()) + ".cas.b" +
                     std::to_string(elt.getIntOrFloatBitWidth()) +
                     " $0, [$1], $2, $3;";
  return lowerAtomic(op, op.getPtr(), {op.getCmp(), op.getValue()},
                     op.getMask(), text);
}

/// Whether this thread updates the elements it holds of `ptr`'s tile:
/// thread 0 for a scalar, the first `threads` of a replicated blocked
/// layout (runs of `vec`; 0: the canonical layout's); null when every
/// thread owns what it holds.
Value Distributor::ownerGuard(Value ptr, int64_t vec) {
  if (!isa<RankedTensorType>(ptr.getType()))
    return b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::eq, tid,
                                   i32(0));
  Layout l = layoutOf(shapeOf(ptr.getType()), vec);
  if (l.threads < numThreads)
    return b.create<arith::CmpIOp>(loc(), arith::CmpIPredicate::ult, tid,
                                   i32(l.threads));
  return Value();
}

/// 1. Evaluate pointers, operands and mask in the canonical layout, 2. run
/// `text` once per element on its owner (under the mask), 3. hand the old
/// values to the threads that replicate them.
LogicalResult Distributor::lowerAtomic(Operation *op, Value ptr,
                                       ValueRange operands, Value mask,
                                       StringRef text) {
  Value result = op->getResult(0);
  Type elt = elementType(result.getType());
  unsigned bits = elt.getIntOrFloatBitWidth();
  Type bitsTy = b.getIntegerType(bits);
  bool isTile = isa<RankedTensorType>(ptr.getType());
  Elems ptrs = canonicalElems(ptr);
  SmallVector<Elems> vals;
  for (Value v : operands)
    vals.push_back(canonicalElems(v));
  Elems masks = mask ? canonicalElems(mask) : Elems();

  // Step 1: who owns what (as in lowerStore).
  Layout l = layoutOf(shapeOf(ptr.getType()));
  Value replicaGuard = ownerGuard(ptr);

  // Step 2: one instruction per element, operands as bit patterns.
  std::string constraints = "=" + std::string(regClass(bits)) + ",l";
  for (size_t i = 0; i < operands.size(); ++i)
    constraints += "," + std::string(regClass(bits));
  Value zero = b.create<arith::ConstantOp>(loc(), b.getZeroAttr(elt));
  Elems out;
  for (size_t s = 0; s < ptrs.size(); ++s) {
    Value cond = replicaGuard;
    if (!masks.empty())
      cond = cond ? Value(b.create<arith::AndIOp>(loc(), cond, masks[s]))
                  : masks[s];
    auto doAtomic = [&](OpBuilder &ob) -> Value {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ob.getInsertionBlock(), ob.getInsertionPoint());
      SmallVector<Value> args{
          b.create<LLVM::PtrToIntOp>(loc(), b.getI64Type(), ptrs[s])};
      for (const Elems &v : vals)
        args.push_back(elt == bitsTy ? v[s]
                                     : b.create<LLVM::BitcastOp>(loc(), bitsTy,
                                                                 v[s])
                                           .getResult());
      Value old = inlinePtx(text, constraints, args, bitsTy);
      return elt == bitsTy ? old
                           : b.create<LLVM::BitcastOp>(loc(), elt, old)
                                 .getResult();
    };
    if (!cond) {
      out.push_back(doAtomic(b));
      continue;
    }
    auto ifOp = b.create<scf::IfOp>(
        loc(), cond,
        [&](OpBuilder &ob, Location) {
          ob.create<scf::YieldOp>(loc(), doAtomic(ob));
        },
        [&](OpBuilder &ob, Location) { ob.create<scf::YieldOp>(loc(), zero); });
    out.push_back(ifOp.getResult(0));
  }

  // Step 3: replicas read the old values their owner got. Unused results
  // (the common `atomic_add(p, v)` statement) need no exchange.
  if (replicaGuard && !result.use_empty()) {
    int64_t bytes = bits / 8;
    reserveShared(l.elems * bytes);
    const Coords *own = isTile ? &canonical(l.shape) : nullptr;
    auto slotPtr = [&](size_t s) {
      return smemPtr(isTile ? flatOf(own->at[s], l.shape) : i32(0), elt);
    };
    // (Every earlier exchange ends with a barrier: the area is free.)
    auto ifOp = b.create<scf::IfOp>(loc(), replicaGuard,
                                    /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      for (size_t s = 0; s < out.size(); ++s)
        b.create<LLVM::StoreOp>(loc(), out[s], slotPtr(s));
    }
    barrier();
    for (size_t s = 0; s < out.size(); ++s)
      out[s] = b.create<LLVM::LoadOp>(loc(), elt, slotPtr(s));
    barrier();
  }
  dist[result] = out;
  return success();
}

LogicalResult Distributor::lowerReductionAdd(AtomicRMWOp op) {
  Value ptr = op.getPtr(), mask = op.getMask();
  Type elt = elementType(op.getValue().getType());
  unsigned bits = elt.getIntOrFloatBitWidth();
  Type bitsTy = b.getIntegerType(bits);
  bool isTile = isa<RankedTensorType>(ptr.getType());
  // In the blocked layout the result's type names: tile-assign-layouts
  // gives a reduction runs of its own 16 bytes, so that a warp's vector
  // reds cover whole sectors (bench/NOTES.md, "Layer norm backward: a
  // reduction's runs are its own").
  auto shape = shapeOf(ptr.getType());
  const Coords *at = nullptr;
  if (isTile) {
    at = coordsFor(op.getResult().getType());
    if (!at)
      at = &canonical(shape);
    if (!at->blockedVec)
      return op.emitOpError("cannot reduce into memory from ")
             << encodingOf(op.getResult().getType());
  }
  auto elemsAt = [&](Value v) { return at ? evalAt(v, *at) : get(v); };
  Elems ptrs = elemsAt(ptr);
  Elems vals = elemsAt(op.getValue());
  Elems masks = mask ? elemsAt(mask) : Elems();
  Layout l = isTile ? layoutOf(shape, at->blockedVec) : Layout();
  Value replicaGuard = ownerGuard(ptr, isTile ? at->blockedVec : 0);
  int64_t width = 1;
  if (vectorAtomics && isTile && elt.isF32())
    width = accessWidth(ptr, mask, std::min<int64_t>(l.vec, 4), 4);
  if (width == 3)
    width = 2;
  if (width > 1) // The vector forms appeared in PTX ISA 8.1.
    minPtx = std::max<int64_t>(minPtx, 81);
  std::string type = elt.isF32()    ? ".f32"
                     : elt.isF16()  ? ".noftz.f16"
                     : elt.isBF16() ? ".noftz.bf16"
                                    : ".u" + std::to_string(bits);
  std::string text = ("red." + stringifyMemSemantic(op.getSem()) + "." +
                      stringifyMemScope(op.getScope()) + ".global.add")
                         .str();
  std::string cons = "l";
  if (width > 1) {
    text += ".v" + std::to_string(width) + type + " [$0], {";
    for (int64_t i = 0; i < width; ++i) {
      text += (i ? ", $" : "$") + std::to_string(i + 1);
      cons += ",r";
    }
    text += "};";
  } else {
    text += type + " [$0], $1;";
    cons += std::string(",") + regClass(bits);
  }
  for (size_t s = 0; s < ptrs.size(); s += size_t(width)) {
    Value cond = replicaGuard;
    if (!masks.empty())
      cond = cond ? Value(b.create<arith::AndIOp>(loc(), cond, masks[s]))
                  : masks[s];
    OpBuilder::InsertionGuard guard(b);
    if (cond) {
      auto ifOp = b.create<scf::IfOp>(loc(), cond, /*withElseRegion=*/false);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    }
    SmallVector<Value> args{
        b.create<LLVM::PtrToIntOp>(loc(), b.getI64Type(), ptrs[s])};
    for (int64_t i = 0; i < width; ++i) {
      Value v = vals[s + size_t(i)];
      args.push_back(elt == bitsTy
                         ? v
                         : b.create<LLVM::BitcastOp>(loc(), bitsTy, v)
                               .getResult());
    }
    inlinePtx(text, cons, args);
  }
  // Nobody reads the result; it is defined for the value map's sake.
  Value zero = b.create<arith::ConstantOp>(loc(), b.getZeroAttr(elt));
  dist[op.getResult()] = Elems(ptrs.size(), zero);
  if (at && at != &canonical(shape))
    assigned[op.getResult()] = at;
  return success();
}

void Distributor::populateAtomicPatterns(LoweringPatterns &p) {
  p.add(&Distributor::lowerAtomicRMW);
  p.add(&Distributor::lowerAtomicCAS);
}
