//===- MLIRGen.cpp - Emit the tile dialect from the AST -------------------===//
//
// Walks one ast::Kernel and emits a func.func in the tile dialect. This is
// where the language's semantics live:
//
//  1. Constants: `const` parameters are bound to their (overridden or
//     default) values; scalar integer arithmetic on compile-time values is
//     folded, because shapes (`arange(0, BLOCK)`) must be known here.
//  2. Types: operands are promoted (int with float gives the float, f16 with
//     bf16 gives f32, narrow with wide gives wide), and untyped literals take
//     their partner's type.
//  3. Shapes: binary operands broadcast NumPy-style; scalars are splatted.
//  4. Control flow: a name rebound inside `for`/`if` that was declared outside
//     becomes a loop-carried value (scf.for iter_args) or an scf.if result.
//
// Errors are reported to Diagnostics at the AST node's location and emission
// continues to unwind by returning null values; nothing throws.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGen.h"
#include "Dialect/Tile/TileDialect.h"
#include "Frontend/Parser.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/ScopedHashTable.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;

namespace {

/// A value during emission: an SSA value plus what the front end knows about
/// it at compile time.
struct TV {
  Value v;
  /// An untyped literal (`2`, `0.5`): adopts the other operand's type.
  bool weak = false;
  std::optional<int64_t> ci; ///< Known integer value (scalars only).
  std::optional<double> cf;  ///< Known float value (scalars only).
  /// A dtype used as a value, as in `x.to(f16)`.
  std::optional<DType> dtype;
  /// A list literal, as in `zeros([M, N], f32)`.
  std::vector<int64_t> list;
  bool isList = false;

  explicit operator bool() const { return v || dtype || isList; }
};

struct Binding {
  TV value;
  Loc loc;
};

class MLIRGen {
public:
  MLIRGen(MLIRContext &ctx, const CompileOptions &options, Diagnostics &diags)
      : ctx(ctx), b(&ctx), options(options), diags(diags) {}

  OwningOpRef<ModuleOp> emit(const ast::Kernel &kernel);

private:
  // --- Errors -------------------------------------------------------------
  TV fail(Loc loc, const std::string &msg) {
    diags.error(loc, msg);
    return TV{};
  }
  bool failed() const { return diags.hadError(); }

  Location mloc(Loc loc) {
    return FileLineColLoc::get(&ctx, diags.file(), loc.line, loc.col);
  }

  // --- Types --------------------------------------------------------------
  Type mlirType(DType t);
  std::string typeStr(Type t);
  static bool isFloat(Type t) { return isa<FloatType>(t); }
  static bool isInt(Type t) { return isa<IntegerType>(t); }
  static Type elt(Value v) { return elementType(v.getType()); }
  static ArrayRef<int64_t> shape(Value v) { return shapeOf(v.getType()); }
  Type withElt(Type like, Type e) {
    if (auto t = dyn_cast<RankedTensorType>(like))
      return RankedTensorType::get(t.getShape(), e);
    return e;
  }
  Type promote(Type a, Type b);

  // --- Values -------------------------------------------------------------
  TV constInt(int64_t v, Type t, Loc loc);
  TV constFloat(double v, Type t, Loc loc);
  TV castTo(TV x, Type e, Loc loc);
  TV broadcastTo(TV x, ArrayRef<int64_t> shape, Loc loc);
  bool unify(TV &a, TV &c, Loc loc, bool numericOnly);
  std::optional<int64_t> constIntOf(const ast::Expr *e, const char *what);

  // --- Expressions --------------------------------------------------------
  TV expr(const ast::Expr *e);
  TV binary(const std::string &op, TV lhs, TV rhs, Loc loc);
  TV unary(const std::string &op, TV x, Loc loc);
  TV call(const ast::Expr *e);
  TV mathFn(const std::string &name, TV x, Loc loc);
  TV reduce(const std::string &name, TV x, const ast::Expr *axisExpr, Loc loc);
  TV index(const ast::Expr *e);

  // --- Statements ---------------------------------------------------------
  bool block(const ast::Block &stmts, bool topLevel);
  bool stmt(const ast::Stmt &s, bool last);
  bool forStmt(const ast::Stmt &s);
  bool ifStmt(const ast::Stmt &s);
  Binding *lookup(const std::string &name);
  void carriedNames(const ast::Block &stmts, std::set<std::string> declared,
                    std::vector<std::string> &out);

  MLIRContext &ctx;
  OpBuilder b;
  const CompileOptions &options;
  Diagnostics &diags;
  std::vector<std::map<std::string, Binding>> scopes;
  std::map<std::string, TV> constants;
  std::map<std::string, DType> typeConstants; ///< `const T: dtype` params.
  int depth = 0;
};

} // namespace

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

Type MLIRGen::mlirType(DType t) {
  switch (t) {
  case DType::I1:
    return b.getI1Type();
  case DType::I8:
    return b.getI8Type();
  case DType::I16:
    return b.getI16Type();
  case DType::I32:
    return b.getI32Type();
  case DType::I64:
    return b.getI64Type();
  case DType::F16:
    return b.getF16Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::F32:
    return b.getF32Type();
  case DType::F64:
    return b.getF64Type();
  }
  return b.getF32Type();
}

