//===- MLIRGenLoops.cpp - `while`, `break` and `continue` -----------------===//
//
// SCF has no jumps, so the front end turns the two loop exits into flags,
// as a structured compiler must (Triton lowers them the same way):
//
//  - `break` and `continue` set the innermost loop's flag (kBreakFlag,
//    kContinueFlag: bindings no identifier can name). After a statement
//    that may set one, the rest of its block runs under `if !flag`
//    (MLIRGen::block), and an `if` that sets one carries it out like any
//    other assigned name.
//  - A `while` is an scf.while: its condition is evaluated in the
//    `before` region, each iteration, with the carried names bound to that
//    region's arguments. With a `break` in the body the condition is
//    `flag ? false : cond`, so a condition with side effects (a spin lock's
//    atomic_cas) does not run again after the break.
//  - A `for` whose body breaks becomes an scf.while over its induction
//    variable (`i < hi && !flag`), so it stops at once instead of running
//    out its remaining iterations idle. Without a `break` it stays an
//    scf.for (what the pipelining passes look for).
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGenImpl.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::mlirgen;

void sparsetile::mlirgen::loopExits(const ast::Stmt &s, bool *brk, bool *cont) {
  switch (s.kind) {
  case ast::Stmt::Break:
    *brk = true;
    return;
  case ast::Stmt::Continue:
    *cont = true;
    return;
  case ast::Stmt::If:
    for (auto &st : s.body)
      loopExits(*st, brk, cont);
    for (auto &st : s.elseBody)
      loopExits(*st, brk, cont);
    return;
  case ast::Stmt::StaticFor: // Unrolled in place: refused in staticFor.
    for (auto &st : s.body)
      loopExits(*st, brk, cont);
    return;
  default: // A nested loop catches its own; other statements do not jump.
    return;
  }
}

bool MLIRGen::loopExit(const ast::Stmt &s) {
  bool isBreak = s.kind == ast::Stmt::Break;
  Binding *bd = lookup(isBreak ? kBreakFlag : kContinueFlag);
  if (!bd) {
    fail(s.loc, std::string(isBreak ? "'break'" : "'continue'") +
                    " outside a loop (a function's body cannot leave its "
                    "caller's loop)");
    return false;
  }
  bd->value = constInt(1, b.getI1Type(), s.loc);
  bd->loc = s.loc;
  return true;
}

Value MLIRGen::stillRunning(Location l, bool brk, bool cont) {
  Value running;
  Value one = b.create<arith::ConstantOp>(l, b.getBoolAttr(true));
  for (auto [set, name] : {std::pair{brk, kBreakFlag}, {cont, kContinueFlag}}) {
    Binding *bd = set ? lookup(name) : nullptr;
    if (!bd)
      continue;
    Value notSet = b.create<arith::XOrIOp>(l, bd->value.v, one);
    running = running ? b.create<arith::AndIOp>(l, running, notSet) : notSet;
  }
  return running;
}

namespace {

/// The names a loop carries and their bindings: one scf.while operand
/// each, after the loop's own leading operands (the induction variable).
struct Carried {
  std::vector<std::string> names;
  SmallVector<Binding *> slots;
  std::vector<TV> before;
  SmallVector<Value> inits;

  /// Binds each slot to `args` (the region's arguments past `skip`).
  void bind(Block *blk, size_t skip) {
    for (size_t i = 0; i < slots.size(); ++i) {
      slots[i]->value = TV{blk->getArgument(skip + i)};
      slots[i]->value.uns = before[i].uns;
    }
  }
};

} // namespace

/// Emits `while` / the while form of a `for` (`iv` non-null): the before
/// region tests `test`, the after region runs `body` and yields the next
/// values. `flagScope` is the scope holding the loop's break flag, popped
/// here once the results are bound.
static bool emitWhile(MLIRGen &g, Location l, const ast::Stmt &s,
                      Carried &c, SmallVector<Value> leading,
                      function_ref<Value(Block *before)> test,
                      function_ref<SmallVector<Value>(Block *after)> next,
                      bool cont) {
  OpBuilder &b = g.b;
  SmallVector<Value> inits = leading;
  inits.append(c.inits.begin(), c.inits.end());
  SmallVector<Type> types;
  for (Value v : inits)
    types.push_back(v.getType());
  auto w = b.create<scf::WhileOp>(l, types, inits, nullptr, nullptr);
  {
    OpBuilder::InsertionGuard guard(b);
    Block *before = w.getBeforeBody();
    b.setInsertionPointToEnd(before);
    c.bind(before, leading.size());
    Value cond = test(before);
    if (!cond)
      return false;
    b.create<scf::ConditionOp>(l, cond, before->getArguments());
  }
  {
    OpBuilder::InsertionGuard guard(b);
    Block *after = w.getAfterBody();
    b.setInsertionPointToEnd(after);
    c.bind(after, leading.size());
    SmallVector<Value> yields = next(after);
    g.scopes.emplace_back();
    if (s.kind == ast::Stmt::For)
      g.scopes.back()[s.name] = Binding{TV{after->getArgument(0)}, s.loc};
    if (cont) // Set by `continue`; each iteration starts without it.
      g.scopes.back()[kContinueFlag] =
          Binding{g.constInt(0, b.getI1Type(), s.loc), s.loc};
    bool ok = g.block(s.body, false);
    g.scopes.pop_back();
    if (!ok)
      return false;
    for (size_t i = 0; i < c.slots.size(); ++i) {
      TV &v = c.slots[i]->value;
      if (v.v.getType() != c.inits[i].getType() || v.uns != c.before[i].uns) {
        g.fail(c.slots[i]->loc,
               "'" + c.names[i] + "' changes type in the loop, from " +
                   g.typeStr(c.inits[i].getType(), c.before[i].uns) + " to " +
                   g.typeOf(v));
        return false;
      }
      yields.push_back(v.v);
    }
    // The induction variable's next value is computed after the body, so
    // that the body's ops come first in the IR.
    if (s.kind == ast::Stmt::For) {
      yields[0] = b.create<arith::AddIOp>(l, after->getArgument(0), yields[0]);
    }
    b.create<scf::YieldOp>(l, yields);
  }
  for (size_t i = 0; i < c.slots.size(); ++i) {
    c.slots[i]->value = TV{w.getResult(leading.size() + i)};
    c.slots[i]->value.uns = c.before[i].uns;
  }
  return true;
}

