//===- MLIRGen.cpp - Emit the tile dialect from the AST -------------------===//
//
// Walks one ast::Kernel and emits a func.func in the tile dialect; this file
// binds the kernel: its attributes (@num_warps, @persistent,
// @warp_specialize), its `const` parameters (overridden by -D or from their
// defaults, in order, so a default may use earlier constants), its run-time
// parameters with their divisibility facts, then the body. The language's
// other rules live beside it (see MLIRGenImpl.h):
//
//  - Types (MLIRGenTypes.cpp): operands are promoted (int with float gives
//    the float, f16 with bf16 gives f32, narrow with wide gives wide), untyped
//    literals take their partner's type, and binary operands broadcast
//    NumPy-style.
//  - Expressions (MLIRGenExpr.cpp): scalar integer arithmetic on compile-time
//    values is folded, because shapes (`arange(0, BLOCK)`) must be known here.
//  - Builtins (Builtins.cpp): one table entry and one builder per builtin.
//  - Control flow (MLIRGenStmt.cpp): a name rebound inside `for`/`if` that
//    was declared outside becomes a loop-carried value (scf.for iter_args)
//    or an scf.if result.
//
// Errors are reported to Diagnostics at the AST node's location and emission
// continues to unwind by returning null values; nothing throws.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGenImpl.h"
#include "Frontend/Parser.h"

#include "llvm/Support/MathExtras.h"

#include <cerrno>
#include <cstdlib>

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::tile;
using namespace sparsetile::mlirgen;

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// CUDA's limit on a kernel's parameters (32,764 bytes since CUDA 12.1 on
/// Volta and newer; sparsetile targets sm_80 and sm_90).
static constexpr int64_t kMaxParamBytes = 32764;

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
  if (dtypeIsUnsigned(t)) { // Up to 2^64 - 1, held as its bit pattern.
    if (text[0] == '-')
      return false;
    i = int64_t(std::strtoull(text.c_str(), &end, 0));
    return *end == 0 && errno == 0;
  }
  i = std::strtoll(text.c_str(), &end, 0);
  return *end == 0 && errno == 0;
}

/// Kernel attributes whose value may name an integer constant, so they are
/// read after the constants: `@persistent`, `@warp_specialize`, `@cluster`,
/// `@pingpong`, `@maxnreg`, `@thread_run` (`@num_warps` is read before
/// them).
static bool isFlagAttr(const std::string &name) {
  return name == "persistent" || name == "warp_specialize" ||
         name == "cluster" || name == "pingpong" || name == "maxnreg" ||
         name == "thread_run";
}

