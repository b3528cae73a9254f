//===- MLIRGenExpr.cpp - Expressions and operators ------------------------===//
//
// Emits expressions: literals, names (bindings, re-materialized kernel
// constants, dtypes), unary and binary operators (with pointer arithmetic and
// folding of scalar integer arithmetic on compile-time values, because shapes
// such as `arange(0, BLOCK)` must be known here), and `[:, None]` subscripts.
// Calls go to the builtin table in Builtins.cpp.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGenImpl.h"

#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::mlirgen;

std::optional<int64_t> MLIRGen::constIntOf(const ast::Expr *e,
                                           const char *what) {
  TV v = expr(e);
  if (!v.v)
    return std::nullopt;
  if (!v.ci) {
    fail(e->loc, std::string(what) + " must be a compile-time integer");
    return std::nullopt;
  }
  return v.ci;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

TV MLIRGen::expr(const ast::Expr *e) {
  if (failed())
    return TV{};
  switch (e->kind) {
  case ast::Expr::IntLit: {
    // Literals outside i32 are i64.
    bool wide = e->intValue > INT32_MAX || e->intValue < INT32_MIN;
    TV r =
        constInt(e->intValue, wide ? b.getI64Type() : b.getI32Type(), e->loc);
    r.weak = true;
    return r;
  }
  case ast::Expr::FloatLit: {
    TV r = constFloat(e->floatValue, b.getF32Type(), e->loc);
    r.weak = true;
    return r;
  }
  case ast::Expr::BoolLit:
    return constInt(e->intValue, b.getI1Type(), e->loc);
  case ast::Expr::DTypeRef: {
    // A binding shadows a dtype of its name: kernels written before u8 ...
    // u64 were dtypes keep their `let u8 = ...` variables.
    if (Binding *bd = lookup(e->name))
      return bd->value;
    TV r;
    r.dtype = e->dtype;
    return r;
  }
  case ast::Expr::List:
    return listLiteral(e);
  case ast::Expr::Tuple: {
    auto values = std::make_shared<std::vector<TV>>();
    for (auto &o : e->operands) {
      TV v = expr(o.get());
      if (!v.v) {
        if (!failed())
          fail(o->loc, v.tuple ? "tuples do not nest" : "expected a value");
        return TV{};
      }
      values->push_back(v);
    }
    TV r;
    r.tuple = std::move(values);
    return r;
  }
  case ast::Expr::String:
    return fail(e->loc, "strings are only allowed as static_assert messages, "
                        "device_print prefixes and import paths");
  case ast::Expr::Name: {
    if (Binding *bd = lookup(e->name))
      return bd->value;
    auto c = constants.find(e->name);
    if (c != constants.end()) {
      // Re-materialize at the use so the constant dominates it.
      TV r = c->second;
      TV m = r.ci ? constInt(*r.ci, elt(r.v), e->loc, r.uns)
                  : constFloat(*r.cf, elt(r.v), e->loc);
      return m;
    }
    if (auto g = globals.find(e->name); g != globals.end()) {
      TV r = g->second;
      if (r.array)
        return r;
      TV m = r.ci ? constInt(*r.ci, elt(r.v), e->loc)
                  : constFloat(*r.cf, elt(r.v), e->loc);
      m.weak = r.weak; // `const N = 90;` stays an untyped literal.
      return m;
    }
    if (auto t = typeConstants.find(e->name); t != typeConstants.end()) {
      TV r;
      r.dtype = t->second;
      return r;
    }
    if (e->name == "inf" || e->name == "nan") {
      TV r =
          constFloat(e->name == "inf" ? INFINITY : NAN, b.getF32Type(), e->loc);
      r.weak = true;
      return r;
    }
    return fail(e->loc, "unknown name '" + e->name + "'");
  }
  case ast::Expr::Unary: {
    TV x = expr(e->operands[0].get());
    if (!x.v)
      return x;
    return unary(e->op, x, e->loc);
  }
  case ast::Expr::Binary: {
    TV l = expr(e->operands[0].get());
    if (!l.v)
      return l.isList || l.dtype ? fail(e->operands[0]->loc, "expected a value")
                                 : l;
    TV r = expr(e->operands[1].get());
    if (!r.v)
      return r.isList || r.dtype ? fail(e->operands[1]->loc, "expected a value")
                                 : r;
    return binary(e->op, l, r, e->loc);
  }
  case ast::Expr::Call:
    return call(e);
  case ast::Expr::Index:
    return index(e);
  }
  return fail(e->loc, "unsupported expression");
}

TV MLIRGen::unary(const std::string &op, TV x, Loc loc) {
  Type e = elt(x.v);
  if (op == "-") {
    if (x.ci && x.weak && !e.isInteger(1)) // Exact, as literals fold.
      return literal(llvm::checkedSub(int64_t(0), *x.ci), loc,
                     "-(" + std::to_string(*x.ci) + ")");
    if (x.ci) {
      TV r =
          constInt(normalizeInt(0 - uint64_t(*x.ci), e, x.uns), e, loc, x.uns);
      return r;
    }
    if (x.cf) {
      TV r = constFloat(-*x.cf, e, loc);
      r.weak = x.weak;
      return r;
    }
    if (!rejectFP8(x, loc, "'-'"))
      return TV{};
    if (isFloat(e))
      return TV{b.create<arith::NegFOp>(mloc(loc), x.v)};
    if (isInt(e))
      return binary("-", constInt(0, e, loc, x.uns), x, loc);
    return fail(loc, "cannot negate " + typeStr(x.v.getType()));
  }
  if (op == "!") {
    if (!e.isInteger(1))
      return fail(loc,
                  "'!' needs a bool operand, got " + typeStr(x.v.getType()));
    TV t = broadcastTo(constInt(1, e, loc), shape(x.v), loc);
    return TV{b.create<arith::XOrIOp>(mloc(loc), x.v, t.v)};
  }
  if (op == "~") {
    if (!isInt(e) || e.isInteger(1))
      return fail(loc, "'~' needs an integer operand, got " +
                           typeStr(x.v.getType()));
    TV t = broadcastTo(constInt(-1, e, loc), shape(x.v), loc);
    TV r{b.create<arith::XOrIOp>(mloc(loc), x.v, t.v)};
    r.uns = x.uns;
    return r;
  }
  return fail(loc, "unknown unary operator '" + op + "'");
}

/// Folds `a op c` for two untyped integer literals exactly, as Triton folds
/// Python ints (`2147483647 + 9` is 2147483656, an i64, not -2147483640):
/// nothing when the exact result does not fit in 64 bits, or the shift
/// amount is outside 0 ... 63. Only the arithmetic and bitwise operators.
static std::optional<int64_t> foldLiterals(const std::string &op, int64_t a,
                                           int64_t c) {
  if (op == "+")
    return llvm::checkedAdd(a, c);
  if (op == "-")
    return llvm::checkedSub(a, c);
  if (op == "*")
    return llvm::checkedMul(a, c);
  if (op == "/" || op == "//" || op == "%") { // c != 0: the caller reports
                                              // division by 0.
    // INT64_MIN / -1 overflows; x % -1 is 0.
    if (c == -1)
      return op == "%" ? 0 : llvm::checkedSub(int64_t(0), a);
    if (op == "//") // Python's: the quotient rounded toward -infinity.
      return a / c - ((a % c != 0) && ((a % c < 0) != (c < 0)));
    return op == "/" ? a / c : a % c;
  }
  if (op == "<<" || op == ">>") {
    if (c < 0 || c > 63)
      return std::nullopt;
    if (op == ">>")
      return a >> c;
    int64_t r = int64_t(uint64_t(a) << c);
    return (r >> c) == a ? std::optional<int64_t>(r) : std::nullopt;
  }
  if (op == "&")
    return a & c;
  if (op == "|")
    return a | c;
  return a ^ c;
}

TV MLIRGen::literal(std::optional<int64_t> v, Loc loc,
                    const std::string &what) {
  if (!v)
    return fail(loc, "integer overflow in a constant: " + what +
                         " does not fit in i64");
  // Like a literal in the source: i32 when it fits, else i64.
  bool wide = *v > INT32_MAX || *v < INT32_MIN;
  TV r = constInt(*v, wide ? b.getI64Type() : b.getI32Type(), loc);
  r.weak = true;
  return r;
}

/// Folds scalar integer arithmetic on compile-time values.
/// Folds `a op c` as the generated code computes it: in two's complement,
/// wrapping (the caller then wraps to the operand width). Done on uint64_t so
/// no fold is undefined behaviour in the compiler itself (INT64_MIN / -1 used
/// to raise SIGFPE in the host process). Unsigned operands (`uns`) hold
/// their zero-extended values (TV::ci), so `>>`, `/` and `%` on them are the
/// unsigned operations at any width.
static std::optional<int64_t> foldInt(const std::string &op, int64_t a,
                                      int64_t c, bool uns) {
  uint64_t ua = uint64_t(a), uc = uint64_t(c);
  if (uns && (op == "/" || op == "//" || op == "%") && uc != 0)
    return int64_t(op == "%" ? ua % uc : ua / uc);
  if (uns && op == ">>" && uc < 64)
    return int64_t(ua >> uc);
  if (op == "+")
    return int64_t(ua + uc);
  if (op == "-")
    return int64_t(ua - uc);
  if (op == "*")
    return int64_t(ua * uc);
  if ((op == "/" || op == "//" || op == "%") && c == -1)
    return op == "%" ? 0 : int64_t(0 - ua);
  if (op == "/" && c != 0)
    return a / c;
  if (op == "//" && c != 0)
    return a / c - ((a % c != 0) && ((a % c < 0) != (c < 0)));
  if (op == "%" && c != 0)
    return a % c;
  if (op == "<<" && c >= 0 && c < 64)
    return int64_t(ua << c);
  if (op == ">>" && c >= 0 && c < 64)
    return a >> c;
  if (op == "&")
    return a & c;
  if (op == "|")
    return a | c;
  if (op == "^")
    return a ^ c;
  return std::nullopt;
}

/// The unsigned form of a signed comparison (slt -> ult, ...).
static arith::CmpIPredicate unsignedPredicate(arith::CmpIPredicate p) {
  switch (p) {
  case arith::CmpIPredicate::slt:
    return arith::CmpIPredicate::ult;
  case arith::CmpIPredicate::sle:
    return arith::CmpIPredicate::ule;
  case arith::CmpIPredicate::sgt:
    return arith::CmpIPredicate::ugt;
  case arith::CmpIPredicate::sge:
    return arith::CmpIPredicate::uge;
  default:
    return p;
  }
}

Value MLIRGen::shiftOp(const std::string &op, TV x, TV n, bool clamp,
                       Location l) {
  auto shiftBy = [&](Value amount) -> Value {
    if (op == "<<")
      return b.create<arith::ShLIOp>(l, x.v, amount);
    if (x.uns) // Logical shift: the vacated bits are zeros.
      return b.create<arith::ShRUIOp>(l, x.v, amount);
    return b.create<arith::ShRSIOp>(l, x.v, amount);
  };
  if (!clamp) // A constant amount, checked to be in range.
    return shiftBy(n.v);
  // At run time an amount of the width or more (read unsigned) is clamped
  // to the width, as PTX's shl/shr do (Language.md): the IR's shifts would
  // be poison there, and LLVM deleted the stores of such kernels.
  Type t = x.v.getType();
  auto splat = [&](int64_t v) {
    Type e = elementType(t);
    Value c = b.create<arith::ConstantOp>(l, b.getIntegerAttr(e, v));
    if (isa<RankedTensorType>(t))
      c = b.create<SplatOp>(l, t, c);
    return c;
  };
  int64_t w = elementType(t).getIntOrFloatBitWidth();
  if (op == ">>" && !x.uns) // Sign fill: shift by at most w - 1.
    return shiftBy(b.create<arith::MinUIOp>(l, n.v, splat(w - 1)));
  Value inRange =
      b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ult, n.v, splat(w));
  return b.create<arith::SelectOp>(l, inRange, shiftBy(n.v), splat(0));
}

