//===- MLIRGenTypes.cpp - Types, casts and broadcasting -------------------===//
//
// The front end's type rules, used by every expression and builtin:
// DSL dtypes to MLIR types, how two operand types promote (int with float
// gives the float, f16 with bf16 gives f32, narrow with wide gives wide; an
// untyped literal takes its partner's type; signed with unsigned of one width
// gives unsigned, as in C), conversions between element
// types, and NumPy-style broadcasting (scalars are splatted). Casts of
// compile-time scalars fold, so constants can keep feeding shapes.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGenImpl.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::mlirgen;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

Type MLIRGen::mlirType(DType t) {
  switch (t) {
  case DType::I1:
    return b.getI1Type();
  case DType::I8:
  case DType::U8:
    return b.getI8Type();
  case DType::I16:
  case DType::U16:
    return b.getI16Type();
  case DType::I32:
  case DType::U32:
    return b.getI32Type();
  case DType::I64:
  case DType::U64:
    return b.getI64Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::F32:
    return b.getF32Type();
  case DType::F64:
    return b.getF64Type();
  case DType::F8E4M3:
    return b.getType<Float8E4M3FNType>();
  case DType::F8E5M2:
    return b.getType<Float8E5M2Type>();
  }
  return b.getF32Type();
}

/// Types in DSL spelling for messages: "f32", "[64, 128] bf16", "*f16".
std::string MLIRGen::typeStr(Type t, bool uns) {
  std::string s;
  llvm::raw_string_ostream os(s);
  auto scalar = [&](Type e) {
    if (auto p = dyn_cast<PointerType>(e)) {
      os << "*";
      e = p.getPointee();
    }
    if (e.isInteger(1))
      os << "bool";
    else if (e.isBF16())
      os << "bf16";
    else if (e.isF16())
      os << "f16";
    else if (e.isF32())
      os << "f32";
    else if (e.isF64())
      os << "f64";
    else if (isa<Float8E4M3FNType>(e))
      os << "f8e4m3";
    else if (isa<Float8E5M2Type>(e))
      os << "f8e5m2";
    else if (auto i = dyn_cast<IntegerType>(e))
      os << (uns ? "u" : "i") << i.getWidth();
    else
      os << e;
  };
  if (auto r = dyn_cast<RankedTensorType>(t)) {
    os << "[";
    llvm::interleaveComma(r.getShape(), os);
    os << "] ";
    scalar(r.getElementType());
  } else {
    scalar(t);
  }
  return s;
}

int sparsetile::mlirgen::floatRank(Type t) {
  if (t.isF16() || t.isBF16())
    return 16;
  if (isa<Float8E4M3FNType, Float8E5M2Type>(t))
    return 8;
  return cast<FloatType>(t).getWidth();
}

int MLIRGen::smVersion() const {
  StringRef arch = options.arch;
  int sm = 0;
  if (arch.starts_with("sm_"))
    arch.drop_front(3).take_while(llvm::isDigit).getAsInteger(10, sm);
  return sm;
}

bool MLIRGen::fp8ArchOk(Loc loc) {
  if (smVersion() >= 89)
    return true;
  fail(loc, "fp8 needs sm_89 or newer (cvt to and from e4m3/e5m2), the "
            "target is " +
                options.arch);
  return false;
}

bool MLIRGen::rejectFP8(const TV &x, Loc loc, const std::string &what) {
  if (!x.v || !isFP8(elt(x.v)))
    return true;
  fail(loc, what + " does not take " + typeStr(elt(x.v)) +
                " values: fp8 is a storage type; convert with .to(f32) "
                "(or f16/bf16) first");
  return false;
}

Type MLIRGen::promote(Type a, Type c) {
  if (a == c)
    return a;
  if (isFloat(a) && isFloat(c)) {
    // Two fp8 types (in `where`) meet in f16, which holds both exactly.
    if (isFP8(a) && isFP8(c))
      return b.getF16Type();
    // f16 and bf16 have no common 16-bit type: meet in f32.
    if (floatRank(a) == 16 && floatRank(c) == 16)
      return b.getF32Type();
    return floatRank(a) >= floatRank(c) ? a : c;
  }
  if (isFloat(a))
    return a;
  if (isFloat(c))
    return c;
  return cast<IntegerType>(a).getWidth() >= cast<IntegerType>(c).getWidth() ? a
                                                                            : c;
}