/// Types in DSL spelling for messages: "f32", "[64, 128] bf16", "*f16".
std::string MLIRGen::typeStr(Type t) {
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
    else if (auto i = dyn_cast<IntegerType>(e))
      os << "i" << i.getWidth();
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

static int floatRank(Type t) {
  if (t.isF16() || t.isBF16())
    return 16;
  return cast<FloatType>(t).getWidth();
}

Type MLIRGen::promote(Type a, Type c) {
  if (a == c)
    return a;
  if (isFloat(a) && isFloat(c)) {
    // f16 and bf16 have no common 16-bit type: meet in f32.
    if (floatRank(a) == 16 && floatRank(c) == 16)
      return b.getF32Type();
    return floatRank(a) >= floatRank(c) ? a : c;
  }
  if (isFloat(a))
    return a;
  if (isFloat(c))
    return c;
  return cast<IntegerType>(a).getWidth() >= cast<IntegerType>(c).getWidth()
             ? a
             : c;
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

TV MLIRGen::constInt(int64_t v, Type t, Loc loc) {
  TV r;
  if (isFloat(t))
    return constFloat(double(v), t, loc);
  r.v = b.create<arith::ConstantOp>(mloc(loc), b.getIntegerAttr(t, v));
  r.ci = t.isInteger(1) ? (v != 0) : v;
  return r;
}

TV MLIRGen::constFloat(double v, Type t, Loc loc) {
  TV r;
  r.v = b.create<arith::ConstantOp>(mloc(loc), b.getFloatAttr(t, v));
  r.cf = v;
  return r;
}

/// Converts the element type of `x` to `e` (a scalar type).
TV MLIRGen::castTo(TV x, Type e, Loc loc) {
  Type from = elt(x.v);
  if (from == e)
    return x;
  if (isa<PointerType>(from) || isa<PointerType>(e))
    return fail(loc, "cannot convert " + typeStr(x.v.getType()) + " to " +
                         typeStr(e));
  // Compile-time scalars fold, so constants keep feeding shapes.
  if (!isa<RankedTensorType>(x.v.getType())) {
    if (x.ci && isInt(e))
      return constInt(*x.ci, e, loc);
    if (x.ci && isFloat(e))
      return constFloat(double(*x.ci), e, loc);
    if (x.cf && isFloat(e))
      return constFloat(*x.cf, e, loc);
  }
  Location l = mloc(loc);
  Type to = withElt(x.v.getType(), e);
  TV r;
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
      r.v = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::ne, x.v,
                                    broadcastTo(constInt(0, from, loc),
                                                shape(x.v), loc)
                                        .v);
    else if (fw == 1)
      r.v = b.create<arith::ExtUIOp>(l, to, x.v);
    else if (fw < tw)
      r.v = b.create<arith::ExtSIOp>(l, to, x.v);
    else
      r.v = b.create<arith::TruncIOp>(l, to, x.v);
  } else if (isInt(from)) {
    if (from.isInteger(1))
      r.v = b.create<arith::UIToFPOp>(l, to, x.v);
    else
      r.v = b.create<arith::SIToFPOp>(l, to, x.v);
  } else {
    if (e.isInteger(1))
      r.v = b.create<arith::CmpFOp>(l, arith::CmpFPredicate::UNE, x.v,
                                    broadcastTo(constFloat(0, from, loc),
                                                shape(x.v), loc)
                                        .v);
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

/// The NumPy broadcast of two shapes (aligned on the right, size-1 dims
/// stretch), or nothing if they do not broadcast.
static std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                           ArrayRef<int64_t> c) {
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
  if (x.weak && !y.weak && !(isFloat(ex) && isInt(ey)))
    e = ey;
  else if (y.weak && !x.weak && !(isFloat(ey) && isInt(ex)))
    e = ex;
  else
    e = promote(ex, ey);
  x = castTo(x, e, loc);
  y = castTo(y, e, loc);
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
    TV r = constInt(e->intValue, b.getI32Type(), e->loc);
    // Literals outside i32 are i64.
    if (e->intValue > INT32_MAX || e->intValue < INT32_MIN)
      r = constInt(e->intValue, b.getI64Type(), e->loc);
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
    TV r;
    r.dtype = e->dtype;
    return r;
  }
  case ast::Expr::List: {
    TV r;
    r.isList = true;
    for (auto &op : e->operands) {
      auto v = constIntOf(op.get(), "a shape entry");
      if (!v)
        return TV{};
      r.list.push_back(*v);
    }
    return r;
  }
  case ast::Expr::Name: {
    if (Binding *bd = lookup(e->name))
      return bd->value;
    auto c = constants.find(e->name);
    if (c != constants.end()) {
      // Re-materialize at the use so the constant dominates it.
      TV r = c->second;
      TV m = r.ci ? constInt(*r.ci, elt(r.v), e->loc)
                  : constFloat(*r.cf, elt(r.v), e->loc);
      return m;
    }
    if (auto t = typeConstants.find(e->name); t != typeConstants.end()) {
      TV r;
      r.dtype = t->second;
      return r;
    }
    if (e->name == "inf" || e->name == "nan") {
      TV r = constFloat(e->name == "inf" ? INFINITY : NAN, b.getF32Type(),
                        e->loc);
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
      return l.isList || l.dtype ? fail(e->operands[0]->loc,
                                        "expected a value")
                                 : l;
    TV r = expr(e->operands[1].get());
    if (!r.v)
      return r.isList || r.dtype ? fail(e->operands[1]->loc,
                                        "expected a value")
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
    if (x.ci)
      return constInt(-*x.ci, e, loc);
    if (x.cf) {
      TV r = constFloat(-*x.cf, e, loc);
      r.weak = x.weak;
      return r;
    }
    if (isFloat(e))
      return TV{b.create<arith::NegFOp>(mloc(loc), x.v)};
    if (isInt(e))
      return binary("-", constInt(0, e, loc), x, loc);
    return fail(loc, "cannot negate " + typeStr(x.v.getType()));
  }
  if (op == "!") {
    if (!e.isInteger(1))
      return fail(loc, "'!' needs a bool operand, got " +
                           typeStr(x.v.getType()));
    TV t = broadcastTo(constInt(1, e, loc), shape(x.v), loc);
    return TV{b.create<arith::XOrIOp>(mloc(loc), x.v, t.v)};
  }
  if (op == "~") {
    if (!isInt(e) || e.isInteger(1))
      return fail(loc, "'~' needs an integer operand, got " +
                           typeStr(x.v.getType()));
    TV t = broadcastTo(constInt(-1, e, loc), shape(x.v), loc);
    return TV{b.create<arith::XOrIOp>(mloc(loc), x.v, t.v)};
  }
  return fail(loc, "unknown unary operator '" + op + "'");
}

/// Folds scalar integer arithmetic on compile-time values.
static std::optional<int64_t> foldInt(const std::string &op, int64_t a,
                                      int64_t c) {
  if (op == "+")
    return a + c;
  if (op == "-")
    return a - c;
  if (op == "*")
    return a * c;
  if (op == "/" && c != 0)
    return a / c;
  if (op == "%" && c != 0)
    return a % c;
  if (op == "<<" && c >= 0 && c < 63)
    return a << c;
  if (op == ">>" && c >= 0 && c < 63)
    return a >> c;
  if (op == "&")
    return a & c;
  if (op == "|")
    return a | c;
  if (op == "^")
    return a ^ c;
  return std::nullopt;
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
      return TV{b.create<AddPtrOp>(l, ptr.v.getType(), ptr.v, off.v)};
    }
    return fail(loc, "operator '" + op + "' is not defined on pointers");
  }

  bool logical = op == "&&" || op == "||";
  bool bitwise = op == "&" || op == "|" || op == "^" || op == "<<" || op == ">>";
  if (!unify(lhs, rhs, loc, true))
    return TV{};
  Type e = elt(lhs.v);
  bool weak = lhs.weak && rhs.weak;

  if (isInt(e) && lhs.ci && rhs.ci) {
    if (auto f = foldInt(op, *lhs.ci, *rhs.ci)) {
      TV r = constInt(*f, e, loc);
      r.weak = weak;
      return r;
    }
  }
  if (isInt(e) && (op == "/" || op == "%") && rhs.ci && *rhs.ci == 0)
    return fail(loc, "division by zero");

  if (logical) {
    if (!e.isInteger(1))
      return fail(loc, "'" + op + "' needs bool operands, got " +
                           typeStr(lhs.v.getType()));
    if (op == "&&")
      return TV{b.create<arith::AndIOp>(l, lhs.v, rhs.v)};
    return TV{b.create<arith::OrIOp>(l, lhs.v, rhs.v)};
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
    else if (op == "<<")
      v = b.create<arith::ShLIOp>(l, lhs.v, rhs.v);
    else
      v = b.create<arith::ShRSIOp>(l, lhs.v, rhs.v);
    TV r{v};
    r.weak = weak;
    return r;
  }

  static const std::map<std::string, std::pair<arith::CmpFPredicate,
                                               arith::CmpIPredicate>>
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
      r.v = b.create<arith::CmpIOp>(l, cmp->second.second, lhs.v, rhs.v);
    if (lhs.ci && rhs.ci)
      r.ci = (op == "<"    ? *lhs.ci < *rhs.ci
              : op == "<=" ? *lhs.ci <= *rhs.ci
              : op == ">"  ? *lhs.ci > *rhs.ci
              : op == ">=" ? *lhs.ci >= *rhs.ci
              : op == "==" ? *lhs.ci == *rhs.ci
                           : *lhs.ci != *rhs.ci);
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
      r.v = b.create<arith::DivFOp>(l, lhs.v, rhs.v);
    else if (op == "%")
      r.v = b.create<arith::RemFOp>(l, lhs.v, rhs.v);
    if (r.v && lhs.cf && rhs.cf && op != "%")
      r.cf = op == "+"   ? *lhs.cf + *rhs.cf
             : op == "-" ? *lhs.cf - *rhs.cf
             : op == "*" ? *lhs.cf * *rhs.cf
                         : *lhs.cf / *rhs.cf;
  } else {
    if (op == "+")
      r.v = b.create<arith::AddIOp>(l, lhs.v, rhs.v);
    else if (op == "-")
      r.v = b.create<arith::SubIOp>(l, lhs.v, rhs.v);
    else if (op == "*")
      r.v = b.create<arith::MulIOp>(l, lhs.v, rhs.v);
    else if (op == "/")
      r.v = b.create<arith::DivSIOp>(l, lhs.v, rhs.v);
    else if (op == "%")
      r.v = b.create<arith::RemSIOp>(l, lhs.v, rhs.v);
  }
  if (!r.v)
    return fail(loc, "unknown operator '" + op + "'");
  return r;
}