TV MLIRGen::binary(const std::string &op, TV lhs, TV rhs, Loc loc) {
  Location l = mloc(loc);
  // Pointer arithmetic: ptr + ints, ints + ptr, ptr - ints.
  bool lp = isa<PointerType>(elt(lhs.v)), rp = isa<PointerType>(elt(rhs.v));
  if (lp || rp) {
    if (op == "+" || (op == "-" && lp && !rp)) {
      TV ptr = lp ? lhs : rhs, off = lp ? rhs : lhs;
      if (!isInt(elt(off.v)) || elt(off.v).isInteger(1))
        return fail(loc, "pointer offsets must be integers, got " +
                             typeStr(off.v.getType()));
      // `p + 0` is `p`: inlined functions (`load(wp + i * stride + j)` with
      // i = 0) would otherwise leave a zero offset for the backend.
      if (off.ci && *off.ci == 0 && !isa<RankedTensorType>(off.v.getType()))
        return ptr;
      if (op == "-")
        off = unary("-", off, loc);
      if (off.weak)
        off = castTo(off, b.getI32Type(), loc);
      ptr.weak = off.weak = false;
      // Broadcast pointer and offsets to a common shape, keeping types.
      auto out = broadcastShapes(shape(ptr.v), shape(off.v));
      if (!out)
        return fail(loc, "shape mismatch: " + typeStr(ptr.v.getType()) +
                             " and " + typeStr(off.v.getType()));
      ptr = broadcastTo(ptr, *out, loc);
      off = broadcastTo(off, *out, loc);
      if (!ptr.v || !off.v)
        return TV{};
      TV r{b.create<AddPtrOp>(l, ptr.v.getType(), ptr.v, off.v)};
      r.uns = ptr.uns; // The pointee's signedness.
      return r;
    }
    return fail(loc, "operator '" + op + "' is not defined on pointers");
  }

  bool logical = op == "&&" || op == "||";
  bool shift = op == "<<" || op == ">>";
  bool bitwise = op == "&" || op == "|" || op == "^" || shift;
  if (op == "**")
    return power(lhs, rhs, loc);
  bool division = op == "/" || op == "//" || op == "%";
  bool arith = bitwise || division || op == "+" || op == "-" || op == "*";
  // Two untyped integer literals fold exactly and widen to i64 if need be;
  // past i64, a located error. They used to fold in i32 and wrap.
  if (arith && lhs.weak && rhs.weak && lhs.ci && rhs.ci && isInt(elt(lhs.v)) &&
      isInt(elt(rhs.v))) {
    if (division && *rhs.ci == 0)
      return fail(loc, "division by zero");
    if (shift && (*rhs.ci < 0 || *rhs.ci > 63))
      return fail(loc, "shift amount " + std::to_string(*rhs.ci) +
                           " is out of range: it must be in 0 ... 63");
    return literal(foldLiterals(op, *lhs.ci, *rhs.ci), loc,
                   std::to_string(*lhs.ci) + " " + op + " " +
                       std::to_string(*rhs.ci));
  }
  // A shift amount known here, checked against the width once unify has
  // picked it (a scalar: broadcasting forgets the value).
  std::optional<int64_t> amount;
  if (shift && !isa<RankedTensorType>(rhs.v.getType()))
    amount = rhs.ci;
  if (!unify(lhs, rhs, loc, true))
    return TV{};
  Type e = elt(lhs.v);
  bool weak = lhs.weak && rhs.weak;
  if (shift && amount && isInt(e)) {
    // As unsigned: a u64 amount of 2^63 or more is out of range too.
    int64_t w = e.getIntOrFloatBitWidth();
    if (uint64_t(*amount) >= uint64_t(w))
      return fail(loc, "shift amount " + std::to_string(*amount) +
                           " is out of range for " + typeOf(lhs) +
                           ": it must be in 0 ... " + std::to_string(w - 1));
  }

  bool uns = lhs.uns; // unify gave both operands one signedness.
  if (isInt(e) && lhs.ci && rhs.ci) {
    if (auto f = foldInt(op, *lhs.ci, *rhs.ci, uns)) {
      TV r = constInt(normalizeInt(*f, e, uns), e, loc, uns);
      r.weak = weak;
      return r;
    }
  }
  // `0 * x` is 0 for scalar integers (wrapping arithmetic): the constant
  // lets `p + 0 * stride` fold away as well.
  if (isInt(e) && !e.isInteger(1) && op == "*" &&
      ((lhs.ci && *lhs.ci == 0) || (rhs.ci && *rhs.ci == 0)) &&
      !isa<RankedTensorType>(lhs.v.getType()) &&
      !isa<RankedTensorType>(rhs.v.getType())) {
    TV r = constInt(0, e, loc);
    r.weak = weak;
    return r;
  }
  if (isInt(e) && division && rhs.ci && *rhs.ci == 0)
    return fail(loc, "division by zero");

  if (logical) {
    if (!e.isInteger(1))
      return fail(loc, "'" + op + "' needs bool operands, got " +
                           typeStr(lhs.v.getType()));
    TV r{op == "&&" ? Value(b.create<arith::AndIOp>(l, lhs.v, rhs.v))
                    : Value(b.create<arith::OrIOp>(l, lhs.v, rhs.v))};
    if (lhs.ci && rhs.ci) // static_assert(A && B, ...) must fold.
      r.ci = op == "&&" ? (*lhs.ci && *rhs.ci) : (*lhs.ci || *rhs.ci);
    return r;
  }
  if (bitwise) {
    if (!isInt(e))
      return fail(loc, "'" + op + "' needs integer operands, got " +
                           typeStr(lhs.v.getType()));
    Value v;
    if (op == "&")
      v = b.create<arith::AndIOp>(l, lhs.v, rhs.v);
    else if (op == "|")
      v = b.create<arith::OrIOp>(l, lhs.v, rhs.v);
    else if (op == "^")
      v = b.create<arith::XOrIOp>(l, lhs.v, rhs.v);
    else
      v = shiftOp(op, lhs, rhs, !amount, l);
    TV r{v};
    r.weak = weak;
    r.uns = uns;
    return r;
  }

  static const std::map<std::string,
                        std::pair<arith::CmpFPredicate, arith::CmpIPredicate>>
      cmps = {
          {"<", {arith::CmpFPredicate::OLT, arith::CmpIPredicate::slt}},
          {"<=", {arith::CmpFPredicate::OLE, arith::CmpIPredicate::sle}},
          {">", {arith::CmpFPredicate::OGT, arith::CmpIPredicate::sgt}},
          {">=", {arith::CmpFPredicate::OGE, arith::CmpIPredicate::sge}},
          {"==", {arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq}},
          {"!=", {arith::CmpFPredicate::UNE, arith::CmpIPredicate::ne}},
      };
  auto cmp = cmps.find(op);
  if (cmp != cmps.end()) {
    TV r;
    if (isFloat(e))
      r.v = b.create<arith::CmpFOp>(l, cmp->second.first, lhs.v, rhs.v);
    else
      r.v = b.create<arith::CmpIOp>(
          l, uns ? unsignedPredicate(cmp->second.second) : cmp->second.second,
          lhs.v, rhs.v);
    if (lhs.ci && rhs.ci) {
      // Compared as the code would: unsigned values as uint64_t.
      auto less = [&](int64_t a, int64_t c) {
        return uns ? uint64_t(a) < uint64_t(c) : a < c;
      };
      int64_t a = *lhs.ci, c = *rhs.ci;
      r.ci = (op == "<"    ? less(a, c)
              : op == "<=" ? !less(c, a)
              : op == ">"  ? less(c, a)
              : op == ">=" ? !less(a, c)
              : op == "==" ? a == c
                           : a != c);
    }
    return r;
  }

  if (e.isInteger(1))
    return fail(loc, "arithmetic on bool values; convert with .to(i32)");
  TV r;
  r.weak = weak;
  if (isFloat(e)) {
    if (op == "+")
      r.v = b.create<arith::AddFOp>(l, lhs.v, rhs.v);
    else if (op == "-")
      r.v = b.create<arith::SubFOp>(l, lhs.v, rhs.v);
    else if (op == "*")
      r.v = b.create<arith::MulFOp>(l, lhs.v, rhs.v);
    else if (op == "/")
      r.v = divide(lhs.v, rhs.v, l);
    else if (op == "%")
      r.v = b.create<arith::RemFOp>(l, lhs.v, rhs.v);
    else if (op == "//") // floor(a / b), Python's float `//` up to rounding.
      r.v = floorOf(b.create<arith::DivFOp>(l, lhs.v, rhs.v), l);
    if (r.v && lhs.cf && rhs.cf && op != "%")
      r.cf = op == "+"    ? *lhs.cf + *rhs.cf
             : op == "-"  ? *lhs.cf - *rhs.cf
             : op == "*"  ? *lhs.cf * *rhs.cf
             : op == "//" ? std::floor(*lhs.cf / *rhs.cf)
                          : *lhs.cf / *rhs.cf;
  } else {
    if (op == "+")
      r.v = b.create<arith::AddIOp>(l, lhs.v, rhs.v);
    else if (op == "-")
      r.v = b.create<arith::SubIOp>(l, lhs.v, rhs.v);
    else if (op == "*")
      r.v = b.create<arith::MulIOp>(l, lhs.v, rhs.v);
    else if (op == "/")
      r.v = uns ? b.create<arith::DivUIOp>(l, lhs.v, rhs.v).getResult()
                : b.create<arith::DivSIOp>(l, lhs.v, rhs.v).getResult();
    else if (op == "%")
      r.v = uns ? b.create<arith::RemUIOp>(l, lhs.v, rhs.v).getResult()
                : b.create<arith::RemSIOp>(l, lhs.v, rhs.v).getResult();
    else if (op == "//" && uns)
      r.v = b.create<arith::DivUIOp>(l, lhs.v, rhs.v);
    else if (op == "//") {
      // Python's floor division: the truncated quotient, one less where the
      // remainder is nonzero and its sign differs from the divisor's
      // (-7 // 2 is -4, 7 // -2 is -4, -7 // -2 is 3). Spelled out in
      // divsi/remsi rather than arith.floordivsi, which the lowering to
      // the GPU does not expand.
      Value q = b.create<arith::DivSIOp>(l, lhs.v, rhs.v);
      Value rem = b.create<arith::RemSIOp>(l, lhs.v, rhs.v);
      TV zero = broadcastTo(constInt(0, e, loc), shape(lhs.v), loc);
      TV one = broadcastTo(constInt(1, e, loc), shape(lhs.v), loc);
      Value inexact =
          b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ne, rem, zero.v);
      Value remNeg =
          b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, rem, zero.v);
      Value divNeg = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt,
                                             rhs.v, zero.v);
      Value signsDiffer = b.create<arith::XOrIOp>(l, remNeg, divNeg);
      Value adjust = b.create<arith::AndIOp>(l, inexact, signsDiffer);
      Value down = b.create<arith::SubIOp>(l, q, one.v);
      r.v = b.create<arith::SelectOp>(l, adjust, down, q);
    }
    r.uns = uns;
  }
  if (!r.v)
    return fail(loc, "unknown operator '" + op + "'");
  return r;
}

