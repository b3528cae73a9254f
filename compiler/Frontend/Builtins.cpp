//===- Builtins.cpp - The DSL's builtin functions -------------------------===//
//
// Every builtin (`arange`, `load`, `dot`, `exp`, ...) is one entry of the
// table at the end of this file: its name, its positional parameters (how
// many, and how many may be left out), the keywords it accepts, and the
// function that builds it. MLIRGen::call looks the name up and checks the
// argument count and keyword names the same way for all of them, so a
// builder starts from a well-formed call and only checks what is particular
// to it: compile-time values, types and shapes.
//
// To add a builtin: write its builder here and add its row to kBuiltins (and
// document it in Language.md). A builder whose integer result has the
// signedness of an argument (a load through `*u32`, a `where`, a reshape)
// copies TV::uns to it: the IR's integers are signless, and a dropped flag
// would turn the unsigned operations that follow into signed ones.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGenImpl.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::mlirgen;

namespace {

/// The longest `arange`: a tile's length, far above what a thread block holds.
constexpr int64_t kMaxArange = int64_t(1) << 20;
/// The largest `to_tile` dimension: each entry costs a select.
constexpr int64_t kMaxToTileDim = 4096;

/// One call of a builtin, as its builder sees it: the dispatcher has already
/// checked the number of positional arguments and the keywords' names.
struct BuiltinCall {
  const ast::Expr *e;
  /// The name called: builtins that differ only in the op they emit
  /// (`maximum`/`minimum`, the math functions) share a builder.
  const std::string &fn;
  Loc loc;
  Location l;
  /// The positional parameters given, in order, whether by position or by
  /// name (`program_id(axis=0)` is `program_id(0)`, as in Python): a
  /// builder never needs to know which spelling the call used.
  SmallVector<const ast::Expr *, 4> args;

  const ast::Expr *arg(size_t i) const { return args[i]; }
  size_t numArgs() const { return args.size(); }
  /// The keyword argument `name`, or null when the call leaves it out.
  const ast::Expr *kw(const char *name) const {
    for (auto &k : e->kwargs)
      if (k.name == name)
        return k.value.get();
    return nullptr;
  }
};

using BuiltinBuilder = TV (*)(MLIRGen &g, const BuiltinCall &c);

struct Builtin {
  const char *name;
  /// Positional parameters, for reference: the count is what is checked.
  std::vector<const char *> params;
  /// How many of `params` a call must give; the rest may be left out.
  size_t required;
  std::vector<const char *> keywords;
  BuiltinBuilder build;
};

} // namespace

//===----------------------------------------------------------------------===//
// Argument helpers
//===----------------------------------------------------------------------===//

/// Positional argument `i` as a value (not a dtype or a shape).
static TV value(MLIRGen &g, const BuiltinCall &c, size_t i) {
  TV v = g.expr(c.arg(i));
  if (!v.v && !g.failed())
    g.fail(c.arg(i)->loc, "expected a value");
  return v;
}

static std::optional<DType> dtypeArg(MLIRGen &g, const ast::Expr *a) {
  TV v = g.expr(a);
  if (!v.dtype) {
    if (!g.failed())
      g.fail(a->loc, "expected a dtype such as f32 or bf16");
    return std::nullopt;
  }
  return v.dtype;
}

static std::optional<SmallVector<int64_t>> shapeArg(MLIRGen &g,
                                                    const ast::Expr *a) {
  TV v = g.expr(a);
  if (!v.isList) {
    if (!g.failed())
      g.fail(a->loc, "expected a shape such as [64, 128]");
    return std::nullopt;
  }
  for (int64_t d : v.list)
    if (d <= 0 || !llvm::isPowerOf2_64(d) || d > (1 << 20)) {
      g.fail(a->loc,
             "tile dimensions must be powers of two, got " + std::to_string(d));
      return std::nullopt;
    }
  return SmallVector<int64_t>(v.list.begin(), v.list.end());
}

/// A load/store mask: bool, broadcast to the pointers' shape.
static Value maskFor(MLIRGen &g, const ast::Expr *m, Value ptrs) {
  TV mv = g.expr(m);
  if (!mv.v)
    return {};
  if (!g.elt(mv.v).isInteger(1)) {
    g.fail(m->loc, "mask must be bool, got " + g.typeStr(mv.v.getType()));
    return {};
  }
  mv = g.broadcastTo(mv, g.shape(ptrs), m->loc);
  if (!mv.v)
    return {};
  if (g.shape(mv.v) != g.shape(ptrs)) {
    g.fail(m->loc, "mask shape does not match the pointers");
    return {};
  }
  return mv.v;
}

/// The optional accumulator of dot and sparse_dot: argument `i` when given
/// (it must be `accType`), else zeros. Null after a reported error.
static Value accumulator(MLIRGen &g, const BuiltinCall &c, size_t i,
                         RankedTensorType accType) {
  if (c.numArgs() <= i)
    return g
        .broadcastTo(g.constFloat(0, g.b.getF32Type(), c.loc),
                     accType.getShape(), c.loc)
        .v;
  TV t = value(g, c, i);
  if (t.v && t.v.getType() != accType) {
    g.fail(c.arg(i)->loc, c.fn + "'s accumulator must be " +
                              g.typeStr(accType) + ", got " +
                              g.typeStr(t.v.getType()));
    return Value();
  }
  return t.v;
}

//===----------------------------------------------------------------------===//
// Builders
//===----------------------------------------------------------------------===//

// program_id(axis), num_programs(axis)
static TV buildGridQuery(MLIRGen &g, const BuiltinCall &c) {
  auto axis = g.constIntOf(c.arg(0), "axis");
  if (!axis)
    return TV{};
  if (*axis < 0 || *axis > 2)
    return g.fail(c.arg(0)->loc, "axis must be 0, 1 or 2");
  if (c.fn == "program_id")
    return TV{g.b.create<ProgramIdOp>(c.l, g.b.getI32Type(), *axis)};
  return TV{g.b.create<NumProgramsOp>(c.l, g.b.getI32Type(), *axis)};
}

// cluster_id(), cluster_rank(): program_id(0) / C and % C under
// @cluster(C) (C = 1 without it).
static TV buildClusterQuery(MLIRGen &g, const BuiltinCall &c) {
  if (c.fn == "cluster_id")
    return TV{g.b.create<ClusterIdOp>(c.l, g.b.getI32Type())};
  return TV{g.b.create<ClusterRankOp>(c.l, g.b.getI32Type())};
}

static TV buildArange(MLIRGen &g, const BuiltinCall &c) {
  auto lo = g.constIntOf(c.arg(0), "arange's start");
  if (!lo)
    return TV{};
  auto hi = g.constIntOf(c.arg(1), "arange's end");
  if (!hi)
    return TV{};
  // The bounds are checked first so that `hi - lo` cannot overflow (UBSan
  // caught arange(-2^63, 2^63 - 1)).
  if (*lo < INT32_MIN || *lo > INT32_MAX || *hi < INT32_MIN || *hi > INT32_MAX)
    return g.fail(c.loc, "arange bounds must fit in i32");
  int64_t n = *hi - *lo;
  if (n <= 0 || !llvm::isPowerOf2_64(n))
    return g.fail(c.loc, "arange length must be a power of two, got " +
                             std::to_string(n));
  if (n > kMaxArange)
    return g.fail(c.loc, "arange length " + std::to_string(n) +
                             " exceeds the limit of " +
                             std::to_string(kMaxArange) + " (2^20)");
  return TV{g.b.create<ArangeOp>(
      c.l, RankedTensorType::get({n}, g.b.getI32Type()), *lo, *hi)};
}

// zeros(shape, dtype), full(shape, value, dtype)
static TV buildFill(MLIRGen &g, const BuiltinCall &c) {
  bool full = c.fn == "full";
  auto s = shapeArg(g, c.arg(0));
  if (!s)
    return TV{};
  auto dt = dtypeArg(g, c.arg(full ? 2 : 1));
  if (!dt)
    return TV{};
  bool uns = dtypeIsUnsigned(*dt);
  TV v = full ? value(g, c, 1) : g.constInt(0, g.mlirType(*dt), c.loc, uns);
  if (!v.v)
    return v;
  if (isa<RankedTensorType>(v.v.getType()))
    return g.fail(c.arg(1)->loc, "fill value must be a scalar");
  v = g.castTo(v, g.mlirType(*dt), c.loc, uns);
  return g.broadcastTo(v, *s, c.loc);
}

static TV buildBroadcastTo(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0);
  if (!x.v)
    return x;
  auto s = shapeArg(g, c.arg(1));
  if (!s)
    return TV{};
  return g.broadcastTo(x, *s, c.loc);
}

/// Argument 0 of load and store, the pointers, into `p`; their pointer type,
/// or null (with a diagnostic naming `builtin` when it is not a pointer).
static PointerType pointersArg(MLIRGen &g, const BuiltinCall &c,
                               const char *builtin, TV &p) {
  p = value(g, c, 0);
  if (!p.v)
    return nullptr;
  auto pt = dyn_cast<PointerType>(g.elt(p.v));
  if (!pt)
    g.fail(c.arg(0)->loc, std::string(builtin) + " needs pointers, got " +
                              g.typeStr(p.v.getType()));
  return pt;
}

