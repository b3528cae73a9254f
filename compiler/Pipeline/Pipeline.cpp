//===- Pipeline.cpp - DSL text to PTX, one function -----------------------===//
//
// `compile()` below is the whole compiler, stage by stage; each stage can be
// printed (`stc --emit=ast|tile|mlir|llvm|ptx`). To find where something
// happens, start here:
//
//   1. parse          Frontend/Parser.cpp       text -> ast::Module
//   2. MLIRGen        Frontend/MLIRGen.cpp      AST -> tile dialect  [tile]
//   3. block loads    Transforms/Persistent     @persistent: one program per
//                                               SM loops over the grid
//                     Transforms/PipelineTMA    desc_load K loops -> TMA ring
//                                               + wgmma (sm_90a)
//                     Transforms/ClusterMulticast @cluster(2): a shared
//                                               operand's copies multicast
//                     Transforms/ExpandDescLoad other desc_loads -> masked
//                                               plain loads
//                     Transforms/WarpSpecialize producer / consumer
//                                               warpgroups   [pipelined]
//   4. distribute     Conversion/TileToGPU      tiles -> per-thread scalars
//                                               in a gpu.func
//                     Conversion/PackByteStores a row of one word's bytes
//                                               stored as the word   [mlir]
//   5. lower          upstream: scf-to-cf, convert-gpu-to-nvvm
//   6. LLVM IR        Target/PTXEmitter.cpp     translate, libdevice, O3 [llvm]
//   7. PTX            Target/PTXEmitter.cpp     NVPTX backend        [ptx]
//
// Every failure becomes a located message in CompileResult::diagnostics;
// nothing here throws or aborts. Inputs are validated before LLVM sees them;
// an LLVM error diagnostic is collected (collectBackendErrors), and an LLVM
// fatal error, which would exit the process, is caught by
// runRecoveringFatalErrors (FatalErrors.cpp) and reported as an internal
// compiler error.
//
//===----------------------------------------------------------------------===//

#include "Pipeline/Pipeline.h"
#include "Conversion/Passes.h"
#include "Conversion/PerfRemarks.h"
#include "Dialect/Tile/TileDialect.h"
#include "Frontend/MLIRGen.h"
#include "Pipeline/FatalErrors.h"
#include "Frontend/Imports.h"
#include "Frontend/Parser.h"
#include "Frontend/Signature.h"
#include "Target/PTXEmitter.h"
#include "Transforms/Passes.h"
#include "sparsetile/Compiler.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <new>
#include <set>

using namespace mlir;

