//===- MLIRGenImpl.h - The tile-dialect generator, shared part --*- C++ -*-===//
//
// Private to compiler/Frontend: the generator class that MLIRGen.h's
// emitTileIR runs, declared once for the files that implement it:
//
//   MLIRGenTypes.cpp  type rules: dtypes, promotion, casts, broadcasting
//   MLIRGenExpr.cpp   expressions: names, literals, operators, subscripts
//   Builtins.cpp      the builtin table, its dispatcher and the builders
//   MLIRGenStmt.cpp   statements; `for`/`if` with loop-carried values
//   MLIRGenLoops.cpp  `while`, `break` and `continue`
//   MLIRGen.cpp       kernel attributes, constants and parameters
//   StaticEval.cpp    constant arrays, static_range, static_assert, `const`
//   Functions.cpp     `fn` declarations, inlined at their calls
//
// Everything in the class is public because the builtins' builders are free
// functions (one table entry and one function per builtin) that use its
// helpers; nothing outside the front end includes this header.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_FRONTEND_MLIRGENIMPL_H
#define SPARSETILE_FRONTEND_MLIRGENIMPL_H

#include "Dialect/Tile/TileDialect.h"
#include "Frontend/MLIRGen.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace sparsetile::mlirgen {

using namespace mlir;
using namespace sparsetile::tile;

/// A compile-time array of integers (`const PAIRS = [[0, 1], [0, 2]];`):
/// rectangular, row-major.
struct ConstArray {
  std::vector<int64_t> shape;
  std::vector<int64_t> data;
};

/// A value during emission: an SSA value plus what the front end knows about
/// it at compile time.
struct TV {
  Value v;
  /// An untyped literal (`2`, `0.5`): adopts the other operand's type.
  bool weak = false;
  /// Known integer value (scalars only): sign-extended from the type's
  /// width for signed types, zero-extended for u8 ... u32, the bit pattern
  /// for u64.
  std::optional<int64_t> ci;
  std::optional<double> cf;  ///< Known float value (scalars only).
  /// A dtype used as a value, as in `x.to(f16)`.
  std::optional<DType> dtype;
  /// A list literal, as in `zeros([M, N], f32)`.
  std::vector<int64_t> list;
  bool isList = false;
  /// A constant array (every list literal of integers has one; nested
  /// lists only this).
  std::shared_ptr<const ConstArray> array;
  /// The integer elements (or a pointer's pointee) are unsigned. MLIR
  /// integers are signless: signedness lives here, and picks the arith op
  /// (shrui/shrsi, divui/divsi, cmpi ult/slt, extui/extsi, uitofp/sitofp).
  bool uns = false;
  /// A tuple, `(a, b)` or a function's `return a, b;`: its values, which
  /// `let (x, y) = ...` unpacks. Nothing else takes a tuple.
  std::shared_ptr<const std::vector<TV>> tuple;

  explicit operator bool() const {
    return v || dtype || isList || array || tuple;
  }
};

/// `v` truncated to the width of the integer type `t` and sign-extended back,
/// as the generated code would hold it (i1 keeps the low bit).
int64_t wrapToWidth(uint64_t v, Type t);

/// `v` as a known value of `t` holds it (TV::ci): wrapToWidth for signed
/// types, zero-extended from the width for unsigned ones.
int64_t normalizeInt(uint64_t v, Type t, bool uns);

struct Binding {
  TV value;
  Loc loc;
  bool isConst = false; ///< `const` in a block, a static_range variable.
};

/// Counts the ops a builder creates: the front end's share of the compile
/// budget.
struct OpCounter : public OpBuilder::Listener {
  int64_t ops = 0;
  void notifyOperationInserted(Operation *, OpBuilder::InsertPoint) override {
    ++ops;
  }
};

class MLIRGen {
public:
  MLIRGen(MLIRContext &ctx, const CompileOptions &options, Diagnostics &diags)
      : ctx(ctx), b(&ctx, &opCounter), options(options), diags(diags) {}

  OwningOpRef<ModuleOp> emit(const ast::Module &module,
                             const ast::Kernel &kernel);

  // --- Errors -------------------------------------------------------------
  TV fail(Loc loc, const std::string &msg) {
    diags.error(loc, msg);
    return TV{};
  }
  bool failed() const { return diags.hadError(); }

  Location mloc(Loc loc) {
    return FileLineColLoc::get(&ctx, diags.file(loc.file), loc.line, loc.col);
  }