OwningOpRef<ModuleOp> MLIRGen::emit(const ast::Module &file,
                                    const ast::Kernel &kernel) {
  Location kloc = mloc(kernel.loc);
  OwningOpRef<ModuleOp> module = ModuleOp::create(kloc);
  b.setInsertionPointToEnd(module->getBody());

  // 1. Attributes.
  int64_t numWarps = 4;
  for (auto &a : kernel.attrs) {
    if (isFlagAttr(a.name))
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
    // File-level constants and functions first: defaults may use them.
    if (!declareFunctions(file) || !fileConstants(file))
      return nullptr;
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
              fail(p.defaultValue->loc,
                   "default of '" + p.name + "' must be a dtype such as bf16");
            return nullptr;
          }
          dt = *v.dtype;
        } else {
          fail(p.loc, "type '" + p.name +
                          "' has no default; give it a value "
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
        v = isFloat(t) ? constFloat(f, t, p.loc)
                       : constInt(i, t, p.loc, dtypeIsUnsigned(p.dtype));
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
        v = castTo(v, t, p.loc, dtypeIsUnsigned(p.dtype));
      } else {
        fail(p.loc, "constant '" + p.name +
                        "' has no default; give it a "
                        "value (stc -D " +
                        p.name + "=...)");
        return nullptr;
      }
      v.weak = false;
      constants[p.name] = v;
    }
  }
  // Flags: `@persistent(0|1)`, `@warp_specialize(0|1)`, `@pingpong(0|1)`,
  // `@cluster(1|2)`, `@maxnreg(0 or 24..255)`, `@thread_run(0 or a power of
  // two to 32)`, or the name of an integer constant holding the value.
  std::vector<std::pair<const char *, int64_t>> flags;
  for (auto &a : kernel.attrs) {
    if (!isFlagAttr(a.name))
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
    if (a.name == "cluster") {
      if (value != 1 && value != 2) {
        fail(a.loc, "@cluster takes 1 or 2, got " + std::to_string(value));
        return nullptr;
      }
      flags.emplace_back(kClusterAttr, value);
      continue;
    }
    if (a.name == "maxnreg") {
      // ptxas takes .maxnreg from 24 (fewer fails to allocate) to 255.
      if (value != 0 && (value < 24 || value > 255)) {
        fail(a.loc, "@maxnreg takes 0 (no cap) or 24 to 255, got " +
                        std::to_string(value));
        return nullptr;
      }
      flags.emplace_back(kMaxnregAttr, value);
      continue;
    }
    if (a.name == "thread_run") {
      // A run is at most 32 elements: a thread's share of a tile is
      // straight-line code, and wider runs only raise register pressure.
      if (value != 0 && (value > 32 || !llvm::isPowerOf2_64(value))) {
        fail(a.loc, "@thread_run takes 0 (the default run) or a power of "
                    "two from 1 to 32, got " +
                        std::to_string(value));
        return nullptr;
      }
      flags.emplace_back(kThreadRunAttr, value);
      continue;
    }
    if (value != 0 && value != 1) {
      fail(a.loc, "@" + a.name + " takes 0 or 1, got " + std::to_string(value));
      return nullptr;
    }
    flags.emplace_back(a.name == "persistent" ? kPersistentAttr
                       : a.name == "pingpong" ? kPingPongAttr
                                              : kWarpSpecializeAttr,
                       value);
  }
  // Options override the attributes: an autotuning configuration sets them.
  for (auto [attr, value] :
       {std::pair(kPersistentAttr, options.persistent),
        std::pair(kWarpSpecializeAttr, options.warpSpecialize)}) {
    if (value < 0)
      continue;
    if (value > 1) {
      diags.error(std::string("option ") + attr + " takes 0 or 1, got " +
                  std::to_string(value));
      return nullptr;
    }
    llvm::erase_if(flags, [&](const auto &f) {
      return llvm::StringRef(f.first) == llvm::StringRef(attr);
    });
    flags.emplace_back(attr, value);
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
  for (auto &name : llvm::concat<const std::string>(options.divisibleBy16,
                                                   options.equalToOne)) {
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
  // CUDA passes at most kMaxParamBytes of parameters (a launch past it
  // fails at run time): each takes its size, aligned to it.
  int64_t paramBytes = 0;
  auto addParamBytes = [&](int64_t size, Loc loc, const std::string &which) {
    paramBytes = int64_t(llvm::alignTo(paramBytes, size)) + size;
    if (paramBytes <= kMaxParamBytes)
      return true;
    fail(loc, "the kernel's parameters take more than " +
                  std::to_string(kMaxParamBytes) + " bytes, CUDA's limit; " +
                  which);
    return false;
  };
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
    if (dtypeIsFP8(dt) && !p.isPointer && !p.isDesc) {
      fail(p.loc, "parameter '" + p.name + "': " + dtypeName(dt) +
                      " is a pointer element type (*" + dtypeName(dt) +
                      "), not a scalar parameter; pass an f32 and convert");
      return nullptr;
    }
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
    // Pointers and descriptors (a pointer to the block) take 8 bytes.
    if (!addParamBytes(
            p.isPointer || p.isDesc ? 8 : std::max<int64_t>(1, dtypeSize(dt)),
            p.loc, "parameter '" + p.name + "' is past it"))
      return nullptr;
  }
  // A persistent kernel gets the grid (two i32) and a queue pointer too.
  bool persistent = llvm::any_of(flags, [](const auto &f) {
    return llvm::StringRef(f.first) == kPersistentAttr && f.second == 1;
  });
  if (persistent &&
      !(addParamBytes(4, kernel.loc, "") && addParamBytes(4, kernel.loc, "") &&
        addParamBytes(8, kernel.loc,
                      "a persistent kernel adds 16 bytes of its own")))
    return nullptr;
  auto func = b.create<func::FuncOp>(kloc, kernel.name,
                                     b.getFunctionType(argTypes, {}));
  func->setAttr(kKernelAttr, b.getUnitAttr());
  func->setAttr(kNumWarpsAttr, b.getI32IntegerAttr(numWarps));
  for (auto &[name, value] : flags)
    func->setAttr(name, b.getI32IntegerAttr(int32_t(value)));
  Block *entry = func.addEntryBlock();
  scopes.emplace_back();
  // The attributes are set all at once: setArgAttr per argument rebuilds
  // the array of all of them, quadratic in time and in the memory the
  // context keeps (10k pointer parameters took 4.5 s and 1.6 GB).
  auto div16 = b.getNamedAttr(kDivisibilityAttr, b.getI32IntegerAttr(16));
  auto none = b.getDictionaryAttr({});
  SmallVector<DictionaryAttr> argAttrs(runtimeParams.size(), none);
  for (size_t i = 0; i < runtimeParams.size(); ++i) {
    const ast::Param &p = *runtimeParams[i];
    if (p.isPointer || p.isDesc) // The runtime checks 16-byte alignment.
      argAttrs[i] = b.getDictionaryAttr(div16);
    else if (llvm::is_contained(options.divisibleBy16, p.name) &&
             isInt(argTypes[i]) && !argTypes[i].isInteger(1))
      argAttrs[i] = b.getDictionaryAttr(div16);
    // Named, so that a performance remark can say which parameter it is.
    entry->getArgument(i).setLoc(
        NameLoc::get(b.getStringAttr(p.name), mloc(p.loc)));
    TV arg{entry->getArgument(i)};
    arg.uns =
        dtypeIsUnsigned(p.typeRef.empty() ? p.dtype : typeConstants[p.typeRef]);
    if (llvm::is_contained(options.equalToOne, p.name) &&
        isInt(argTypes[i]) && !argTypes[i].isInteger(1)) {
      // Promised 1 (Triton's equal_to_1): the argument stays in the
      // signature, and the body sees the constant, so `offs * stride` keeps
      // the runs of `offs` (AxisInfo) and scalar uses fold. It is not a
      // compile-time value to the front end (TV::ci): what compiles must not
      // depend on the arguments of a launch.
      arg.v = OpBuilder::atBlockBegin(entry).create<arith::ConstantOp>(
          kloc, b.getIntegerAttr(argTypes[i], 1));
    }
    scopes.back()[p.name] = Binding{arg, p.loc};
  }
  func.setAllArgAttrs(argAttrs);

  // 4. The body.
  b.setInsertionPointToEnd(entry);
  if (!block(kernel.body, true))
    return nullptr;
  b.create<func::ReturnOp>(kloc);
  scopes.pop_back();
  return module;
}

OwningOpRef<ModuleOp> sparsetile::emitTileIR(MLIRContext &context,
                                             const ast::Module &file,
                                             const ast::Kernel &kernel,
                                             const CompileOptions &options,
                                             Diagnostics &diags) {
  MLIRGen gen(context, options, diags);
  OwningOpRef<ModuleOp> module = gen.emit(file, kernel);
  if (diags.hadError())
    return nullptr;
  return module;
}