namespace sparsetile {

const char *version() { return SPARSETILE_VERSION; }

std::string toolchainVersion() { return backendVersion() + "; MLIR 22"; }

bool parseStage(const std::string &name, Stage &stage) {
  static const std::pair<const char *, Stage> stages[] = {
      {"ast", Stage::Ast},
      {"tile", Stage::Tile},
      {"pipelined", Stage::Pipelined},
      {"layouts", Stage::Layouts},
      {"mlir", Stage::Mlir},
      {"llvm", Stage::Llvm},
      {"ptx", Stage::Ptx}};
  for (auto &[n, s] : stages)
    if (name == n) {
      stage = s;
      return true;
    }
  return false;
}

void registerAll(DialectRegistry &registry) {
  registry.insert<tile::TileDialect, arith::ArithDialect, math::MathDialect,
                  scf::SCFDialect, func::FuncDialect, cf::ControlFlowDialect,
                  gpu::GPUDialect, LLVM::LLVMDialect, NVVM::NVVMDialect,
                  index::IndexDialect, ub::UBDialect>();
  // Without these the lowering passes succeed but leave ops behind.
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  func::registerInlinerExtension(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
}

void addTilePasses(OpPassManager &pm, const TargetSpec &target, int stages) {
  pm.addPass(createPersistent());
  pm.addPass(createInductionPointers());
  PipelineTMAOptions pipeOptions;
  pipeOptions.tma = target.arch == "sm_90a";
  // mbarrier's .shared::cta forms, which the ring's waits and arrivals use,
  // came with PTX ISA 7.8.
  pipeOptions.cpAsync = !pipeOptions.tma && target.ptxVersion >= 78;
  pipeOptions.sharedPerBlock = int(sharedMemoryPerBlock(target.arch));
  pipeOptions.stages = stages;
  pm.addPass(createPipelineTMA(pipeOptions));
  pm.addPass(createClusterMulticast());
  pm.addPass(createExpandDescLoad());
  pm.addPass(createWarpSpecialize());
  pm.addPass(createPingPong());
  pm.addPass(createCanonicalizer());
  pm.addPass(createCSEPass());
}

void addDistributionPasses(OpPassManager &pm, const TargetSpec &target,
                           bool vectorAtomics) {
  TileToGPUOptions options;
  options.sm90 = target.arch == "sm_90a";
  options.vectorAtomics = options.sm90 && vectorAtomics;
  options.sharedPerBlock = int(sharedMemoryPerBlock(target.arch));
  pm.addPass(createTileToGPU(options));
  pm.addPass(createCanonicalizer());
  pm.addPass(createCSEPass());
  pm.addPass(createPackByteStores());
}

namespace {
struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<std::string> arch{*this, "arch",
                           llvm::cl::desc("Target GPU, as stc --arch"),
                           llvm::cl::init("sm_90")};
  Option<int> numStages{*this, "num-stages",
                        llvm::cl::desc("Ring stages, as stc --num-stages"),
                        llvm::cl::init(0)};
};
} // namespace

void registerSparsetilePipeline() {
  // registerPassPipeline rather than PassPipelineRegistration, whose builder
  // cannot fail: a bad arch must be an error here too, as it is in stc.
  registerPassPipeline(
      "sparsetile-pipeline",
      "stc's tile-to-gpu stages: the tile passes, then distribution",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        PipelineOptions o;
        if (failed(o.parseFromString(text)))
          return failure();
        // The target is resolved as compile() does (sm_90 means sm_90a).
        TargetSpec target;
        std::string error;
        if (!resolveTarget(o.arch, 0, target, error))
          return errorHandler("sparsetile-pipeline: arch: " + error);
        if (o.numStages < 0 || o.numStages > 8)
          return errorHandler("sparsetile-pipeline: num-stages takes a ring "
                              "depth from 0 (automatic) to 8");
        addTilePasses(pm, target, o.numStages);
        pm.addPass(createAssignLayouts());
        addDistributionPasses(pm, target);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> optHandler) {
        optHandler(PipelineOptions());
      });
}

namespace {
/// Routes MLIR diagnostics into the located Diagnostics of the DSL file:
/// op locations are the DSL's file:line:col, so a verifier failure points
/// at the source line that produced the op.
/// Performance remarks (PerfRemarks.h) are collected into `remarks`, once
/// per location, kind and message (the warp-specialized copies of a kernel
/// repeat its ops).
class DiagnosticBridge {
public:
  DiagnosticBridge(MLIRContext &ctx, Diagnostics &diags,
                   std::vector<Remark> &remarks)
      : handler(&ctx, [&diags, &remarks](mlir::Diagnostic &d) {
          Loc loc;
          if (auto fl = dslLocation(d.getLocation())) {
            loc.line = fl.getLine();
            loc.col = fl.getColumn();
            loc.file = diags.fileId(fl.getFilename().str());
          }
          Remark r;
          if (d.getSeverity() == DiagnosticSeverity::Remark &&
              parsePerfRemark(d.str(), r.kind, r.message)) {
            r.file = diags.file(loc.file);
            r.line = loc.line;
            r.col = loc.col;
            r.text = diags.format(loc, "remark", d.str());
            bool seen = llvm::any_of(remarks, [&](const Remark &o) {
              return o.text == r.text;
            });
            if (!seen)
              remarks.push_back(std::move(r));
          }
          if (d.getSeverity() == DiagnosticSeverity::Error)
            diags.error(loc, d.str());
          return success();
        }) {}

private:
  ScopedDiagnosticHandler handler;
};

std::string print(Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  op->print(os);
  return s;
}
} // namespace

static const ast::Kernel *selectKernel(const ast::Module &module,
                                       const std::string &name,
                                       Diagnostics &diags) {
  if (name.empty()) {
    if (module.kernels.size() == 1)
      return &module.kernels.front();
    diags.error(module.kernels.empty()
                    ? "no kernel in file"
                    : "the file has several kernels; choose one with "
                      "--kernel");
    return nullptr;
  }
  for (const ast::Kernel &k : module.kernels)
    if (k.name == name)
      return &k;
  diags.error("no kernel named '" + name + "'");
  return nullptr;
}

