//===- AST.h - Syntax tree of the tile DSL ----------------------*- C++ -*-===//
//
// The parser builds this tree; MLIRGen walks it to emit the tile dialect. The
// tree is untyped: names, types and shapes are checked by MLIRGen, which has
// the constant values needed to know shapes. Nodes are plain structs with a
// kind tag, owned through unique_ptr, so the tree is cheap to build and to
// print (`stc --emit=ast`).
//
// The language, in one example:
//
//   @num_warps(4)
//   kernel add(x: *f32, y: *f32, out: *f32, n: i32, const BLOCK: i32 = 1024) {
//     let offs = program_id(0) * BLOCK + arange(0, BLOCK);
//     let m = offs < n;
//     store(out + offs, load(x + offs, mask=m) + load(y + offs, mask=m), mask=m);
//   }
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_FRONTEND_AST_H
#define SPARSETILE_FRONTEND_AST_H

#include "Diagnostics.h"
#include "sparsetile/Compiler.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sparsetile::ast {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// One keyword argument of a call: `mask=m`.
struct KwArg {
  std::string name;
  ExprPtr value;
  Loc loc;
};

/// One entry of a subscript: `:` keeps a dimension, `None` inserts one, an
/// expression (`PAIRS[i][0]`, constant arrays only) selects one entry; its
/// expression is the next of the Index node's operands after the base.
enum class IndexEntry { Keep, NewAxis, Value };

struct Expr {
  enum Kind {
    IntLit,   ///< 42            -> intValue
    FloatLit, ///< 1.5, 1e-6     -> floatValue
    BoolLit,  ///< true, false   -> intValue (0/1)
    Name,     ///< x, inf, nan   -> name
    DTypeRef, ///< f16 (as a value, e.g. in x.to(f16)) -> dtype
    Unary,    ///< -x, !x, ~x    -> op, operands[0]
    Binary,   ///< a + b         -> op, operands[0..1]
    Call,     ///< f(a, k=v); x.f(a) is Call f(x, a) -> name, operands, kwargs
    Index,    ///< x[:, None]    -> operands[0], index
    List,     ///< [a, b]        -> operands (shapes: zeros([M, N], f32);
              ///<   nested lists are constant arrays)
    String,   ///< "text"        -> name (static_assert messages, device_print prefixes)
    Tuple,    ///< (a, b), `return a, b;` -> operands: a function's results
  };

  Kind kind;
  Loc loc;
  int64_t intValue = 0;
  double floatValue = 0;
  std::string name;       ///< Name and Call.
  std::string op;         ///< Unary/Binary spelling: "+", "<=", "&&", ...
  DType dtype = DType::F32;
  std::vector<ExprPtr> operands;
  std::vector<KwArg> kwargs;
  std::vector<IndexEntry> index;
  bool isMethod = false;  ///< Call written as x.f(...): for printing only.

  Expr(Kind kind, Loc loc) : kind(kind), loc(loc) {}
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Block = std::vector<StmtPtr>;

struct Stmt {
  enum Kind {
    Let,    ///< let name = value;
    Assign, ///< name = value;  name op= value;  (op in "", "+", "-", "*", "/")
    For,    ///< for name in range(lo, hi, step) { body }
    If,     ///< if cond { body } else { elseBody }
    ExprStmt, ///< value;
    Return, ///< return;  return value; (value may be null)
    StaticFor,    ///< for name in static_range(lo, hi, step): unrolled
    Const,        ///< const name = value; (a compile-time constant)
    StaticAssert, ///< static_assert(value, "message"); message in `op`
    While,        ///< while value { body }
    Break,        ///< break;  (leaves the innermost for/while)
    Continue,     ///< continue;  (ends the innermost loop's iteration)
  };

  Kind kind;
  Loc loc;
  std::string name;  ///< Let/Assign target, For induction variable.
  /// Let/Assign unpacking a tuple, `let (a, b) = f(x);` / `(a, b) = f(x);`:
  /// the names and where each is written (then `name` is empty).
  std::vector<std::string> names;
  std::vector<Loc> nameLocs;
  std::string op;    ///< Assign: "" for '=', "+" for '+=', ...
  ExprPtr value;     ///< Let/Assign/Const value, If condition, ExprStmt
                     ///< expression, Return value, StaticAssert condition.
  ExprPtr lo, hi, step; ///< For: range bounds; step may be null (1).
  /// For: `range(..., num_stages=N)`, the software-pipeline depth asked for
  /// this loop (0: not given; the kernel's num_stages applies).
  int64_t numStages = 0;
  /// For: `range(..., warp_specialize=0|1)`, whether this loop's ring gets
  /// a producer warp(group) (-1: not given; the kernel's choice applies).
  int64_t warpSpecialize = -1;
  Block body;
  Block elseBody;    ///< If: may be empty.
  bool hasElse = false;