TV MLIRGen::index(const ast::Expr *e) {
  TV x = expr(e->operands[0].get());
  if (!x.v)
    return x;
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
  return TV{v};
}

TV MLIRGen::mathFn(const std::string &name, TV x, Loc loc) {
  Type e = elt(x.v);
  Location l = mloc(loc);
  if (name == "abs" && isInt(e) && !e.isInteger(1))
    return TV{b.create<math::AbsIOp>(l, x.v)};
  if (!isFloat(e)) {
    if (!isInt(e) || e.isInteger(1))
      return fail(loc, "'" + name + "' needs a numeric operand, got " +
                           typeStr(x.v.getType()));
    x = castTo(x, b.getF32Type(), loc);
    e = b.getF32Type();
  }
  // f16/bf16 math runs in f32: libdevice has no 16-bit transcendentals and
  // the precision loss would compound.
  Type orig = e;
  if (floatRank(e) == 16) {
    x = castTo(x, b.getF32Type(), loc);
    e = b.getF32Type();
  }
  auto c = [&](double v) {
    return broadcastTo(constFloat(v, e, loc), shape(x.v), loc).v;
  };
  Value v = x.v, r;
  if (name == "exp")
    r = b.create<math::ExpOp>(l, v);
  else if (name == "log")
    r = b.create<math::LogOp>(l, v);
  else if (name == "sqrt")
    r = b.create<math::SqrtOp>(l, v);
  else if (name == "rsqrt")
    r = b.create<math::RsqrtOp>(l, v);
  else if (name == "tanh")
    r = b.create<math::TanhOp>(l, v);
  else if (name == "erf")
    r = b.create<math::ErfOp>(l, v);
  else if (name == "abs")
    r = b.create<math::AbsFOp>(l, v);
  else if (name == "sigmoid" || name == "silu") {
    // sigmoid(x) = 1 / (1 + exp(-x))
    Value ex = b.create<math::ExpOp>(l, b.create<arith::NegFOp>(l, v));
    r = b.create<arith::DivFOp>(l, c(1.0),
                                b.create<arith::AddFOp>(l, c(1.0), ex));
    if (name == "silu")
      r = b.create<arith::MulFOp>(l, v, r);
  } else if (name == "gelu") {
    // 0.5 * x * (1 + erf(x / sqrt(2)))
    Value t = b.create<math::ErfOp>(
        l, b.create<arith::MulFOp>(l, v, c(M_SQRT1_2)));
    r = b.create<arith::MulFOp>(
        l, b.create<arith::MulFOp>(l, c(0.5), v),
        b.create<arith::AddFOp>(l, c(1.0), t));
  } else if (name == "gelu_tanh") {
    // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    Value x3 = b.create<arith::MulFOp>(l, b.create<arith::MulFOp>(l, v, v), v);
    Value in = b.create<arith::MulFOp>(
        l, c(0.7978845608028654),
        b.create<arith::AddFOp>(l, v,
                                b.create<arith::MulFOp>(l, c(0.044715), x3)));
    r = b.create<arith::MulFOp>(
        l, b.create<arith::MulFOp>(l, c(0.5), v),
        b.create<arith::AddFOp>(l, c(1.0), b.create<math::TanhOp>(l, in)));
  }
  TV out{r};
  return castTo(out, orig, loc);
}

TV MLIRGen::reduce(const std::string &name, TV x, const ast::Expr *axisExpr,
                   Loc loc) {
  auto s = shape(x.v);
  if (s.empty())
    return fail(loc, "'" + name + "' reduces a tile, got a scalar");
  int64_t axis = 0;
  if (axisExpr) {
    auto a = constIntOf(axisExpr, "axis");
    if (!a)
      return TV{};
    axis = *a < 0 ? *a + int64_t(s.size()) : *a;
  } else if (s.size() > 1) {
    return fail(loc, "'" + name + "' of a " + std::to_string(s.size()) +
                         "-D tile needs axis=");
  }
  if (axis < 0 || axis >= int64_t(s.size()))
    return fail(axisExpr ? axisExpr->loc : loc,
                "axis " + std::to_string(axis) + " out of range for " +
                    typeStr(x.v.getType()));
  Type e = elt(x.v);
  if (isa<PointerType>(e) || e.isF64() || e.isInteger(64))
    return fail(loc, "'" + name + "' does not support " + typeStr(e) +
                         " tiles yet");
  // Reductions run on 32-bit values: narrower types widen (exactly).
  Type work = isFloat(e) ? Type(b.getF32Type()) : Type(b.getI32Type());
  x = castTo(x, work, loc);
  ReduceKind kind = name == "sum"   ? ReduceKind::Sum
                    : name == "max" ? ReduceKind::Max
                    : name == "min" ? ReduceKind::Min
                                    : ReduceKind::Argmax;
  Type re = kind == ReduceKind::Argmax ? Type(b.getI32Type()) : work;
  SmallVector<int64_t> rs(s);
  rs.erase(rs.begin() + axis);
  Type rt = rs.empty() ? re : Type(RankedTensorType::get(rs, re));
  TV r{b.create<ReduceOp>(mloc(loc), rt, kind, x.v, uint32_t(axis))};
  // max/min give back the input type; sum keeps its 32-bit accumulator.
  if (kind == ReduceKind::Max || kind == ReduceKind::Min)
    r = castTo(r, e, loc);
  return r;
}