static TV buildLoad(MLIRGen &g, const BuiltinCall &c) {
  TV p;
  auto pt = pointersArg(g, c, "load", p);
  if (!pt)
    return TV{};
  Value mask, other;
  if (auto *m = c.kw("mask")) {
    mask = maskFor(g, m, p.v);
    if (!mask)
      return TV{};
  }
  if (auto *o = c.kw("other")) {
    if (!mask)
      return g.fail(o->loc, "'other' needs a 'mask'");
    TV ov = g.expr(o);
    if (!ov.v)
      return ov;
    ov = g.castTo(ov, pt.getPointee(), o->loc, p.uns);
    if (!ov.v)
      return ov;
    ov = g.broadcastTo(ov, g.shape(p.v), o->loc);
    if (!ov.v)
      return ov;
    if (g.shape(ov.v) != g.shape(p.v))
      return g.fail(o->loc, "'other' shape does not match the pointers");
    other = ov.v;
  }
  TV r{g.b.create<LoadOp>(c.l, g.withElt(p.v.getType(), pt.getPointee()), p.v,
                          mask, other)};
  r.uns = p.uns; // `*u32` loads u32.
  return r;
}

static TV buildStore(MLIRGen &g, const BuiltinCall &c) {
  TV p;
  auto pt = pointersArg(g, c, "store", p);
  if (!pt)
    return TV{};
  TV v = value(g, c, 1);
  if (!v.v)
    return v;
  if (isa<PointerType>(g.elt(v.v)))
    return g.fail(c.arg(1)->loc, "cannot store pointers");
  // Storing converts to the pointee type, as Triton does.
  v = g.castTo(v, pt.getPointee(), c.arg(1)->loc, p.uns);
  if (!v.v)
    return v;
  ArrayRef<int64_t> sv = g.shape(v.v), sp = g.shape(p.v);
  if (sv.size() > sp.size() ||
      (sv != sp && !sv.empty() && sv.size() == sp.size() &&
       llvm::any_of(llvm::zip(sv, sp), [](auto t) {
         return std::get<0>(t) != std::get<1>(t) && std::get<0>(t) != 1;
       })))
    return g.fail(c.arg(1)->loc, "value " + g.typeStr(v.v.getType()) +
                                     " does not fit the pointers " +
                                     g.typeStr(p.v.getType()));
  v = g.broadcastTo(v, sp, c.arg(1)->loc);
  if (!v.v)
    return v;
  Value mask;
  if (auto *m = c.kw("mask")) {
    mask = maskFor(g, m, p.v);
    if (!mask)
      return TV{};
  }
  g.b.create<StoreOp>(c.l, p.v, v.v, mask);
  TV done;
  done.isList = true; // A statement-only result: not usable as a value.
  return done;
}

static TV buildWhere(MLIRGen &g, const BuiltinCall &c) {
  TV cond = value(g, c, 0), x = value(g, c, 1), y = value(g, c, 2);
  if (!cond.v || !x.v || !y.v)
    return TV{};
  if (!g.elt(cond.v).isInteger(1))
    return g.fail(c.arg(0)->loc, "where's condition must be bool, got " +
                                     g.typeStr(cond.v.getType()));
  if (!g.unify(x, y, c.loc, false))
    return TV{};
  // The condition and both values broadcast together, NumPy-style (unify
  // gives numbers one shape, but leaves pointer tiles as they are).
  auto values = broadcastShapes(g.shape(x.v), g.shape(y.v));
  if (!values)
    return g.fail(c.loc, "shape mismatch: values " +
                             g.typeStr(x.v.getType()) + " and " +
                             g.typeStr(y.v.getType()) + " do not broadcast");
  auto out = broadcastShapes(g.shape(cond.v), *values);
  if (!out)
    return g.fail(c.loc, "shape mismatch: condition " +
                             g.typeStr(cond.v.getType()) + " and values " +
                             g.typeStr(x.v.getType()) + " do not broadcast");
  cond = g.broadcastTo(cond, *out, c.loc);
  x = g.broadcastTo(x, *out, c.loc);
  y = g.broadcastTo(y, *out, c.loc);
  if (!cond.v || !x.v || !y.v)
    return TV{};
  TV r{g.b.create<arith::SelectOp>(c.l, cond.v, x.v, y.v)};
  r.uns = x.uns; // unify gave x and y one signedness.
  return r;
}

/// The (x, dtype) arguments of to, cast and bitcast; false after an error.
static bool valueAndDType(MLIRGen &g, const BuiltinCall &c, TV &x,
                          std::optional<DType> &dt) {
  x = value(g, c, 0);
  if (!x.v)
    return false;
  dt = dtypeArg(g, c.arg(1));
  return dt.has_value();
}

/// The constant array argument `i` of a builtin.
static std::shared_ptr<const ConstArray> arrayArg(MLIRGen &g,
                                                  const ast::Expr *a) {
  TV v = g.expr(a);
  if (!v.array && !g.failed())
    g.fail(a->loc, "expected a constant array such as [[0, 1], [2, 3]]");
  return v.array;
}

// len(array): the size of a constant array's first dimension.
static TV buildLen(MLIRGen &g, const BuiltinCall &c) {
  auto a = arrayArg(g, c.arg(0));
  if (!a)
    return TV{};
  TV r = g.constInt(a->shape[0], g.b.getI32Type(), c.loc);
  r.weak = true;
  return r;
}

// shape(x) (also `x.shape`): a tile's shape as a constant array, so
// `x.shape[0]` is a compile-time integer (Triton's spelling) and
// `zeros(x.shape, f32)` a tile like x; [] for a scalar. shape(x, axis) is
// `x.shape[axis]`.
static TV buildShape(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0);
  if (!x.v)
    return x;
  auto array = std::make_shared<ConstArray>();
  ArrayRef<int64_t> dims = g.shape(x.v);
  array->shape = {int64_t(dims.size())};
  array->data.assign(dims.begin(), dims.end());
  if (c.numArgs() == 2) {
    auto axis = g.constIntOf(c.arg(1), "shape's axis");
    if (!axis)
      return TV{};
    if (*axis < 0 || *axis >= int64_t(dims.size()))
      return g.fail(c.arg(1)->loc, "axis " + std::to_string(*axis) +
                                       " is out of range for a value of "
                                       "rank " +
                                       std::to_string(dims.size()));
    TV r = g.constInt(dims[*axis], g.b.getI32Type(), c.loc);
    r.weak = true; // An untyped literal, as x.shape[0] is.
    return r;
  }
  TV r;
  r.isList = true;
  r.list = array->data;
  r.array = std::move(array);
  return r;
}

// to_tile(array, dtype): a constant array of rank 1 or 2 as a tile. The
// tile is built from an arange index and one select per entry that differs
// from the most common value (the lowering has no dense constants), so it is
// meant for small tables.
static TV buildToTile(MLIRGen &g, const BuiltinCall &c) {
  auto a = arrayArg(g, c.arg(0));
  if (!a)
    return TV{};
  auto dt = dtypeArg(g, c.arg(1));
  if (!dt)
    return TV{};
  if (a->shape.size() > 2)
    return g.fail(c.arg(0)->loc, "to_tile takes arrays of rank 1 or 2, got "
                                 "rank " +
                                     std::to_string(a->shape.size()));
  SmallVector<int64_t> shape(a->shape.begin(), a->shape.end());
  for (int64_t d : shape) {
    if (d <= 0 || !llvm::isPowerOf2_64(d))
      return g.fail(c.arg(0)->loc,
                    "to_tile needs power-of-two dimensions (tiles are), got " +
                        std::to_string(d));
    // One select per entry: a bigger table belongs in memory.
    if (d > kMaxToTileDim)
      return g.fail(c.arg(0)->loc, "to_tile dimension " + std::to_string(d) +
                                       " exceeds the limit of " +
                                       std::to_string(kMaxToTileDim));
  }
  Type i32 = g.b.getI32Type();
  // The flat index of each entry: arange, or rows * M + cols.
  Value idx = g.b.create<ArangeOp>(
      c.l, RankedTensorType::get({shape.back()}, i32), 0, shape.back());
  if (shape.size() == 2) {
    Value rows = g.b.create<ArangeOp>(
        c.l, RankedTensorType::get({shape[0]}, i32), 0, shape[0]);
    rows = g.b.create<ExpandDimsOp>(
        c.l, RankedTensorType::get({shape[0], 1}, i32), rows,
        g.b.getI32IntegerAttr(1));
    Value cols = g.b.create<ExpandDimsOp>(
        c.l, RankedTensorType::get({1, shape[1]}, i32), idx,
        g.b.getI32IntegerAttr(0));
    TV r = g.binary("*", TV{rows}, g.constInt(shape[1], i32, c.loc), c.loc);
    idx = g.binary("+", r, TV{cols}, c.loc).v;
    if (!idx)
      return TV{};
  }
  std::map<int64_t, int> counts;
  for (int64_t v : a->data)
    ++counts[v];
  int64_t common = a->data.front();
  for (auto [v, n] : counts)
    if (n > counts[common])
      common = v;
  Type t = g.mlirType(*dt);
  bool uns = dtypeIsUnsigned(*dt);
  // An entry is an untyped literal (Language.md), up to 64 bits wide
  // (`const BIG = [8000000000, 1]`): it takes the tile's type and must fit
  // it, as `store(p, 8000000000)` must. (The common entry used to be built
  // in i32, and one outside it crashed castTo.)
  auto entry = [&](int64_t v) {
    TV lit = g.constInt(v, g.b.getI64Type(), c.loc);
    lit.weak = true;
    return g.broadcastTo(g.castTo(lit, t, c.loc, uns), shape, c.loc);
  };
  TV out = entry(common);
  for (size_t k = 0; k < a->data.size() && out.v; ++k) {
    if (a->data[k] == common)
      continue;
    if (!g.withinBudget(c.loc)) // A 4096 x 4096 table is 16M selects.
      return TV{};
    TV hit = g.binary("==", TV{idx}, g.constInt(int64_t(k), i32, c.loc),
                      c.loc);
    TV v = entry(a->data[k]);
    if (!hit.v || !v.v)
      return TV{};
    out = TV{g.b.create<arith::SelectOp>(c.l, hit.v, v.v, out.v)};
  }
  out.uns = uns;
  return out;
}