Value MLIRGen::divide(Value x, Value y, Location l) {
  auto q = b.create<arith::DivFOp>(l, x, y);
  if (elt(x).isF32())
    q.setFastmath(arith::FastMathFlags::afn);
  return q;
}

Value MLIRGen::floorOf(Value x, Location l) {
  Type e = elt(x);
  if (floatRank(e) != 16)
    return b.create<math::FloorOp>(l, x);
  // A 16-bit float's floor is exact in f32 and representable again in 16
  // bits, so the round trip loses nothing (libdevice has no 16-bit floor).
  Type f32 = withElt(x.getType(), b.getF32Type());
  Value wide = b.create<arith::ExtFOp>(l, f32, x);
  Value fl = b.create<math::FloorOp>(l, wide);
  return b.create<arith::TruncFOp>(l, x.getType(), fl);
}

TV MLIRGen::power(TV x, TV y, Loc loc) {
  if (!x.v || !y.v)
    return TV{};
  if (isa<PointerType>(elt(x.v)) || isa<PointerType>(elt(y.v)) ||
      elt(x.v).isInteger(1) || elt(y.v).isInteger(1))
    return fail(loc, "'**' needs numeric operands, got " + typeOf(x) +
                         " and " + typeOf(y));
  if (isInt(elt(x.v)) && isInt(elt(y.v))) {
    // An integer power stays an integer, as in Python: x * x * ... by
    // repeated squaring, wrapping in x's type as `*` does. The exponent
    // must be known, so that the count of multiplications is.
    if (!y.ci || isa<RankedTensorType>(y.v.getType()))
      return fail(loc, "an integer power needs a compile-time exponent; "
                       "convert the base to a float for a run-time one");
    if (*y.ci < 0 && !y.uns)
      return fail(loc, "an integer raised to a negative power (" +
                           std::to_string(*y.ci) +
                           ") is not an integer; convert the base to a float");
    uint64_t n = uint64_t(*y.ci);
    if (x.weak && x.ci) { // Two literals fold exactly, or overflow.
      std::optional<int64_t> r = 1, sq = *x.ci;
      for (uint64_t k = n; k && r; k >>= 1) {
        if (k & 1)
          r = sq ? llvm::checkedMul(*r, *sq) : std::nullopt;
        if (k > 1)
          sq = sq ? llvm::checkedMul(*sq, *sq) : std::nullopt;
      }
      return literal(r, loc,
                     std::to_string(*x.ci) + " ** " + std::to_string(n));
    }
    TV result = broadcastTo(constInt(1, elt(x.v), loc, x.uns), shape(x.v), loc);
    result.uns = x.uns;
    result.weak = x.weak;
    TV sq = x;
    for (uint64_t k = n; k && result.v; k >>= 1) {
      if (k & 1)
        result = binary("*", result, sq, loc);
      if (k > 1)
        sq = binary("*", sq, sq, loc);
    }
    return result;
  }
  // The float power (libdevice's powf/pow); integers convert as in the
  // other math functions, 16-bit floats are computed in f32.
  if (!unify(x, y, loc, true))
    return TV{};
  Type e = elt(x.v);
  bool weak = x.weak && y.weak;
  std::optional<double> folded;
  if (x.cf && y.cf)
    folded = std::pow(*x.cf, *y.cf);
  Type work = floatRank(e) == 64 ? Type(b.getF64Type()) : Type(b.getF32Type());
  x = castTo(x, work, loc);
  y = castTo(y, work, loc);
  if (!x.v || !y.v)
    return TV{};
  TV r{b.create<math::PowFOp>(mloc(loc), x.v, y.v)};
  if (isFloat(e) && e != work)
    r = castTo(r, e, loc);
  r.weak = weak;
  r.cf = folded;
  return r;
}