/// Bits of general registers a per-thread value takes after distribution,
/// counted low so the sum stays a lower bound: i1 lives in predicate
/// registers (0), a scalar takes at least a 32-bit register, and 16-bit
/// vector elements pack two to a register.
static int64_t registerBits(Type t, bool packed = false) {
  if (auto v = dyn_cast<VectorType>(t))
    return v.getNumElements() * registerBits(v.getElementType(), true);
  if (auto s = dyn_cast<LLVM::LLVMStructType>(t)) {
    int64_t bits = 0;
    for (Type m : s.getBody())
      bits += registerBits(m);
    return bits;
  }
  if (auto a = dyn_cast<LLVM::LLVMArrayType>(t))
    return int64_t(a.getNumElements()) * registerBits(a.getElementType());
  if (t.isInteger(1))
    return 0;
  if (t.isIntOrFloat())
    return packed ? t.getIntOrFloatBitWidth()
                  : std::max<int64_t>(t.getIntOrFloatBitWidth(), 32);
  return 64; // index, pointers
}

/// ResourceEstimate::carriedRegisters: the most 32-bit registers the
/// iteration arguments of one loop take.
static int carriedRegisters(gpu::GPUFuncOp func) {
  int64_t most = 0;
  func.walk([&](scf::ForOp loop) {
    int64_t bits = 0;
    for (Value v : loop.getRegionIterArgs())
      bits += registerBits(v.getType());
    most = std::max(most, bits);
  });
  return int((most + 31) / 32);
}

