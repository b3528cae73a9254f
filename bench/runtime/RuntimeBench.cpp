//===- RuntimeBench.cpp - Runtime compile, cache and launch costs ---------===//
//
// Measures, per DSL kernel (by default every example in dsl_examples/):
//   - DSL -> PTX: sparsetile::compile alone,
//   - PTX -> cubin: nvJitLink alone,
//   - cold JIT: JIT::inspect with the cache disabled (both of the above plus
//     key hashing),
//   - warm disk load: a new JIT over a filled cache directory (read, checksum
//     and, with a GPU, the cubin's module load),
//   - in-memory hit: JIT::get from the handle table.
// Then, with a GPU, the host-side cost per launch of the vector_add example
// (n = 0, so the GPU does no work): a bare cuLaunchKernel of the loaded
// CUfunction versus Kernel::launch of that variant (argument checks), the
// specializing Kernel::launch (plus the divisibility dispatch) and
// JIT::get + launch, with CUDA events for the GPU side. All numbers are
// medians. Prints markdown tables.
//
// Usage: runtime_bench [--arch sm_90] [--reps N] [FILE.tile:KERNEL[:K=V,...]]...
// Without kernel arguments it benchmarks the examples (found as the tests
// find them: $SPARSETILE_EXAMPLES_DIR, ./dsl_examples, the source tree).
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "sparsetile/runtime/JIT.h"
#include "sparsetile/runtime/JitLink.h"
#include "sparsetile/runtime/NVRTC.h"

#include <cuda.h> // Prototypes only, for the bare cuLaunchKernel baseline.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct KernelSpec {
  std::string label;
  KernelSource source;
  std::string name;
  Constants constants;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

KernelSpec parseSpec(const std::string &arg) {
  // FILE:KERNEL[:K=V,K=V]
  size_t c1 = arg.find(':');
  if (c1 == std::string::npos)
    throw Error("bad kernel spec '" + arg + "' (FILE.tile:KERNEL[:K=V,...])");
  size_t c2 = arg.find(':', c1 + 1);
  KernelSpec s{arg,
               KernelSource::fromFile(arg.substr(0, c1)),
               arg.substr(c1 + 1, c2 == std::string::npos ? std::string::npos
                                                          : c2 - c1 - 1),
               {}};
  if (c2 != std::string::npos) {
    std::string rest = arg.substr(c2 + 1);
    size_t pos = 0;
    while (pos < rest.size()) {
      size_t comma = rest.find(',', pos);
      std::string kv = rest.substr(pos, comma - pos);
      size_t eq = kv.find('=');
      if (eq != std::string::npos)
        s.constants[kv.substr(0, eq)] = kv.substr(eq + 1);
      pos = comma == std::string::npos ? rest.size() : comma + 1;
    }
  }
  return s;
}

JITConfig configFor(const fs::path &dir, bool enabled) {
  JITConfig c;
  c.cache.directory = dir.string();
  c.cache.enabled = enabled;
  return c;
}

void benchCompile(const std::vector<KernelSpec> &specs, const JITOptions &opts,
                  int reps, const fs::path &root, bool haveGpu) {
  std::printf("## Compile and cache (arch %s, median of %d)\n\n",
              opts.arch.c_str(), reps);
  std::printf("| kernel | DSL->PTX (ms) | PTX->cubin (ms) | cold JIT total "
              "(ms) | warm disk load%s (ms) | in-memory JIT::get (ns) | "
              "PTX (KB) | cubin (KB) |\n",
              haveGpu ? " + module load" : "");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const KernelSpec &s : specs) {
    try {
      std::vector<double> toPtx, toCubin, cold, warm;
      CompileOptions co;
      co.arch = opts.arch;
      co.constants = s.constants;
      for (int r = 0; r < reps; ++r) {
        auto t0 = Clock::now();
        CompileResult cr = sparsetile::compile(
            s.source.text(), s.source.filename(), s.name, co, Stage::Ptx);
        toPtx.push_back(msSince(t0));
        if (!cr.ok)
          throw Error(cr.diagnostics);
        t0 = Clock::now();
        linkPtxToCubin(cr.kernel.ptx, cr.kernel.arch); // sm_90 -> sm_90a
        toCubin.push_back(msSince(t0));
      }
      Artifacts a;
      for (int r = 0; r < reps; ++r) {
        JIT jit(configFor(root / "cold", false));
        auto t0 = Clock::now();
        a = jit.inspect(s.source, s.name, s.constants, opts);
        cold.push_back(msSince(t0));
      }
      fs::path dir = root / "warm";
      JIT(configFor(dir, true)).inspect(s.source, s.name, s.constants, opts);
      for (int r = 0; r < reps; ++r) {
        JIT jit(configFor(dir, true)); // Empty memory level, same directory.
        auto t0 = Clock::now();
        Artifacts w = jit.inspect(s.source, s.name, s.constants, opts);
        if (haveGpu)
          Module::fromCubin(w.cubin);
        warm.push_back(msSince(t0));
        if (jit.cache().stats().diskHits != 1)
          throw Error("warm load did not hit the disk cache");
      }
      JIT jit(configFor(dir, true));
      Kernel *k = &jit.get(s.source, s.name, s.constants, opts);
      std::vector<double> hit;
      const int n = 100000;
      for (int r = 0; r < 5; ++r) {
        auto t0 = Clock::now();
        for (int i = 0; i < n; ++i)
          if (&jit.get(s.source, s.name, s.constants, opts) != k)
            throw Error("handle changed");
        hit.push_back(msSince(t0) * 1e6 / n);
      }
      std::printf("| %s | %.2f | %.2f | %.2f | %.3f | %.0f | %.1f | %.1f |\n",
                  s.label.c_str(), median(toPtx), median(toCubin),
                  median(cold), median(warm), median(hit),
                  a.kernel.ptx.size() / 1024.0, a.cubin.size() / 1024.0);
    } catch (const std::exception &e) {
      std::string m = e.what();
      std::replace(m.begin(), m.end(), '\n', ' ');
      std::printf("| %s | failed: %s | | | | | | |\n", s.label.c_str(),
                  m.substr(0, 200).c_str());
    }
  }
  std::printf("\n");
}

