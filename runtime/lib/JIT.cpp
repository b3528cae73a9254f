//===- JIT.cpp - Compile tile kernels at run time, cached -----------------===//
//
// The thin layer that joins the compiler (through CompilerHooks), nvJitLink,
// the KernelCache and Kernel. It is the only part of the runtime that needs
// the sparsetile_compiler library; everything below it builds and is tested
// without the compiler.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/JIT.h"
#include "sparsetile/runtime/Autotune.h"
#include "sparsetile/runtime/Hash.h"
#include "sparsetile/runtime/JitLink.h"
#include "sparsetile/runtime/Log.h"
#include "sparsetile/runtime/NVRTC.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

using namespace sparsetile;
using namespace sparsetile::rt;

static void raiseOccupancy(CacheEntry &e, std::string &log);
static std::optional<long> registersHoldOneBlock(const CompiledKernel &k,
                                                 const std::string &log);

//===----------------------------------------------------------------------===//
// KernelSource, hooks
//===----------------------------------------------------------------------===//

KernelSource KernelSource::fromText(std::string text, std::string filename) {
  return fromText(std::move(text), std::move(filename), {});
}

KernelSource KernelSource::fromText(std::string text, std::string filename,
                                    std::map<std::string, std::string> imports) {
  KernelSource s;
  s.text_ = std::move(text);
  s.filename_ = std::move(filename);
  s.imports_ = std::move(imports);
  // A missing import or syntax error is left for the compile to report,
  // with its location; the digest then covers what could be read.
  std::string diagnostics;
  sparsetile::readImports(s.text_, s.filename_, s.imports_, diagnostics);
  std::string all = s.text_;
  for (const auto &[path, text] : s.imports_) {
    all += '\0' + std::to_string(path.size()) + ':' + path;
    all += '\0' + std::to_string(text.size()) + ':' + text;
  }
  s.digest_ = Sha256::hash(all);
  return s;
}

KernelSource KernelSource::fromFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot read kernel source '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return fromText(ss.str(), path);
}

CompilerHooks CompilerHooks::sparsetileCompiler() {
  CompilerHooks h;
  h.compile = [](const std::string &source, const std::string &filename,
                 const std::string &kernelName, const CompileOptions &options) {
    return sparsetile::compile(source, filename, kernelName, options,
                               Stage::Ptx);
  };
  h.estimate = [](const std::string &source, const std::string &filename,
                  const std::string &kernelName, const CompileOptions &options) {
    return sparsetile::compile(source, filename, kernelName, options,
                               Stage::Mlir);
  };
  h.listKernels = [](const std::string &source, const std::string &filename,
                     std::vector<KernelSignature> &kernels,
                     std::string &diagnostics, const Constants &constants) {
    return sparsetile::listKernels(source, filename, kernels, diagnostics,
                                   constants);
  };
  h.compilerVersion = sparsetile::version();
  h.toolchainVersion = sparsetile::toolchainVersion();
  return h;
}

//===----------------------------------------------------------------------===//
// JIT
//===----------------------------------------------------------------------===//

/// One entry of the handle table: the full identity of a `get` call (so a
/// hash collision in the table cannot return the wrong kernel) and its
/// kernel.
struct JIT::Handle {
  Digest source;
  std::string filename;
  std::string name;
  Constants constants;
  JITOptions options;
  KernelSignature signature;
  std::unique_ptr<Kernel> kernel;
  /// Made at the first getAutotuned, for kernels that declare @autotune.
  std::unique_ptr<AutotunedKernel> autotuned;

  bool matches(const KernelSource &s, const std::string &n, const Constants &c,
               const JITOptions &o) const {
    return source == s.digest() && name == n && constants == c &&
           options.sameCodegen(o) && options.specialize == o.specialize &&
           filename == s.filename();
  }
};

static uint64_t hashValue(const std::string &s) {
  return std::hash<std::string>()(s);
}
static uint64_t hashValue(int v) { return uint64_t(uint32_t(v)); }

static uint64_t handleHash(const KernelSource &s, const std::string &name,
                           const Constants &c, const JITOptions &o) {
  uint64_t h;
  std::memcpy(&h, s.digest().data(), sizeof(h));
  auto mix = [&h](uint64_t v) { hashCombine(h, v); };
  std::hash<std::string> sh;
  mix(sh(name));
  for (const auto &kv : c) {
    mix(sh(kv.first));
    mix(sh(kv.second));
  }
  CodegenOptions::forEachField(
      [&](const char *, auto field) { mix(hashValue(o.*field)); });
  mix(o.specialize);
  return h;
}