bool MLIRGen::promoteUnsigned(Type a, bool ua, Type c, bool uc) {
  bool ia = isInt(a) && !a.isInteger(1), ic = isInt(c) && !c.isInteger(1);
  if (!ia || !ic)
    return ia ? ua && !isFloat(c) : ic && uc && !isFloat(a);
  unsigned wa = a.getIntOrFloatBitWidth(), wc = c.getIntOrFloatBitWidth();
  // C's usual arithmetic conversions (for int and wider): at one width the
  // unsigned type wins; else the wider type, with its own signedness (a
  // wider signed type holds every value of a narrower unsigned one).
  if (wa == wc)
    return ua || uc;
  return wa > wc ? ua : uc;
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

int64_t mlirgen::wrapToWidth(uint64_t v, Type t) {
  unsigned w = cast<IntegerType>(t).getWidth();
  if (w >= 64)
    return int64_t(v);
  if (w == 1)
    return int64_t(v & 1);
  uint64_t low = v & ((uint64_t(1) << w) - 1);
  // Sign-extend from bit w-1.
  uint64_t sign = uint64_t(1) << (w - 1);
  return int64_t((low ^ sign) - sign);
}

int64_t mlirgen::normalizeInt(uint64_t v, Type t, bool uns) {
  unsigned w = cast<IntegerType>(t).getWidth();
  if (!uns || w >= 64)
    return uns ? int64_t(v) : wrapToWidth(v, t);
  return int64_t(v & ((uint64_t(1) << w) - 1));
}

TV MLIRGen::constInt(int64_t v, Type t, Loc loc, bool uns) {
  TV r;
  if (isFloat(t))
    return constFloat(double(v), t, loc);
  if (uns && !t.isInteger(1)) {
    unsigned w = cast<IntegerType>(t).getWidth();
    if (w < 64 && (v < 0 || uint64_t(v) >= (uint64_t(1) << w)))
      return fail(loc, "integer constant " + std::to_string(v) +
                           " does not fit in " + typeStr(t, true));
    r.v = b.create<arith::ConstantOp>(mloc(loc), b.getIntegerAttr(t, v));
    r.ci = v;
    r.uns = true;
    return r;
  }
  // A constant that does not fit its type is an error, not a silent
  // truncation (`store(p_i8, 1000)`, `-D B=300` for `const B: i8`). Folds and
  // explicit casts wrap before they get here, as the generated code would.
  unsigned w = cast<IntegerType>(t).getWidth();
  if (w < 64 && wrapToWidth(uint64_t(v), t) != v &&
      !(w > 1 && uint64_t(v) < (uint64_t(1) << w)))
    return fail(loc, "integer constant " + std::to_string(v) +
                         " does not fit in " + typeStr(t));
  r.v = b.create<arith::ConstantOp>(mloc(loc), b.getIntegerAttr(t, v));
  r.ci = t.isInteger(1) ? (v != 0) : v;
  return r;
}

TV MLIRGen::constFloat(double v, Type t, Loc loc) {
  TV r;
  if (isFP8(t)) {
    // Rounded to nearest even and saturated to the largest finite value, as
    // the run-time conversion (cvt.rn.satfinite) does; the folded value is
    // the rounded one, so a constant converts back to what the GPU would give.
    const llvm::fltSemantics &sem = cast<FloatType>(t).getFloatSemantics();
    llvm::APFloat f(v);
    bool lost;
    f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
    if (!std::isnan(v) && (f.isNaN() || f.isInfinity()))
      f = llvm::APFloat::getLargest(sem, v < 0);
    r.v = b.create<arith::ConstantOp>(mloc(loc), FloatAttr::get(t, f));
    r.cf = f.convertToDouble();
    return r;
  }
  r.v = b.create<arith::ConstantOp>(mloc(loc), b.getFloatAttr(t, v));
  r.cf = v;
  return r;
}

/// Converts the element type of `x` to `e` (a scalar type).
TV MLIRGen::castTo(TV x, Type e, Loc loc, bool toUns) {
  // A value that failed to build (its error is reported) stays failed, as in
  // broadcastTo: callers chain castTo on constInt, which fails on a constant
  // that does not fit (to_tile's entries used to reach here as null).
  if (!x.v)
    return x;
  Type from = elt(x.v);
  toUns = toUns && isInt(e) && !e.isInteger(1);
  if (from == e) {
    // One MLIR type: only the signedness may change, and the bits stay.
    if (isInt(e) && !e.isInteger(1) && x.uns != toUns) {
      if (x.weak && x.ci && toUns && *x.ci < 0)
        return fail(loc, "integer constant " + std::to_string(*x.ci) +
                             " does not fit in " + typeStr(e, true));
      if (x.ci)
        x.ci = normalizeInt(uint64_t(*x.ci), e, toUns);
      x.uns = toUns;
    }
    return x;
  }
  if (isa<PointerType>(from) || isa<PointerType>(e))
    return fail(loc, "cannot convert " + typeStr(x.v.getType()) + " to " +
                         typeStr(e));
  // Compile-time scalars fold, so constants keep feeding shapes.
  if (!isa<RankedTensorType>(x.v.getType())) {
    // As the run-time casts below: int -> bool is "!= 0"; a typed constant
    // wraps to a narrower type; a literal must fit the type it takes on.
    if (x.ci && e.isInteger(1))
      return constInt(*x.ci != 0, e, loc);
    if (x.ci && isInt(e)) {
      // A negative literal never becomes unsigned silently (`x < -1` on a
      // u32 would always be false); a typed value wraps as the code would.
      if (x.weak && toUns && *x.ci < 0)
        return fail(loc, "integer constant " + std::to_string(*x.ci) +
                             " does not fit in " + typeStr(e, true));
      return constInt(x.weak ? *x.ci : normalizeInt(uint64_t(*x.ci), e, toUns),
                      e, loc, toUns);
    }
    if (x.ci && isFloat(e))
      return constFloat(x.uns ? double(uint64_t(*x.ci)) : double(*x.ci), e,
                        loc);
    if (x.cf && isFloat(e))
      return constFloat(*x.cf, e, loc);
  }
  Location l = mloc(loc);
  Type to = withElt(x.v.getType(), e);
  TV r;
  r.uns = toUns;
  if (isFP8(from) || isFP8(e)) {
    // The GPU converts fp8 in pairs (cvt.rn.f16x2.e4m3x2 and
    // cvt.rn.satfinite.e4m3x2.f32, sm_89): from fp8 through f16, which holds
    // every fp8 value exactly; to fp8 from f32, rounding once (f16, bf16
    // and integers reach f32 exactly or as their own conversion rounds; f64
    // rounds to f32 first).
    if (!fp8ArchOk(loc))
      return TV{};
    if (isFP8(from)) {
      TV h;
      h.v = b.create<arith::ExtFOp>(l, withElt(to, b.getF16Type()), x.v);
      return castTo(h, e, loc, toUns);
    }
    TV f = from.isF32() ? x : castTo(x, b.getF32Type(), loc);
    if (!f.v)
      return f;
    r.v = b.create<arith::TruncFOp>(l, to, f.v);
    return r;
  }
  if (isFloat(from) && isFloat(e)) {
    if (floatRank(from) == 16 && floatRank(e) == 16) {
      Value mid = b.create<arith::ExtFOp>(l, withElt(to, b.getF32Type()), x.v);
      r.v = b.create<arith::TruncFOp>(l, to, mid);
    } else if (floatRank(from) < floatRank(e)) {
      r.v = b.create<arith::ExtFOp>(l, to, x.v);
    } else {
      r.v = b.create<arith::TruncFOp>(l, to, x.v);
    }
  } else if (isInt(from) && isInt(e)) {
    unsigned fw = from.getIntOrFloatBitWidth(), tw = e.getIntOrFloatBitWidth();
    if (tw == 1) // int -> bool is "!= 0", not truncation.
      r.v = b.create<arith::CmpIOp>(
          l, arith::CmpIPredicate::ne, x.v,
          broadcastTo(constInt(0, from, loc), shape(x.v), loc).v);
    else if (fw == 1 || (fw < tw && x.uns)) // Unsigned values zero-extend.
      r.v = b.create<arith::ExtUIOp>(l, to, x.v);
    else if (fw < tw)
      r.v = b.create<arith::ExtSIOp>(l, to, x.v);
    else
      r.v = b.create<arith::TruncIOp>(l, to, x.v);
  } else if (isInt(from)) {
    if (from.isInteger(1) || x.uns)
      r.v = b.create<arith::UIToFPOp>(l, to, x.v);
    else
      r.v = b.create<arith::SIToFPOp>(l, to, x.v);
  } else {
    if (e.isInteger(1))
      r.v = b.create<arith::CmpFOp>(
          l, arith::CmpFPredicate::UNE, x.v,
          broadcastTo(constFloat(0, from, loc), shape(x.v), loc).v);
    else if (toUns)
      r.v = b.create<arith::FPToUIOp>(l, to, x.v);
    else
      r.v = b.create<arith::FPToSIOp>(l, to, x.v);
  }
  return r;
}

/// Broadcasts a scalar or tile to `target` (NumPy rules: align on the right,
/// stretch size-1 dimensions, prepend missing ones).
TV MLIRGen::broadcastTo(TV x, ArrayRef<int64_t> target, Loc loc) {
  if (!x.v)
    return x;
  ArrayRef<int64_t> src = shape(x.v);
  if (src == target)
    return x;
  Location l = mloc(loc);
  Type e = elt(x.v);
  TV r = x;
  r.ci.reset();
  r.cf.reset();
  if (!isa<RankedTensorType>(x.v.getType())) {
    r.v = b.create<SplatOp>(l, RankedTensorType::get(target, e), x.v);
    return r;
  }
  if (src.size() > target.size())
    return fail(loc, "cannot broadcast " + typeStr(x.v.getType()) +
                         " to a tile of lower rank");
  SmallVector<int64_t> cur(src);
  while (cur.size() < target.size()) {
    cur.insert(cur.begin(), 1);
    r.v = b.create<ExpandDimsOp>(l, RankedTensorType::get(cur, e), r.v,
                                 b.getI32IntegerAttr(0));
  }
  for (size_t i = 0; i < cur.size(); ++i)
    if (cur[i] != target[i] && cur[i] != 1)
      return fail(loc, "shape mismatch: cannot broadcast " +
                           typeStr(x.v.getType()) + " to " +
                           typeStr(RankedTensorType::get(target, e)));
  if (ArrayRef<int64_t>(cur) != target)
    r.v = b.create<BroadcastOp>(l, RankedTensorType::get(target, e), r.v);
  return r;
}

std::optional<SmallVector<int64_t>>
sparsetile::mlirgen::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> c) {
  size_t rank = std::max(a.size(), c.size());
  SmallVector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t dc = i < rank - c.size() ? 1 : c[i - (rank - c.size())];
    if (da != dc && da != 1 && dc != 1)
      return std::nullopt;
    out[i] = std::max(da, dc);
  }
  return out;
}