/// The loop's carried names: its break flag (bound in a scope of the
/// caller's making) and the outer names the body assigns.
static Carried carriedOf(MLIRGen &g, const ast::Stmt &s, bool brk) {
  Carried c;
  if (brk)
    c.names.push_back(kBreakFlag);
  std::set<std::string> declared = {kContinueFlag};
  if (s.kind == ast::Stmt::For)
    declared.insert(s.name);
  g.carriedNames(s.body, declared, c.names);
  for (auto &n : c.names) {
    Binding *bd = g.lookup(n);
    c.slots.push_back(bd);
    c.before.push_back(bd->value);
    c.inits.push_back(bd->value.v);
  }
  return c;
}

bool MLIRGen::whileStmt(const ast::Stmt &s) {
  Location l = mloc(s.loc);
  bool brk = false, cont = false;
  for (auto &st : s.body)
    loopExits(*st, &brk, &cont);
  scopes.emplace_back(); // The break flag's; popped after the loop.
  if (brk)
    scopes.back()[kBreakFlag] = Binding{constInt(0, b.getI1Type(), s.loc), s.loc};
  Carried c = carriedOf(*this, s, brk);
  auto condition = [&]() -> Value {
    TV v = expr(s.value.get());
    if (!v.v) {
      if (!failed())
        fail(s.value->loc, "expected a value");
      return {};
    }
    if (isa<RankedTensorType>(v.v.getType()) || !elt(v.v).isInteger(1)) {
      fail(s.value->loc, "'while' needs a scalar bool condition, got " +
                             typeStr(v.v.getType()));
      return {};
    }
    return v.v;
  };
  auto test = [&](Block *) -> Value {
    if (!brk)
      return condition();
    // After a break the condition is not evaluated again.
    auto ifOp = b.create<scf::IfOp>(l, TypeRange{b.getI1Type()},
                                    lookup(kBreakFlag)->value.v, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    b.create<scf::YieldOp>(l, ValueRange{b.create<arith::ConstantOp>(
                                  l, b.getBoolAttr(false))});
    b.setInsertionPointToStart(ifOp.elseBlock());
    Value cond = condition();
    if (!cond)
      return {};
    b.create<scf::YieldOp>(l, cond);
    return ifOp.getResult(0);
  };
  auto next = [&](Block *) { return SmallVector<Value>(); };
  bool ok = emitWhile(*this, l, s, c, {}, test, next, cont);
  scopes.pop_back();
  return ok;
}

bool MLIRGen::forWithBreak(const ast::Stmt &s, Value lo, Value hi,
                           Value step) {
  Location l = mloc(s.loc);
  bool brk = false, cont = false;
  for (auto &st : s.body)
    loopExits(*st, &brk, &cont);
  scopes.emplace_back();
  scopes.back()[kBreakFlag] = Binding{constInt(0, b.getI1Type(), s.loc), s.loc};
  Carried c = carriedOf(*this, s, /*brk=*/true);
  auto test = [&](Block *before) -> Value {
    Value one = b.create<arith::ConstantOp>(l, b.getBoolAttr(true));
    Value notBroken =
        b.create<arith::XOrIOp>(l, lookup(kBreakFlag)->value.v, one);
    Value inRange = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt,
                                            before->getArgument(0), hi);
    return b.create<arith::AndIOp>(l, inRange, notBroken);
  };
  // The step; emitWhile adds it to the induction variable after the body.
  auto next = [&](Block *) { return SmallVector<Value>{step}; };
  bool ok = emitWhile(*this, l, s, c, {lo}, test, next, cont);
  scopes.pop_back();
  return ok;
}