TV MLIRGen::call(const ast::Expr *e) {
  const std::string &fn = e->name;
  Loc loc = e->loc;
  Location l = mloc(loc);
  auto kw = [&](const char *name) -> const ast::Expr * {
    for (auto &k : e->kwargs)
      if (k.name == name)
        return k.value.get();
    return nullptr;
  };
  auto checkArgs = [&](size_t lo, size_t hi,
                       std::initializer_list<const char *> kws) -> bool {
    size_t n = e->operands.size();
    if (n < lo || n > hi) {
      fail(loc, "'" + fn + "' takes " +
                    (lo == hi ? std::to_string(lo)
                              : std::to_string(lo) + " to " +
                                    std::to_string(hi)) +
                    " positional argument" + (hi == 1 ? "" : "s") + ", got " +
                    std::to_string(n));
      return false;
    }
    for (auto &k : e->kwargs)
      if (std::find_if(kws.begin(), kws.end(), [&](const char *s) {
            return k.name == s;
          }) == kws.end()) {
        fail(k.loc, "'" + fn + "' has no argument named '" + k.name + "'");
        return false;
      }
    return true;
  };
  auto arg = [&](size_t i) { return expr(e->operands[i].get()); };
  auto value = [&](size_t i) -> TV {
    TV v = arg(i);
    if (!v.v && !failed())
      fail(e->operands[i]->loc, "expected a value");
    return v;
  };
  auto dtypeArg = [&](const ast::Expr *a) -> std::optional<DType> {
    TV v = expr(a);
    if (!v.dtype) {
      if (!failed())
        fail(a->loc, "expected a dtype such as f32 or bf16");
      return std::nullopt;
    }
    return v.dtype;
  };
  auto shapeArg = [&](const ast::Expr *a) -> std::optional<SmallVector<int64_t>> {
    TV v = expr(a);
    if (!v.isList) {
      if (!failed())
        fail(a->loc, "expected a shape such as [64, 128]");
      return std::nullopt;
    }
    for (int64_t d : v.list)
      if (d <= 0 || !llvm::isPowerOf2_64(d) || d > (1 << 20)) {
        fail(a->loc, "tile dimensions must be powers of two, got " +
                         std::to_string(d));
        return std::nullopt;
      }
    return SmallVector<int64_t>(v.list.begin(), v.list.end());
  };

  // A load/store mask: bool, broadcast to the pointers' shape.
  auto maskFor = [&](const ast::Expr *m, Value ptrs) -> Value {
    TV mv = expr(m);
    if (!mv.v)
      return {};
    if (!elt(mv.v).isInteger(1)) {
      fail(m->loc, "mask must be bool, got " + typeStr(mv.v.getType()));
      return {};
    }
    mv = broadcastTo(mv, shape(ptrs), m->loc);
    if (!mv.v)
      return {};
    if (shape(mv.v) != shape(ptrs)) {
      fail(m->loc, "mask shape does not match the pointers");
      return {};
    }
    return mv.v;
  };

  if (fn == "program_id" || fn == "num_programs") {
    if (!checkArgs(1, 1, {}))
      return TV{};
    auto axis = constIntOf(e->operands[0].get(), "axis");
    if (!axis)
      return TV{};
    if (*axis < 0 || *axis > 2)
      return fail(e->operands[0]->loc, "axis must be 0, 1 or 2");
    if (fn == "program_id")
      return TV{b.create<ProgramIdOp>(l, b.getI32Type(), *axis)};
    return TV{b.create<NumProgramsOp>(l, b.getI32Type(), *axis)};
  }
  if (fn == "arange") {
    if (!checkArgs(2, 2, {}))
      return TV{};
    auto lo = constIntOf(e->operands[0].get(), "arange's start");
    if (!lo)
      return TV{};
    auto hi = constIntOf(e->operands[1].get(), "arange's end");
    if (!hi)
      return TV{};
    int64_t n = *hi - *lo;
    if (n <= 0 || !llvm::isPowerOf2_64(n) || n > (1 << 20))
      return fail(loc, "arange length must be a power of two, got " +
                           std::to_string(n));
    if (*lo < INT32_MIN || *hi > INT32_MAX)
      return fail(loc, "arange bounds must fit in i32");
    return TV{b.create<ArangeOp>(
        l, RankedTensorType::get({n}, b.getI32Type()), *lo, *hi)};
  }
  if (fn == "zeros" || fn == "full") {
    bool full = fn == "full";
    if (!checkArgs(full ? 3 : 2, full ? 3 : 2, {}))
      return TV{};
    auto s = shapeArg(e->operands[0].get());
    if (!s)
      return TV{};
    auto dt = dtypeArg(e->operands[full ? 2 : 1].get());
    if (!dt)
      return TV{};
    TV v = full ? value(1) : constInt(0, mlirType(*dt), loc);
    if (!v.v)
      return v;
    if (isa<RankedTensorType>(v.v.getType()))
      return fail(e->operands[1]->loc, "fill value must be a scalar");
    v = castTo(v, mlirType(*dt), loc);
    return broadcastTo(v, *s, loc);
  }
  if (fn == "broadcast_to") {
    if (!checkArgs(2, 2, {}))
      return TV{};
    TV x = value(0);
    if (!x.v)
      return x;
    auto s = shapeArg(e->operands[1].get());
    if (!s)
      return TV{};
    return broadcastTo(x, *s, loc);
  }
  if (fn == "load") {
    if (!checkArgs(1, 1, {"mask", "other"}))
      return TV{};
    TV p = value(0);
    if (!p.v)
      return p;
    auto pt = dyn_cast<PointerType>(elt(p.v));
    if (!pt)
      return fail(e->operands[0]->loc,
                  "load needs pointers, got " + typeStr(p.v.getType()));
    Value mask, other;
    if (auto *m = kw("mask")) {
      mask = maskFor(m, p.v);
      if (!mask)
        return TV{};
    }
    if (auto *o = kw("other")) {
      if (!mask)
        return fail(o->loc, "'other' needs a 'mask'");
      TV ov = expr(o);
      if (!ov.v)
        return ov;
      ov = castTo(ov, pt.getPointee(), o->loc);
      if (!ov.v)
        return ov;
      ov = broadcastTo(ov, shape(p.v), o->loc);
      if (!ov.v)
        return ov;
      if (shape(ov.v) != shape(p.v))
        return fail(o->loc, "'other' shape does not match the pointers");
      other = ov.v;
    }
    return TV{b.create<LoadOp>(l, withElt(p.v.getType(), pt.getPointee()),
                               p.v, mask, other)};
  }
  if (fn == "store") {
    if (!checkArgs(2, 2, {"mask"}))
      return TV{};
    TV p = value(0);
    if (!p.v)
      return p;
    auto pt = dyn_cast<PointerType>(elt(p.v));
    if (!pt)
      return fail(e->operands[0]->loc,
                  "store needs pointers, got " + typeStr(p.v.getType()));
    TV v = value(1);
    if (!v.v)
      return v;
    if (isa<PointerType>(elt(v.v)))
      return fail(e->operands[1]->loc, "cannot store pointers");
    // Storing converts to the pointee type, as Triton does.
    v = castTo(v, pt.getPointee(), e->operands[1]->loc);
    if (!v.v)
      return v;
    if (shape(v.v).size() > shape(p.v).size() ||
        (shape(v.v) != shape(p.v) && !shape(v.v).empty() &&
         shape(v.v).size() == shape(p.v).size() &&
         llvm::any_of(llvm::zip(shape(v.v), shape(p.v)), [](auto t) {
           return std::get<0>(t) != std::get<1>(t) && std::get<0>(t) != 1;
         })))
      return fail(e->operands[1]->loc,
                  "value " + typeStr(v.v.getType()) +
                      " does not fit the pointers " + typeStr(p.v.getType()));
    v = broadcastTo(v, shape(p.v), e->operands[1]->loc);
    if (!v.v)
      return v;
    Value mask;
    if (auto *m = kw("mask")) {
      mask = maskFor(m, p.v);
      if (!mask)
        return TV{};
    }
    b.create<StoreOp>(l, p.v, v.v, mask);
    TV done;
    done.isList = true; // A statement-only result: not usable as a value.
    return done;
  }
  if (fn == "where") {
    if (!checkArgs(3, 3, {}))
      return TV{};
    TV c = value(0), x = value(1), y = value(2);
    if (!c.v || !x.v || !y.v)
      return TV{};
    if (!elt(c.v).isInteger(1))
      return fail(e->operands[0]->loc, "where's condition must be bool, got " +
                                           typeStr(c.v.getType()));
    if (!unify(x, y, loc, false))
      return TV{};
    // The condition broadcasts with the values, NumPy-style.
    auto out = broadcastShapes(shape(c.v), shape(x.v));
    if (!out)
      return fail(loc, "shape mismatch: condition " + typeStr(c.v.getType()) +
                           " and values " + typeStr(x.v.getType()) +
                           " do not broadcast");
    c = broadcastTo(c, *out, loc);
    x = broadcastTo(x, *out, loc);
    y = broadcastTo(y, *out, loc);
    if (!c.v || !x.v || !y.v)
      return TV{};
    return TV{b.create<arith::SelectOp>(l, c.v, x.v, y.v)};
  }
  if (fn == "to" || fn == "cast") {
    if (!checkArgs(2, 2, {}))
      return TV{};
    TV x = value(0);
    if (!x.v)
      return x;
    auto dt = dtypeArg(e->operands[1].get());
    if (!dt)
      return TV{};
    TV r = castTo(x, mlirType(*dt), loc);
    r.weak = false;
    return r;
  }
  if (fn == "maximum" || fn == "minimum") {
    if (!checkArgs(2, 2, {}))
      return TV{};
    TV x = value(0), y = value(1);
    if (!x.v || !y.v || !unify(x, y, loc, true))
      return TV{};
    Type t = elt(x.v);
    bool mx = fn == "maximum";
    if (isFloat(t))
      return TV{mx ? b.create<arith::MaximumFOp>(l, x.v, y.v).getResult()
                   : b.create<arith::MinimumFOp>(l, x.v, y.v).getResult()};
    return TV{mx ? b.create<arith::MaxSIOp>(l, x.v, y.v).getResult()
                 : b.create<arith::MinSIOp>(l, x.v, y.v).getResult()};
  }
  static const std::set<std::string> math = {
      "exp",  "log",     "sqrt", "rsqrt", "tanh",     "erf",
      "abs",  "sigmoid", "silu", "gelu",  "gelu_tanh"};
  if (math.count(fn)) {
    if (!checkArgs(1, 1, {}))
      return TV{};
    TV x = value(0);
    if (!x.v)
      return x;
    return mathFn(fn, x, loc);
  }
  if (fn == "sum" || fn == "max" || fn == "min" || fn == "argmax") {
    if (!checkArgs(1, 1, {"axis"}))
      return TV{};
    TV x = value(0);
    if (!x.v)
      return x;
    return reduce(fn, x, kw("axis"), loc);
  }
  if (fn == "load_block") {
    // load_block(d, [row, col], [R, C]): a block of a desc<T> tensor, zero
    // outside it (a TMA copy on sm_90, plain loads elsewhere).
    if (!checkArgs(3, 3, {}))
      return TV{};
    TV d = value(0);
    if (!d.v)
      return d;
    auto dt = dyn_cast<DescType>(d.v.getType());
    if (!dt)
      return fail(e->operands[0]->loc, "load_block needs a desc<T> parameter, got " +
                                           typeStr(d.v.getType()));
    const ast::Expr *at = e->operands[1].get();
    if (at->kind != ast::Expr::List || at->operands.size() != 2)
      return fail(at->loc, "expected the block's position as [row, col]");
    Value coord[2];
    for (int i = 0; i < 2; ++i) {
      TV c = expr(at->operands[i].get());
      if (!c.v)
        return c;
      if (!isInt(c.v.getType()) || c.v.getType().isInteger(1))
        return fail(at->operands[i]->loc,
                    "a block position must be a scalar integer, got " +
                        typeStr(c.v.getType()));
      coord[i] = castTo(c, b.getI32Type(), at->operands[i]->loc).v;
      if (!coord[i])
        return TV{};
    }
    auto s = shapeArg(e->operands[2].get());
    if (!s)
      return TV{};
    if (s->size() != 2)
      return fail(e->operands[2]->loc, "load_block loads a 2-D block");
    return TV{b.create<DescLoadOp>(
        l, RankedTensorType::get(*s, dt.getElement()), d.v, coord[0],
        coord[1])};
  }
  if (fn == "trans") {
    if (!checkArgs(1, 1, {}))
      return TV{};
    TV x = value(0);
    if (!x.v)
      return x;
    auto s = shape(x.v);
    if (s.size() != 2)
      return fail(loc, "trans needs a 2-D tile, got " + typeStr(x.v.getType()));
    return TV{b.create<TransOp>(
        l, RankedTensorType::get({s[1], s[0]}, elt(x.v)), x.v)};
  }
  // The optional accumulator of dot and sparse_dot: argument `i` when given
  // (it must be `accType`), else zeros. Null after a reported error.
  auto accumulator = [&](size_t i, RankedTensorType accType) -> Value {
    if (e->operands.size() <= i)
      return broadcastTo(constFloat(0, b.getF32Type(), loc), accType.getShape(),
                         loc)
          .v;
    TV t = value(i);
    if (t.v && t.v.getType() != accType) {
      fail(e->operands[i]->loc, fn + "'s accumulator must be " +
                                    typeStr(accType) + ", got " +
                                    typeStr(t.v.getType()));
      return Value();
    }
    return t.v;
  };
  if (fn == "dot") {
    // dot(a, b) or dot(a, b, acc): tensor-core product, f32 accumulation.
    if (!checkArgs(2, 3, {}))
      return TV{};
    TV a = value(0), c = value(1);
    if (!a.v || !c.v)
      return TV{};
    auto sa = shape(a.v), sb = shape(c.v);
    if (sa.size() != 2 || sb.size() != 2)
      return fail(loc, "dot needs 2-D tiles, got " + typeStr(a.v.getType()) +
                           " and " + typeStr(c.v.getType()));
    Type ea = elt(a.v), eb = elt(c.v);
    if (ea != eb || !(ea.isF16() || ea.isBF16()))
      return fail(loc, "dot needs two f16 or two bf16 tiles, got " +
                           typeStr(a.v.getType()) + " and " +
                           typeStr(c.v.getType()));
    if (sa[1] != sb[0])
      return fail(loc, "dot shapes do not chain: " + typeStr(a.v.getType()) +
                           " * " + typeStr(c.v.getType()));
    if (sa[0] % 16 || sb[1] % 8 || sa[1] % 16)
      return fail(loc, "dot needs M % 16 == 0, N % 8 == 0 and K % 16 == 0 "
                       "(the tensor-core tile), got M=" +
                           std::to_string(sa[0]) + " N=" + std::to_string(sb[1]) +
                           " K=" + std::to_string(sa[1]));
    auto accType = RankedTensorType::get({sa[0], sb[1]}, b.getF32Type());
    Value acc = accumulator(2, accType);
    if (!acc)
      return TV{};
    return TV{b.create<DotOp>(l, accType, a.v, c.v, acc)};
  }
  if (fn == "sparse_dot") {
    // sparse_dot(vals, meta, b) or sparse_dot(vals, meta, b, acc): A [M, K]
    // 2:4 sparse along K, given compressed (vals [M, K/2], meta [M, K/16]
    // i16), times b [K, N] on sparse tensor cores, f32 accumulation.
    if (!checkArgs(3, 4, {}))
      return TV{};
    TV a = value(0), m = value(1), c = value(2);
    if (!a.v || !m.v || !c.v)
      return TV{};
    auto sa = shape(a.v), sm = shape(m.v), sb = shape(c.v);
    if (sa.size() != 2 || sm.size() != 2 || sb.size() != 2)
      return fail(loc, "sparse_dot needs 2-D tiles, got " +
                           typeStr(a.v.getType()) + ", " +
                           typeStr(m.v.getType()) + " and " +
                           typeStr(c.v.getType()));
    Type ea = elt(a.v), eb = elt(c.v);
    if (ea != eb || !(ea.isF16() || ea.isBF16()))
      return fail(loc, "sparse_dot needs f16 or bf16 values and b of the same "
                       "type, got " +
                           typeStr(a.v.getType()) + " and " +
                           typeStr(c.v.getType()));
    if (!elt(m.v).isInteger(16))
      return fail(e->operands[1]->loc, "sparse_dot's metadata must be an i16 "
                                       "tile, got " +
                                           typeStr(m.v.getType()));
    int64_t k = 2 * sa[1];
    if (sb[0] != k)
      return fail(loc, "sparse_dot shapes do not chain: values " +
                           typeStr(a.v.getType()) + " (K = " +
                           std::to_string(k) + ") * " + typeStr(c.v.getType()));
    if (sm[0] != sa[0] || sm[1] * 16 != k)
      return fail(e->operands[1]->loc,
                  "sparse_dot's metadata must be [" + std::to_string(sa[0]) +
                      ", " + std::to_string(k / 16) + "] (one i16 per 16 "
                      "columns of A), got " + typeStr(m.v.getType()));
    if (sa[0] % 16 || sb[1] % 8 || k % 32)
      return fail(loc, "sparse_dot needs M % 16 == 0, N % 8 == 0 and "
                       "K % 32 == 0 (the m16n8k32 sparse tensor-core tile), "
                       "got M=" +
                           std::to_string(sa[0]) + " N=" +
                           std::to_string(sb[1]) + " K=" + std::to_string(k));
    auto accType = RankedTensorType::get({sa[0], sb[1]}, b.getF32Type());
    Value acc = accumulator(3, accType);
    if (!acc)
      return TV{};
    return TV{b.create<SparseDotOp>(l, accType, a.v, m.v, c.v, acc)};
  }
  return fail(loc, "unknown function '" + fn + "'");
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

Binding *MLIRGen::lookup(const std::string &name) {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end())
      return &f->second;
  }
  return nullptr;
}

