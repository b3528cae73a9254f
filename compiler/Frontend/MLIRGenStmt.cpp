//===- MLIRGenStmt.cpp - Statements and control flow ----------------------===//
//
// Emits statements: `let` bindings, assignments (compound ones keep the
// binding's type), expression statements, `for` as scf.for and `if` as
// scf.if. A name rebound inside a `for`/`if` body that was declared outside
// becomes a loop-carried value (iter_args) or an scf.if result, since SSA
// has no other way to carry the new value out of the region.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGenImpl.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::mlirgen;

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
    case ast::Stmt::Const:
      declared.insert(s->name);
      break;
    case ast::Stmt::StaticFor: {
      std::set<std::string> inner = declared;
      inner.insert(s->name);
      carriedNames(s->body, inner, out);
      break;
    }
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
      fail(stmts[i]->loc, returnSlot
                              ? "'return' is only allowed as the function's "
                                "last statement"
                              : "'return' is only allowed as the kernel's "
                                "last statement");
      ok = false;
      break;
    }
    ok = stmt(*stmts[i], last) && withinBudget(stmts[i]->loc);
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
    if (globals.count(s.name)) {
      fail(s.loc, "'" + s.name + "' is a file-level constant");
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
      fail(s.loc, constants.count(s.name) || globals.count(s.name)
                      ? "cannot assign to constant '" + s.name + "'"
                      : "assignment to undefined name '" + s.name +
                            "'; declare it with 'let'");
      return false;
    }
    if (bd->isConst) {
      fail(s.loc, "cannot assign to constant '" + s.name + "'");
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
        v = castTo(v, elt(bd->value.v), s.loc, bd->value.uns);
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
    if (!s.value)
      return true;
    if (!returnSlot) {
      fail(s.value->loc, "a kernel returns no value");
      return false;
    } else {
      TV v = expr(s.value.get());
      if (!v) {
        if (!failed())
          fail(s.value->loc, "expected a value");
        return false;
      }
      *returnSlot = v;
      return true;
    }
  case ast::Stmt::Const:
    return constStmt(s);
  case ast::Stmt::StaticFor:
    return staticFor(s);
  case ast::Stmt::StaticAssert:
    return staticAssert(s);
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
  Value step =
      hi ? (s.step ? bound(s.step.get()) : constInt(1, b.getI32Type(), s.loc).v)
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
    slots[i]->value.uns = before[i].uns;
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
    if (v.getType() != inits[i].getType() ||
        slots[i]->value.uns != before[i].uns) {
      fail(slots[i]->loc, "'" + carried[i] +
                              "' changes type in the loop, from " +
                              typeStr(inits[i].getType(), before[i].uns) +
                              " to " + typeOf(slots[i]->value));
      return false;
    }
    yields.push_back(v);
  }
  b.create<scf::YieldOp>(l, yields);
  for (size_t i = 0; i < slots.size(); ++i) {
    slots[i]->value = TV{forOp.getResult(i)};
    slots[i]->value.uns = before[i].uns;
  }
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
    fail(s.value->loc,
         "'if' needs a scalar bool condition, got " + typeStr(c.v.getType()) +
             (isa<RankedTensorType>(c.v.getType()) ? "; use where() for tiles"
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
      if (slots[i]->value.v.getType() != types[i] ||
          slots[i]->value.uns != before[i].uns) {
        fail(slots[i]->loc, "'" + carried[i] + "' changes type in 'if', from " +
                                typeStr(types[i], before[i].uns) + " to " +
                                typeOf(slots[i]->value));
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
  for (size_t i = 0; i < slots.size(); ++i) {
    slots[i]->value = TV{ifOp.getResult(i)};
    slots[i]->value.uns = before[i].uns;
  }
  return true;
}