// to(x, dtype), cast(x, dtype); `x.to(f16)` calls `to`.
static TV buildCast(MLIRGen &g, const BuiltinCall &c) {
  TV x;
  std::optional<DType> dt;
  if (!valueAndDType(g, c, x, dt))
    return TV{};
  TV r = g.castTo(x, g.mlirType(*dt), c.loc, dtypeIsUnsigned(*dt));
  r.weak = false;
  return r;
}

// bitcast(x, dtype), `x.bitcast(u32)`: the same bits read as another type of
// the same width (f32 <-> i32/u32, bf16/f16 <-> i16/u16, i32 <-> u32, ...).
static TV buildBitcast(MLIRGen &g, const BuiltinCall &c) {
  TV x;
  std::optional<DType> dt;
  if (!valueAndDType(g, c, x, dt))
    return TV{};
  Type from = g.elt(x.v), to = g.mlirType(*dt);
  if (isa<PointerType>(from) || from.isInteger(1) || to.isInteger(1))
    return g.fail(c.loc, "bitcast converts numbers of one width, got " +
                             g.typeOf(x) + " to " + dtypeName(*dt));
  unsigned wf = from.getIntOrFloatBitWidth(), wt = to.getIntOrFloatBitWidth();
  if (wf != wt)
    return g.fail(c.loc, "bitcast needs types of one width: " + g.typeOf(x) +
                             " has " + std::to_string(wf) + " bits, " +
                             dtypeName(*dt) + " has " + std::to_string(wt));
  // A literal takes its type first, so `bitcast(1065353216, f32)` is 1.0.
  if (x.weak)
    x = g.castTo(x, from, c.loc, false);
  TV r = x;
  r.weak = false;
  r.ci.reset();
  r.cf.reset();
  if (from != to)
    r.v = g.b.create<arith::BitcastOp>(c.l, g.withElt(x.v.getType(), to), x.v);
  r.uns = dtypeIsUnsigned(*dt);
  if (x.ci && g.isInt(to)) // i32 <-> u32 of a known value stays known.
    r.ci = normalizeInt(uint64_t(*x.ci), to, r.uns);
  return r;
}

/// maximum(x, y) (`mx`) or minimum(x, y) of unified operands.
static TV minMax(MLIRGen &g, bool mx, TV x, TV y, Location l) {
  Type t = g.elt(x.v);
  OpBuilder &b = g.b;
  if (g.isFloat(t))
    return TV{mx ? b.create<arith::MaximumFOp>(l, x.v, y.v).getResult()
                 : b.create<arith::MinimumFOp>(l, x.v, y.v).getResult()};
  TV r;
  r.uns = x.uns;
  if (x.uns)
    r.v = mx ? b.create<arith::MaxUIOp>(l, x.v, y.v).getResult()
             : b.create<arith::MinUIOp>(l, x.v, y.v).getResult();
  else
    r.v = mx ? b.create<arith::MaxSIOp>(l, x.v, y.v).getResult()
             : b.create<arith::MinSIOp>(l, x.v, y.v).getResult();
  return r;
}

// maximum(x, y), minimum(x, y)
static TV buildMinMax(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0), y = value(g, c, 1);
  if (!x.v || !y.v || !g.unify(x, y, c.loc, true))
    return TV{};
  return minMax(g, c.fn == "maximum", x, y, c.l);
}

// clamp(x, min, max): minimum(maximum(x, min), max), in the type the three
// promote to (NaN propagates, as through maximum and minimum).
static TV buildClamp(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0), lo = value(g, c, 1), hi = value(g, c, 2);
  if (!x.v || !lo.v || !hi.v || !g.unify(x, lo, c.loc, true) ||
      !g.unify(x, hi, c.loc, true) || !g.unify(x, lo, c.loc, true))
    return TV{};
  TV up = minMax(g, true, x, lo, c.l);
  up.weak = x.weak && lo.weak;
  if (!g.unify(up, hi, c.loc, true))
    return TV{};
  return minMax(g, false, up, hi, c.l);
}

// pow(x, y): the same as `x ** y` (MLIRGen::power).
static TV buildPow(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0), y = value(g, c, 1);
  if (!x.v || !y.v)
    return TV{};
  return g.power(x, y, c.loc);
}

// fma(x, y, z): x * y + z rounded once (PTX fma.rn) for floats, 16-bit
// ones computed in f32; for integers the wrapping x * y + z.
static TV buildFma(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0), y = value(g, c, 1), z = value(g, c, 2);
  if (!x.v || !y.v || !z.v || !g.unify(x, y, c.loc, true) ||
      !g.unify(x, z, c.loc, true) || !g.unify(x, y, c.loc, true))
    return TV{};
  Type e = g.elt(x.v);
  if (g.isInt(e)) {
    if (e.isInteger(1))
      return g.fail(c.loc, "'fma' needs numeric operands, got " + g.typeOf(x));
    return g.binary("+", g.binary("*", x, y, c.loc), z, c.loc);
  }
  Type work = floatRank(e) == 16 ? Type(g.b.getF32Type()) : e;
  x = g.castTo(x, work, c.loc);
  y = g.castTo(y, work, c.loc);
  z = g.castTo(z, work, c.loc);
  if (!x.v || !y.v || !z.v)
    return TV{};
  TV r{g.b.create<math::FmaOp>(c.l, x.v, y.v, z.v)};
  return g.castTo(r, e, c.loc);
}

// div_rn(x, y): x / y correctly rounded (PTX div.rn; Triton's div_rn),
// where `/` on f32 is div.full.f32. Integers are converted to f32.
static TV buildDivRn(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0), y = value(g, c, 1);
  if (!x.v || !y.v || !g.unify(x, y, c.loc, true))
    return TV{};
  Type e = g.elt(x.v);
  if (g.isInt(e)) {
    if (e.isInteger(1))
      return g.fail(c.loc,
                    "'div_rn' needs numeric operands, got " + g.typeOf(x));
    x = g.castTo(x, g.b.getF32Type(), c.loc);
    y = g.castTo(y, g.b.getF32Type(), c.loc);
    if (!x.v || !y.v)
      return TV{};
  }
  TV r{g.b.create<arith::DivFOp>(c.l, x.v, y.v)};
  r.weak = x.weak && y.weak;
  return r;
}

// umulhi(x, y): the high half of the 2N-bit product of two N-bit integers,
// their bits read as unsigned (Triton's umulhi, CUDA's __umulhi and
// __umul64hi): PTX mul.hi.u32 / mul.hi.u64.
static TV buildUmulhi(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0), y = value(g, c, 1);
  if (!x.v || !y.v || !g.unify(x, y, c.loc, true))
    return TV{};
  Type e = g.elt(x.v);
  if (!g.isInt(e) || e.isInteger(1))
    return g.fail(c.loc, "'umulhi' needs integer operands, got " +
                             g.typeOf(x) + " and " + g.typeOf(y));
  unsigned w = e.getIntOrFloatBitWidth();
  Type wideT = g.withElt(x.v.getType(), g.b.getIntegerType(2 * w));
  Value xw = g.b.create<arith::ExtUIOp>(c.l, wideT, x.v);
  Value yw = g.b.create<arith::ExtUIOp>(c.l, wideT, y.v);
  Value prod = g.b.create<arith::MulIOp>(c.l, xw, yw);
  Value shift = g.b.create<arith::ConstantOp>(
      c.l, g.b.getIntegerAttr(g.b.getIntegerType(2 * w), w));
  if (auto t = dyn_cast<RankedTensorType>(wideT))
    shift = g.b.create<SplatOp>(c.l, t, shift);
  Value hi = g.b.create<arith::ShRUIOp>(c.l, prod, shift);
  TV r{g.b.create<arith::TruncIOp>(c.l, x.v.getType(), hi)};
  r.uns = x.uns;
  if (x.ci && y.ci && w <= 32) // Known scalars stay known.
    r.ci = normalizeInt((uint64_t(*x.ci) & ((uint64_t(1) << w) - 1)) *
                                (uint64_t(*y.ci) & ((uint64_t(1) << w) - 1)) >>
                            w,
                        e, x.uns);
  return r;
}