/// Names assigned in `stmts` that refer to bindings outside it: these become
/// loop-carried values or scf.if results. `declared` tracks names `let`-bound
/// inside, which shadow outer ones.
void MLIRGen::carriedNames(const ast::Block &stmts,
                           std::set<std::string> declared,
                           std::vector<std::string> &out) {
  for (auto &s : stmts) {
    switch (s->kind) {
    case ast::Stmt::Let:
      declared.insert(s->name);
      break;
    case ast::Stmt::Assign:
      if (!declared.count(s->name) && lookup(s->name) &&
          !llvm::is_contained(out, s->name))
        out.push_back(s->name);
      break;
    case ast::Stmt::For: {
      std::set<std::string> inner = declared;
      inner.insert(s->name);
      carriedNames(s->body, inner, out);
      break;
    }
    case ast::Stmt::If:
      carriedNames(s->body, declared, out);
      carriedNames(s->elseBody, declared, out);
      break;
    default:
      break;
    }
  }
}

bool MLIRGen::block(const ast::Block &stmts, bool topLevel) {
  if (++depth > 64) {
    --depth;
    fail(stmts.empty() ? Loc{} : stmts.front()->loc, "nesting too deep");
    return false;
  }
  scopes.emplace_back();
  bool ok = true;
  for (size_t i = 0; i < stmts.size() && ok; ++i) {
    bool last = i + 1 == stmts.size();
    if (stmts[i]->kind == ast::Stmt::Return && !(topLevel && last)) {
      fail(stmts[i]->loc, "'return' is only allowed as the kernel's last "
                          "statement");
      ok = false;
      break;
    }
    ok = stmt(*stmts[i], last);
  }
  scopes.pop_back();
  --depth;
  return ok && !failed();
}