/// compile() without the fatal-error net: every stage in order, reporting
/// to `diags`.
static CompileResult runStages(const std::string &source,
                               const std::string &filename,
                               const std::string &kernelName,
                               const CompileOptions &options, Stage emit,
                               Diagnostics &diags) {
  CompileResult result;
  auto fail = [&]() -> CompileResult {
    result.ok = false;
    result.diagnostics = diags.str();
    return result;
  };

  // 1. Parse. A syntax error stops only the kernels it touches: its own
  //    kernel, the callers of its fn, or all of them (imports, consts).
  ast::Module ast;
  {
    Diagnostics parseDiags(filename, source);
    if (!parseModule(source, parseDiags, ast)) {
      result.diagnostics = syntaxErrorsFor(ast, kernelName);
      if (!result.diagnostics.empty())
        return result;
    }
  }
  const ast::Kernel *kernel = selectKernel(ast, kernelName, diags);
  if (!kernel)
    return fail();
  if (emit == Stage::Ast) {
    result.ok = true;
    result.text = ast::printDecls(ast) + ast::print(*kernel);
    return result;
  }
  // Imported files: the caller's copies (the JIT hashed them) or the disk.
  std::map<std::string, std::string> imported = options.importedSources;
  if (!resolveImports(ast, filename, imported, diags))
    return fail();

  // The target is checked before LLVM sees it: LLVM aborts on bad ones.
  TargetSpec target;
  std::string error;
  if (!resolveTarget(options.arch, options.ptxVersion, target, error)) {
    diags.error(error);
    return fail();
  }
  target.fpFusion = options.fpFusion != 0;
  target.ftz = options.ftz != 0;

  DialectRegistry registry;
  registerAll(registry);
  MLIRContext ctx(registry, MLIRContext::Threading::DISABLED);
  ctx.loadAllAvailableDialects();
  DiagnosticBridge bridge(ctx, diags, result.remarks);

  // 2. MLIRGen: the tile dialect, verified and cleaned up.
  OwningOpRef<ModuleOp> module =
      emitTileIR(ctx, ast, *kernel, options, diags);
  if (!module || mlir::failed(verify(*module)))
    return fail();
  {
    PassManager pm(&ctx);
    pm.addPass(createCanonicalizer());
    pm.addPass(createCSEPass());
    if (mlir::failed(pm.run(*module)))
      return fail();
  }
  if (emit == Stage::Tile) {
    result.ok = true;
    result.text = print(*module);
    return result;
  }
  auto func = *module->getOps<func::FuncOp>().begin();
  auto persistent = func->getAttrOfType<IntegerAttr>(tile::kPersistentAttr);
  auto cluster = func->getAttrOfType<IntegerAttr>(tile::kClusterAttr);
  // Thread block clusters (and multicast copies) are sm_90's.
  if (cluster && cluster.getInt() > 1 && target.arch != "sm_90a") {
    diags.error("@cluster(" + std::to_string(cluster.getInt()) +
                ") needs sm_90 (thread block clusters), got " + target.arch);
    return fail();
  }

  // 3. Block loads: a software-pipelined TMA ring on sm_90a (with a
  //    producer warpgroup, in a persistent loop for @persistent kernels),
  //    plain loads elsewhere. The runtime encodes each descriptor's TMA box.
  {
    PassManager pm(&ctx);
    addTilePasses(pm, target, options.numStages);
    if (mlir::failed(pm.run(*module)))
      return fail();
  }
  if (emit == Stage::Pipelined) {
    result.ok = true;
    result.text = print(*module);
    return result;
  }
  // Descriptor arg -> TMA box: rows, columns, swizzle bytes (a swizzled
  // block is copied in panels of up to 64 16-bit columns, swizzled at
  // their row width; tile.ring_copy).
  std::map<unsigned, std::array<int, 3>> boxes;
  func.walk([&](tile::RingCopyOp op) {
    int cols = int(op.getLayout().panelCols(op.getCols()));
    if (auto arg = dyn_cast<BlockArgument>(op.getDesc()))
      boxes[arg.getArgNumber()] = {int(op.getRows()), cols,
                                   int(op.getLayout().getSwizzle())};
  });
  // A TMA store copies its block out in swizzled panels of 64 columns
  // (tile.desc_store). One descriptor has one box: it cannot also be read
  // by TMA copies of another shape.
  bool boxClash = false;
  std::set<unsigned> tmaStored;
  func.walk([&](tile::DescStoreOp op) {
    if (!op.getTma())
      return;
    unsigned arg = cast<BlockArgument>(op.getDesc()).getArgNumber();
    tmaStored.insert(arg);
    std::array<int, 3> box = {
        int(cast<RankedTensorType>(op.getValue().getType()).getDimSize(0)), 64,
        128};
    auto [it, added] = boxes.emplace(arg, box);
    if (!added && it->second != box) {
      op.emitError("a descriptor stored by TMA in [")
          << box[0] << ", 64] boxes is also read or stored in ["
          << it->second[0] << ", " << it->second[1]
          << "] boxes: give each its own parameter";
      boxClash = true;
    }
  });
  if (boxClash)
    return fail();

  // 4. Layouts: every tile's thread layout becomes part of its type, with
  //    explicit conversions between them.
  {
    PassManager pm(&ctx);
    pm.addPass(createAssignLayouts());
    if (mlir::failed(pm.run(*module)))
      return fail();
  }
  if (emit == Stage::Layouts) {
    result.ok = true;
    result.text = print(*module);
    return result;
  }

  // 5. Distribute tiles over threads, each held where its layout says.
  {
    PassManager pm(&ctx);
    addDistributionPasses(pm, target, options.vectorAtomics);
    if (mlir::failed(pm.run(*module)))
      return fail();
  }
  auto gpuModule = *module->getOps<gpu::GPUModuleOp>().begin();
  auto gpuFunc = *gpuModule.getOps<gpu::GPUFuncOp>().begin();
  auto launch = gpuFunc->getAttrOfType<tile::LaunchAttr>(tile::kLaunchAttr);
  int numThreads = int(launch.getThreads());
  int sharedBytes = int(launch.getShared());
  int dynamicSharedBytes = int(launch.getDynamicShared());
  // Hook for instructions newer than the default ISA (today: tile.sparse_dot's
  // mma.sp::ordered_metadata, PTX 8.5): the version is raised when the
  // caller left it to us; an explicit older one is an error.
  if (int minPtx = int(launch.getMinPtx())) {
    if (target.ptxVersion < minPtx) {
      if (options.ptxVersion) {
        diags.error("this kernel needs PTX ISA " + std::to_string(minPtx / 10) +
                    "." + std::to_string(minPtx % 10) +
                    " or newer (sparse_dot, wgmma.sp or fp8 conversions), got "
                    "--ptx-version " +
                    std::to_string(options.ptxVersion));
        return fail();
      }
      target.ptxVersion = minPtx;
    }
  }
  result.resources = {numThreads, sharedBytes, dynamicSharedBytes,
                      carriedRegisters(gpuFunc)};
  if (emit == Stage::Mlir) {
    result.ok = true;
    result.text = print(*module);
    return result;
  }
  if (faultInjected("verifier")) {
    // Ill-typed IR, as a buggy lowering would leave it: the verifier that
    // runs after the next pass must report it at the kernel's location.
    OpBuilder b(&gpuFunc.getBody().front().front());
    Location l = gpuFunc.getLoc();
    Value i32 = b.create<arith::ConstantIntOp>(l, 1, 32);
    Value i64 = b.create<arith::ConstantIntOp>(l, 1, 64);
    b.create<arith::AddIOp>(l, b.getI32Type(), i32, i64);
  }

  // 6. Lower to the LLVM and NVVM dialects.
  {
    PassManager pm(&ctx);
    OpPassManager &gpm = pm.nest<gpu::GPUModuleOp>();
    gpm.addPass(createSCFToControlFlowPass());
    ConvertGpuOpsToNVVMOpsOptions nvvmOptions;
    nvvmOptions.indexBitwidth = 64;
    gpm.addPass(createConvertGpuOpsToNVVMOps(nvvmOptions));
    gpm.addPass(createCanonicalizer());
    gpm.addPass(createCSEPass());
    gpm.addPass(createReconcileUnrealizedCastsPass());
    if (mlir::failed(pm.run(*module)))
      return fail();
  }

  // 7. LLVM IR, with libdevice, at O3. LLVM's error diagnostics (which
  //    would exit the process by default) are collected, not printed.
  llvm::LLVMContext llvmCtx;
  std::string backendErrors;
  collectBackendErrors(llvmCtx, backendErrors);
  std::unique_ptr<llvm::Module> llvmModule =
      emitLLVMIR(gpuModule, llvmCtx, target, error);
  if (!llvmModule || !backendErrors.empty()) {
    diags.error(llvmModule ? "LLVM: " + backendErrors : error);
    return fail();
  }
  if (emit == Stage::Llvm) {
    result.ok = true;
    llvm::raw_string_ostream os(result.text);
    llvmModule->print(os, nullptr);
    return result;
  }

  // 8. PTX.
  if (faultInjected("llvm-bad-alloc"))
    llvm::report_bad_alloc_error("injected fault");
  if (faultInjected("bad-alloc"))
    throw std::bad_alloc();
  if (faultInjected("llvm-error"))
    llvmCtx.emitError("injected fault (SPARSETILE_INJECT_FAULT=llvm-error)");
  if (faultInjected("llvm-fatal"))
    llvm::report_fatal_error(
        "injected fault (SPARSETILE_INJECT_FAULT=llvm-fatal)");
  std::string ptx;
  if (!emitPTX(*llvmModule, target, ptx, error) || !backendErrors.empty()) {
    diags.error(backendErrors.empty() ? error : "LLVM: " + backendErrors);
    return fail();
  }
  result.ok = true;
  result.text = ptx;
  CompiledKernel &k = result.kernel;
  k.name = kernel->name;
  k.arch = target.arch;
  k.ptx = std::move(ptx);
  k.params = signatureOf(*kernel, options.constants).params;
  for (KernelParam &p : k.params)
    p.divisibleBy16 =
        p.isPointer ||
        std::find(options.divisibleBy16.begin(), options.divisibleBy16.end(),
                  p.name) != options.divisibleBy16.end();
  for (KernelParam &p : k.params)
    p.equalToOne = !p.isPointer && llvm::is_contained(options.equalToOne, p.name);
  for (auto &[arg, box] : boxes) {
    k.params[arg].boxRows = box[0];
    k.params[arg].boxCols = box[1];
    k.params[arg].boxSwizzle = box[2];
  }
  for (unsigned arg : tmaStored)
    k.params[arg].tmaStore = true;
  k.numThreads = numThreads;
  k.persistent = persistent && persistent.getInt();
  if (cluster)
    k.clusterSize = int(cluster.getInt());
  k.sharedBytes = sharedBytes;
  k.dynamicSharedBytes = dynamicSharedBytes;
  return result;
}