// cdiv(x, y): the integer quotient rounded up (Triton's cdiv), exactly for
// any signs: the truncated quotient, one more where the remainder is
// nonzero and has the divisor's sign. (Triton's (x + y - 1) // y agrees for
// y > 0 but can overflow.)
static TV buildCdiv(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0), y = value(g, c, 1);
  if (!x.v || !y.v)
    return TV{};
  if (!g.isInt(g.elt(x.v)) || !g.isInt(g.elt(y.v)) ||
      g.elt(x.v).isInteger(1) || g.elt(y.v).isInteger(1))
    return g.fail(c.loc, "'cdiv' needs integer operands, got " + g.typeOf(x) +
                             " and " + g.typeOf(y));
  // -((-x) // y) would overflow at INT_MIN; the quotient and remainder
  // do not.
  TV q = g.binary("/", x, y, c.loc);
  TV r = g.binary("%", x, y, c.loc);
  if (!q.v || !r.v)
    return TV{};
  // Signed: round up where the remainder is nonzero and has the divisor's
  // sign ((r ^ y) >= 0); unsigned: wherever it is nonzero.
  TV zero = g.literal(0, c.loc, "0");
  TV adjust = g.binary("!=", r, zero, c.loc);
  if (!q.uns)
    adjust = g.binary(
        "&&", adjust,
        g.binary(">=", g.binary("^", r, y, c.loc), zero, c.loc), c.loc);
  TV up = g.binary("+", q, g.literal(1, c.loc, "1"), c.loc);
  if (!adjust.v || !up.v)
    return TV{};
  if (q.ci && adjust.ci) // Constants fold, so cdiv(N, BLOCK) stays one.
    return *adjust.ci ? up : q;
  adjust = g.broadcastTo(adjust, g.shape(q.v), c.loc);
  if (!adjust.v)
    return TV{};
  TV out{g.b.create<arith::SelectOp>(c.l, adjust.v, up.v, q.v)};
  out.uns = q.uns;
  return out;
}

// exp, exp2, log, log2, sqrt, rsqrt, sin, cos, tanh, erf, abs, floor,
// ceil, sigmoid, silu, gelu, gelu_tanh
static TV buildMath(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0);
  if (!x.v)
    return x;
  const std::string &name = c.fn;
  Loc loc = c.loc;
  Location l = c.l;
  OpBuilder &b = g.b;
  Type e = g.elt(x.v);
  if (!g.rejectFP8(x, loc, "'" + name + "'"))
    return TV{};
  // abs, floor and ceil are exact on integers (and bools): they keep the
  // type rather than round through f32, which would lose digits past 2^24.
  bool exactOnInts = name == "abs" || name == "floor" || name == "ceil";
  if (exactOnInts && g.isInt(e)) {
    if (name != "abs" || x.uns || e.isInteger(1))
      return x;
    TV r{b.create<math::AbsIOp>(l, x.v)};
    r.weak = x.weak;
    return r;
  }
  if (!g.isFloat(e)) {
    if (!g.isInt(e) || e.isInteger(1))
      return g.fail(loc, "'" + name + "' needs a numeric operand, got " +
                             g.typeStr(x.v.getType()));
    x = g.castTo(x, b.getF32Type(), loc);
    e = b.getF32Type();
  }
  // f16/bf16 math runs in f32: libdevice has no 16-bit transcendentals and
  // the precision loss would compound.
  Type orig = e;
  if (floatRank(e) == 16) {
    x = g.castTo(x, b.getF32Type(), loc);
    e = b.getF32Type();
  }
  auto k = [&](double v) {
    return g.broadcastTo(g.constFloat(v, e, loc), g.shape(x.v), loc).v;
  };
  Value v = x.v, r;
  // exp2 lowers to libdevice's exp2f, PTX's ex2.approx.ftz.f32 under the
  // FTZ answer that Triton gives too (PTXEmitter.cpp; CodegenOptions::ftz);
  // log2, log, sin, cos, floor and ceil are libdevice's too (log2f and logf
  // are polynomials, not lg2.approx). f32 exp is Triton's tl.exp
  // (and CUDA's __expf): exp2(x * log2 e), two instructions where
  // libdevice's expf takes ten, whose temporaries cost a row softmax half
  // its occupancy (bench/NOTES.md, "exp as Triton computes it").
  auto fastExp = [&](Value t) -> Value {
    if (!getElementTypeOrSelf(t.getType()).isF32())
      return b.create<math::ExpOp>(l, t);
    return b.create<math::Exp2Op>(l,
                                  b.create<arith::MulFOp>(l, t, k(M_LOG2E)));
  };
  if (name == "exp")
    r = fastExp(v);
  else if (name == "exp2")
    r = b.create<math::Exp2Op>(l, v);
  else if (name == "log")
    r = b.create<math::LogOp>(l, v);
  else if (name == "log2")
    r = b.create<math::Log2Op>(l, v);
  else if (name == "sin")
    r = b.create<math::SinOp>(l, v);
  else if (name == "cos")
    r = b.create<math::CosOp>(l, v);
  else if (name == "floor")
    r = b.create<math::FloorOp>(l, v);
  else if (name == "ceil")
    r = b.create<math::CeilOp>(l, v);
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
    // Operands are named before use, in the order g++ has always built
    // them: C++ leaves argument order unspecified, and another host
    // compiler would otherwise emit the ops (and the PTX) in another order.
    Value ex = fastExp(b.create<arith::NegFOp>(l, v));
    Value den = b.create<arith::AddFOp>(l, k(1.0), ex);
    Value one = k(1.0);
    r = g.divide(one, den, l);
    if (name == "silu")
      r = b.create<arith::MulFOp>(l, v, r);
  } else if (name == "gelu") {
    // 0.5 * x * (1 + erf(x / sqrt(2)))
    Value t =
        b.create<math::ErfOp>(l, b.create<arith::MulFOp>(l, v, k(M_SQRT1_2)));
    Value onePlus = b.create<arith::AddFOp>(l, k(1.0), t);
    Value half = b.create<arith::MulFOp>(l, k(0.5), v);
    r = b.create<arith::MulFOp>(l, half, onePlus);
  } else if (name == "gelu_tanh") {
    // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    Value x3 = b.create<arith::MulFOp>(l, b.create<arith::MulFOp>(l, v, v), v);
    Value cubic = b.create<arith::MulFOp>(l, k(0.044715), x3);
    Value sum = b.create<arith::AddFOp>(l, v, cubic);
    Value scale = k(0.7978845608028654);
    Value in = b.create<arith::MulFOp>(l, scale, sum);
    Value th = b.create<math::TanhOp>(l, in);
    Value onePlus = b.create<arith::AddFOp>(l, k(1.0), th);
    Value half = b.create<arith::MulFOp>(l, k(0.5), v);
    r = b.create<arith::MulFOp>(l, half, onePlus);
  }
  TV out{r};
  return g.castTo(out, orig, loc);
}

static std::optional<int64_t> axisOf(MLIRGen &g, const BuiltinCall &c,
                                     const TV &x);

// sum, max, min, argmax, argmin, reduce_or, reduce_and, reduce_xor
// (xor_sum): (x, axis=)
static TV buildReduce(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0);
  if (!x.v)
    return x;
  const std::string &name = c.fn;
  Loc loc = c.loc;
  auto s = g.shape(x.v);
  if (s.empty())
    return g.fail(loc, "'" + name + "' reduces a tile, got a scalar");
  auto axisOr = axisOf(g, c, x);
  if (!axisOr)
    return TV{};
  int64_t axis = *axisOr;
  Type e = g.elt(x.v);
  bool uns = x.uns;
  if (isa<PointerType>(e) || e.isF64())
    return g.fail(loc, "'" + name + "' does not support " +
                           g.typeStr(e, uns) + " tiles yet");
  ReduceKind kind = name == "sum"          ? ReduceKind::Sum
                    : name == "max"        ? ReduceKind::Max
                    : name == "min"        ? ReduceKind::Min
                    : name == "reduce_or"  ? ReduceKind::Or
                    : name == "reduce_and" ? ReduceKind::And
                    : name == "reduce_xor" || name == "xor_sum"
                        ? ReduceKind::Xor
                        : ReduceKind::Argmax; // argmax, argmin
  // argmin is argmax of the values in reversed order: -x for floats, ~x
  // for integers (~x = -x - 1 reverses the signed order and the unsigned
  // one, with no overflow). Both map equal values to equal ones, so ties
  // still go to the first index, and a NaN stays a NaN.
  if (name == "argmin") {
    if (isa<PointerType>(e) || e.isF64())
      return g.fail(loc, "'argmin' does not support " + g.typeStr(e, uns) +
                             " tiles yet");
    x = g.unary(g.isFloat(e) ? "-" : "~", x, loc);
    if (!x.v)
      return x;
  }
  bool bitwise = kind == ReduceKind::Or || kind == ReduceKind::And ||
                 kind == ReduceKind::Xor;
  if (bitwise && !g.isInt(e))
    return g.fail(loc, "'" + name + "' is bitwise: it needs an integer tile, "
                                    "got " +
                           g.typeOf(x));
  // Reductions run on 32- or 64-bit values: narrower types widen (exactly;
  // u8 and u16 zero-extend, so their order is the i32 order).
  Type work = g.isFloat(e)      ? Type(g.b.getF32Type())
              : e.isInteger(64) ? Type(g.b.getI64Type())
                                : Type(g.b.getI32Type());
  x = g.castTo(x, work, loc, uns);
  // The reduction compares signed. For u32 and u64, flipping the top bit maps
  // the unsigned order onto the signed one (0 -> INT_MIN, all ones ->
  // INT_MAX), so max/min/argmax of the flipped values, flipped back, are the
  // unsigned ones (argmax picks the same index: the map is monotone and one
  // to one).
  bool ordered = kind == ReduceKind::Max || kind == ReduceKind::Min ||
                 kind == ReduceKind::Argmax;
  int64_t top = work.isInteger(64) ? INT64_MIN : int64_t(INT32_MIN);
  Value flip;
  if (uns && ordered && (work.isInteger(32) || work.isInteger(64)) &&
      (e.isInteger(32) || e.isInteger(64))) {
    flip = g.broadcastTo(g.constInt(top, work, loc), s, loc).v;
    x.v = g.b.create<arith::XOrIOp>(g.mloc(loc), x.v, flip);
  }
  Type re = kind == ReduceKind::Argmax ? Type(g.b.getI32Type()) : work;
  SmallVector<int64_t> rs(s);
  rs.erase(rs.begin() + axis);
  Type rt = rs.empty() ? re : Type(RankedTensorType::get(rs, re));
  TV r{g.b.create<ReduceOp>(g.mloc(loc), rt, kind, x.v, uint32_t(axis))};
  if (flip && kind != ReduceKind::Argmax) {
    TV back = g.constInt(top, work, loc);
    if (!rs.empty())
      back = g.broadcastTo(back, rs, loc);
    r.v = g.b.create<arith::XOrIOp>(g.mloc(loc), r.v, back.v);
  }
  // max/min and the bitwise ones give back the input type (exactly: the
  // widening is undone by the truncation); sum keeps its wider accumulator
  // (unsigned for unsigned inputs: the wrapped sum's bits are the same).
  r.uns = uns && kind != ReduceKind::Argmax;
  if (kind != ReduceKind::Sum && kind != ReduceKind::Argmax)
    r = g.castTo(r, e, loc, uns);
  return r;
}