TV MLIRGen::index(const ast::Expr *e) {
  TV x = expr(e->operands[0].get());
  if (x.array)
    return indexArray(e, x);
  if (!x.v)
    return x;
  if (llvm::is_contained(e->index, ast::IndexEntry::Value))
    return fail(e->loc, "tiles take only ':' and 'None' in subscripts; "
                        "indices select entries of constant arrays");
  ArrayRef<int64_t> s = shape(x.v);
  size_t keeps = llvm::count(e->index, ast::IndexEntry::Keep);
  if (keeps != s.size())
    return fail(e->loc, "subscript has " + std::to_string(keeps) +
                            " ':' entries but the tile has rank " +
                            std::to_string(s.size()));
  SmallVector<int64_t> cur(s);
  Value v = x.v;
  for (size_t i = 0; i < e->index.size(); ++i) {
    if (e->index[i] != ast::IndexEntry::NewAxis)
      continue;
    if (!isa<RankedTensorType>(v.getType()))
      v = b.create<SplatOp>(mloc(e->loc), RankedTensorType::get({1}, elt(v)),
                            v);
    else {
      cur.insert(cur.begin() + i, 1);
      v = b.create<ExpandDimsOp>(mloc(e->loc),
                                 RankedTensorType::get(cur, elt(v)), v,
                                 b.getI32IntegerAttr(i));
      continue;
    }
    cur.insert(cur.begin() + i, 1);
  }
  TV r{v};
  r.uns = x.uns;
  return r;
}