/// compile() without the fatal-error net: every stage in order. A compile
/// that succeeds keeps its notes (static_print) in `result.diagnostics`.
static CompileResult compileStages(const std::string &source,
                                   const std::string &filename,
                                   const std::string &kernelName,
                                   const CompileOptions &options, Stage emit) {
  Diagnostics diags(filename, source);
  CompileResult result =
      runStages(source, filename, kernelName, options, emit, diags);
  if (result.ok)
    result.diagnostics = diags.str();
  return result;
}

/// What a compile that ran out of memory reports.
static CompileResult outOfMemory(const std::string &source,
                                 const std::string &filename) {
  Diagnostics diags(filename, source);
  diags.error("out of memory: compiling this kernel needs more memory than "
              "the process can allocate");
  CompileResult failed;
  failed.diagnostics = diags.str();
  return failed;
}

void failOnRemarks(CompileResult &result) {
  if (result.remarks.empty())
    return;
  result.ok = false;
  result.diagnostics.clear();
  for (const Remark &r : result.remarks) {
    // The remark's text with "error" for "remark", and the flag that made it.
    std::string text = r.text;
    size_t at = text.find(": remark: ");
    if (at != std::string::npos)
      text.replace(at, 10, ": error: ");
    size_t eol = text.find('\n');
    text.insert(eol == std::string::npos ? text.size() : eol,
                " [-Werror=perf]");
    result.diagnostics += text;
  }
}

