//===- AutotuneBench.cpp - The autotuned DSL GEMM against its fixed tiles
//--===//
//
// The DSL GEMM with a leaky-ReLU epilogue (gemm_leaky_relu.tile, f16 in and
// out, f32 accumulation) at four shapes, three square-ish and one ragged:
//   1. every configuration its @autotune declares, launched as a fixed
//      kernel, and the autotuned kernel, all timed like every bench here
//      (BenchUtil.h: warm-up, 256 MB L2 flush before each run, CUDA events,
//      median of 50); inputs are random and never zero, C is poisoned with
//      0xFF before each kernel's runs and 64 sampled elements (edges
//      included) are checked against a float64 host reference after them;
//   2. first-launch time (compile + tune + launch, on a fresh cache
//      directory) and second-process time (the same first launch in a new
//      process on the now warm directory: records and cubins read from
//      disk, nothing timed), by running this program twice with
//      `--first-launch DIR`.
// cuBLAS on the same shapes: bench/autotune/torch_gemm.py, in the same
// scripts/gpu_run.sh session.
//
// Usage: sparsetile_autotune_bench [--json PATH] (run from the repository
// root, or set SPARSETILE_BENCH_DIR to bench/autotune).
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Autotune.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/JIT.h"

#include "BenchUtil.h"
#include "HostFloat.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace sparsetile;
using namespace sparsetile::bench;

namespace {

struct Shape {
  int64_t M, N, K;
};
const Shape kShapes[] = {{8192, 8192, 8192},
                         {16384, 4096, 4096},
                         {4096, 4096, 16384},
                         {5000, 3000, 2000}};
constexpr float kSlope = 0.01f;

std::string kernelPath() {
  const char *dir = std::getenv("SPARSETILE_BENCH_DIR");
  return std::string(dir && *dir ? dir : "bench/autotune") +
         "/gemm_leaky_relu.tile";
}

/// Random f16 bits with magnitudes in [1/16, 1): never zero, never NaN.
std::vector<uint16_t> randomF16(size_t n, std::mt19937 &rng) {
  std::vector<uint16_t> v(n);
  std::uniform_int_distribution<int> exp(11, 14), man(0, 1023), sign(0, 1);
  for (auto &x : v)
    x = uint16_t(sign(rng) << 15 | exp(rng) << 10 | man(rng));
  return v;
}

double f16ToDouble(uint16_t h) { return sparsetile::test::halfToFloat(h); }

/// One problem on the device: inputs, the poisoned output, the arguments.
struct Problem {
  Shape s;
  std::vector<uint16_t> a, b;
  rt::DeviceBuffer da, db, dc;
  std::vector<rt::Arg> args;

  Problem(Shape s, std::mt19937 &rng)
      : s(s), a(randomF16(size_t(s.M * s.K), rng)),
        b(randomF16(size_t(s.K * s.N), rng)), da(rt::DeviceBuffer::fromHost(a)),
        db(rt::DeviceBuffer::fromHost(b)), dc(size_t(s.M * s.N * 2)) {
    args = {rt::Arg::tensor2d(da.ptr(), DType::F16, s.M, s.K, s.K),
            rt::Arg::tensor2d(db.ptr(), DType::F16, s.K, s.N, s.N),
            rt::Arg::ptr(dc.ptr(), DType::F16),
            rt::Arg::i32(int32_t(s.M)),
            rt::Arg::i32(int32_t(s.N)),
            rt::Arg::i32(int32_t(s.K)),
            rt::Arg::i32(int32_t(s.N)),
            rt::Arg::f32(kSlope)};
  }
  void poison() { dc.fill(0xff); }