bool MLIRGen::stmt(const ast::Stmt &s, bool) {
  switch (s.kind) {
  case ast::Stmt::Let: {
    if (scopes.back().count(s.name)) {
      fail(s.loc, "'" + s.name + "' is already defined in this block");
      diags.note(scopes.back()[s.name].loc, "previous definition is here");
      return false;
    }
    if (constants.count(s.name)) {
      fail(s.loc, "'" + s.name + "' is a kernel constant");
      return false;
    }
    TV v = expr(s.value.get());
    if (!v.v) {
      if (!failed())
        fail(s.value->loc, "expected a value");
      return false;
    }
    scopes.back()[s.name] = Binding{v, s.loc};
    return true;
  }
  case ast::Stmt::Assign: {
    Binding *bd = lookup(s.name);
    if (!bd) {
      fail(s.loc, constants.count(s.name)
                      ? "cannot assign to kernel constant '" + s.name + "'"
                      : "assignment to undefined name '" + s.name +
                            "'; declare it with 'let'");
      return false;
    }
    TV v = expr(s.value.get());
    if (!v.v) {
      if (!failed())
        fail(s.value->loc, "expected a value");
      return false;
    }
    if (!s.op.empty()) {
      v = binary(s.op, bd->value, v, s.loc);
      if (!v.v)
        return false;
    }
    // Compound and plain assignments keep the binding's type where they can.
    if (v.weak || elt(v.v) != elt(bd->value.v)) {
      if (!isa<PointerType>(elt(bd->value.v)) && !isa<PointerType>(elt(v.v)) &&
          (v.weak || !s.op.empty()))
        v = castTo(v, elt(bd->value.v), s.loc);
    }
    if (!v.v)
      return false;
    v.weak = false;
    bd->value = v;
    bd->loc = s.loc;
    return true;
  }
  case ast::Stmt::ExprStmt: {
    expr(s.value.get());
    return !failed();
  }
  case ast::Stmt::Return:
    return true;
  case ast::Stmt::For:
    return forStmt(s);
  case ast::Stmt::If:
    return ifStmt(s);
  }
  return false;
}