CompileResult compile(const std::string &source, const std::string &filename,
                      const std::string &kernelName,
                      const CompileOptions &options, Stage emit) {
  CompileResult result;
  std::string reason;
  bool oom = false;
  if (runRecoveringFatalErrors(
          [&] {
            // std::bad_alloc from `new`, or from LLVM's allocators through
            // the handler FatalErrors.cpp installs; either used to end the
            // host process. The compile's contexts are freed on the way.
            try {
              result =
                  compileStages(source, filename, kernelName, options, emit);
            } catch (const std::bad_alloc &) {
              oom = true;
            }
          },
          reason)) {
    if (oom)
      return outOfMemory(source, filename);
    if (result.ok && options.werrorPerf)
      failOnRemarks(result);
    return result;
  }
  // The failed compile's own state was abandoned mid-stage (and leaked);
  // only this message survives it.
  Diagnostics diags(filename, source);
  diags.error("internal compiler error: LLVM fatal error: " + reason +
              " (please report this kernel)");
  CompileResult failed;
  failed.diagnostics = diags.str();
  return failed;
}

bool readImports(const std::string &source, const std::string &filename,
                 std::map<std::string, std::string> &texts,
                 std::string &diagnostics) {
  try { // The API boundary: nothing may escape into the host (compile()).
    Diagnostics diags(filename, source);
    ast::Module ast;
    // The imports that parsed are read even when an item did not: they
    // serve the file's good kernels.
    bool parsed = parseModule(source, diags, ast);
    if (!resolveImports(ast, filename, texts, diags) || !parsed) {
      diagnostics = diags.str();
      return false;
    }
    return true;
  } catch (const std::bad_alloc &) {
    diagnostics = outOfMemory(source, filename).diagnostics;
    return false;
  }
}

bool listKernels(const std::string &source, const std::string &filename,
                 std::vector<KernelSignature> &kernels,
                 std::string &diagnostics,
                 const std::map<std::string, std::string> &constants) {
  try { // The API boundary, as readImports.
    Diagnostics diags(filename, source);
    ast::Module ast;
    if (!parseModule(source, diags, ast)) {
      diagnostics = diags.str();
      // An error outside any kernel or fn stops the whole file.
      for (const ast::BadItem &b : ast.badItems)
        if (b.kind == ast::BadItem::FileLevel)
          return false;
    }
    // Good and bad kernels, in source order.
    std::vector<std::pair<Loc, KernelSignature>> found;
    for (const ast::Kernel &k : ast.kernels) {
      KernelSignature sig = signatureOf(k, constants);
      sig.error = syntaxErrorsFor(ast, k.name);
      found.emplace_back(k.loc, std::move(sig));
    }
    for (const ast::BadItem &b : ast.badItems) {
      if (b.kind != ast::BadItem::Kernel ||
          llvm::any_of(found, [&](auto &f) { return f.second.name == b.name; }))
        continue;
      KernelSignature sig;
      sig.name = b.name;
      sig.error = syntaxErrorsFor(ast, b.name);
      found.emplace_back(b.loc, std::move(sig));
    }
    llvm::stable_sort(found, [](auto &a, auto &b) {
      return std::make_pair(a.first.line, a.first.col) <
             std::make_pair(b.first.line, b.first.col);
    });
    for (auto &f : found)
      kernels.push_back(std::move(f.second));
    return true;
  } catch (const std::bad_alloc &) {
    diagnostics = outOfMemory(source, filename).diagnostics;
    return false;
  }
}

} // namespace sparsetile