/// The `axis=` of a reduction or scan of `x` (0 for a 1-D tile when left
/// out), normalized; nullopt after a reported error.
static std::optional<int64_t> axisOf(MLIRGen &g, const BuiltinCall &c,
                                     const TV &x) {
  auto s = g.shape(x.v);
  const ast::Expr *axisExpr = c.kw("axis");
  int64_t axis = 0;
  if (axisExpr) {
    auto a = g.constIntOf(axisExpr, "axis");
    if (!a)
      return std::nullopt;
    axis = *a < 0 ? *a + int64_t(s.size()) : *a;
  } else if (s.size() > 1) {
    g.fail(c.loc, "'" + c.fn + "' of a " + std::to_string(s.size()) +
                      "-D tile needs axis=");
    return std::nullopt;
  }
  if (axis < 0 || axis >= int64_t(s.size())) {
    g.fail(axisExpr ? axisExpr->loc : c.loc,
           "axis " + std::to_string(axis) + " out of range for " +
               g.typeStr(x.v.getType()));
    return std::nullopt;
  }
  return axis;
}

// cumsum(x, axis=): inclusive prefix sums, in i32 (narrower integers and
// bools widen, as Triton does), i64 or f32 (f16/bf16 widen too).
static TV buildCumsum(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0);
  if (!x.v)
    return x;
  if (g.shape(x.v).empty())
    return g.fail(c.loc, "'cumsum' scans a tile, got a scalar");
  auto axis = axisOf(g, c, x);
  if (!axis)
    return TV{};
  Type e = g.elt(x.v);
  if (isa<PointerType>(e) || e.isF64())
    return g.fail(c.loc, "'cumsum' does not support " + g.typeStr(e) +
                             " tiles");
  Type work = g.isFloat(e)      ? Type(g.b.getF32Type())
              : e.isInteger(64) ? Type(g.b.getI64Type())
                                : Type(g.b.getI32Type());
  x = g.castTo(x, work, c.loc);
  if (!x.v)
    return x;
  return TV{g.b.create<ScanOp>(c.l, x.v.getType(), ReduceKind::Sum, x.v,
                               uint32_t(*axis))};
}

// reshape(x, SHAPE): the same elements in row-major order.
static TV buildReshape(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0);
  if (!x.v)
    return x;
  if (g.shape(x.v).empty())
    return g.fail(c.arg(0)->loc, "reshape needs a tile, got a scalar");
  auto s = shapeArg(g, c.arg(1));
  if (!s)
    return TV{};
  auto src = cast<RankedTensorType>(x.v.getType());
  int64_t n = 1;
  for (int64_t d : *s)
    n *= d;
  if (n != src.getNumElements())
    return g.fail(c.arg(1)->loc,
                  "reshape must keep the element count: " +
                      g.typeStr(x.v.getType()) + " has " +
                      std::to_string(src.getNumElements()) + ", the shape " +
                      std::to_string(n));
  auto rt = RankedTensorType::get(*s, src.getElementType());
  if (rt == src)
    return x;
  return TV{g.b.create<ReshapeOp>(c.l, rt, x.v)};
}

// multiple_of(x, values), max_contiguous(x, values): Triton's hints. `x`
// itself, with a tile.assume that AxisInfo believes: each element (tiles:
// the first of each run) is a multiple of the value, or the values come in
// runs of that many consecutive integers. `values` is one integer or one
// per dimension; AxisInfo tracks the last dimension only, and powers of two
// only (the largest one dividing the value is kept).
static TV buildHint(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0);
  if (!x.v)
    return x;
  Type elt = g.elt(x.v);
  if (!(isa<PointerType>(elt) || (isa<IntegerType>(elt) && !elt.isInteger(1))))
    return g.fail(c.arg(0)->loc, c.fn + " needs integers or pointers, got " +
                                     g.typeStr(x.v.getType()));
  size_t rank = g.shape(x.v).size();
  TV vs = g.expr(c.arg(1));
  if (!vs && !g.failed())
    return g.fail(c.arg(1)->loc, "expected an integer or a list of them");
  int64_t n = 0;
  if (vs.isList) {
    if (vs.list.size() != std::max<size_t>(rank, 1))
      return g.fail(c.arg(1)->loc,
                    c.fn + " needs one value per dimension (" +
                        std::to_string(std::max<size_t>(rank, 1)) + "), got " +
                        std::to_string(vs.list.size()));
    n = vs.list.back();
  } else if (vs.ci) {
    n = *vs.ci;
  } else {
    return g.fail(c.arg(1)->loc,
                  c.fn + "'s values must be compile-time integers");
  }
  if (n <= 0)
    return g.fail(c.arg(1)->loc, c.fn + "'s values must be positive, got " +
                                     std::to_string(n));
  bool contiguity = c.fn == "max_contiguous";
  // A known scalar needs no promise; a scalar has no runs.
  if (x.ci || (contiguity && rank == 0))
    return x;
  uint64_t u = uint64_t(n);
  auto pow2 = g.b.getI64IntegerAttr(int64_t(std::min<uint64_t>(
      u & (~u + 1), uint64_t(1) << 30)));
  auto op = g.b.create<tile::AssumeOp>(c.l, x.v.getType(), x.v,
                                 contiguity ? IntegerAttr() : pow2,
                                 contiguity ? pow2 : IntegerAttr());
  TV out = x;
  out.v = op.getResult();
  out.weak = false;
  return out;
}

/// The text of argument `a` when it is a string literal (device_print's
/// prefix).
static std::optional<std::string> stringLiteral(const ast::Expr *a) {
  if (a && a->kind == ast::Expr::String)
    return a->name;
  return std::nullopt;
}

// device_print("x =", x, ...): prints every element of each value from the
// GPU (Print.cpp), with the program id and the element's coordinates.
static TV buildDevicePrint(MLIRGen &g, const BuiltinCall &c) {
  std::string prefix;
  SmallVector<Value> vals;
  for (size_t i = 0; i < c.numArgs(); ++i) {
    if (auto text = stringLiteral(c.arg(i)); text && i == 0) {
      if (StringRef(*text).contains('%'))
        return g.fail(c.arg(i)->loc, "device_print's prefix may not contain "
                                     "'%' (it is not a format string)");
      prefix = *text;
      continue;
    }
    TV v = value(g, c, i);
    if (!v.v)
      return v;
    Type e = g.elt(v.v);
    if (!g.isInt(e) && !g.isFloat(e))
      return g.fail(c.arg(i)->loc, "device_print prints numbers, got " +
                                       g.typeStr(v.v.getType()));
    vals.push_back(v.v);
  }
  if (vals.empty())
    return g.fail(c.loc, "device_print needs a value to print");
  g.b.create<PrintOp>(c.l, g.b.getStringAttr(prefix), vals);
  TV done;
  done.isList = true; // A statement-only result, as store's.
  return done;
}

/// How static_print shows a value: known scalars by value, a dtype by
/// name, a constant array as a list, a tile or run-time scalar by its type.
static std::string describeStatic(MLIRGen &g, const TV &v) {
  if (v.dtype)
    return dtypeName(*v.dtype);
  if (v.array) {
    std::string s;
    std::function<void(size_t, size_t &)> dim = [&](size_t d, size_t &at) {
      s += "[";
      for (int64_t i = 0; i < v.array->shape[d]; ++i) {
        s += i ? ", " : "";
        if (d + 1 == v.array->shape.size())
          s += std::to_string(v.array->data[at++]);
        else
          dim(d + 1, at);
      }
      s += "]";
    };
    size_t at = 0;
    dim(0, at);
    return s;
  }
  if (v.tuple) {
    std::string s = "(";
    for (size_t i = 0; i < v.tuple->size(); ++i)
      s += (i ? ", " : "") + describeStatic(g, (*v.tuple)[i]);
    return s + ")";
  }
  if (!v.v)
    return "(no value)";
  if (isa<RankedTensorType>(v.v.getType()))
    return g.typeOf(v); // "[64, 128] f32"
  if (v.ci)
    return g.elt(v.v).isInteger(1) ? (*v.ci ? "true" : "false")
                                   : std::to_string(*v.ci);
  if (v.cf) {
    std::ostringstream os;
    os << *v.cf;
    return os.str();
  }
  return g.typeOf(v) + " (known at run time)";
}

