//===- Compiler.h - The sparsetile compiler's public interface --*- C++ -*-===//
//
// This is the only compiler header the runtime and the tools include. It pulls
// in no MLIR or LLVM headers, so the runtime stays cheap to build and its users
// never see MLIR. The one type shared between compiler/ and runtime/ is
// `CompiledKernel`: the PTX plus everything a launcher must know about it.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_COMPILER_H
#define SPARSETILE_COMPILER_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

/// Marks the compiler library's exported API (it is built with hidden
/// visibility so the MLIR/LLVM inside it stay private).
#define SPARSETILE_API __attribute__((visibility("default")))

namespace sparsetile {

/// The version of sparsetile itself; part of every cache key.
SPARSETILE_API const char *version();

/// A human-readable description of the toolchain the compiler was built with
/// (LLVM/MLIR version, libdevice). Part of every cache key.
SPARSETILE_API std::string toolchainVersion();

/// The stages `stc --emit=` can print, in pipeline order.
enum class Stage {
  Ast,  ///< The parsed kernel, printed back as an indented tree.
  Tile, ///< The tile dialect, as emitted by the front end.
  /// The tile dialect after the persistent loop, the TMA ring, cluster
  /// multicast, the producer/consumer split and the ping-pong split (what
  /// the distribution pass receives).
  Pipelined,
  /// The tile dialect with every tile's thread layout in its type
  /// (#tile.blocked, #tile.mma, #tile.wgmma, #tile.slice) and the
  /// tile.convert_layout ops between them (tile-assign-layouts).
  Layouts,
  Mlir, ///< Upstream MLIR (gpu/scf/arith/math/llvm/nvvm) after distribution.
  Llvm, ///< LLVM IR after libdevice linking and O3.
  Ptx,  ///< The PTX text.
};

/// Parses "ast", "tile", "pipelined", "layouts", "mlir", "llvm", "ptx". Returns false on anything else.
SPARSETILE_API bool parseStage(const std::string &name, Stage &stage);

/// Shared memory's limits, in one place for the compiler's passes
/// (Dialect/Tile/TileDialect.h, SharedMemory.h) and the runtime's ops: what
/// a block may use (227 KB, sm_90's opt-in limit; the driver checks
/// sm_80's at load), what an SM offers its blocks (228 KB), the 1 KB each
/// resident block reserves of it, and the static limit above which
/// convert-tile-to-gpu declares a kernel's shared memory dynamic (the
/// runtime opts the kernel in at launch).
constexpr int64_t kSharedMemoryPerBlock = 227 * 1024;
constexpr int64_t kSharedMemoryPerSM = 228 * 1024;
constexpr int64_t kSharedMemoryReservedPerBlock = 1024;
constexpr int64_t kStaticSharedMemoryLimit = 48 * 1024;
/// What a block may use on `arch` (the resolved target name): sm_90's
/// 227 KB, sm_80's and sm_87's 163 KB, sm_86's and sm_89's 99 KB (CUDA
/// Programming Guide, "Technical Specifications per Compute Capability").
inline int64_t sharedMemoryPerBlock(const std::string &arch) {
  if (arch.rfind("sm_90", 0) == 0)
    return kSharedMemoryPerBlock;
  if (arch == "sm_80" || arch == "sm_87")
    return 163 * 1024;
  return 99 * 1024;
}

/// The code-generation choices shared by the compiler (CompileOptions) and
/// the runtime (rt::JITOptions), which both derive from this struct.
/// `forEachField` is the one list of them: equality, the JIT's handle hash and
/// the cache key are all derived from it, so a new option is one field here
/// plus one line there.
struct CodegenOptions {
  /// Target GPU, "sm_80" or "sm_90" (also "sm_86", "sm_89", "sm_90a").
  /// CompileOptions starts at "sm_90"; for the JIT, empty means the current
  /// GPU's.
  std::string arch;
  /// PTX ISA version as major*10+minor (e.g. 85 for 8.5); 0 picks the
  /// default for the arch.
  int ptxVersion = 0;
  /// Warps per program; 0 takes the kernel's `@num_warps` (default 4).
  int numWarps = 0;
  /// Shared-memory stages of a pipelined (TMA) K loop on sm_90; 0 takes as
  /// many as fit, up to 4. Fewer stages can let two programs share an SM.
  int numStages = 0;
  /// Overrides the kernel's `@persistent` / `@warp_specialize` (0 or 1); -1
  /// keeps the kernel's own. Autotuning configurations set them.
  int persistent = -1;
  int warpSpecialize = -1;
  /// `--Werror=perf` (1): a compile that gives a performance remark fails,
  /// with the remarks as errors. In the cache key although the PTX does not
  /// change: a kernel cached by a lenient compile must not pass a strict one.
  int werrorPerf = 0;
  /// 1: compile `device_assert`s in (Triton's `debug=True`): a false
  /// element prints the message and traps. 0 (the default): they are
  /// compiled out, their conditions not evaluated. `stc --debug`, or
  /// SPARSETILE_DEBUG=1 for every JIT compile of the process.
  int debug = 0;
  /// Atomic adds of f32 whose result nobody reads, on sm_90: 1 (the
  /// default) issues `red.global.add.v4.f32` (or .v2) where AxisInfo proves
  /// a contiguous aligned run under one mask value; 0 one scalar `red` an
  /// element, as Triton does (bench/NOTES.md, "Layer norm backward at N 4096
  /// under ncu"). `stc --vector-atomics=0`; SPARSETILE_VECTOR_ATOMICS=0 for
  /// every JIT compile of the process.
  int vectorAtomics = 1;
  /// 1 (the default, as nvcc's --fmad and Triton's enable_fp_fusion): a
  /// float multiply whose product feeds an add may become one fma (a
  /// single rounding); 0 rounds each as written. `stc --fp-fusion=0`;
  /// SPARSETILE_FP_FUSION=0 for every JIT compile of the process.
  int fpFusion = 1;
  /// 1 (the default, as Triton answers libdevice): libdevice's f32
  /// functions flush subnormal inputs and results to zero (exp2 is one
  /// ex2.approx.ftz.f32); 0 keeps them, as nvcc's default. `stc --ftz=0`;
  /// SPARSETILE_FTZ=0 for every JIT compile of the process.
  int ftz = 1;

