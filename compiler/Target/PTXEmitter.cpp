//===- PTXEmitter.cpp - LLVM IR and PTX from the lowered module -----------===//
//
// Implements the LLVM half of the pipeline:
//  1. translate the gpu.module (LLVM + NVVM dialects) to an llvm::Module;
//  2. link libdevice lazily, only the __nv_* functions the kernel calls, and
//     internalize them so O3 can inline and delete them;
//  3. run LLVM's O3 pipeline with the NVPTX target's own passes (NVVMReflect
//     resolves libdevice's __nvvm_reflect queries);
//  4. print PTX with the NVPTX AsmPrinter.
//
//===----------------------------------------------------------------------===//

#include "Target/PTXEmitter.h"

#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IRReader/IRReader.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <sys/stat.h>

using namespace sparsetile;

static const char *kTriple = "nvptx64-nvidia-cuda";

namespace {
/// A supported GPU and the oldest PTX ISA that can target it.
struct ArchInfo {
  const char *name;
  int minPtx;
};
} // namespace

// sm_80 is the oldest target with the tensor-core instructions the kernels
// need; sm_90 is the main target. PTX ISA 8.0 (CUDA 12.0) is the default:
// any driver from CUDA 12 on loads it. "sm_90" is compiled as sm_90a: TMA
// and wgmma exist only in the arch-specific target, and the only sm_90
// parts (H100, H200) run sm_90a code; the runtime JIT-compiles for the GPU
// it runs on, so nothing needs sm_90's forward compatibility.
static const ArchInfo kArchs[] = {{"sm_80", 70}, {"sm_86", 71},
                                  {"sm_87", 74}, {"sm_89", 78},
                                  {"sm_90", 80}, {"sm_90a", 80}};
static const int kDefaultPtx = 80;
static const int kMaxPtx = 88; // The newest ISA both LLVM 22 and ptxas 13 accept.

static bool validPtx(int v) {
  return (v >= 70 && v <= 78) || (v >= 80 && v <= 88);
}

bool sparsetile::resolveTarget(const std::string &arch, int ptxVersion,
                               TargetSpec &spec, std::string &error) {
  const ArchInfo *info = nullptr;
  for (const ArchInfo &a : kArchs)
    if (arch == a.name)
      info = &a;
  if (!info) {
    error = "unsupported GPU architecture '" + arch +
            "'; supported: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a";
    return false;
  }
  int ptx = ptxVersion ? ptxVersion : std::max(kDefaultPtx, info->minPtx);
  if (!validPtx(ptx) || ptx > kMaxPtx) {
    error = "unsupported PTX ISA version " + std::to_string(ptx / 10) + "." +
            std::to_string(ptx % 10) + "; use 7.0-7.8 or 8.0-8.8";
    return false;
  }
  if (ptx < info->minPtx) {
    error = arch + " needs PTX ISA " + std::to_string(info->minPtx / 10) + "." +
            std::to_string(info->minPtx % 10) + " or newer, got " +
            std::to_string(ptx / 10) + "." + std::to_string(ptx % 10);
    return false;
  }
  spec.arch = arch == "sm_90" ? "sm_90a" : arch;
  spec.ptxVersion = ptx;
  return true;
}

static void initNVPTX() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

static std::unique_ptr<llvm::TargetMachine>
makeTargetMachine(const TargetSpec &target, std::string &error) {
  initNVPTX();
  llvm::Triple triple(kTriple);
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t)
    return nullptr;
  std::string features = "+ptx" + std::to_string(target.ptxVersion);
  llvm::TargetOptions opts;
  // NVPTX fuses fmul + fadd into fma only under Fast (nvcc's --fmad=true and
  // Triton's enable_fp_fusion, both on by default); Standard would fuse
  // only llvm.fmuladd, which nothing here emits.
  opts.AllowFPOpFusion =
      target.fpFusion ? llvm::FPOpFusion::Fast : llvm::FPOpFusion::Standard;
  return std::unique_ptr<llvm::TargetMachine>(t->createTargetMachine(
      triple, target.arch, features, opts, std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}

/// libdevice.10.bc beside the shared library holding this code, or "": a
/// Python wheel bundles it there (python/build_wheel.py), for machines
/// without the CUDA Toolkit.
static std::string libdeviceBesideLibrary() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&libdeviceBesideLibrary), &info) ||
      !info.dli_fname)
    return "";
  std::string path = info.dli_fname;
  size_t slash = path.rfind('/');
  path =
      (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) +
      "/libdevice.10.bc";
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? path : "";
}