// static_print(...): prints its arguments while compiling, as a note at the
// call ("static_print: BLOCK = 128"): known constants by value, tiles by
// shape and type, strings as they are; Triton's tl.static_print. Nothing
// reaches the GPU.
static TV buildStaticPrint(MLIRGen &g, const BuiltinCall &c) {
  std::string text;
  for (size_t i = 0; i < c.numArgs(); ++i) {
    text += i ? " " : "";
    if (auto s = stringLiteral(c.arg(i))) {
      text += *s;
      continue;
    }
    TV v = g.expr(c.arg(i));
    if (g.failed())
      return TV{};
    text += describeStatic(g, v);
  }
  g.diags.note(c.loc, "static_print: " + text);
  TV done;
  done.isList = true; // A statement-only result, as store's.
  return done;
}

// device_assert(cond, "message"): under CodegenOptions::debug, a false
// element prints the message and stops the kernel (AssertOp, Print.cpp).
// Otherwise nothing is built and `cond` is not even evaluated, as Triton
// drops tl.device_assert without debug=True.
static TV buildDeviceAssert(MLIRGen &g, const BuiltinCall &c) {
  std::optional<std::string> message = stringLiteral(c.arg(1));
  if (!message)
    return g.fail(c.arg(1)->loc, "device_assert's message must be a string "
                                 "literal");
  TV done;
  done.isList = true; // A statement-only result, as store's.
  if (!g.options.debug)
    return done;
  TV cond = value(g, c, 0);
  if (!cond.v)
    return cond;
  if (!g.elt(cond.v).isInteger(1))
    return g.fail(c.arg(0)->loc, "device_assert's condition must be bool, "
                                 "got " +
                                     g.typeOf(cond));
  g.b.create<AssertOp>(c.l, cond.v, g.b.getStringAttr(*message));
  return done;
}

// barrier(): every thread of the program waits there; memory written
// before it is visible to the program's threads after it (BarrierOp).
// program_limit(n): programs from n on skip the kernel (see
// tile.program_limit; tile-persistent checks where it stands).
static TV buildProgramLimit(MLIRGen &g, const BuiltinCall &c) {
  TV n = value(g, c, 0);
  if (!n.v)
    return n;
  if (!n.v.getType().isInteger(32))
    return g.fail(c.arg(0)->loc, "program_limit needs a scalar i32, got " +
                                     g.typeStr(n.v.getType()));
  g.b.create<ProgramLimitOp>(c.l, n.v);
  TV done;
  done.isList = true; // A statement-only result, as store's.
  return done;
}

static TV buildBarrier(MLIRGen &g, const BuiltinCall &c) {
  g.b.create<BarrierOp>(c.l);
  TV done;
  done.isList = true; // A statement-only result, as store's.
  return done;
}

/// A block's position `[row, col]` (scalar integers) as two i32 values;
/// false after reporting the error.
static bool blockPosition(MLIRGen &g, const ast::Expr *at, Value coord[2]) {
  if (at->kind != ast::Expr::List || at->operands.size() != 2) {
    g.fail(at->loc, "expected the block's position as [row, col]");
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    TV p = g.expr(at->operands[i].get());
    if (!p.v)
      return false;
    if (!g.isInt(p.v.getType()) || p.v.getType().isInteger(1)) {
      g.fail(at->operands[i]->loc,
             "a block position must be a scalar integer, got " +
                 g.typeStr(p.v.getType()));
      return false;
    }
    coord[i] = g.castTo(p, g.b.getI32Type(), at->operands[i]->loc).v;
    if (!coord[i])
      return false;
  }
  return true;
}

// load_block(d, [row, col], [R, C]): a block of a desc<T> tensor, zero
// outside it (a TMA copy on sm_90, plain loads elsewhere).
static TV buildLoadBlock(MLIRGen &g, const BuiltinCall &c) {
  TV d = value(g, c, 0);
  if (!d.v)
    return d;
  auto dt = dyn_cast<DescType>(d.v.getType());
  if (!dt)
    return g.fail(c.arg(0)->loc, "load_block needs a desc<T> parameter, got " +
                                     g.typeStr(d.v.getType()));
  Value coord[2];
  if (!blockPosition(g, c.arg(1), coord))
    return TV{};
  auto s = shapeArg(g, c.arg(2));
  if (!s)
    return TV{};
  if (s->size() != 2)
    return g.fail(c.arg(2)->loc, "load_block loads a 2-D block");
  TV r{g.b.create<DescLoadOp>(c.l, RankedTensorType::get(*s, dt.getElement()),
                              d.v, coord[0], coord[1])};
  r.uns = d.uns; // desc<u16> loads u16.
  return r;
}

// store_block(d, [row, col], value): writes a 2-D tile into a desc<T>
// tensor at [row, col], converted to T; what falls outside the tensor is
// dropped (a TMA store in persistent warp-specialized kernels on sm_90,
// masked stores elsewhere).
static TV buildStoreBlock(MLIRGen &g, const BuiltinCall &c) {
  TV d = value(g, c, 0);
  if (!d.v)
    return d;
  auto dt = dyn_cast<DescType>(d.v.getType());
  if (!dt)
    return g.fail(c.arg(0)->loc, "store_block needs a desc<T> parameter, got " +
                                     g.typeStr(d.v.getType()));
  Value coord[2];
  if (!blockPosition(g, c.arg(1), coord))
    return TV{};
  TV v = value(g, c, 2);
  if (!v.v)
    return v;
  if (g.shape(v.v).size() != 2)
    return g.fail(c.arg(2)->loc, "store_block stores a 2-D tile, got " +
                                     g.typeStr(v.v.getType()));
  if (isa<PointerType>(g.elt(v.v)))
    return g.fail(c.arg(2)->loc, "cannot store pointers");
  v = g.castTo(v, dt.getElement(), c.arg(2)->loc, d.uns);
  if (!v.v)
    return v;
  g.b.create<DescStoreOp>(c.l, d.v, coord[0], coord[1], v.v);
  TV done;
  done.isList = true; // A statement-only result, as store's.
  return done;
}

static TV buildTrans(MLIRGen &g, const BuiltinCall &c) {
  TV x = value(g, c, 0);
  if (!x.v)
    return x;
  auto s = g.shape(x.v);
  if (s.size() != 2)
    return g.fail(c.loc,
                  "trans needs a 2-D tile, got " + g.typeStr(x.v.getType()));
  TV r{g.b.create<TransOp>(c.l, RankedTensorType::get({s[1], s[0]}, g.elt(x.v)),
                           x.v)};
  r.uns = x.uns;
  return r;
}

// dot(a, b) or dot(a, b, acc): tensor-core product, f32 accumulation.
static TV buildDot(MLIRGen &g, const BuiltinCall &c) {
  TV a = value(g, c, 0), bt = value(g, c, 1);
  if (!a.v || !bt.v)
    return TV{};
  Loc loc = c.loc;
  auto sa = g.shape(a.v), sb = g.shape(bt.v);
  if (sa.size() != 2 || sb.size() != 2)
    return g.fail(loc, "dot needs 2-D tiles, got " + g.typeStr(a.v.getType()) +
                           " and " + g.typeStr(bt.v.getType()));
  Type ea = g.elt(a.v), eb = g.elt(bt.v);
  // fp8 operands (e4m3, e5m2, or one of each) need sm_89's conversions.
  bool fp8 = g.isFP8(ea) && g.isFP8(eb);
  if (!fp8 && (ea != eb || !(ea.isF16() || ea.isBF16())))
    return g.fail(loc, "dot needs two f16, two bf16 or two fp8 (f8e4m3, "
                       "f8e5m2) tiles, got " +
                           g.typeStr(a.v.getType()) + " and " +
                           g.typeStr(bt.v.getType()));
  if (fp8 && !g.fp8ArchOk(loc))
    return TV{};
  if (sa[1] != sb[0])
    return g.fail(loc, "dot shapes do not chain: " + g.typeStr(a.v.getType()) +
                           " * " + g.typeStr(bt.v.getType()));
  if (sa[0] % 16 || sb[1] % 8 || sa[1] % 16)
    return g.fail(loc, "dot needs M % 16 == 0, N % 8 == 0 and K % 16 == 0 "
                       "(the tensor-core tile), got M=" +
                           std::to_string(sa[0]) +
                           " N=" + std::to_string(sb[1]) +
                           " K=" + std::to_string(sa[1]));
  auto accType = RankedTensorType::get({sa[0], sb[1]}, g.b.getF32Type());
  Value acc = accumulator(g, c, 2, accType);
  if (!acc)
    return TV{};
  return TV{g.b.create<DotOp>(c.l, accType, a.v, bt.v, acc)};
}