  /// Calls `f(name, &CodegenOptions::field)` for every field, in a fixed
  /// order. Fields are std::string or int.
  template <class F> static void forEachField(F &&f) {
    f("arch", &CodegenOptions::arch);
    f("ptxVersion", &CodegenOptions::ptxVersion);
    f("numWarps", &CodegenOptions::numWarps);
    f("numStages", &CodegenOptions::numStages);
    f("persistent", &CodegenOptions::persistent);
    f("warpSpecialize", &CodegenOptions::warpSpecialize);
    f("werrorPerf", &CodegenOptions::werrorPerf);
    f("debug", &CodegenOptions::debug);
    f("vectorAtomics", &CodegenOptions::vectorAtomics);
    f("fpFusion", &CodegenOptions::fpFusion);
    f("ftz", &CodegenOptions::ftz);
  }

  bool sameCodegen(const CodegenOptions &o) const {
    bool same = true;
    forEachField([&](const char *, auto field) {
      same = same && this->*field == o.*field;
    });
    return same;
  }
};

/// Options for one compilation. Everything here is part of the cache key.
struct CompileOptions : CodegenOptions {
  CompileOptions() { arch = "sm_90"; }

  /// Values for the kernel's `const` parameters, as source text ("128",
  /// "0.5", "true"). Missing ones take their defaults.
  std::map<std::string, std::string> constants;
  /// Integer parameters the caller promises are multiples of 16. The
  /// compiler uses this to prove 16-byte alignment of vector accesses; the
  /// runtime fills it in automatically from the actual arguments.
  std::vector<std::string> divisibleBy16;
  /// Integer parameters the caller promises are 1 (a unit stride): the
  /// compiler uses the constant 1 for them, so `offs * stride` is as
  /// contiguous as `offs`. The runtime fills it in from the arguments too.
  std::vector<std::string> equalToOne;
  /// The files the source imports (`import "common.tile";`, transitively),
  /// by resolved path (relative to the importing file's folder, normalized:
  /// readImports gives them). Files missing here are read from disk; the JIT
  /// passes the texts it hashed into the cache key, so that what compiles
  /// is what the key names.
  std::map<std::string, std::string> importedSources;
};

/// Element types the DSL knows. Pointer parameters carry one of these too.
/// The unsigned types, then the fp8 types, come last so that the older codes
/// (and the C API's st_dtype numbers) keep their values.
enum class DType {
  I1, I8, I16, I32, I64, F16, BF16, F32, F64, U8, U16, U32, U64,
  F8E4M3, // e4m3 "fn": no infinities, one NaN pattern, max 448
  F8E5M2  // e5m2: IEEE-like, max 57344
};

/// The last DType, for range checks of codes read from outside.
constexpr DType kLastDType = DType::F8E5M2;

/// f8e4m3 and f8e5m2: 1-byte floats that are loaded, stored and converted,
/// not computed with.
inline bool dtypeIsFP8(DType t) {
  return t == DType::F8E4M3 || t == DType::F8E5M2;
}

/// u8 ... u64. MLIR integers are signless: signedness is the front end's and
/// the runtime's knowledge, not the IR's.
inline bool dtypeIsUnsigned(DType t) {
  return t == DType::U8 || t == DType::U16 || t == DType::U32 ||
         t == DType::U64;
}

/// The integer types (signed or unsigned) other than i1.
inline bool dtypeIsInteger(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 ||
         t == DType::I64 || dtypeIsUnsigned(t);
}

/// The DSL spelling of a dtype ("f32", "bf16", "i1", ...). Inline so the
/// runtime and the front end share one table without linking the compiler.
inline const char *dtypeName(DType t) {
  switch (t) {
  case DType::I1:
    return "i1";
  case DType::I8:
    return "i8";
  case DType::I16:
    return "i16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::U8:
    return "u8";
  case DType::U16:
    return "u16";
  case DType::U32:
    return "u32";
  case DType::U64:
    return "u64";
  case DType::F8E4M3:
    return "f8e4m3";
  case DType::F8E5M2:
    return "f8e5m2";
  }
  return "?";
}

/// Size in bytes (i1 counts as 1).
inline int dtypeSize(DType t) {
  switch (t) {
  case DType::I1:
  case DType::I8:
  case DType::U8:
  case DType::F8E4M3:
  case DType::F8E5M2:
    return 1;
  case DType::I16:
  case DType::U16:
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I32:
  case DType::U32:
  case DType::F32:
    return 4;
  case DType::I64:
  case DType::U64:
  case DType::F64:
    return 8;
  }
  return 0;
}

/// One run-time parameter of a compiled kernel, in launch order. `const`
/// parameters are compiled in and do not appear here.
struct KernelParam {
  std::string name;
  bool isPointer = false;
  DType dtype = DType::I32; ///< Pointee type for pointers and descriptors.
  bool divisibleBy16 = false; ///< Compiled assuming value % 16 == 0.
  bool equalToOne = false;    ///< Compiled assuming value == 1.
  /// `desc<T>`: passed as a pointer to a 256-byte descriptor block that the
  /// runtime builds from a 2-D tensor argument (rt::Arg::tensor2d).
  bool isDescriptor = false;
  /// For descriptors read by TMA copies: the copy box [boxRows, boxCols]
  /// (columns innermost), swizzled at `boxSwizzle` bytes (128 or 64; 0
  /// copies it plainly, e.g. sparse metadata). 0 when the kernel does not
  /// use TMA on it (then only the plain fields are read).
  int boxRows = 0;
  int boxCols = 0;
  int boxSwizzle = 0;
  /// For descriptors written by a TMA store (store_block in a persistent
  /// kernel): TMA drops what falls past the tensor's width only in 16-byte
  /// units, so the runtime refuses a width that is not a multiple of 16
  /// bytes (it would write up to 7 elements past it).
  bool tmaStore = false;
};

/// A `const` parameter as declared in the source (for --list).
struct ConstParam {
  std::string name;
  DType dtype = DType::I32;
  bool isType = false;      ///< `const T: dtype`: its value is a dtype name.
  std::string defaultValue; ///< Empty when the parameter has no default.
};

/// A kernel's `@autotune(...)` declaration (Language.md), checked by the
/// front end, in the form the runtime builds an rt::AutotunedKernel from.
struct AutotuneDecl {
  /// The candidates, in source order. Each maps a setting to its value as
  /// decimal text: integer `const` parameters, and the options `num_warps`,
  /// `num_stages`, `persistent`, `warp_specialize`.
  std::vector<std::map<std::string, std::string>> configs;
  /// Integer run-time parameters whose values form the tuning key.
  std::vector<std::string> key;
  /// One to three grid dimensions, each an integer expression in prefix
  /// form: a decimal integer, a name (an integer run-time parameter or
  /// constant) or `(op a b)` with op one of + - * / % cdiv min max.
  std::vector<std::string> grid;
  /// Pointer parameters the kernel may store through (a conservative
  /// reading of its `store`s): tuning gives each a scratch copy.
  std::vector<std::string> outputs;
};

/// A kernel's declaration, as `stc --list` shows it.
struct KernelSignature {
  std::string name;
  std::vector<KernelParam> params;
  std::vector<ConstParam> constants;
  bool hasAutotune = false; ///< The kernel declares `@autotune(...)`.
  AutotuneDecl autotune;
  /// Empty for a kernel that parsed. Otherwise the syntax errors that stop
  /// it, in its own text or a fn it calls, as compile() reports them
  /// ("file:line:col: error: ...", the source line, a caret); the rest of
  /// the signature is then empty.
  std::string error;
};

/// A performance remark: the kernel compiled, but an op took a slower path
/// than it could have (Language.md, "Performance remarks").
struct Remark {
  /// "scalar-access", "mma-sync", "fp8-dot", "unpipelined-loop" or "spills".
  std::string kind;
  std::string message; ///< The reason, then "fix: ...".
  std::string file;    ///< Where the op is in the DSL source (line 0: none).
  int line = 0;
  int col = 0;
  /// As stc prints it: "file:line:col: remark: [kind] message", the source
  /// line and a caret.
  std::string text;
};

/// The product of the compiler, consumed by the runtime.
struct CompiledKernel {
  std::string name;       ///< The PTX entry name.
  std::string arch;       ///< "sm_90", ...
  std::string ptx;        ///< PTX text.
  std::vector<KernelParam> params;
  int numThreads = 0;     ///< Block size the kernel was compiled for.
  int sharedBytes = 0;    ///< Static shared memory it declares.
  /// Dynamic shared memory every launch must provide (kernels that need
  /// more than the 48 KB static limit, e.g. TMA rings).
  int dynamicSharedBytes = 0;
  /// `@persistent(1)`: the kernel takes three hidden parameters after
  /// `params`: the grid the launch asked for (X, Y: i32) and its tile queue
  /// (a pointer to two u32, zero before the launch; the kernel leaves them
  /// zero), and loops over the grid; the launcher runs about one program
  /// per SM (Persistent.cpp, TileQueue.cpp).
  bool persistent = false;
  /// `@cluster(C)`: the PTX requires clusters of C blocks along x
  /// (.reqnctapercluster), so every launch's grid.x must be a multiple of C.
  int clusterSize = 1;
  /// The compile's performance remarks, as CompileResult::remarks, plus
  /// the spills the JIT's assembler reported: kept with the kernel in the
  /// JIT's cache, so that JIT::inspect gives them on a cache hit too.
  std::vector<Remark> remarks;
};

/// What one program of a kernel asks of the GPU, known once the tiles are
/// distributed over threads (Stage::Mlir): before LLVM and ptxas, which take
/// most of a compile. The autotuner drops candidates that cannot fit.
struct ResourceEstimate {
  int numThreads = 0;
  int sharedBytes = 0;        ///< Static shared memory.
  int dynamicSharedBytes = 0; ///< Dynamic shared memory (TMA rings).
  /// A lower bound on the 32-bit registers one thread needs: the values the
  /// busiest loop carries (accumulators, above all), all live at its head.
  /// ptxas needs more; it can never need fewer without spilling.
  int carriedRegisters = 0;
};

/// What a compilation produced: either the requested stage's text (and, for
/// Stage::Ptx, the kernel) or located diagnostics.
struct CompileResult {
  bool ok = false;
  std::string text;        ///< The requested stage, printed.
  CompiledKernel kernel;   ///< Filled when the pipeline ran to PTX.
  /// Filled when the pipeline ran at least to Stage::Mlir.
  ResourceEstimate resources;
  std::string diagnostics; ///< "file:line:col: error: ..." with source and caret.
  /// The performance remarks, one per op and reason, in the order the
  /// passes gave them. With CodegenOptions::werrorPerf they are errors:
  /// `ok` is false and `diagnostics` holds them.
  std::vector<Remark> remarks;
};

/// Compiles `kernelName` from DSL `source` down to `emit`. `filename` is only
/// used in diagnostics. An empty `kernelName` selects the file's only kernel.
/// Never aborts the process: every failure comes back in `diagnostics`.
SPARSETILE_API CompileResult compile(const std::string &source, const std::string &filename,
                      const std::string &kernelName,
                      const CompileOptions &options, Stage emit = Stage::Ptx);

/// `--Werror=perf`: makes a successful result with remarks a failure whose
/// diagnostics are the remarks as errors. compile() applies it when
/// CodegenOptions::werrorPerf is set; callers that add remarks of their own
/// (ptxas's spill counts: stc, the JIT) apply it again.
SPARSETILE_API void failOnRemarks(CompileResult &result);

/// Reads ptxas's verbose log (`ptxas -v`, or an nvJitLink/driver info log
/// with -v) and, when it reports spills for `kernelName`, fills `out` with
/// a `spills` remark located at the kernel's declaration in `source`.
SPARSETILE_API bool spillRemark(const std::string &ptxasLog,
                                const std::string &source,
                                const std::string &filename,
                                const std::string &kernelName, Remark &out);

/// What ptxas's verbose log says `kernelName` uses: registers and spill
/// bytes (stores + loads). False when the log does not describe it.
struct PtxasUsage {
  long registers = 0;
  long spillBytes = 0;
};
SPARSETILE_API bool ptxasUsage(const std::string &ptxasLog,
                               const std::string &kernelName, PtxasUsage &out);

/// Assembles `result.kernel.ptx` with ptxas -v (ptxas on PATH, else in
/// /usr/local/cuda/bin) and appends the spill remark, if any. Does nothing
/// without a ptxas (stc --remarks).
SPARSETILE_API void addSpillRemarks(CompileResult &result,
                                    const std::string &source,
                                    const std::string &filename);

/// Reads every file `source` imports, transitively, into `texts` (resolved
/// path -> text; entries already present are kept). Returns false and fills
/// `diagnostics` on a syntax error, a missing file or an import cycle.
SPARSETILE_API bool readImports(const std::string &source,
                                const std::string &filename,
                                std::map<std::string, std::string> &texts,
                                std::string &diagnostics);

/// Lists the kernels declared in `source`, in source order. Parameters typed
/// by a `const T: dtype` parameter take T's value from `constants`, else T's
/// default. A kernel that a syntax error stops is listed with
/// KernelSignature::error set (and `diagnostics` holds every error).
/// Returns false and fills `diagnostics` when an error stops every kernel
/// (in an import, a file-level const, or text outside any kernel or fn).
SPARSETILE_API bool listKernels(const std::string &source, const std::string &filename,
                 std::vector<KernelSignature> &kernels,
                 std::string &diagnostics,
                 const std::map<std::string, std::string> &constants = {});

} // namespace sparsetile

#endif // SPARSETILE_COMPILER_H