/// libdevice's location: $SPARSETILE_LIBDEVICE, else one beside the library
/// (a wheel's), else the toolkit sparsetile was built against, else
/// $CUDA_HOME.
static std::string libdevicePath() {
  struct stat st;
  if (const char *env = std::getenv("SPARSETILE_LIBDEVICE"))
    return env;
  std::string beside = libdeviceBesideLibrary();
  if (!beside.empty())
    return beside;
  if (stat(SPARSETILE_LIBDEVICE, &st) == 0)
    return SPARSETILE_LIBDEVICE;
  if (const char *home = std::getenv("CUDA_HOME"))
    return std::string(home) + "/nvvm/libdevice/libdevice.10.bc";
  return SPARSETILE_LIBDEVICE;
}

static bool linkLibdevice(llvm::Module &module, std::string &error) {
  bool needed = false;
  for (llvm::Function &f : module)
    if (f.isDeclaration() && f.getName().starts_with("__nv_"))
      needed = true;
  if (!needed)
    return true;
  std::string path = libdevicePath();
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    error = "cannot read libdevice at '" + path +
            "' (set SPARSETILE_LIBDEVICE): " + buffer.getError().message();
    return false;
  }
  // Lazy loading materializes only the functions the kernel calls.
  auto lib =
      llvm::getOwningLazyBitcodeModule(std::move(*buffer), module.getContext());
  if (!lib) {
    error = "cannot parse libdevice at '" + path +
            "': " + llvm::toString(lib.takeError());
    return false;
  }
  (*lib)->setTargetTriple(module.getTargetTriple());
  (*lib)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*lib),
                                llvm::Linker::Flags::LinkOnlyNeeded)) {
    error = "linking libdevice failed";
    return false;
  }
  return true;
}

void sparsetile::collectBackendErrors(llvm::LLVMContext &context,
                                     std::string &errors) {
  context.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo *info, void *sink) {
        if (info->getSeverity() != llvm::DS_Error)
          return; // Warnings and remarks are not the user's concern here.
        auto &out = *static_cast<std::string *>(sink);
        if (!out.empty())
          out += "; ";
        llvm::raw_string_ostream os(out);
        llvm::DiagnosticPrinterRawOStream printer(os);
        info->print(printer);
      },
      &errors);
}

// A float abs is abs.f32 (a sign-bit clear that ptxas folds into the
// user), as Triton's fabs lowers, not libdevice's fabsf, which
// convert-gpu-to-nvvm calls: under the FTZ answer that is abs.ftz.f32, an
// instruction of its own, and the 2:4 masks ran 2-4% slower with it
// (bench/NOTES.md, "libdevice's flush-to-zero forms and fused
// multiply-adds"). llvm.nvvm.fabs rather than llvm.fabs: O3 would move the
// latter across a bf16 widening into an abs.bf16, again an instruction of
// its own. Runs before libdevice is linked.
static void absAsTriton(llvm::Module &module) {
  for (const char *name : {"__nv_fabsf", "__nv_fabs"}) {
    llvm::Function *f = module.getFunction(name);
    if (!f)
      continue;
    for (llvm::User *u : llvm::make_early_inc_range(f->users())) {
      auto *call = llvm::dyn_cast<llvm::CallInst>(u);
      if (!call || call->getCalledFunction() != f)
        continue;
      llvm::IRBuilder<> b(call);
      call->replaceAllUsesWith(b.CreateUnaryIntrinsic(
          llvm::Intrinsic::nvvm_fabs, call->getArgOperand(0)));
      call->eraseFromParent();
    }
    if (f->use_empty())
      f->eraseFromParent();
  }
}