  // --- Types (MLIRGenTypes.cpp) -------------------------------------------
  Type mlirType(DType t);
  /// `t` in DSL spelling; `uns` prints integers (and pointees) as u8 ... u64.
  std::string typeStr(Type t, bool uns = false);
  /// The type of a value in DSL spelling, signedness included.
  std::string typeOf(const TV &x) { return typeStr(x.v.getType(), x.uns); }
  static bool isFloat(Type t) { return isa<FloatType>(t); }
  static bool isInt(Type t) { return isa<IntegerType>(t); }
  /// f8e4m3 or f8e5m2: storage types, converted but not computed with.
  static bool isFP8(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }
  /// The target's SM number (90 for sm_90a), 0 if it does not name one.
  int smVersion() const;
  /// A located error unless the target converts fp8 (sm_89 and newer).
  bool fp8ArchOk(Loc loc);
  /// A located error if `x` is an fp8 value: arithmetic needs a conversion.
  bool rejectFP8(const TV &x, Loc loc, const std::string &what);
  static Type elt(Value v) { return elementType(v.getType()); }
  static ArrayRef<int64_t> shape(Value v) { return shapeOf(v.getType()); }
  Type withElt(Type like, Type e) {
    if (auto t = dyn_cast<RankedTensorType>(like))
      return RankedTensorType::get(t.getShape(), e);
    return e;
  }
  Type promote(Type a, Type b);
  /// Whether promote(a, c) is unsigned, given the operands' signedness
  /// (Language.md, "Unsigned integers": C's rules).
  static bool promoteUnsigned(Type a, bool ua, Type c, bool uc);

  // --- Values (MLIRGenTypes.cpp) ------------------------------------------
  /// An integer constant; `uns` types it u8 ... u64 (then `v` must be in
  /// [0, 2^width) below 64 bits).
  TV constInt(int64_t v, Type t, Loc loc, bool uns = false);
  TV constFloat(double v, Type t, Loc loc);
  /// Converts the elements of `x` to `e`, unsigned if `toUns` (integers
  /// only). The source's signedness (x.uns) picks extui/extsi, uitofp/sitofp.
  TV castTo(TV x, Type e, Loc loc, bool toUns = false);
  TV broadcastTo(TV x, ArrayRef<int64_t> shape, Loc loc);
  bool unify(TV &a, TV &c, Loc loc, bool numericOnly);

  // --- Expressions (MLIRGenExpr.cpp; call() in Builtins.cpp) --------------
  TV expr(const ast::Expr *e);
  std::optional<int64_t> constIntOf(const ast::Expr *e, const char *what);
  TV binary(const std::string &op, TV lhs, TV rhs, Loc loc);
  /// `x ** y` and `pow(x, y)`: exact repeated multiplication for an integer
  /// base and a compile-time exponent >= 0, else the float power.
  TV power(TV x, TV y, Loc loc);
  /// `x / y` of floats as Triton divides: f32 quotients are marked `afn`,
  /// which the PTX emitter turns into div.full.f32 (2 ulp, no subroutine);
  /// `div_rn` and the other float types divide correctly rounded.
  Value divide(Value x, Value y, Location l);
  /// floor(x) of a float value (16-bit floats computed in f32, exactly).
  Value floorOf(Value x, Location l);
  /// `x << n` or `x >> n` (operands unified); `clamp` when `n` is not a
  /// compile-time constant: amounts of the width or more then clamp.
  Value shiftOp(const std::string &op, TV x, TV n, bool clamp, Location l);
  /// The untyped integer literal `v` (i32 if it fits, else i64), or a located
  /// overflow error naming `what` when it is nothing.
  TV literal(std::optional<int64_t> v, Loc loc, const std::string &what);
  TV unary(const std::string &op, TV x, Loc loc);
  TV call(const ast::Expr *e);
  TV index(const ast::Expr *e);

  // --- Compile-time evaluation (StaticEval.cpp) ----------------------------
  TV listLiteral(const ast::Expr *e);
  TV indexArray(const ast::Expr *e, TV base);
  bool fileConstants(const ast::Module &module);
  bool constStmt(const ast::Stmt &s);
  bool staticFor(const ast::Stmt &s);
  bool staticAssert(const ast::Stmt &s);

  // --- Functions (Functions.cpp) ------------------------------------------
  bool declareFunctions(const ast::Module &module);
  /// Inlines `fn` for the call `e`; null TV (no error) when `e` is not a
  /// call of a user function.
  TV callFunction(const ast::Function &fn, const ast::Expr *e);
  // --- Random numbers (Random.cpp) ---------------------------------------
  /// `fn` ("randint", "rand" or "randn") of Philox-4x32-10 at `offsets`
  /// under `seed`, as Language.md's "Random numbers" defines them; randint
  /// returns output word `word` (0-3).
  TV random(const std::string &fn, TV seed, Loc seedLoc, TV offsets,
            Loc offsetsLoc, Loc loc, int64_t word = 0);

