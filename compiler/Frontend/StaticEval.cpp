//===- StaticEval.cpp - Compile-time constants, loops and assertions ------===//
//
// What the front end evaluates while it emits, before any IR exists for it:
//
//  - constant arrays: a list literal of integers (nested: a rectangular
//    array), held in a TV as a ConstArray, indexed by constants
//    (`PAIRS[i][0]` is an untyped integer literal), measured by `len` and
//    turned into a tile by `to_tile` (Builtins.cpp);
//  - `const NAME = value;` at file level (MLIRGen::globals) or in a block (a
//    binding that cannot be reassigned);
//  - `for i in static_range(lo, hi, step)`: the body is emitted once per
//    value, with `i` bound to that value as a constant, so it can be used
//    where constants are required (shifts folded, arange bounds, indices);
//    no scf.for exists, so assignments simply rebind names;
//  - `static_assert(cond, "message")`: the condition must fold.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGenImpl.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::mlirgen;

/// Unrolling bound: a typo such as static_range(1 << 20) should be an error,
/// not a compile that runs for minutes.
static constexpr int64_t kMaxStaticIterations = 4096;

/// Total of static_range iterations and inlined calls per kernel. Each bound
/// above is local: static_range(4096) nested in static_range(4096) is 16 M
/// bodies, and a function calling another a hundred times, itself calling
/// one a hundred times, is exponential. A compile in the JIT must end (and
/// not exhaust the process's memory), so the whole expansion is capped
/// well above what real kernels use (the 2:4 mask kernels: ~5,000).
static constexpr int64_t kMaxExpansions = int64_t(1) << 16;

/// The front end's share of the compile budget: tile ops built, before
/// canonicalization folds them (100k lines of `x = x + 1;`, 200k ops, take
/// about 1.3 s and 190 MB; the largest example builds a few thousand).
static constexpr int64_t kMaxBuiltOps = int64_t(1) << 18;

bool MLIRGen::withinBudget(Loc loc) {
  if (opCounter.ops <= kMaxBuiltOps)
    return true;
  fail(loc, "this kernel is past the compile budget: it builds more than " +
                std::to_string(kMaxBuiltOps) +
                " operations, the limit reached here");
  return false;
}

bool MLIRGen::expand(Loc loc, const char *what) {
  if (++expansions <= kMaxExpansions)
    return true;
  fail(loc, std::string("this kernel expands more than ") +
                std::to_string(kMaxExpansions) +
                " bodies (static_range iterations and function calls, nested "
                "ones multiplied); this " + what + " is past the limit");
  return false;
}

TV MLIRGen::listLiteral(const ast::Expr *e) {
  TV r;
  auto array = std::make_shared<ConstArray>();
  std::vector<int64_t> inner;
  for (size_t i = 0; i < e->operands.size(); ++i) {
    const ast::Expr *op = e->operands[i].get();
    TV v = expr(op);
    if (failed())
      return TV{};
    std::vector<int64_t> shape;
    if (v.array) {
      shape = v.array->shape;
      array->data.insert(array->data.end(), v.array->data.begin(),
                         v.array->data.end());
    } else if (v.v && v.ci && !isa<RankedTensorType>(v.v.getType())) {
      array->data.push_back(*v.ci);
    } else {
      return fail(op->loc, "list entries must be compile-time integers");
    }
    if (i == 0)
      inner = shape;
    else if (shape != inner)
      return fail(op->loc, "ragged array: entry " + std::to_string(i) +
                               " has a different shape from entry 0");
  }
  array->shape.push_back(int64_t(e->operands.size()));
  array->shape.insert(array->shape.end(), inner.begin(), inner.end());
  if (array->shape.size() == 1) { // A shape, as zeros([M, N], f32) takes.
    r.isList = true;
    r.list = array->data;
  }
  r.array = std::move(array);
  return r;
}

TV MLIRGen::indexArray(const ast::Expr *e, TV base) {
  // Value entries only: `:`/None make no sense on a compile-time array.
  size_t next = 1;
  std::vector<int64_t> shape = base.array->shape;
  size_t offset = 0, dim = 0;
  for (ast::IndexEntry entry : e->index) {
    if (entry != ast::IndexEntry::Value)
      return fail(e->loc, "constant arrays take constant indices, not ':' "
                          "or 'None'; convert with to_tile() first");
    const ast::Expr *ie = e->operands[next++].get();
    if (dim == shape.size())
      return fail(ie->loc, "too many indices for an array of rank " +
                               std::to_string(shape.size()));
    auto i = constIntOf(ie, "an array index");
    if (!i)
      return TV{};
    if (*i < 0 || *i >= shape[dim])
      return fail(ie->loc, "index " + std::to_string(*i) +
                               " is out of range for a dimension of size " +
                               std::to_string(shape[dim]));
    size_t stride = 1;
    for (size_t d = dim + 1; d < shape.size(); ++d)
      stride *= size_t(shape[d]);
    offset += size_t(*i) * stride;
    ++dim;
  }
  if (dim == shape.size())
    // An entry is an untyped literal, as if written in place.
    return literal(base.array->data[offset], e->loc, "");
  auto sub = std::make_shared<ConstArray>();
  sub->shape.assign(shape.begin() + dim, shape.end());
  size_t count = 1;
  for (int64_t d : sub->shape)
    count *= size_t(d);
  sub->data.assign(base.array->data.begin() + offset,
                   base.array->data.begin() + offset + count);
  TV r;
  if (sub->shape.size() == 1) {
    r.isList = true;
    r.list = sub->data;
  }
  r.array = std::move(sub);
  return r;
}