JIT::JIT(JITConfig config) : config_(std::move(config)), cache_(config_.cache) {
  CompilerHooks &h = config_.hooks;
  if (!h.compile || !h.listKernels || !h.estimate ||
      h.compilerVersion.empty() ||
      h.toolchainVersion.empty()) {
    CompilerHooks real = CompilerHooks::sparsetileCompiler();
    if (!h.compile)
      h.compile = real.compile;
    if (!h.listKernels)
      h.listKernels = real.listKernels;
    if (!h.estimate)
      h.estimate = real.estimate;
    if (h.compilerVersion.empty())
      h.compilerVersion = real.compilerVersion;
    if (h.toolchainVersion.empty())
      h.toolchainVersion = real.toolchainVersion;
  }
}

JIT::~JIT() = default;

JIT &JIT::global() {
  static JIT jit;
  return jit;
}

/// SPARSETILE_ASSEMBLER: "driver", "occupancy", "nvjitlink", or empty
/// (nvJitLink, the driver where nvJitLink's registers hold a kernel to one
/// block an SM).
static std::string assemblerFromEnvironment() {
  const char *v = std::getenv("SPARSETILE_ASSEMBLER");
  return v ? v : "";
}

bool JITConfig::wholeProgramForOneBlockFromEnvironment() {
  std::string a = assemblerFromEnvironment();
  return a != "nvjitlink" && a != "occupancy";
}

bool JITConfig::buildCubinFromEnvironment() {
  return assemblerFromEnvironment() != "driver";
}

bool JITConfig::raiseOccupancyFromEnvironment() {
  return assemblerFromEnvironment() == "occupancy";
}

std::string JIT::resolveArch(const std::string &arch) const {
  if (!arch.empty())
    return arch;
  std::string why;
  if (!gpuAvailable(&why))
    throw CudaError("no target arch given and no GPU to take it from (" + why +
                "); set JITOptions::arch");
  return Device::get().arch();
}

std::string JIT::cudaVersion() const {
  std::call_once(cudaVersionOnce_, [this] {
    cudaVersion_ =
        !config_.buildCubin
            ? std::string("ptx-only")
            : "nvJitLink " + jitLinkVersionString() +
                  (config_.raiseOccupancy ? " occupancy" : "") +
                  (config_.wholeProgramForOneBlock ? " one-block" : "");
  });
  return cudaVersion_;
}

void sparsetile::rt::applyEnvironmentOptions(CodegenOptions &options) {
  // Each switch sets its field to the value named, and only that value: the
  // default stays for anything else (unset, "", "yes").
  struct Switch {
    const char *name;
    const char *value;
    int CodegenOptions::*field;
  };
  static const Switch switches[] = {
      {"SPARSETILE_WERROR_PERF", "1", &CodegenOptions::werrorPerf},
      {"SPARSETILE_DEBUG", "1", &CodegenOptions::debug}, // TRITON_DEBUG.
      {"SPARSETILE_VECTOR_ATOMICS", "0", &CodegenOptions::vectorAtomics},
      {"SPARSETILE_FP_FUSION", "0", &CodegenOptions::fpFusion},
      {"SPARSETILE_FTZ", "0", &CodegenOptions::ftz}};
  for (const Switch &s : switches)
    if (const char *v = std::getenv(s.name); v && std::string(v) == s.value)
      options.*s.field = s.value[0] - '0';
}

static CompileError compileFailure(const KernelSource &source,
                                   const std::string &kernelName,
                                   const std::string &arch,
                                   const std::string &diagnostics) {
  return CompileError("compiling kernel '" + kernelName + "' from " +
                      source.filename() + " for " + arch + " failed:\n" +
                      diagnostics);
}