  // --- Statements (MLIRGenStmt.cpp) ---------------------------------------
  bool block(ArrayRef<ast::StmtPtr> stmts, bool topLevel);
  bool stmt(const ast::Stmt &s, bool last);
  /// Binds `name` in the current block (a located error if it is taken).
  bool letName(const std::string &name, Loc loc, TV v);
  bool canLet(const std::string &name, Loc loc);
  /// The binding `name = ...` rebinds, or a located error.
  Binding *assignable(const std::string &name, Loc loc);
  /// `name op= v` into `bd`, keeping the binding's type where it can.
  bool assignName(Binding *bd, Loc loc, const std::string &op, TV v);
  bool forStmt(const ast::Stmt &s);
  bool ifStmt(const ast::Stmt &s);
  /// `if cond { thenStmts } else { elseStmts }` as an scf.if whose results
  /// carry the outer names either side assigns.
  bool ifRegions(Value cond, Location l, ArrayRef<ast::StmtPtr> thenStmts,
                 ArrayRef<ast::StmtPtr> elseStmts);
  // `while`, `break` and `continue` (MLIRGenLoops.cpp).
  bool whileStmt(const ast::Stmt &s);
  /// A `for` whose body breaks: an scf.while over the induction variable.
  bool forWithBreak(const ast::Stmt &s, Value lo, Value hi, Value step);
  bool loopExit(const ast::Stmt &s);
  /// The scalar "neither flag is set" after a statement that may `break` or
  /// `continue`: what the rest of the loop body runs under.
  Value stillRunning(Location l, bool brk, bool cont);
  Binding *lookup(const std::string &name);
  void carriedNames(ArrayRef<ast::StmtPtr> stmts,
                    std::set<std::string> declared,
                    std::vector<std::string> &out);

  /// True while the ops built so far are within the compile budget
  /// (Language.md); a located error at `loc` once they are not.
  bool withinBudget(Loc loc);

  MLIRContext &ctx;
  OpCounter opCounter; ///< Before `b`, which reports to it.
  OpBuilder b;
  const CompileOptions &options;
  Diagnostics &diags;
  std::vector<std::map<std::string, Binding>> scopes;
  std::map<std::string, TV> constants;
  std::map<std::string, DType> typeConstants; ///< `const T: dtype` params.
  /// File-level `const`s: visible in kernels and functions.
  std::map<std::string, TV> globals;
  std::map<std::string, const ast::Function *> functions;
  /// The functions being inlined, innermost last: a call of one of them is
  /// recursion.
  std::vector<const ast::Function *> callStack;
  /// Set while a function body is emitted: where `return value;` puts it.
  std::optional<TV> *returnSlot = nullptr;
  int depth = 0;
  /// Bodies emitted so far by `static_range` iterations and `fn` calls,
  /// nested ones included (StaticEval.cpp caps the total per kernel).
  int64_t expansions = 0;
  /// Counts one more expanded body; a located error past the cap.
  bool expand(Loc loc, const char *what);
};

/// The bindings of the innermost loop's `break` and `continue` flags (i1
/// scalars). Not identifiers, so no user name can clash with them; a
/// function body (its own scopes) sees neither, so `break` there is outside
/// any loop.
inline constexpr const char *kBreakFlag = "%break";
inline constexpr const char *kContinueFlag = "%continue";

/// Whether `s` may leave the current iteration of the innermost loop around
/// it through `break` (`*brk`) or `continue` (`*cont`): loops nested in `s`
/// catch their own.
void loopExits(const ast::Stmt &s, bool *brk, bool *cont);

/// Whether `name` is a builtin (Builtins.cpp): functions may not reuse one.
bool isBuiltinName(const std::string &name);

/// 16 for f16 and bf16, else the float's width (8 for the fp8 types): the
/// two 16-bit types rank equal because neither holds the other.
int floatRank(Type t);

/// The NumPy broadcast of two shapes (aligned on the right, size-1 dims
/// stretch), or nothing if they do not broadcast.
std::optional<SmallVector<int64_t>> broadcastShapes(ArrayRef<int64_t> a,
                                                    ArrayRef<int64_t> c);

} // namespace sparsetile::mlirgen

#endif // SPARSETILE_FRONTEND_MLIRGENIMPL_H