/// A constant's value: a compile-time scalar (kept untyped when written so)
/// or an array.
static bool constValue(MLIRGen &g, const ast::Expr *e, TV &out) {
  out = g.expr(e);
  if (g.failed())
    return false;
  if (out.array || (out.v && !isa<RankedTensorType>(out.v.getType()) &&
                    (out.ci || out.cf)))
    return true;
  g.fail(e->loc, "a const must be a compile-time integer, float, bool or "
                 "array of integers");
  return false;
}

bool MLIRGen::fileConstants(const ast::Module &module) {
  for (const ast::ConstDecl &c : module.constants) {
    auto prior = globals.find(c.name);
    if (prior != globals.end() || functions.count(c.name)) {
      fail(c.loc, "'" + c.name + "' is already defined in this file");
      return false;
    }
    TV v;
    if (!constValue(*this, c.value.get(), v))
      return false;
    globals[c.name] = v;
  }
  return true;
}

bool MLIRGen::constStmt(const ast::Stmt &s) {
  if (scopes.back().count(s.name)) {
    fail(s.loc, "'" + s.name + "' is already defined in this block");
    diags.note(scopes.back()[s.name].loc, "previous definition is here");
    return false;
  }
  TV v;
  if (!constValue(*this, s.value.get(), v))
    return false;
  scopes.back()[s.name] = Binding{v, s.loc, /*isConst=*/true};
  return true;
}

bool MLIRGen::staticFor(const ast::Stmt &s) {
  auto lo = constIntOf(s.lo.get(), "a static_range bound");
  if (!lo)
    return false;
  auto hi = constIntOf(s.hi.get(), "a static_range bound");
  if (!hi)
    return false;
  int64_t step = 1;
  if (s.step) {
    auto st = constIntOf(s.step.get(), "a static_range step");
    if (!st)
      return false;
    if (*st == 0) {
      fail(s.step->loc, "static_range step must not be zero");
      return false;
    }
    step = *st;
  }
  // Counted first so that no overflow of `i += step` is possible. All in
  // uint64_t: `-step` of INT64_MIN overflowed (UBSan).
  int64_t count = 0;
  if (step > 0 && *hi > *lo)
    count = int64_t((uint64_t(*hi) - uint64_t(*lo) - 1) / uint64_t(step)) + 1;
  if (step < 0 && *hi < *lo)
    count = int64_t((uint64_t(*lo) - uint64_t(*hi) - 1) /
                    (0 - uint64_t(step))) +
            1;
  if (count > kMaxStaticIterations) {
    fail(s.loc, "static_range unrolls " + std::to_string(count) +
                    " iterations; the limit is " +
                    std::to_string(kMaxStaticIterations));
    return false;
  }
  // Unrolled copies of a body that breaks would each need the rest of the
  // unrolled loop guarded; a run-time range() has the flags for that.
  bool brk = false, cont = false;
  for (auto &st : s.body)
    loopExits(*st, &brk, &cont);
  if (brk || cont) {
    fail(s.loc, std::string("'") + (brk ? "break" : "continue") +
                    "' in a static_range body: unrolled loops cannot be "
                    "left early; use range()");
    return false;
  }
  for (int64_t k = 0; k < count; ++k) {
    if (!expand(s.loc, "static_range"))
      return false;
    int64_t i = int64_t(uint64_t(*lo) + uint64_t(k) * uint64_t(step));
    scopes.emplace_back();
    scopes.back()[s.name] = Binding{literal(i, s.loc, ""), s.loc, true};
    bool ok = block(s.body, false);
    scopes.pop_back();
    if (!ok)
      return false;
  }
  return true;
}

bool MLIRGen::staticAssert(const ast::Stmt &s) {
  TV c = expr(s.value.get());
  if (failed())
    return false;
  if (!c.v || isa<RankedTensorType>(c.v.getType()) || !c.ci) {
    fail(s.value->loc, "static_assert needs a compile-time condition");
    return false;
  }
  if (*c.ci == 0) {
    fail(s.loc, "static assertion failed: " + s.op);
    return false;
  }
  return true;
}
