//===- JIT.h - Compile tile kernels at run time, cached ---------*- C++ -*-===//
//
// The user-facing entry point: give it DSL text (or a file), a kernel name
// and constants, get a launchable Kernel. Compilation runs the sparsetile
// compiler to PTX and nvJitLink to a cubin for the current GPU (or an
// explicit arch on machines without one), through the two-level KernelCache.
//
// Repeated `get` calls for the same kernel return the same Kernel object from
// a handle table keyed by a cheap hash of (source digest, name, constants,
// options) -- the source digest is computed once, when the KernelSource is
// made -- so the hot path does no SHA-256 and no allocation.
//
// Kernels from `get` specialize on divisibility: each launch computes a
// bitmask of which i32/i64 arguments are multiples of 16 and which are 1,
// and uses the variant compiled with those names in
// CompileOptions::divisibleBy16 and equalToOne.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_JIT_H
#define SPARSETILE_RUNTIME_JIT_H

#include "sparsetile/Compiler.h"
#include "sparsetile/runtime/Cache.h"
#include "sparsetile/runtime/Kernel.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace sparsetile {
namespace rt {

class AutotunedKernel;

/// Values for a kernel's `const` parameters, as source text.
using Constants = std::map<std::string, std::string>;

/// DSL source text plus the name diagnostics use. Its digest is computed
/// once; keep the object around (e.g. a static at the call site) so `get`
/// stays cheap.
class KernelSource {
public:
  /// DSL text held in memory.
  static KernelSource fromText(std::string text,
                               std::string filename = "<source>");
  /// DSL text whose imports are already in memory: `imports` maps each
  /// resolved import path (relative to `filename`'s folder, as the compiler
  /// resolves it) to its text; only imports missing there are read from
  /// disk. The ops' embedded kernels import embedded files this way.
  static KernelSource fromText(std::string text, std::string filename,
                               std::map<std::string, std::string> imports);
  /// Reads a .tile file now; throws Error if it cannot be read.
  static KernelSource fromFile(const std::string &path);

  const std::string &text() const { return text_; }
  const std::string &filename() const { return filename_; }
  /// Covers the text and every imported file's path and text.
  const Digest &digest() const { return digest_; }
  /// The files the text imports (`import "x.tile";`, transitively), read
  /// once when the source was made: resolved path -> text. Compiles use
  /// these copies, so the digest and cache key name what is compiled.
  const std::map<std::string, std::string> &imports() const {
    return imports_;
  }

private:
  std::string text_, filename_;
  std::map<std::string, std::string> imports_;
  Digest digest_{};
};

/// Per-kernel options: the compiler's code-generation choices (arch empty:
/// the current GPU's) plus the runtime's own. Everything here is part of the
/// handle identity; the CodegenOptions part is part of the cache key.
struct JITOptions : CodegenOptions {
  /// Compile variants for integer arguments that are multiples of 16 or 1.
  bool specialize = true;
};

/// The process-wide switches of the environment, which every JIT compile
/// (and the C API's st_compile_stage) applies on top of its options:
/// SPARSETILE_WERROR_PERF=1 sets `werrorPerf`, SPARSETILE_DEBUG=1 `debug`
/// (device_assert compiled in, Triton's TRITON_DEBUG),
/// SPARSETILE_VECTOR_ATOMICS=0 clears `vectorAtomics`, SPARSETILE_FP_FUSION=0
/// `fpFusion`, SPARSETILE_FTZ=0 `ftz`.
void applyEnvironmentOptions(CodegenOptions &options);

/// Options for an NVRTC kernel.
struct CudaOptions {
  std::string arch;                      ///< Empty: the current GPU's.
  int numThreads = 0;                    ///< Default block size (0: none).
  std::vector<std::string> nvrtcOptions; ///< e.g. "-DBLOCK=256"
};

/// The compiled products of one kernel variant.
/// Whether `ptx` must be compiled as a whole program (by the driver) rather
/// than through nvJitLink: it uses setmaxnreg, which nvJitLink drops.
bool needsWholeProgram(const std::string &ptx);

struct Artifacts {
  CompiledKernel kernel; ///< Metadata and PTX.
  /// Empty when JITConfig::buildCubin is false, the PTX needs the driver's
  /// whole-program JIT (needsWholeProgram), or nvJitLink's registers held
  /// the kernel to one block an SM (JITConfig::wholeProgramForOneBlock).
  std::string cubin;
  CacheKey key;
};

/// The compiler functions the JIT calls. Defaults are sparsetile::compile,
/// sparsetile::listKernels, version() and toolchainVersion(); tests replace
/// them to exercise the JIT without the real compiler.
struct CompilerHooks {
  std::function<CompileResult(
      const std::string &source, const std::string &filename,
      const std::string &kernelName, const CompileOptions &options)>
      compile;
  std::function<bool(const std::string &source, const std::string &filename,
                     std::vector<KernelSignature> &kernels,
                     std::string &diagnostics, const Constants &constants)>
      listKernels;
  /// Compiles only as far as the resources are known (Stage::Mlir), for
  /// ResourceEstimate; the result's `resources` are read.
  std::function<CompileResult(
      const std::string &source, const std::string &filename,
      const std::string &kernelName, const CompileOptions &options)>
      estimate;
  std::string compilerVersion;
  std::string toolchainVersion;