// The DSL's f32 `/` is Triton's: PTX div.full.f32 (max 2 ulp, no
// subroutine), where CUDA's default div.rn.f32 costs a slow-path call and
// about ten instructions more a quotient. The front end marks such divisions
// `afn` (arith fastmath), `div_rn` leaves them unmarked; NVPTX would select
// div.approx.f32 for `afn` (wrong for divisors beyond 2^126), so each becomes
// llvm.nvvm.div.full here, after O3 has folded the exact ones (x / 2.0 is
// x * 0.5). Vector quotients (O3's SLP) are split per element.
static void divideAsTriton(llvm::Module &module) {
  llvm::SmallVector<llvm::BinaryOperator *> divisions;
  for (llvm::Function &f : module)
    for (llvm::Instruction &i : llvm::instructions(f))
      if (auto *d = llvm::dyn_cast<llvm::BinaryOperator>(&i);
          d && d->getOpcode() == llvm::Instruction::FDiv &&
          d->hasApproxFunc() && d->getType()->getScalarType()->isFloatTy())
        divisions.push_back(d);
  for (llvm::BinaryOperator *d : divisions) {
    llvm::IRBuilder<> b(d);
    auto full = [&](llvm::Value *x, llvm::Value *y) {
      return b.CreateIntrinsic(llvm::Intrinsic::nvvm_div_full, {}, {x, y});
    };
    llvm::Value *q;
    if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(d->getType())) {
      q = llvm::PoisonValue::get(vt);
      for (unsigned e = 0; e < vt->getNumElements(); ++e)
        q = b.CreateInsertElement(
            q,
            full(b.CreateExtractElement(d->getOperand(0), e),
                 b.CreateExtractElement(d->getOperand(1), e)),
            e);
    } else {
      q = full(d->getOperand(0), d->getOperand(1));
    }
    d->replaceAllUsesWith(q);
    d->eraseFromParent();
  }
}

std::unique_ptr<llvm::Module>
sparsetile::emitLLVMIR(mlir::Operation *gpuModule, llvm::LLVMContext &context,
                       const TargetSpec &target, std::string &error) {
  std::unique_ptr<llvm::Module> module =
      mlir::translateModuleToLLVMIR(gpuModule, context, "sparsetile");
  if (!module) {
    error = "translation to LLVM IR failed";
    return nullptr;
  }
  auto tm = makeTargetMachine(target, error);
  if (!tm)
    return nullptr;
  module->setTargetTriple(llvm::Triple(kTriple));
  module->setDataLayout(tm->createDataLayout());
  // libdevice asks __nvvm_reflect("__CUDA_FTZ") and ("__CUDA_PREC_SQRT").
  // FTZ (CodegenOptions::ftz, on by default) as Triton answers it
  // (set_nvvm_reflect_ftz): libdevice's f32 functions take their
  // flush-to-zero forms, so exp2f is the one ex2.approx.ftz.f32, where the
  // form that keeps subnormal results costs a compare and two multiplies
  // around it (3 of attention's 14 instructions an element of S at D 64;
  // bench/NOTES.md, "Attention at D 64 under ncu"). Only subnormal inputs
  // and results differ. sqrt stays correctly rounded, as nvcc's default.
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz",
                        uint32_t(target.ftz ? 1 : 0));
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-prec-sqrt",
                        uint32_t(1));
  absAsTriton(*module);
  if (!linkLibdevice(*module, error))
    return nullptr;
  // Only kernels stay visible; libdevice helpers become internal so they
  // are inlined and dropped.
  for (llvm::Function &f : *module)
    if (!f.isDeclaration() &&
        f.getCallingConv() != llvm::CallingConv::PTX_Kernel)
      f.setLinkage(llvm::GlobalValue::InternalLinkage);

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // A file system of this compile's own instead of the default argument,
  // LLVM's process-wide one (vfs::getRealFileSystem()): O3 reads no files,
  // and that shared object's reference count, taken in the uninstrumented
  // LLVM archive and dropped here, was the one report of the 16-thread test
  // under ThreadSanitizer (a false one: the count is atomic). Owning it per
  // compile leaves nothing shared between compiling threads.
  llvm::PassBuilder pb(
      tm.get(), llvm::PipelineTuningOptions(), std::nullopt, nullptr,
      llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(
          llvm::vfs::createPhysicalFileSystem().release()));
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(*module, mam);
  divideAsTriton(*module);
  return module;
}

bool sparsetile::emitPTX(llvm::Module &module, const TargetSpec &target,
                         std::string &ptx, std::string &error) {
  auto tm = makeTargetMachine(target, error);
  if (!tm)
    return false;
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr,
                              llvm::CodeGenFileType::AssemblyFile)) {
    error = "the NVPTX backend cannot emit assembly";
    return false;
  }
  pm.run(module);
  ptx.assign(buffer.begin(), buffer.end());
  return true;
}

std::string sparsetile::backendVersion() {
  std::string v = "LLVM " LLVM_VERSION_STRING;
  struct stat st;
  std::string path = libdevicePath();
  if (stat(path.c_str(), &st) == 0)
    v += "; libdevice " + std::to_string(st.st_size);
  return v;
}