void benchLaunch(const fs::path &root, int batches) {
  std::printf("## Launch overhead: vector_add example, n = 0 (host time per "
              "launch, median of %d batches of 10000)\n\n",
              batches);
  JIT jit(configFor(root / "launch", true));
  static const KernelSource add = KernelSource::fromFile(
      sparsetile::testing::examplesDir() + "/vector_add.tile");
  Kernel &k = jit.get(add, "vector_add");
  DeviceBuffer x(4096 * 4);
  auto X = Arg::ptr(x, DType::F32);
  const int zero = 0;
  std::vector<Arg> args = {X, X, X, zero};
  Kernel &variant = k.variantFor(args.data(), args.size()); // Compiles it.
  auto launch = reinterpret_cast<decltype(&::cuLaunchKernel)>(
      driverEntryPoint("cuLaunchKernel"));
  Stream stream;
  CUstream s = stream.handle();
  CUfunction f = variant.function();
  const unsigned threads = unsigned(variant.numThreads());
  const int perBatch = 10000;

  auto measure = [&](const char *label, auto &&body) {
    std::vector<double> host, gpu;
    for (int i = 0; i < 100; ++i)
      body(); // Warm-up.
    stream.synchronize();
    for (int b = 0; b < batches; ++b) {
      Event e0, e1;
      e0.record(s);
      auto t0 = Clock::now();
      for (int i = 0; i < perBatch; ++i)
        body();
      double hostUs = msSince(t0) * 1e3 / perBatch;
      e1.record(s);
      e1.synchronize();
      host.push_back(hostUs);
      gpu.push_back(Event::elapsedMs(e0, e1) * 1e3 / perBatch);
    }
    std::printf("| %s | %.3f | %.3f |\n", label, median(host), median(gpu));
  };

  std::printf("| path | host us/launch | GPU us/launch (events) |\n");
  std::printf("|---|---:|---:|\n");
  DevicePtr p = x.ptr();
  int n = zero;
  measure("bare cuLaunchKernel (same CUfunction)", [&] {
    void *params[] = {&p, &p, &p, &n};
    CUresult r = launch(f, 1, 1, 1, threads, 1, 1, 0, s, params, nullptr);
    if (r != CUDA_SUCCESS)
      throw Error("cuLaunchKernel failed");
  });
  const LaunchConfig lc(1, Dim3(0), 0, s);
  measure("Kernel::launch, loaded variant (checks)", [&] {
    variant.launch(lc, args);
  });
  measure("Kernel::launch, specializing (checks + dispatch)", [&] {
    k.launch(lc, args);
  });
  measure("JIT::get + Kernel::launch", [&] {
    jit.get(add, "vector_add").launch(lc, args);
  });
  stream.synchronize();
  std::printf("\n");
}

} // namespace

int main(int argc, char **argv) {
  try {
    JITOptions opts;
    int reps = 5;
    std::vector<KernelSpec> specs;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--arch" && i + 1 < argc)
        opts.arch = argv[++i];
      else if (a == "--reps" && i + 1 < argc)
        reps = std::max(1, std::atoi(argv[++i]));
      else
        specs.push_back(parseSpec(a));
    }
    if (specs.empty())
      for (const auto &ex : sparsetile::testing::examples())
        specs.push_back({ex.file,
                         KernelSource::fromFile(
                             sparsetile::testing::examplePath(ex)),
                         ex.kernel,
                         {}});
    std::string why;
    bool haveGpu = gpuAvailable(&why);
    if (opts.arch.empty())
      opts.arch = haveGpu ? Device::get().arch() : "sm_90";
    if (haveGpu)
      std::printf("Device: %s (%s)\n\n", Device::get().name().c_str(),
                  Device::get().arch().c_str());
    else
      std::printf("No GPU (%s): compile numbers only, for %s.\n\n", why.c_str(),
                  opts.arch.c_str());

    fs::path root = fs::temp_directory_path() /
                    ("sparsetile-runtime-bench-" + std::to_string(getpid()));
    fs::remove_all(root);
    benchCompile(specs, opts, reps, root, haveGpu);
    if (haveGpu) {
      try {
        benchLaunch(root, reps < 5 ? 5 : reps);
      } catch (const std::exception &e) {
        std::printf("Launch overhead: failed: %s\n", e.what());
        fs::remove_all(root);
        return 1;
      }
    }
    else
      std::printf("Launch overhead: skipped (no GPU).\n");
    fs::remove_all(root);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "runtime_bench: %s\n", e.what());
    return 1;
  }
}