  /// The real compiler.
  static CompilerHooks sparsetileCompiler();
};

/// JIT configuration.
struct JITConfig {
  CacheConfig cache = CacheConfig::fromEnvironment();
  /// Empty members are taken from CompilerHooks::sparsetileCompiler().
  CompilerHooks hooks;
  /// Assemble cubins with nvJitLink (else store PTX only and let the driver
  /// JIT it at load). nvJitLink assembles PTX as relocatable code, where
  /// ptxas allocates more registers than for a whole program (the H200's
  /// layer norm at BLOCK 16384: 142 against 125, one block an SM against
  /// two; bench/NOTES.md, "Relocatable PTX costs registers");
  /// SPARSETILE_ASSEMBLER=driver turns it off for the process (the
  /// kernels' spill remarks go with it).
  bool buildCubin = buildCubinFromEnvironment();
  static bool buildCubinFromEnvironment();
  /// With nvJitLink: where a kernel's registers cost it a block an SM that
  /// its threads and shared memory would allow, assemble it again asking
  /// ptxas for that block (`.minnctapersm`) and keep that if it does not
  /// spill. SPARSETILE_ASSEMBLER=occupancy turns it on for the process. Off
  /// by default: it speeds the parity matmul 12% and the layer norm at
  /// BLOCK 16384, but halves the 2:4 transposable mask + W*mask (bench/
  /// NOTES.md, "The ops under SPARSETILE_ASSEMBLER=occupancy").
  /// Warp-specialized kernels never reach it (the driver assembles them).
  bool raiseOccupancy = raiseOccupancyFromEnvironment();
  static bool raiseOccupancyFromEnvironment();
  /// With nvJitLink: a kernel whose registers leave an SM one block, where
  /// its threads and shared memory would allow two or more, is left to the
  /// driver's whole-program assembly at load, as warp-specialized ones are
  /// (no cubin in the entry; the driver caches what it builds). On by
  /// default; SPARSETILE_ASSEMBLER=nvjitlink (every kernel through
  /// nvJitLink) or =occupancy turns it off (bench/NOTES.md, "One block an
  /// SM: the whole program").
  bool wholeProgramForOneBlock = wholeProgramForOneBlockFromEnvironment();
  static bool wholeProgramForOneBlockFromEnvironment();
};

/// Compiles and caches kernels. Thread-safe.
class JIT {
public:
  explicit JIT(JITConfig config = JITConfig());
  ~JIT();
  JIT(const JIT &) = delete;
  JIT &operator=(const JIT &) = delete;

  /// A process-wide JIT with the environment's cache settings.
  static JIT &global();

  /// The specializing kernel `kernelName` (empty: the file's only kernel).
  /// Parses the source now (parse errors and unknown names throw); variants
  /// are compiled, or loaded from the cache, at their first launch. The
  /// reference stays valid for the JIT's lifetime.
  Kernel &get(const KernelSource &source, const std::string &kernelName,
              const Constants &constants = {}, const JITOptions &options = {});

  /// The autotuned form of a kernel that declares `@autotune(...)`
  /// (Language.md), with `constants` and `options` as the base every
  /// configuration overrides; null when the kernel declares none. Parses
  /// the source now, as `get` does; candidates are compiled and timed at the
  /// first launch of each key. The pointer stays valid for the JIT's
  /// lifetime.
  AutotunedKernel *getAutotuned(const KernelSource &source,
                                const std::string &kernelName,
                                const Constants &constants = {},
                                const JITOptions &options = {});

  /// Compiles (or fetches from the cache) one variant and returns its PTX,
  /// cubin and metadata. Needs no GPU when `options.arch` is set.
  /// `kernel.remarks` holds its performance remarks (with nvJitLink's spill
  /// counts); `options.werrorPerf` or SPARSETILE_WERROR_PERF=1 makes them a
  /// CompileError. SPARSETILE_DEBUG=1 sets `options.debug` (device_assert).
  Artifacts inspect(const KernelSource &source, const std::string &kernelName,
                    const Constants &constants = {},
                    const JITOptions &options = {},
                    const std::vector<std::string> &divisibleBy16 = {},
                    const std::vector<std::string> &equalToOne = {});

  /// What one variant needs of the GPU (shared memory, threads, a lower
  /// bound on registers), from a compile that stops before LLVM (tens of
  /// milliseconds; nothing is cached). The autotuner prunes with it. Throws
  /// CompileError when the kernel does not compile that far.
  ResourceEstimate estimate(const KernelSource &source,
                            const std::string &kernelName,
                            const Constants &constants = {},
                            const JITOptions &options = {});

  /// A CUDA C++ kernel compiled with NVRTC, launched with the same checks:
  /// `params` declares its signature, `entryName` is the __global__ name
  /// expression. The reference stays valid for the JIT's lifetime.
  Kernel &getCuda(const std::string &source, const std::string &entryName,
                  const std::vector<KernelParam> &params,
                  const CudaOptions &options = {});
  /// The NVRTC kernel's artifacts (no GPU needed when options.arch is set).
  Artifacts inspectCuda(const std::string &source, const std::string &entryName,
                        const std::vector<KernelParam> &params,
                        const CudaOptions &options = {});

  KernelCache &cache() { return cache_; }
  const JITConfig &config() const { return config_; }

private:
  struct Handle;
  Handle &handleFor(const KernelSource &source, const std::string &kernelName,
                    const Constants &constants, const JITOptions &options);
  std::string resolveArch(const std::string &arch) const;
  std::string cudaVersion() const;

  JITConfig config_;
  KernelCache cache_;
  mutable std::once_flag cudaVersionOnce_;
  mutable std::string cudaVersion_;
  std::mutex mutex_;
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<Handle>>> handles_;
  std::unordered_map<Digest, std::unique_ptr<Kernel>, DigestHash> cudaKernels_;
};

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_JIT_H