// sparse_dot(vals, meta, b) or sparse_dot(vals, meta, b, acc): A [M, K] 2:4
// sparse along K, given compressed (vals [M, K/2], meta [M, K/16] i16),
// times b [K, N] on sparse tensor cores, f32 accumulation.
static TV buildSparseDot(MLIRGen &g, const BuiltinCall &c) {
  TV a = value(g, c, 0), m = value(g, c, 1), bt = value(g, c, 2);
  if (!a.v || !m.v || !bt.v)
    return TV{};
  Loc loc = c.loc;
  auto sa = g.shape(a.v), sm = g.shape(m.v), sb = g.shape(bt.v);
  if (sa.size() != 2 || sm.size() != 2 || sb.size() != 2)
    return g.fail(loc, "sparse_dot needs 2-D tiles, got " +
                           g.typeStr(a.v.getType()) + ", " +
                           g.typeStr(m.v.getType()) + " and " +
                           g.typeStr(bt.v.getType()));
  Type ea = g.elt(a.v), eb = g.elt(bt.v);
  if (ea != eb || !(ea.isF16() || ea.isBF16()))
    return g.fail(loc, "sparse_dot needs f16 or bf16 values and b of the same "
                       "type, got " +
                           g.typeStr(a.v.getType()) + " and " +
                           g.typeStr(bt.v.getType()));
  if (!g.elt(m.v).isInteger(16))
    return g.fail(c.arg(1)->loc, "sparse_dot's metadata must be an i16 "
                                 "tile, got " +
                                     g.typeStr(m.v.getType()));
  int64_t k = 2 * sa[1];
  if (sb[0] != k)
    return g.fail(loc, "sparse_dot shapes do not chain: values " +
                           g.typeStr(a.v.getType()) +
                           " (K = " + std::to_string(k) + ") * " +
                           g.typeStr(bt.v.getType()));
  if (sm[0] != sa[0] || sm[1] * 16 != k)
    return g.fail(c.arg(1)->loc, "sparse_dot's metadata must be [" +
                                     std::to_string(sa[0]) + ", " +
                                     std::to_string(k / 16) +
                                     "] (one i16 per 16 "
                                     "columns of A), got " +
                                     g.typeStr(m.v.getType()));
  if (sa[0] % 16 || sb[1] % 8 || k % 32)
    return g.fail(loc, "sparse_dot needs M % 16 == 0, N % 8 == 0 and "
                       "K % 32 == 0 (the m16n8k32 sparse tensor-core tile), "
                       "got M=" +
                           std::to_string(sa[0]) + " N=" +
                           std::to_string(sb[1]) + " K=" + std::to_string(k));
  auto accType = RankedTensorType::get({sa[0], sb[1]}, g.b.getF32Type());
  Value acc = accumulator(g, c, 3, accType);
  if (!acc)
    return TV{};
  return TV{g.b.create<SparseDotOp>(c.l, accType, a.v, m.v, bt.v, acc)};
}

// randint(seed, offsets, word=k), rand(seed, offsets), randn(seed,
// offsets): Philox (the stream is emitted by MLIRGen::random, in Random.cpp).
// word= picks one of randint's four output words, a constant 0-3.
static TV buildRandom(MLIRGen &g, const BuiltinCall &c) {
  int64_t word = 0;
  if (const ast::Expr *w = c.kw("word")) {
    auto k = g.constIntOf(w, "randint's word");
    if (!k)
      return TV{};
    if (*k < 0 || *k > 3) {
      g.fail(w->loc, "randint's word must be 0, 1, 2 or 3 (Philox-4x32 has "
                     "four output words), got " +
                         std::to_string(*k));
      return TV{};
    }
    word = *k;
  }
  TV seed = value(g, c, 0);
  if (!seed.v)
    return seed;
  TV offsets = value(g, c, 1);
  if (!offsets.v)
    return offsets;
  return g.random(c.fn, seed, c.arg(0)->loc, offsets, c.arg(1)->loc, c.loc,
                  word);
}

// Atomics: atomic_add/max/min/xchg(ptrs, val), atomic_cas(ptrs, cmp, val),
// each with mask=, sem= and scope=.

/// Operand `i` of an atomic, converted to the pointee type and broadcast to
/// the pointers' shape (as store does).
static Value atomicOperand(MLIRGen &g, const BuiltinCall &c, size_t i,
                           Value ptrs, Type pointee, bool uns) {
  TV v = value(g, c, i);
  if (!v.v)
    return {};
  if (isa<PointerType>(g.elt(v.v))) {
    g.fail(c.arg(i)->loc, c.fn + " needs values, got pointers");
    return {};
  }
  v = g.castTo(v, pointee, c.arg(i)->loc, uns);
  if (v.v)
    v = g.broadcastTo(v, g.shape(ptrs), c.arg(i)->loc);
  if (!v.v)
    return {};
  if (g.shape(v.v) != g.shape(ptrs)) {
    g.fail(c.arg(i)->loc, "value " + g.typeStr(v.v.getType()) +
                              " does not fit the pointers " +
                              g.typeStr(ptrs.getType()));
    return {};
  }
  return v.v;
}

/// The `sem=` or `scope=` keyword of an atomic: a bare name, parsed by
/// `symbolize`; `dflt` when left out. Null after a reported error.
template <typename Enum>
static std::optional<Enum>
atomicQualifier(MLIRGen &g, const BuiltinCall &c, const char *kw, Enum dflt,
                std::optional<Enum> (*symbolize)(llvm::StringRef),
                const char *choices) {
  const ast::Expr *e = c.kw(kw);
  if (!e)
    return dflt;
  std::optional<Enum> r;
  if (e->kind == ast::Expr::Name)
    r = symbolize(e->name);
  if (!r)
    g.fail(e->loc, c.fn + "'s " + kw + " must be one of " + choices);
  return r;
}

static TV buildAtomic(MLIRGen &g, const BuiltinCall &c) {
  TV p;
  auto pt = pointersArg(g, c, c.fn.c_str(), p);
  if (!pt)
    return TV{};
  Type elt = pt.getPointee();
  bool cas = c.fn == "atomic_cas";
  std::optional<AtomicKind> kind;
  if (!cas)
    kind = symbolizeAtomicKind(StringRef(c.fn).drop_front(strlen("atomic_")));
  // The types PTX's `atom` takes (f32 max/min by comparing bit patterns);
  // bf16 addition needs sm_90.
  unsigned bits = elt.isIntOrFloat() ? elt.getIntOrFloatBitWidth() : 0;
  bool is3264 = (bits == 32 || bits == 64) && !elt.isF64();
  bool ok = cas || kind == AtomicKind::Xchg ? bits == 32 || bits == 64
            : kind == AtomicKind::Add
                ? is3264 || elt.isF16() || elt.isBF16()
                : is3264;
  if (!ok)
    return g.fail(c.loc, c.fn + " does not support " + g.typeStr(elt) +
                             " (supported: " +
                             (cas || kind == AtomicKind::Xchg
                                  ? "32- and 64-bit types"
                              : kind == AtomicKind::Add
                                  ? "i32, i64, f32, f16, bf16"
                                  : "i32, i64, f32") +
                             ")");
  if (elt.isBF16() && kind == AtomicKind::Add) {
    StringRef arch = g.options.arch;
    int sm = 0;
    if (arch.starts_with("sm_"))
      arch.drop_front(3).take_while(llvm::isDigit).getAsInteger(10, sm);
    if (sm < 90)
      return g.fail(c.loc, "atomic_add of bf16 needs sm_90 (atom.add.noftz."
                           "bf16), the target is " +
                               g.options.arch);
  }
  SmallVector<Value, 2> vals;
  for (size_t i = 1; i < c.numArgs(); ++i) {
    vals.push_back(atomicOperand(g, c, i, p.v, elt, p.uns));
    if (!vals.back())
      return TV{};
  }
  Value mask;
  if (auto *m = c.kw("mask")) {
    mask = maskFor(g, m, p.v);
    if (!mask)
      return TV{};
  }
  // Triton's defaults: acq_rel ordering at GPU scope.
  auto sem = atomicQualifier(g, c, "sem", MemSemantic::AcqRel,
                             symbolizeMemSemantic,
                             "relaxed, acquire, release, acq_rel");
  if (!sem)
    return TV{};
  auto scope = atomicQualifier(g, c, "scope", MemScope::Gpu, symbolizeMemScope,
                               "cta, gpu, sys");
  if (!scope)
    return TV{};
  Type rt = g.withElt(p.v.getType(), elt);
  // A `*u32` / `*u64` orders unsigned; the old values keep the signedness.
  bool uns = p.uns && isa<IntegerType>(elt);
  TV old;
  if (cas) {
    old = TV{g.b.create<AtomicCASOp>(c.l, rt, *sem, *scope, p.v, vals[0],
                                     vals[1], mask)};
  } else {
    if (uns && kind == AtomicKind::Max)
      kind = AtomicKind::UMax;
    if (uns && kind == AtomicKind::Min)
      kind = AtomicKind::UMin;
    old = TV{g.b.create<AtomicRMWOp>(c.l, rt, *kind, *sem, *scope, p.v,
                                     vals[0], mask)};
  }
  old.uns = uns;
  return old;
}

//===----------------------------------------------------------------------===//
// The table and the dispatcher
//===----------------------------------------------------------------------===//

