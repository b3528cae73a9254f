//===- Functions.cpp - `fn` declarations, inlined at their calls ----------===//
//
// A DSL function is a piece of kernel text with parameters: every call emits
// its body again at the call site, in a fresh scope, so the result is what
// the caller would get by writing the body out by hand (MLIR's CSE then
// merges what two calls compute alike). The rules:
//
//  - The body sees its parameters, the file-level `const`s and the other
//    functions; not the caller's names nor the kernel's constants.
//  - A parameter written without a type is generic: it takes the caller's
//    value as it is (a tile, a scalar, a pointer, a constant array; an
//    untyped literal stays untyped). `x: f32` / `p: *T` fix the element type
//    (scalar or tile); untyped literals are converted, anything else must
//    match. `const T: dtype` takes a dtype (`f(x, bf16)`), usable as a type
//    in the body and in later parameters' types.
//  - `return value;` may only be the body's last statement (no early
//    returns: the body is straight-line text with structured `if`/`for`).
//    A function without it gives no value and can only be a statement.
//  - Inlining cannot terminate for a recursive function: a call of a
//    function already being inlined (directly or through others) is an
//    error.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGenImpl.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::mlirgen;

bool MLIRGen::declareFunctions(const ast::Module &module) {
  for (const ast::Function &fn : module.functions) {
    if (isBuiltinName(fn.name)) {
      fail(fn.loc, "'" + fn.name + "' is a builtin; choose another name");
      return false;
    }
    auto inserted = functions.emplace(fn.name, &fn);
    if (!inserted.second) {
      fail(fn.loc, "duplicate function '" + fn.name + "'");
      diags.note(inserted.first->second->loc, "previous definition is here");
      return false;
    }
  }
  return true;
}

/// The element type a typed parameter (or the return type) names, with type
/// references resolved against the function's dtype parameters; `uns` says
/// whether it is one of u8 ... u64 (MLIR's integers are signless).
static std::optional<Type> declaredType(MLIRGen &g, const ast::Param &p,
                                        const std::map<std::string, DType> &ts,
                                        bool &uns) {
  DType dt = p.dtype;
  if (!p.typeRef.empty()) {
    auto it = ts.find(p.typeRef);
    if (it == ts.end()) {
      g.fail(p.loc, "unknown type '" + p.typeRef +
                        "'; declare it as a parameter 'const " + p.typeRef +
                        ": dtype'");
      return std::nullopt;
    }
    dt = it->second;
  }
  uns = dtypeIsUnsigned(dt);
  Type t = g.mlirType(dt);
  if (p.isPointer)
    t = PointerType::get(&g.ctx, t);
  return t;
}

/// `v` as a value of element type `t`, or an error naming `what`.
static TV checkTyped(MLIRGen &g, TV v, Type t, bool uns, Loc loc,
                     const std::string &what) {
  if (v.v && v.weak && !isa<PointerType>(t))
    return g.castTo(v, t, loc, uns);
  // i32 and u32 are one MLIR type; the signedness must match too.
  bool integer = isa<IntegerType>(isa<PointerType>(t)
                                      ? cast<PointerType>(t).getPointee()
                                      : t);
  if (!v.v || MLIRGen::elt(v.v) != t || (integer && v.uns != uns))
    return g.fail(loc, what + " must be " + g.typeStr(t, uns) + ", got " +
                           (v.v ? g.typeOf(v)
                                : std::string(v.dtype ? "a dtype" : "a list")));
  return v;
}

TV MLIRGen::callFunction(const ast::Function &fn, const ast::Expr *e) {
  if (!expand(e->loc, "call"))
    return TV{};
  if (llvm::is_contained(callStack, &fn)) {
    fail(e->loc, "recursive call of '" + fn.name +
                     "': functions are inlined, so they cannot recurse");
    diags.note(fn.loc, "'" + fn.name + "' is defined here");
    return TV{};
  }
  if (!e->kwargs.empty())
    return fail(e->kwargs.front().loc,
                "'" + fn.name + "' takes no keyword arguments");
  if (e->operands.size() != fn.params.size())
    return fail(e->loc, "'" + fn.name + "' takes " +
                            std::to_string(fn.params.size()) + " argument" +
                            (fn.params.size() == 1 ? "" : "s") + ", got " +
                            std::to_string(e->operands.size()));

  // 1. Arguments, in the caller's scope.
  std::map<std::string, Binding> params;
  std::map<std::string, DType> typeParams;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const ast::Param &p = fn.params[i];
    const ast::Expr *a = e->operands[i].get();
    TV v = expr(a);
    if (failed())
      return TV{};
    if (p.isTypeParam) {
      if (!v.dtype)
        return fail(a->loc, "argument '" + p.name + "' of '" + fn.name +
                                "' must be a dtype such as bf16");
      typeParams[p.name] = *v.dtype;
      continue;
    }
    if (!v)
      return fail(a->loc, "expected a value");
    if (v.dtype)
      return fail(a->loc, "argument '" + p.name + "' of '" + fn.name +
                              "' is a value; declare it 'const " + p.name +
                              ": dtype' to pass a dtype");
    if (fn.paramTyped[i]) {
      bool uns = false;
      auto t = declaredType(*this, p, typeParams, uns);
      if (!t)
        return TV{};
      v = checkTyped(*this, v, *t, uns, a->loc,
                     "argument '" + p.name + "' of '" + fn.name + "'");
      if (!v)
        return TV{};
    }
    params[p.name] = Binding{v, p.loc};
  }

  // 2. The body, in a scope of its own.
  std::vector<std::map<std::string, Binding>> callerScopes;
  std::swap(callerScopes, scopes);
  std::map<std::string, TV> callerConstants;
  std::swap(callerConstants, constants);
  std::map<std::string, DType> callerTypes = typeConstants;
  typeConstants = typeParams;
  std::optional<TV> result;
  std::optional<TV> *callerSlot = returnSlot;
  returnSlot = &result;
  callStack.push_back(&fn);
  scopes.push_back(std::move(params));
  bool ok = block(fn.body, /*topLevel=*/true);
  callStack.pop_back();
  returnSlot = callerSlot;
  typeConstants = std::move(callerTypes);
  constants = std::move(callerConstants);
  scopes = std::move(callerScopes);
  if (!ok)
    return TV{};

  // 3. The result.
  if (!fn.hasReturnType) {
    if (result)
      return *result;
    TV none;
    none.isList = true; // A statement-only result: not usable as a value.
    return none;
  }
  if (!result)
    return fail(fn.loc, "'" + fn.name + "' declares a return type but does "
                                        "not end with 'return value;'");
  if (result->tuple)
    return fail(fn.returnType.loc,
                "'" + fn.name + "' returns several values, so it declares no "
                                "return type");
  bool uns = false;
  auto t = declaredType(*this, fn.returnType, typeParams, uns);
  if (!t)
    return TV{};
  return checkTyped(*this, *result, *t, uns, e->loc,
                    "the result of '" + fn.name + "'");
}