/// Brings two operands to one element type and one shape.
bool MLIRGen::unify(TV &x, TV &y, Loc loc, bool numericOnly) {
  Type ex = elt(x.v), ey = elt(y.v);
  if (numericOnly && (isa<PointerType>(ex) || isa<PointerType>(ey))) {
    fail(loc, "operands must be numbers, got " + typeStr(x.v.getType()) +
                  " and " + typeStr(y.v.getType()));
    return false;
  }
  Type e;
  bool uns;
  if (x.weak && !y.weak && !(isFloat(ex) && isInt(ey))) {
    e = ey;
    uns = y.uns;
  } else if (y.weak && !x.weak && !(isFloat(ey) && isInt(ex))) {
    e = ex;
    uns = x.uns;
  } else {
    e = promote(ex, ey);
    uns = promoteUnsigned(ex, x.uns, ey, y.uns);
  }
  // fp8 is for storage: arithmetic on it, even mixed with a wider type,
  // asks for an explicit conversion (one rule, no silent f16 or f32 math).
  if (numericOnly && (isFP8(ex) || isFP8(ey))) {
    rejectFP8(isFP8(ex) ? x : y, loc, "arithmetic");
    return false;
  }
  x = castTo(x, e, loc, uns);
  y = castTo(y, e, loc, uns);
  if (!x.v || !y.v)
    return false;
  auto out = broadcastShapes(shape(x.v), shape(y.v));
  if (!out) {
    fail(loc, "shape mismatch: " + typeStr(x.v.getType()) + " and " +
                  typeStr(y.v.getType()) + " do not broadcast");
    return false;
  }
  if (!out->empty()) {
    x = broadcastTo(x, *out, loc);
    y = broadcastTo(y, *out, loc);
  }
  return x.v && y.v;
}