  Stmt(Kind kind, Loc loc) : kind(kind), loc(loc) {}
};

/// A parameter: `x: *f32`, `n: i32`, `const BLOCK: i32 = 128`, or a type
/// parameter `const T: dtype = bf16` that others name (`x: *T`).
struct Param {
  std::string name;
  Loc loc;
  DType dtype = DType::I32;
  bool isPointer = false;
  bool isDesc = false;  ///< `x: desc<T>`: a 2-D tensor descriptor.
  bool isConst = false;
  bool isTypeParam = false; ///< `const T: dtype`; the default is a DTypeRef.
  std::string typeRef;      ///< `x: *T`: the element type is parameter T.
  ExprPtr defaultValue; ///< Only for const parameters; may be null.
};

/// `@name(value)` before a kernel, e.g. `@num_warps(8)`; the value may
/// also name a `const` parameter (`@persistent(PERSISTENT)`), so a launcher
/// can choose it per problem.
struct Attribute {
  std::string name;
  int64_t value = 0;
  std::string constName; ///< Set when the value names a constant.
  Loc loc;
};

/// One `NAME: value` entry of an `@autotune` configuration.
struct TuneSetting {
  std::string name;
  int64_t value = 0;
  Loc loc;
};

/// `@autotune(key=[M, N], grid=[cdiv(M, BM), ...], configs=[{BM: 128,
/// num_warps: 8}, ...])`; Frontend/Autotune.cpp checks it against the
/// kernel's parameters.
struct AutotuneAttr {
  Loc loc;
  std::vector<std::pair<std::string, Loc>> key;
  /// `key=` was written: an empty key (tune once for every shape) is rare
  /// enough that it must be spelled `key=[]`.
  bool keyGiven = false;
  std::vector<ExprPtr> grid;
  std::vector<std::vector<TuneSetting>> configs;
  std::vector<Loc> configLocs; ///< The `{` of each configuration.
};

struct Kernel {
  std::string name;
  Loc loc;
  std::vector<Attribute> attrs;
  std::optional<AutotuneAttr> autotune;
  std::vector<Param> params;
  Block body;
};

/// `const NAME = value;` at file level (or in a block: Stmt::Const): an
/// integer, float or bool constant, or a rectangular array of integers.
struct ConstDecl {
  std::string name;
  Loc loc;
  ExprPtr value;
};

/// `fn name(params) -> type { body }`: inlined where it is called
/// (Frontend/Functions.cpp). A parameter without a type is generic; `const
/// T: dtype` takes a dtype argument. The body may end with `return value;`.
struct Function {
  std::string name;
  Loc loc;
  std::vector<Param> params;
  std::vector<bool> paramTyped; ///< Per parameter: a type was written.
  bool hasReturnType = false;
  Param returnType; ///< Only the type fields are used.
  Block body;
};

/// `import "common.tile";`: the path is relative to the importing file.
struct Import {
  std::string path;
  Loc loc;
};

/// A top-level item that did not parse. The parser reports its first error,
/// skips to the end of the item and goes on with the next one, so one bad
/// kernel does not hide the others (Language.md, "Syntax errors").
struct BadItem {
  enum Kind {
    Kernel,   ///< Stops the kernel of that name.
    Function, ///< Stops the kernels that call it, directly or through fns.
    /// An import, a file-level const, or text that names nothing: stops
    /// every kernel of the file.
    FileLevel,
  };
  Kind kind = FileLevel;
  std::string name; ///< The kernel's or fn's name, when it was read.
  Loc loc;          ///< Where the item starts.
  /// The item's diagnostics as Diagnostics::str() gave them (its first
  /// error, with the source line and a caret, and any notes).
  std::string diagnostics;
};

struct Module {
  std::vector<Kernel> kernels;
  std::vector<ConstDecl> constants;
  std::vector<Function> functions;
  std::vector<Import> imports;
  /// The items with syntax errors, in source order (empty when the file
  /// parsed).
  std::vector<BadItem> badItems;
};

/// Calls `f` on every expression of `block`, subexpressions included
/// (statement values, loop bounds, nested blocks).
void forEachExpr(const Block &block, const std::function<void(const Expr &)> &f);

/// Prints the tree as an indented outline (stc --emit=ast).
std::string print(const Module &module);
std::string print(const Kernel &kernel);
/// The file-level declarations (imports, constants, functions), in the same
/// outline; empty when the file has none.
std::string printDecls(const Module &module);

} // namespace sparsetile::ast

#endif // SPARSETILE_FRONTEND_AST_H