Artifacts JIT::inspect(const KernelSource &source,
                       const std::string &kernelName,
                       const Constants &constants, const JITOptions &options,
                       const std::vector<std::string> &divisibleBy16,
                       const std::vector<std::string> &equalToOne) {
  CompileOptions co;
  static_cast<CodegenOptions &>(co) = options;
  co.arch = resolveArch(options.arch);
  co.constants = constants;
  co.divisibleBy16 = divisibleBy16;
  co.equalToOne = equalToOne;
  // The process-wide switches, before the key is made: they are part of it.
  applyEnvironmentOptions(co);
  co.importedSources = source.imports();
  KernelKeyInputs in;
  in.source = source.text();
  in.kernelName = kernelName;
  in.options = co;
  in.targetArch = co.arch;
  in.compilerVersion = config_.hooks.compilerVersion;
  in.toolchainVersion = config_.hooks.toolchainVersion;
  in.cudaVersion = cudaVersion();
  CacheKey key = makeKernelKey(in);
  bool built = false;
  std::string assembly; // How the build assembled it, when not nvJitLink.
  uint64_t diskHits = logEnabled(LogLevel::Debug) ? cache_.stats().diskHits : 0;
  auto started = std::chrono::steady_clock::now();
  auto entry = cache_.getOrBuild(key, [&] {
    built = true;
    CompileResult r =
        config_.hooks.compile(source.text(), source.filename(), kernelName, co);
    if (!r.ok)
      throw compileFailure(source, kernelName, co.arch, r.diagnostics);
    CacheEntry e;
    e.kernel = std::move(r.kernel);
    e.kernel.remarks = r.remarks;
    if (e.kernel.arch.empty())
      e.kernel.arch = co.arch;
    if (config_.buildCubin && !needsWholeProgram(e.kernel.ptx)) {
      // -verbose: ptxas's spill counts, for the `spills` remark.
      std::string log;
      e.cubin = linkPtxToCubin(e.kernel.ptx, e.kernel.arch, {"-verbose"},
                               &log); // sm_90 -> sm_90a
      if (config_.raiseOccupancy)
        raiseOccupancy(e, log);
      Remark spills;
      if (spillRemark(log, source.text(), source.filename(), e.kernel.name,
                      spills))
        e.kernel.remarks.push_back(std::move(spills));
      if (config_.wholeProgramForOneBlock)
        if (auto registers = registersHoldOneBlock(e.kernel, log)) {
          e.cubin.clear(); // The driver assembles the whole program at load.
          assembly =
              "; left to the driver's whole-program assembly (nvJitLink: " +
              std::to_string(*registers) + " registers, one block an SM)";
        }
    }
    if (co.werrorPerf && !e.kernel.remarks.empty()) {
      CompileResult strict;
      strict.ok = true;
      strict.remarks = e.kernel.remarks;
      failOnRemarks(strict);
      throw compileFailure(source, kernelName, co.arch, strict.diagnostics);
    }
    return e;
  });
  if (built ? logEnabled(LogLevel::Info) : logEnabled(LogLevel::Debug)) {
    std::string what = entry->kernel.name + " of " + source.filename() +
                       " for " + co.arch;
    if (!divisibleBy16.empty() || !equalToOne.empty()) {
      what += " (";
      for (const std::string &n : divisibleBy16)
        what += n + "%16 ";
      for (const std::string &n : equalToOne)
        what += n + "==1 ";
      what.back() = ')';
    }
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - started)
                    .count();
    char took[32];
    std::snprintf(took, sizeof(took), "%.1f ms", ms);
    if (built)
      logMessage(LogLevel::Info, "compiled " + what + " in " + took + assembly);
    else
      logMessage(LogLevel::Debug,
                 std::string("cache hit (") +
                     (cache_.stats().diskHits > diskHits ? "disk" : "memory") +
                     ") " + what);
  }
  return Artifacts{entry->kernel, entry->cubin, key};
}

ResourceEstimate JIT::estimate(const KernelSource &source,
                              const std::string &kernelName,
                              const Constants &constants,
                              const JITOptions &options) {
  CompileOptions co;
  static_cast<CodegenOptions &>(co) = options;
  co.arch = resolveArch(options.arch);
  co.constants = constants;
  CompileResult r =
      config_.hooks.estimate(source.text(), source.filename(), kernelName, co);
  if (!r.ok)
    throw compileFailure(source, kernelName, co.arch, r.diagnostics);
  return r.resources;
}

/// nvJitLink compiles PTX as relocatable code, and ptxas drops setmaxnreg
/// there (C7504): a warp-specialized kernel would give every warp the same
/// registers. Such PTX is left to the driver, whose JIT compiles it as a
/// whole program and keeps the register split (measured on the H100: 168
/// registers at entry against 154 through nvJitLink; bench/NOTES.md). The
/// driver caches what it compiles itself.
bool sparsetile::rt::needsWholeProgram(const std::string &ptx) {
  return ptx.find("setmaxnreg") != std::string::npos;
}

/// nvJitLink assembles PTX as relocatable code, where ptxas spends
/// registers without weighing occupancy: the parity layer norm at BLOCK
/// 16384 gets 142 (one block of 256 threads an SM) where the whole program
/// gets 125 (two), and `.minnctapersm 2` gets 124 with no spills
/// (bench/NOTES.md, "Relocatable PTX costs registers"). Where the registers
/// cost a block that the threads and shared memory would allow, `e` is
/// assembled again asking for it, and kept so if ptxas did not spill.
/// Blocks of `k` an SM holds with `registers` a thread (allocated in units
/// of 8).
static int64_t blocksByRegisters(const CompiledKernel &k, long registers) {
  int64_t perBlock = (registers + 7) / 8 * 8 * k.numThreads;
  return perBlock ? 65536 / perBlock : 0;
}