// clang-format off
static const Builtin kBuiltins[] = {
  // name          positional                        req keywords           builder
  {"program_id",   {"axis"},                          1, {},                buildGridQuery},
  {"num_programs", {"axis"},                          1, {},                buildGridQuery},
  {"cluster_id",   {},                                0, {},                buildClusterQuery},
  {"cluster_rank", {},                                0, {},                buildClusterQuery},
  {"arange",       {"start", "end"},                  2, {},                buildArange},
  {"zeros",        {"shape", "dtype"},                2, {},                buildFill},
  {"full",         {"shape", "value", "dtype"},       3, {},                buildFill},
  {"broadcast_to", {"x", "shape"},                    2, {},                buildBroadcastTo},
  {"load",         {"pointers"},                      1, {"mask", "other"}, buildLoad},
  {"store",        {"pointers", "value"},             2, {"mask"},          buildStore},
  {"where",        {"condition", "x", "y"},           3, {},                buildWhere},
  {"to",           {"x", "dtype"},                    2, {},                buildCast},
  {"cast",         {"x", "dtype"},                    2, {},                buildCast},
  {"bitcast",      {"x", "dtype"},                    2, {},                buildBitcast},
  {"randint",      {"seed", "offsets"},               2, {"word"},          buildRandom},
  {"rand",         {"seed", "offsets"},               2, {},                buildRandom},
  {"randn",        {"seed", "offsets"},               2, {},                buildRandom},
  {"maximum",      {"x", "y"},                        2, {},                buildMinMax},
  {"minimum",      {"x", "y"},                        2, {},                buildMinMax},
  {"exp",          {"x"},                             1, {},                buildMath},
  {"exp2",         {"x"},                             1, {},                buildMath},
  {"log",          {"x"},                             1, {},                buildMath},
  {"log2",         {"x"},                             1, {},                buildMath},
  {"sin",          {"x"},                             1, {},                buildMath},
  {"cos",          {"x"},                             1, {},                buildMath},
  {"floor",        {"x"},                             1, {},                buildMath},
  {"ceil",         {"x"},                             1, {},                buildMath},
  {"pow",          {"x", "y"},                        2, {},                buildPow},
  {"fma",          {"x", "y", "z"},                   3, {},                buildFma},
  {"clamp",        {"x", "min", "max"},               3, {},                buildClamp},
  {"umulhi",       {"x", "y"},                        2, {},                buildUmulhi},
  {"cdiv",         {"x", "div"},                      2, {},                buildCdiv},
  {"div_rn",       {"x", "y"},                        2, {},                buildDivRn},
  {"sqrt",         {"x"},                             1, {},                buildMath},
  {"rsqrt",        {"x"},                             1, {},                buildMath},
  {"tanh",         {"x"},                             1, {},                buildMath},
  {"erf",          {"x"},                             1, {},                buildMath},
  {"abs",          {"x"},                             1, {},                buildMath},
  {"sigmoid",      {"x"},                             1, {},                buildMath},
  {"silu",         {"x"},                             1, {},                buildMath},
  {"gelu",         {"x"},                             1, {},                buildMath},
  {"gelu_tanh",    {"x"},                             1, {},                buildMath},
  {"sum",          {"x"},                             1, {"axis"},          buildReduce},
  {"max",          {"x"},                             1, {"axis"},          buildReduce},
  {"min",          {"x"},                             1, {"axis"},          buildReduce},
  {"argmax",       {"x"},                             1, {"axis"},          buildReduce},
  {"argmin",       {"x"},                             1, {"axis"},          buildReduce},
  {"reduce_or",    {"x"},                             1, {"axis"},          buildReduce},
  {"reduce_and",   {"x"},                             1, {"axis"},          buildReduce},
  {"reduce_xor",   {"x"},                             1, {"axis"},          buildReduce},
  {"xor_sum",      {"x"},                             1, {"axis"},          buildReduce},
  {"load_block",   {"desc", "at", "shape"},           3, {},                buildLoadBlock},
  {"store_block",  {"desc", "at", "value"},           3, {},                buildStoreBlock},
  {"trans",        {"x"},                             1, {},                buildTrans},
  {"reshape",      {"x", "shape"},                    2, {},                buildReshape},
  {"multiple_of",  {"x", "values"},                   2, {},                buildHint},
  {"max_contiguous", {"x", "values"},                 2, {},                buildHint},
  {"cumsum",       {"x"},                             1, {"axis"},          buildCumsum},
  {"device_print", {"prefix", "x", "y", "z"},         1, {},                buildDevicePrint},
  {"device_assert", {"condition", "message"},         2, {},                buildDeviceAssert},
  {"static_print", {"a", "b", "c", "d", "e", "f", "g", "h"}, 1, {},        buildStaticPrint},
  {"shape",        {"x", "axis"},                     1, {},                buildShape},
  {"barrier",      {},                                0, {},                buildBarrier},
  {"program_limit", {"n"},                            1, {},                buildProgramLimit},
  {"dot",          {"a", "b", "acc"},                 2, {},                buildDot},
  {"sparse_dot",   {"vals", "meta", "b", "acc"},      3, {},                buildSparseDot},
  {"len",          {"array"},                         1, {},                buildLen},
  {"to_tile",      {"array", "dtype"},                2, {},                buildToTile},
  {"atomic_add",   {"pointers", "value"},             2, {"mask", "sem", "scope"}, buildAtomic},
  {"atomic_max",   {"pointers", "value"},             2, {"mask", "sem", "scope"}, buildAtomic},
  {"atomic_min",   {"pointers", "value"},             2, {"mask", "sem", "scope"}, buildAtomic},
  {"atomic_xchg",  {"pointers", "value"},             2, {"mask", "sem", "scope"}, buildAtomic},
  {"atomic_cas",   {"pointers", "cmp", "value"},      3, {"mask", "sem", "scope"}, buildAtomic},
};
// clang-format on

/// `name(p1, p2, p3=, kw=)`: the builtin's signature as its row gives it
/// (optional positional parameters and keywords end in `=`); the messages
/// above and Language.md's table spell calls this way.
static std::string signature(const Builtin &b) {
  std::string s = std::string(b.name) + "(";
  for (size_t i = 0; i < b.params.size(); ++i)
    s += std::string(i ? ", " : "") + b.params[i] + (i < b.required ? "" : "=");
  for (const char *k : b.keywords)
    s += std::string(b.params.empty() && k == b.keywords[0] ? "" : ", ") + k +
         "=";
  return s + ")";
}

bool sparsetile::mlirgen::isBuiltinName(const std::string &name) {
  return llvm::any_of(kBuiltins,
                      [&](const Builtin &b) { return name == b.name; });
}

TV MLIRGen::call(const ast::Expr *e) {
  const std::string &fn = e->name;
  Loc loc = e->loc;
  if (auto user = functions.find(fn); user != functions.end())
    return callFunction(*user->second, e);
  const Builtin *builtin = nullptr;
  for (const Builtin &candidate : kBuiltins)
    if (fn == candidate.name) {
      builtin = &candidate;
      break;
    }
  if (!builtin)
    return fail(loc, "unknown function '" + fn + "'");

  // A positional parameter may also be given by its name (Triton's
  // `program_id(axis=0)`, `zeros([64], dtype=f32)`): the named ones fill
  // their slots after the positional ones, and the slots given must then be
  // a prefix of the parameters, as the builders read them.
  const size_t lo = builtin->required, hi = builtin->params.size();
  SmallVector<const ast::Expr *, 4> args(hi, nullptr);
  size_t n = e->operands.size();
  bool named = llvm::any_of(e->kwargs, [&](const ast::KwArg &k) {
    return llvm::is_contained(builtin->params, k.name);
  });
  if (n > hi || (n < lo && !named))
    return fail(
        loc, "'" + fn + "' takes " +
                 (lo == hi ? std::to_string(lo)
                           : std::to_string(lo) + " to " + std::to_string(hi)) +
                 " positional argument" + (hi == 1 ? "" : "s") + ", got " +
                 std::to_string(n));
  for (size_t i = 0; i < n; ++i)
    args[i] = e->operands[i].get();
  for (auto &k : e->kwargs) {
    auto slot = llvm::find_if(builtin->params,
                               [&](const char *p) { return k.name == p; });
    if (slot != builtin->params.end()) {
      size_t i = slot - builtin->params.begin();
      if (args[i])
        return fail(k.loc, "'" + fn + "' got argument '" + k.name +
                               "' twice: by position and by name");
      args[i] = k.value.get();
      continue;
    }
    if (llvm::none_of(builtin->keywords,
                      [&](const char *s) { return k.name == s; }))
      return fail(k.loc, "'" + fn + "' has no argument named '" + k.name + "'");
  }
  size_t given = 0;
  while (given < hi && args[given])
    ++given;
  for (size_t i = 0; i < hi; ++i) {
    if (i < lo && !args[i])
      return fail(loc, "'" + fn + "' is missing argument '" +
                           builtin->params[i] + "' (" +
                           signature(*builtin) + ")");
    if (i >= given && args[i])
      return fail(loc, "'" + fn + "' is given '" + builtin->params[i] +
                           "' but not '" + builtin->params[given] + "' (" +
                           signature(*builtin) + ")");
  }
  args.resize(given);

  BuiltinCall c{e, fn, loc, mloc(loc), std::move(args)};
  return builtin->build(*this, c);
}