  /// Sampled elements (corners and edges included) against float64.
  bool check(std::string &why) {
    rt::Device::get().synchronize();
    std::vector<uint16_t> c = dc.toHost<uint16_t>();
    std::mt19937 rng(7);
    for (int i = 0; i < 64; ++i) {
      int64_t r = i < 2 ? (i ? s.M - 1 : 0) : int64_t(rng() % s.M);
      int64_t col = i < 2 ? (i ? s.N - 1 : 0) : int64_t(rng() % s.N);
      double want = 0;
      for (int64_t k = 0; k < s.K; ++k)
        want += f16ToDouble(a[size_t(r * s.K + k)]) *
                f16ToDouble(b[size_t(k * s.N + col)]);
      want = want > 0 ? want : want * kSlope;
      double got = f16ToDouble(c[size_t(r * s.N + col)]);
      if (!(std::fabs(got - want) <= 1e-2 * std::fabs(want) + 2e-2)) {
        why = "C[" + std::to_string(r) + ", " + std::to_string(col) +
              "] = " + std::to_string(got) + ", want " + std::to_string(want);
        return false;
      }
    }
    return true;
  }
  double tflops(double ms) const {
    return 2.0 * double(s.M) * double(s.N) * double(s.K) / (ms * 1e-3) / 1e12;
  }
};

/// Child mode: the first launch of every shape on cache directory `dir`,
/// one line per shape: "M N K ms choice".
int firstLaunch(const std::string &dir) {
  rt::JITConfig config;
  config.cache.directory = dir;
  rt::JIT jit(config);
  auto src = rt::KernelSource::fromFile(kernelPath());
  std::mt19937 rng(1234);
  for (Shape s : kShapes) {
    Problem p(s, rng);
    auto t0 = std::chrono::steady_clock::now();
    rt::AutotunedKernel *k = jit.getAutotuned(src, "gemm_leaky_relu");
    k->launch(p.args);
    rt::Device::get().synchronize();
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
    std::printf("%lld %lld %lld %.3f %s\n", (long long)s.M, (long long)s.N,
                (long long)s.K, ms,
                k->spec().configs[k->choose(p.args)].describe().c_str());
  }
  return 0;
}

/// Runs `--first-launch dir` in a new process; shape "M N K" -> ms.
std::map<std::string, double> runChild(const char *self,
                                       const std::string &dir) {
  std::map<std::string, double> out;
  std::string cmd = std::string("'") + self + "' --first-launch '" + dir + "'";
  std::FILE *f = popen(cmd.c_str(), "r");
  if (!f)
    return out;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    long long m, n, k;
    double ms;
    if (std::sscanf(line, "%lld %lld %lld %lf", &m, &n, &k, &ms) == 4)
      out[std::to_string(m) + " " + std::to_string(n) + " " +
          std::to_string(k)] = ms;
  }
  pclose(f);
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 3 && std::string(argv[1]) == "--first-launch")
    return firstLaunch(argv[2]);
  std::string jsonPath;
  if (!parseBenchArgs(argc, argv, jsonPath))
    return 2;
  JsonReport report("autotune");
  std::string why;
  if (!rt::gpuAvailable(&why)) {
    std::printf("autotune bench skipped: no GPU (%s)\n", why.c_str());
    report.setSkipped(why);
    report.write(jsonPath);
    return 3;
  }
  rt::Device &dev = rt::Device::get();
  report.setDevice(dev.name());
  std::printf("device: %s (%s)\n\n", dev.name().c_str(), dev.arch().c_str());

  // 1. First launch on a fresh cache directory, then a second process.
  char tmpl[] = "/tmp/sparsetile-autotune-bench-XXXXXX";
  std::string dir = mkdtemp(tmpl) ? tmpl : "";
  std::map<std::string, double> first = runChild(argv[0], dir);
  std::map<std::string, double> second = runChild(argv[0], dir);

  // 2. Every fixed candidate and the autotuned kernel (its winners come from
  // the directory the first child tuned into: nothing is retuned here).
  rt::JITConfig config;
  config.cache.directory = dir;
  rt::JIT jit(config);
  auto src = rt::KernelSource::fromFile(kernelPath());
  rt::AutotunedKernel *tuned = jit.getAutotuned(src, "gemm_leaky_relu");
  const rt::AutotuneSpec &spec = tuned->spec();

  std::printf("| M | N | K | configuration | ms | TFLOP/s | vs best fixed | "
              "output |\n|---|---|---|---|---|---|---|---|\n");
  std::string summary =
      "| M | N | K | best fixed | ms | autotuned picks | ms | autotuned / "
      "best | first launch s | second process ms |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  std::mt19937 rng(1234);
  for (Shape s : kShapes) {
    Problem p(s, rng);
    std::vector<double> ms(spec.configs.size(), NAN);
    std::vector<std::string> status(spec.configs.size(), "ok");
    for (size_t i = 0; i < spec.configs.size(); ++i) {
      try {
        rt::Kernel &k = tuned->candidate(i);
        rt::LaunchArgs la{p.args.data(), p.args.size(), k.params()};
        rt::LaunchConfig lc(spec.grid(spec.configs[i].constants, la));
        p.poison();
        ms[i] = medianMs([&] { k.launch(lc, p.args); });
        if (!p.check(why))
          status[i] = "WRONG: " + why;
      } catch (const std::exception &e) {
        status[i] = std::string("failed: ") + e.what();
        status[i] = status[i].substr(0, status[i].find('\n'));
      }
    }
    p.poison();
    double autoMs = medianMs([&] { tuned->launch(p.args); });
    std::string autoStatus = p.check(why) ? "ok" : "WRONG: " + why;
    size_t pick = tuned->choose(p.args);
    size_t best = 0;
    for (size_t i = 0; i < ms.size(); ++i)
      if (std::isfinite(ms[i]) &&
          (!std::isfinite(ms[best]) || ms[i] < ms[best]))
        best = i;

    for (size_t i = 0; i <= ms.size(); ++i) {
      bool isAuto = i == ms.size();
      double t = isAuto ? autoMs : ms[i];
      std::string name =
          isAuto ? "autotuned (" + spec.configs[pick].describe() + ")"
                 : spec.configs[i].describe();
      std::printf("| %lld | %lld | %lld | %s | %.4f | %.1f | %.3f | %s |\n",
                  (long long)s.M, (long long)s.N, (long long)s.K, name.c_str(),
                  t, p.tflops(t), t / ms[best],
                  (isAuto ? autoStatus : status[i]).c_str());
      report.row()
          .integer("M", s.M)
          .integer("N", s.N)
          .integer("K", s.K)
          .str("config", name)
          .boolean("autotuned", isAuto)
          .num("ms", t)
          .num("tflops", p.tflops(t))
          .str("output", isAuto ? autoStatus : status[i]);
    }
    std::string key = std::to_string(s.M) + " " + std::to_string(s.N) + " " +
                      std::to_string(s.K);
    double f = first.count(key) ? first[key] : NAN;
    double g = second.count(key) ? second[key] : NAN;
    char line[512];
    std::snprintf(line, sizeof line,
                  "| %lld | %lld | %lld | %s | %.4f | %s | %.4f | %.3f | %.2f "
                  "| %.1f |\n",
                  (long long)s.M, (long long)s.N, (long long)s.K,
                  spec.configs[best].describe().c_str(), ms[best],
                  spec.configs[pick].describe().c_str(), autoMs,
                  autoMs / ms[best], f / 1e3, g);
    summary += line;
    report.row()
        .integer("M", s.M)
        .integer("N", s.N)
        .integer("K", s.K)
        .str("best_fixed", spec.configs[best].describe())
        .num("best_fixed_ms", ms[best])
        .str("autotuned_pick", spec.configs[pick].describe())
        .num("autotuned_ms", autoMs)
        .num("first_launch_ms", f)
        .num("second_process_ms", g);
  }
  std::printf("\nFirst launch: compile + tune + launch on a fresh cache "
              "directory (one process, shapes in order, so the first shape "
              "also pays the compiles); second process: the same first launch "
              "on the warm directory.\n\n%s",
              summary.c_str());
  std::filesystem::remove_all(dir); // The tuned records were only for this run.
  return report.write(jsonPath) ? 0 : 1;
}