/// Blocks of `k` an SM holds by its threads and shared memory alone.
static int64_t blocksByThreadsAndSharedMemory(const CompiledKernel &k) {
  // sm_80 offers 164 KB an SM; sm_90, 228.
  int64_t smemPerSM =
      k.arch.rfind("sm_90", 0) == 0 ? kSharedMemoryPerSM : 164 * 1024;
  int64_t smem = int64_t(k.sharedBytes) + k.dynamicSharedBytes;
  return std::min<int64_t>(
      {2048 / k.numThreads, 32,
       smem ? smemPerSM / (smem + kSharedMemoryReservedPerBlock) : 32});
}

/// nvJitLink's registers (from its report `log`) when they leave an SM one
/// block of `k` where its threads and shared memory would allow two or more:
/// the one case where a kernel has no other block to run while one waits. The
/// driver's whole-program assembly, Triton's way, weighs occupancy there:
/// the parity layer norm at BLOCK 16384 gets 125 registers (two blocks)
/// against nvJitLink's 142 (one) and runs 1.6x as fast. Elsewhere
/// nvJitLink's cubin stays (the whole program lost up to 15% on a 2:4
/// helper at eight blocks; bench/NOTES.md, "Relocatable PTX costs
/// registers" and "One block an SM: the whole program").
static std::optional<long> registersHoldOneBlock(const CompiledKernel &k,
                                                 const std::string &log) {
  PtxasUsage used;
  if (k.numThreads <= 0 || !ptxasUsage(log, k.name, used) ||
      k.ptx.find(".minnctapersm") != std::string::npos ||
      k.ptx.find(".maxnreg") != std::string::npos ||
      blocksByRegisters(k, used.registers) != 1 ||
      blocksByThreadsAndSharedMemory(k) < 2)
    return std::nullopt;
  return used.registers;
}

static void raiseOccupancy(CacheEntry &e, std::string &log) {
  const CompiledKernel &k = e.kernel;
  PtxasUsage used;
  if (!ptxasUsage(log, k.name, used) || used.spillBytes || k.numThreads <= 0 ||
      k.ptx.find(".minnctapersm") != std::string::npos ||
      k.ptx.find(".maxnreg") != std::string::npos)
    return;
  int64_t limit = blocksByThreadsAndSharedMemory(k);
  int64_t next = blocksByRegisters(k, used.registers) + 1;
  size_t at = k.ptx.find(".maxntid");
  if (next > limit || at == std::string::npos)
    return;
  size_t eol = k.ptx.find('\n', at);
  if (eol == std::string::npos)
    return;
  std::string ptx = k.ptx.substr(0, eol + 1) + ".minnctapersm " +
                    std::to_string(next) + "\n" + k.ptx.substr(eol + 1);
  std::string again;
  std::string cubin;
  try {
    cubin = linkPtxToCubin(ptx, k.arch, {"-verbose"}, &again);
  } catch (const Error &) {
    return; // The first assembly stands.
  }
  PtxasUsage now;
  if (!ptxasUsage(again, k.name, now) || now.spillBytes ||
      blocksByRegisters(k, now.registers) < next)
    return;
  e.kernel.ptx = std::move(ptx);
  e.cubin = std::move(cubin);
  log = std::move(again);
}

/// Loads an entry's module: the cubin when there is one (no driver JIT).
static std::unique_ptr<Kernel> loadKernel(const Artifacts &a) {
  std::shared_ptr<Module> m = a.cubin.empty() ? Module::fromPtx(a.kernel.ptx)
                                              : Module::fromCubin(a.cubin);
  return std::make_unique<Kernel>(a.kernel, std::move(m));
}

Kernel &JIT::get(const KernelSource &source, const std::string &kernelName,
                 const Constants &constants, const JITOptions &options) {
  return *handleFor(source, kernelName, constants, options).kernel;
}

AutotunedKernel *JIT::getAutotuned(const KernelSource &source,
                                   const std::string &kernelName,
                                   const Constants &constants,
                                   const JITOptions &options) {
  Handle &handle = handleFor(source, kernelName, constants, options);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (handle.autotuned || !handle.signature.hasAutotune)
      return handle.autotuned.get();
  }
  // Built unlocked: the constructor calls `get`. Two threads may both build
  // one; the first stored wins and the other is dropped unused.
  auto tuned = std::make_unique<AutotunedKernel>(
      *this, source, kernelName, constants, options,
      declaredSpec(handle.signature));
  std::lock_guard<std::mutex> lock(mutex_);
  if (!handle.autotuned)
    handle.autotuned = std::move(tuned);
  return handle.autotuned.get();
}

