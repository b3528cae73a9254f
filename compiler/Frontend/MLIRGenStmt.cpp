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
void MLIRGen::carriedNames(ArrayRef<ast::StmtPtr> stmts,
                           std::set<std::string> declared,
                           std::vector<std::string> &out) {
  auto assigns = [&](const std::string &name) {
    if (!declared.count(name) && lookup(name) && !llvm::is_contained(out, name))
      out.push_back(name);
  };
  for (auto &s : stmts) {
    switch (s->kind) {
    case ast::Stmt::Let:
    case ast::Stmt::Const:
      declared.insert(s->name);
      declared.insert(s->names.begin(), s->names.end());
      break;
    case ast::Stmt::StaticFor: {
      std::set<std::string> inner = declared;
      inner.insert(s->name);
      carriedNames(s->body, inner, out);
      break;
    }
    case ast::Stmt::Assign:
      if (s->names.empty())
        assigns(s->name);
      for (auto &n : s->names)
        assigns(n);
      break;
    // A `break` or `continue` sets its loop's flag.
    case ast::Stmt::Break:
      assigns(kBreakFlag);
      break;
    case ast::Stmt::Continue:
      assigns(kContinueFlag);
      break;
    case ast::Stmt::For:
    case ast::Stmt::While: {
      // The flags inside belong to the nested loop.
      std::set<std::string> inner = declared;
      inner.insert(s->name);
      inner.insert(kBreakFlag);
      inner.insert(kContinueFlag);
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

bool MLIRGen::block(ArrayRef<ast::StmtPtr> stmts, bool topLevel) {
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
    // After a statement that may `break` or `continue`, the rest of the
    // block runs only while neither happened: structured control flow has
    // no jumps, so it becomes the body of an `if`.
    bool brk = false, cont = false;
    if (ok && !last && (loopExits(*stmts[i], &brk, &cont), brk || cont)) {
      Location l = mloc(stmts[i + 1]->loc);
      Value running = stillRunning(l, brk, cont);
      ok = running && ifRegions(running, l, stmts.drop_front(i + 1), {});
      break;
    }
  }
  scopes.pop_back();
  --depth;
  return ok && !failed();
}

/// The values of `s`'s tuple for its unpacking targets, or a located error.
static std::optional<std::vector<TV>> unpack(MLIRGen &g, const ast::Stmt &s,
                                             const TV &v) {
  const char *what = s.kind == ast::Stmt::Let ? "let" : "assignment";
  if (!v.tuple) {
    g.fail(s.value->loc, std::string("this ") + what + " unpacks " +
                             std::to_string(s.names.size()) +
                             " names, but the value is not a tuple");
    return std::nullopt;
  }
  if (v.tuple->size() != s.names.size()) {
    g.fail(s.value->loc, std::string("this ") + what + " unpacks " +
                             std::to_string(s.names.size()) +
                             " names from a tuple of " +
                             std::to_string(v.tuple->size()) + " values");
    return std::nullopt;
  }
  return *v.tuple;
}

bool MLIRGen::letName(const std::string &name, Loc loc, TV v) {
  if (!canLet(name, loc))
    return false;
  scopes.back()[name] = Binding{v, loc};
  return true;
}

bool MLIRGen::canLet(const std::string &name, Loc loc) {
  if (scopes.back().count(name)) {
    fail(loc, "'" + name + "' is already defined in this block");
    diags.note(scopes.back()[name].loc, "previous definition is here");
    return false;
  }
  if (constants.count(name)) {
    fail(loc, "'" + name + "' is a kernel constant");
    return false;
  }
  if (globals.count(name)) {
    fail(loc, "'" + name + "' is a file-level constant");
    return false;
  }
  return true;
}

Binding *MLIRGen::assignable(const std::string &name, Loc loc) {
  Binding *bd = lookup(name);
  if (!bd || bd->isConst) {
    fail(loc, !bd && !constants.count(name) && !globals.count(name)
                  ? "assignment to undefined name '" + name +
                        "'; declare it with 'let'"
                  : "cannot assign to constant '" + name + "'");
    return nullptr;
  }
  return bd;
}

bool MLIRGen::assignName(Binding *bd, Loc loc, const std::string &op, TV v) {
  if (!op.empty()) {
    v = binary(op, bd->value, v, loc);
    if (!v.v)
      return false;
  }
  // Compound and plain assignments keep the binding's type where they can.
  if (v.weak || elt(v.v) != elt(bd->value.v)) {
    if (!isa<PointerType>(elt(bd->value.v)) && !isa<PointerType>(elt(v.v)) &&
        (v.weak || !op.empty()))
      v = castTo(v, elt(bd->value.v), loc, bd->value.uns);
  }
  if (!v.v)
    return false;
  v.weak = false;
  bd->value = v;
  bd->loc = loc;
  return true;
}

bool MLIRGen::stmt(const ast::Stmt &s, bool) {
  switch (s.kind) {
  case ast::Stmt::Let: {
    if (s.names.empty() && !canLet(s.name, s.loc))
      return false;
    TV v = expr(s.value.get());
    if (s.names.empty()) {
      if (!v.v) {
        if (!failed())
          fail(s.value->loc, v.tuple ? "a tuple must be unpacked: let (a, b) "
                                       "= ..."
                                     : "expected a value");
        return false;
      }
      return letName(s.name, s.loc, v);
    }
    if (failed())
      return false;
    auto values = unpack(*this, s, v);
    if (!values)
      return false;
    for (size_t i = 0; i < s.names.size(); ++i)
      if (!letName(s.names[i], s.nameLocs[i], (*values)[i]))
        return false;
    return true;
  }
  case ast::Stmt::Assign: {
    if (s.names.empty()) {
      Binding *bd = assignable(s.name, s.loc);
      if (!bd)
        return false;
      TV v = expr(s.value.get());
      if (!v.v) {
        if (!failed())
          fail(s.value->loc, v.tuple ? "a tuple must be unpacked: (a, b) = ..."
                                     : "expected a value");
        return false;
      }
      return assignName(bd, s.loc, s.op, v);
    }
    SmallVector<Binding *> slots;
    for (size_t i = 0; i < s.names.size(); ++i)
      if (!slots.emplace_back(assignable(s.names[i], s.nameLocs[i])))
        return false;
    TV v = expr(s.value.get());
    if (failed())
      return false;
    auto values = unpack(*this, s, v);
    if (!values)
      return false;
    for (size_t i = 0; i < s.names.size(); ++i)
      if (!assignName(slots[i], s.nameLocs[i], "", (*values)[i]))
        return false;
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
  case ast::Stmt::While:
    return whileStmt(s);
  case ast::Stmt::Break:
  case ast::Stmt::Continue:
    return loopExit(s);
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
  bool brk = false, cont = false;
  for (auto &st : s.body)
    loopExits(*st, &brk, &cont);
  if (brk)
    return forWithBreak(s, lo, hi, step);

  std::vector<std::string> carried;
  carriedNames(s.body, {s.name, kContinueFlag}, carried);
  SmallVector<Value> inits;
  SmallVector<Binding *> slots;
  for (auto &n : carried) {
    Binding *bd = lookup(n);
    slots.push_back(bd);
    inits.push_back(bd->value.v);
  }
  auto forOp = b.create<scf::ForOp>(l, lo, hi, step, inits);
  if (s.numStages)
    forOp->setAttr("tile.num_stages", b.getI32IntegerAttr(s.numStages));
  if (s.warpSpecialize >= 0)
    forOp->setAttr(tile::kWarpSpecializeAttr,
                   b.getI32IntegerAttr(int32_t(s.warpSpecialize)));
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
  if (cont) // Set by `continue`; each iteration starts without it.
    scopes.back()[kContinueFlag] =
        Binding{constInt(0, b.getI1Type(), s.loc), s.loc};
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
  return ifRegions(c.v, l, s.body, s.elseBody);
}

bool MLIRGen::ifRegions(Value cond, Location l,
                        ArrayRef<ast::StmtPtr> thenStmts,
                        ArrayRef<ast::StmtPtr> elseStmts) {
  std::vector<std::string> carried;
  carriedNames(thenStmts, {}, carried);
  carriedNames(elseStmts, {}, carried);
  SmallVector<Binding *> slots;
  SmallVector<Type> types;
  std::vector<TV> before;
  for (auto &n : carried) {
    Binding *bd = lookup(n);
    slots.push_back(bd);
    types.push_back(bd->value.v.getType());
    before.push_back(bd->value);
  }
  auto ifOp = b.create<scf::IfOp>(l, types, cond, /*withElse=*/true);
  auto emitBranch = [&](Region &region,
                        ArrayRef<ast::StmtPtr> stmts) -> bool {
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
  if (!emitBranch(ifOp.getThenRegion(), thenStmts) ||
      !emitBranch(ifOp.getElseRegion(), elseStmts))
    return false;
  for (size_t i = 0; i < slots.size(); ++i) {
    slots[i]->value = TV{ifOp.getResult(i)};
    slots[i]->value.uns = before[i].uns;
  }
  return true;
}