bool MLIRGen::forStmt(const ast::Stmt &s) {
  Location l = mloc(s.loc);
  auto bound = [&](const ast::Expr *e) -> Value {
    TV v = expr(e);
    if (!v.v) {
      if (!failed())
        fail(e->loc, "expected a value");
      return {};
    }
    if (isa<RankedTensorType>(v.v.getType()) || !isInt(elt(v.v)) ||
        elt(v.v).isInteger(1)) {
      fail(e->loc, "range bounds must be scalar integers, got " +
                       typeStr(v.v.getType()));
      return {};
    }
    if (v.ci && s.step.get() == e && *v.ci <= 0) {
      fail(e->loc, "range step must be positive");
      return {};
    }
    return castTo(v, b.getI32Type(), e->loc).v;
  };
  Value lo = bound(s.lo.get());
  Value hi = lo ? bound(s.hi.get()) : Value();
  Value step = hi ? (s.step ? bound(s.step.get())
                            : constInt(1, b.getI32Type(), s.loc).v)
                  : Value();
  if (!step)
    return false;

  std::vector<std::string> carried;
  carriedNames(s.body, {s.name}, carried);
  SmallVector<Value> inits;
  SmallVector<Binding *> slots;
  for (auto &n : carried) {
    Binding *bd = lookup(n);
    slots.push_back(bd);
    inits.push_back(bd->value.v);
  }
  auto forOp = b.create<scf::ForOp>(l, lo, hi, step, inits);
  OpBuilder::InsertionGuard guard(b);
  Block *body = forOp.getBody();
  b.setInsertionPointToEnd(body);
  if (!body->empty()) // Drop the implicit yield; we emit our own.
    body->back().erase();
  std::vector<TV> before;
  for (size_t i = 0; i < slots.size(); ++i) {
    before.push_back(slots[i]->value);
    slots[i]->value = TV{forOp.getRegionIterArgs()[i]};
  }
  scopes.emplace_back();
  scopes.back()[s.name] = Binding{TV{forOp.getInductionVar()}, s.loc};
  bool ok = block(s.body, false);
  scopes.pop_back();
  if (!ok)
    return false;
  SmallVector<Value> yields;
  for (size_t i = 0; i < slots.size(); ++i) {
    Value v = slots[i]->value.v;
    if (v.getType() != inits[i].getType()) {
      fail(slots[i]->loc, "'" + carried[i] + "' changes type in the loop, from " +
                              typeStr(inits[i].getType()) + " to " +
                              typeStr(v.getType()));
      return false;
    }
    yields.push_back(v);
  }
  b.create<scf::YieldOp>(l, yields);
  for (size_t i = 0; i < slots.size(); ++i)
    slots[i]->value = TV{forOp.getResult(i)};
  return true;
}

bool MLIRGen::ifStmt(const ast::Stmt &s) {
  Location l = mloc(s.loc);
  TV c = expr(s.value.get());
  if (!c.v) {
    if (!failed())
      fail(s.value->loc, "expected a value");
    return false;
  }
  if (isa<RankedTensorType>(c.v.getType()) || !elt(c.v).isInteger(1)) {
    fail(s.value->loc, "'if' needs a scalar bool condition, got " +
                           typeStr(c.v.getType()) +
                           (isa<RankedTensorType>(c.v.getType())
                                ? "; use where() for tiles"
                                : ""));
    return false;
  }
  std::vector<std::string> carried;
  carriedNames(s.body, {}, carried);
  carriedNames(s.elseBody, {}, carried);
  SmallVector<Binding *> slots;
  SmallVector<Type> types;
  std::vector<TV> before;
  for (auto &n : carried) {
    Binding *bd = lookup(n);
    slots.push_back(bd);
    types.push_back(bd->value.v.getType());
    before.push_back(bd->value);
  }
  auto ifOp = b.create<scf::IfOp>(l, types, c.v, /*withElse=*/true);
  auto emitBranch = [&](Region &region, const ast::Block &stmts) -> bool {
    OpBuilder::InsertionGuard guard(b);
    Block *blk = &region.front();
    if (!blk->empty())
      blk->back().erase();
    b.setInsertionPointToEnd(blk);
    for (size_t i = 0; i < slots.size(); ++i)
      slots[i]->value = before[i];
    if (!block(stmts, false))
      return false;
    SmallVector<Value> yields;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i]->value.v.getType() != types[i]) {
        fail(slots[i]->loc, "'" + carried[i] + "' changes type in 'if', from " +
                                typeStr(types[i]) + " to " +
                                typeStr(slots[i]->value.v.getType()));
        return false;
      }
      yields.push_back(slots[i]->value.v);
    }
    b.create<scf::YieldOp>(l, yields);
    return true;
  };
  if (!emitBranch(ifOp.getThenRegion(), s.body) ||
      !emitBranch(ifOp.getElseRegion(), s.elseBody))
    return false;
  for (size_t i = 0; i < slots.size(); ++i)
    slots[i]->value = TV{ifOp.getResult(i)};
  return true;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Parses a -D value for a constant of type `t`.
static bool parseConstant(const std::string &text, DType t, int64_t &i,
                          double &f) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  if (t == DType::I1) {
    if (text == "true" || text == "1") {
      i = 1;
      return true;
    }
    if (text == "false" || text == "0") {
      i = 0;
      return true;
    }
    return false;
  }
  if (t == DType::F32 || t == DType::F64 || t == DType::F16 ||
      t == DType::BF16) {
    f = std::strtod(text.c_str(), &end);
    return *end == 0 && errno == 0;
  }
  i = std::strtoll(text.c_str(), &end, 0);
  return *end == 0 && errno == 0;
}