JIT::Handle &JIT::handleFor(const KernelSource &source,
                            const std::string &kernelName,
                            const Constants &constants,
                            const JITOptions &options) {
  uint64_t h = handleHash(source, kernelName, constants, options);
  std::lock_guard<std::mutex> lock(mutex_);
  auto &bucket = handles_[h];
  for (const auto &handle : bucket)
    if (handle->matches(source, kernelName, constants, options))
      return *handle;

  // First use: parse for the declared signature (cheap, no MLIR).
  std::vector<KernelSignature> kernels;
  std::string diags;
  // Constants matter: `x: *T` takes its element type from constant T.
  if (!config_.hooks.listKernels(source.text(), source.filename(), kernels,
                                 diags, constants))
    throw CompileError("parsing " + source.filename() + " failed:\n" + diags);
  const KernelSignature *sig = nullptr;
  std::string names;
  for (const KernelSignature &k : kernels) {
    names += (names.empty() ? "" : ", ") + k.name;
    if (k.name == kernelName || (kernelName.empty() && kernels.size() == 1))
      sig = &k;
  }
  if (!sig)
    throw CompileError(source.filename() + " has no kernel '" + kernelName +
                "' (it declares: " + (names.empty() ? "none" : names) + ")");
  // A syntax error in this kernel or a fn it calls (others' do not stop it).
  if (!sig->error.empty())
    throw CompileError("parsing " + source.filename() + " failed:\n" +
                       sig->error);

  auto handle = std::make_unique<Handle>();
  handle->source = source.digest();
  handle->filename = source.filename();
  handle->name = kernelName;
  handle->constants = constants;
  handle->options = options;
  std::vector<int> specializable = Kernel::specializableParams(sig->params);
  std::vector<KernelParam> params = sig->params;
  // The factory owns copies of everything it needs: the caller's
  // KernelSource may be a temporary.
  KernelSource src = source;
  std::string name = sig->name;
  Kernel::VariantFactory factory = [this, src, name, constants, options, params,
                                    specializable](uint64_t mask) {
    std::vector<std::string> div, one;
    for (size_t j = 0; j < specializable.size(); ++j) {
      const std::string &param = params[size_t(specializable[j])].name;
      if (mask & (uint64_t(1) << j))
        div.push_back(param);
      if (mask & (uint64_t(1) << (32 + j)))
        one.push_back(param);
    }
    return loadKernel(inspect(src, name, constants, options, div, one));
  };
  handle->kernel = std::make_unique<Kernel>(
      sig->name, sig->params, std::move(factory), options.specialize);
  handle->signature = *sig;
  bucket.push_back(std::move(handle));
  return *bucket.back();
}

Artifacts JIT::inspectCuda(const std::string &source,
                           const std::string &entryName,
                           const std::vector<KernelParam> &params,
                           const CudaOptions &options) {
  CudaKeyInputs in;
  in.source = source;
  in.entryName = entryName;
  in.params = params;
  in.numThreads = options.numThreads;
  in.nvrtcOptions = options.nvrtcOptions;
  in.targetArch = resolveArch(options.arch);
  in.nvrtcVersion = nvrtcVersionString();
  in.cudaVersion = cudaVersion();
  CacheKey key = makeCudaKey(in);
  auto entry = cache_.getOrBuild(key, [&] {
    NvrtcOutput out = compileCudaToPtx(source, entryName, in.targetArch,
                                       options.nvrtcOptions);
    CacheEntry e;
    e.kernel.name = out.loweredName;
    e.kernel.arch = in.targetArch;
    e.kernel.ptx = std::move(out.ptx);
    e.kernel.params = params;
    e.kernel.numThreads = options.numThreads;
    if (config_.buildCubin)
      e.cubin = linkPtxToCubin(e.kernel.ptx, in.targetArch);
    return e;
  });
  return Artifacts{entry->kernel, entry->cubin, key};
}

Kernel &JIT::getCuda(const std::string &source, const std::string &entryName,
                     const std::vector<KernelParam> &params,
                     const CudaOptions &options) {
  Artifacts a = inspectCuda(source, entryName, params, options);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = cudaKernels_.find(a.key.digest);
  if (it != cudaKernels_.end())
    return *it->second;
  auto k = loadKernel(a);
  Kernel &ref = *k;
  cudaKernels_.emplace(a.key.digest, std::move(k));
  return ref;
}