OwningOpRef<ModuleOp> MLIRGen::emit(const ast::Kernel &kernel) {
  Location kloc = mloc(kernel.loc);
  OwningOpRef<ModuleOp> module = ModuleOp::create(kloc);
  b.setInsertionPointToEnd(module->getBody());

  // 1. Attributes.
  int64_t numWarps = 4;
  for (auto &a : kernel.attrs) {
    if (a.name == "persistent" || a.name == "warp_specialize")
      continue; // After the constants: their value may name one.
    if (!a.constName.empty()) {
      fail(a.loc, "@" + a.name + " takes an integer, not a constant");
      return nullptr;
    }
    if (a.name != "num_warps") {
      fail(a.loc, "unknown kernel attribute '@" + a.name + "'");
      return nullptr;
    }
    if (a.value < 1 || a.value > 32 || !llvm::isPowerOf2_64(a.value)) {
      fail(a.loc, "num_warps must be a power of two from 1 to 32");
      return nullptr;
    }
    numWarps = a.value;
  }
  if (options.numWarps) {
    if (options.numWarps < 1 || options.numWarps > 32 ||
        !llvm::isPowerOf2_64(options.numWarps)) {
      diags.error("num_warps must be a power of two from 1 to 32");
      return nullptr;
    }
    numWarps = options.numWarps;
  }

  // 2. Constants, in order, so defaults may use earlier constants. They are
  // emitted into a scratch block that is thrown away: uses re-materialize.
  Block scratch;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&scratch);
    for (auto &p : kernel.params) {
      if (!p.isConst)
        continue;
      if (p.isTypeParam) {
        auto over = options.constants.find(p.name);
        DType dt;
        if (over != options.constants.end()) {
          if (!parseDType(over->second, dt)) {
            fail(p.loc, "value '" + over->second + "' given for type '" +
                            p.name + "' is not a dtype");
            return nullptr;
          }
        } else if (p.defaultValue) {
          TV v = expr(p.defaultValue.get());
          if (!v.dtype) {
            if (!failed())
              fail(p.defaultValue->loc, "default of '" + p.name +
                                            "' must be a dtype such as bf16");
            return nullptr;
          }
          dt = *v.dtype;
        } else {
          fail(p.loc, "type '" + p.name + "' has no default; give it a value "
                                          "(stc -D " +
                          p.name + "=bf16)");
          return nullptr;
        }
        typeConstants[p.name] = dt;
        continue;
      }
      Type t = mlirType(p.dtype);
      if (isa<FloatType>(t) && !t.isF32()) {
        fail(p.loc, "constants must be integers, bool or f32");
        return nullptr;
      }
      auto over = options.constants.find(p.name);
      TV v;
      if (over != options.constants.end()) {
        int64_t i = 0;
        double f = 0;
        if (!parseConstant(over->second, p.dtype, i, f)) {
          fail(p.loc, "value '" + over->second + "' given for constant '" +
                          p.name + "' is not a valid " + dtypeName(p.dtype));
          return nullptr;
        }
        v = isFloat(t) ? constFloat(f, t, p.loc) : constInt(i, t, p.loc);
      } else if (p.defaultValue) {
        v = expr(p.defaultValue.get());
        if (!v.v) {
          if (!failed())
            fail(p.defaultValue->loc, "expected a value");
          return nullptr;
        }
        if (!v.ci && !v.cf) {
          fail(p.defaultValue->loc,
               "default of '" + p.name + "' is not a compile-time constant");
          return nullptr;
        }
        v = castTo(v, t, p.loc);
      } else {
        fail(p.loc, "constant '" + p.name + "' has no default; give it a "
                                            "value (stc -D " +
                        p.name + "=...)");
        return nullptr;
      }
      v.weak = false;
      constants[p.name] = v;
    }
  }
  // Flags: `@persistent(0|1)`, `@warp_specialize(0|1)`, or the name of an
  // integer constant holding 0 or 1.
  std::vector<std::pair<const char *, int64_t>> flags;
  for (auto &a : kernel.attrs) {
    if (a.name != "persistent" && a.name != "warp_specialize")
      continue;
    int64_t value = a.value;
    if (!a.constName.empty()) {
      auto it = constants.find(a.constName);
      if (it == constants.end() || !it->second.ci) {
        fail(a.loc, "'" + a.constName + "' is not an integer constant of '" +
                        kernel.name + "'");
        return nullptr;
      }
      value = *it->second.ci;
    }
    if (value != 0 && value != 1) {
      fail(a.loc, "@" + a.name + " takes 0 or 1, got " + std::to_string(value));
      return nullptr;
    }
    flags.emplace_back(a.name == "persistent" ? kPersistentAttr
                                              : kWarpSpecializeAttr,
                       value);
  }
  for (auto &[name, value] : options.constants) {
    bool known = llvm::any_of(kernel.params, [&](const ast::Param &p) {
      return p.isConst && p.name == name;
    });
    if (!known) {
      diags.error("kernel '" + kernel.name + "' has no constant named '" +
                  name + "'");
      return nullptr;
    }
  }
  for (auto &name : options.divisibleBy16) {
    bool known = llvm::any_of(kernel.params, [&](const ast::Param &p) {
      return !p.isConst && !p.isPointer && !p.isDesc && p.name == name;
    });
    if (!known) {
      diags.error("kernel '" + kernel.name +
                  "' has no integer parameter named '" + name + "'");
      return nullptr;
    }
  }

  // 3. The function, its arguments and their divisibility facts.
  SmallVector<Type> argTypes;
  SmallVector<const ast::Param *> runtimeParams;
  for (auto &p : kernel.params) {
    if (p.isConst)
      continue;
    DType dt = p.dtype;
    if (!p.typeRef.empty()) {
      auto it = typeConstants.find(p.typeRef);
      if (it == typeConstants.end()) {
        fail(p.loc, "unknown type '" + p.typeRef +
                        "'; declare it with 'const " + p.typeRef +
                        ": dtype = f32'");
        return nullptr;
      }
      dt = it->second;
    }
    Type t = mlirType(dt);
    if (p.isPointer)
      t = PointerType::get(&ctx, t);
    if (p.isDesc) {
      if (dtypeSize(dt) != 2) {
        fail(p.loc, "desc<T> supports 16-bit tensors (f16, bf16, i16: "
                    "tensor-core operands and sparse metadata), got " +
                        std::string(dtypeName(dt)));
        return nullptr;
      }
      t = DescType::get(&ctx, t);
    }
    argTypes.push_back(t);
    runtimeParams.push_back(&p);
  }
  auto func = b.create<func::FuncOp>(kloc, kernel.name,
                                     b.getFunctionType(argTypes, {}));
  func->setAttr(kKernelAttr, b.getUnitAttr());
  func->setAttr(kNumWarpsAttr, b.getI32IntegerAttr(numWarps));
  for (auto &[name, value] : flags)
    func->setAttr(name, b.getI32IntegerAttr(int32_t(value)));
  Block *entry = func.addEntryBlock();
  scopes.emplace_back();
  for (size_t i = 0; i < runtimeParams.size(); ++i) {
    const ast::Param &p = *runtimeParams[i];
    if (p.isPointer || p.isDesc) // The runtime checks 16-byte alignment.
      func.setArgAttr(i, kDivisibilityAttr, b.getI32IntegerAttr(16));
    else if (llvm::is_contained(options.divisibleBy16, p.name) &&
             isInt(argTypes[i]) && !argTypes[i].isInteger(1))
      func.setArgAttr(i, kDivisibilityAttr, b.getI32IntegerAttr(16));
    scopes.back()[p.name] = Binding{TV{entry->getArgument(i)}, p.loc};
  }

  // 4. The body.
  b.setInsertionPointToEnd(entry);
  if (!block(kernel.body, true))
    return nullptr;
  b.create<func::ReturnOp>(kloc);
  scopes.pop_back();
  return module;
}

OwningOpRef<ModuleOp> sparsetile::emitTileIR(MLIRContext &context,
                                             const ast::Kernel &kernel,
                                             const CompileOptions &options,
                                             Diagnostics &diags) {
  MLIRGen gen(context, options, diags);
  OwningOpRef<ModuleOp> module = gen.emit(kernel);
  if (diags.hadError())
    return nullptr;
  return module;
}

KernelSignature
sparsetile::signatureOf(const ast::Kernel &kernel,
                        const std::map<std::string, std::string> &constants) {
  KernelSignature sig;
  // Type parameters resolve to their override, else their default.
  std::map<std::string, DType> types;
  for (auto &p : kernel.params) {
    if (!p.isTypeParam)
      continue;
    DType dt = DType::F32;
    auto over = constants.find(p.name);
    if (over != constants.end())
      parseDType(over->second, dt);
    else if (p.defaultValue && p.defaultValue->kind == ast::Expr::DTypeRef)
      dt = p.defaultValue->dtype;
    types[p.name] = dt;
  }
  sig.name = kernel.name;
  for (auto &p : kernel.params) {
    if (p.isConst) {
      ConstParam c;
      c.name = p.name;
      c.dtype = p.dtype;
      c.isType = p.isTypeParam;
      if (p.defaultValue) {
        const ast::Expr *d = p.defaultValue.get();
        if (d->kind == ast::Expr::DTypeRef)
          c.defaultValue = dtypeName(d->dtype);
        else if (d->kind == ast::Expr::IntLit)
          c.defaultValue = std::to_string(d->intValue);
        else if (d->kind == ast::Expr::FloatLit) {
          char buf[64];
          snprintf(buf, sizeof buf, "%g", d->floatValue);
          c.defaultValue = buf;
        } else if (d->kind == ast::Expr::BoolLit)
          c.defaultValue = d->intValue ? "true" : "false";
        else
          c.defaultValue = "<expr>";
      }
      sig.constants.push_back(c);
      continue;
    }
    KernelParam kp;
    kp.name = p.name;
    kp.isPointer = p.isPointer;
    kp.isDescriptor = p.isDesc;
    kp.dtype = p.typeRef.empty() ? p.dtype : types[p.typeRef];
    sig.params.push_back(kp);
  }
  return sig;
}
