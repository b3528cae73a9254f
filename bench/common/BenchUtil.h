//===- BenchUtil.h - Timing helpers shared by the GPU benches ---*- C++ -*-===//
//
// How every sparsetile bench times a GPU operation, so that all figures in
// bench/ are comparable with each other and with triton's do_bench:
//  - warm-up runs first (JIT compilation and module loads stay out);
//  - before each timed run, a 256 MB write evicts the inputs from L2 and
//    keeps the GPU busy while the host enqueues the timed launch (so host
//    launch overhead is not measured);
//  - CUDA events around each run; the median is reported.
// Also what the benches share besides timing: the `--json PATH` option and
// the small JSON writer behind it (every measured row, for bench/plot.py),
// and where the DSL examples are.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_BENCH_BENCHUTIL_H
#define SPARSETILE_BENCH_BENCHUTIL_H

#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/JIT.h"

#include <cuda.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace sparsetile::bench {

/// A kernel that reads a buffer and writes one word per 64 KiB: the clean
/// flush's read pass.
inline const char *l2ReadKernelText() {
  return "@num_warps(8)\n"
         "kernel l2_read(x: *i32, out: *i32, const BLOCK: i32 = 16384) {\n"
         "  let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
         "  store(out + program_id(0), sum(load(x + offs), axis=0));\n"
         "}\n";
}

/// The L2 flush issued before each timed run: a 256 MB write, as triton's
/// do_bench does. It leaves L2 full of dirty lines, which the timed kernel
/// writes back in place of its own output, about one for one: ncu counts
/// each 50-120 MB helper's DRAM writes within 0.6-7.5 MB of its output
/// (bench/NOTES.md, "Block rows in one load, ..."). SPARSETILE_BENCH_FLUSH=
/// read reads a separate 256 MB buffer instead. L2 is then left clean, and
/// a kernel of tens of MB ends with 12-25 MB of its output still in L2,
/// unpaid: a diagnostic, not the figure to judge by.
struct L2Flush {
  rt::DeviceBuffer buf{size_t(256) << 20};
  rt::DeviceBuffer sums{(size_t(256) << 20) / 16384};
  CUresult (*memset)(CUdeviceptr, unsigned, size_t, CUstream) =
      reinterpret_cast<CUresult (*)(CUdeviceptr, unsigned, size_t, CUstream)>(
          rt::driverEntryPoint("cuMemsetD32Async"));
  bool read = readMode();
  rt::Kernel *reader = nullptr;

  static bool readMode() {
    const char *env = std::getenv("SPARSETILE_BENCH_FLUSH");
    return env && std::string(env) == "read";
  }
  L2Flush() {
    if (!read)
      return;
    buf.fill(0x01);
    static rt::KernelSource src =
        rt::KernelSource::fromText(l2ReadKernelText(), "<l2_read>");
    reader = &rt::JIT::global().get(src, "l2_read");
  }
  void operator()() {
    if (!read) {
      memset(buf.ptr(), 0, buf.size() / 4, nullptr);
      return;
    }
    reader->launch(rt::Dim3(unsigned(buf.size() / 4 / 16384)),
                   {rt::Arg::ptr(buf.ptr(), DType::I32),
                    rt::Arg::ptr(sums.ptr(), DType::I32)});
  }
};

/// Median time in ms of `fn` over `reps` runs after `warmup` runs.
inline double medianMs(const std::function<void()> &fn, int warmup = 10,
                       int reps = 50) {
  static L2Flush flush;
  for (int i = 0; i < warmup; ++i)
    fn();
  std::vector<double> t;
  rt::Event a, b;
  for (int i = 0; i < reps; ++i) {
    flush();
    a.record();
    fn();
    b.record();
    b.synchronize();
    t.push_back(rt::Event::elapsedMs(a, b));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// Medians of each of `fns` timed in alternation in one process: seven
/// rounds of (median of 10) each, the order rotated every round (A B C,
/// B C A, ...) so that none always runs right after another, L2 flushed
/// before every launch; the median round of each. Clock and power drift
/// over a run hit all alike (bench/NOTES.md: sweeps timed one after the
/// other put the slow cells on either side from run to run).
inline std::vector<double>
interleavedMs(const std::vector<std::function<void()>> &fns) {
  size_t n = fns.size();
  std::vector<std::vector<double>> t(n);
  for (size_t round = 0; round < 7; ++round)
    for (size_t i = 0; i < n; ++i) {
      size_t f = (round + i) % n;
      t[f].push_back(medianMs(fns[f], 2, 10));
    }
  std::vector<double> out;
  for (auto &v : t) {
    std::sort(v.begin(), v.end());
    out.push_back(v[v.size() / 2]);
  }
  return out;
}

/// The copy ceiling: a device-to-device copy timed like the kernels, its
/// rate counting bytes read + written.
struct CopyCeiling {
  rt::DeviceBuffer src, dst;
  CUresult (*copy)(CUdeviceptr, CUdeviceptr, size_t, CUstream) =
      reinterpret_cast<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t,
                                    CUstream)>(
          rt::driverEntryPoint("cuMemcpyDtoDAsync"));

  explicit CopyCeiling(size_t maxBytes = size_t(1) << 30)
      : src(maxBytes), dst(maxBytes) {
    src.fill(0x3f);
  }
  /// TB/s of copying `bytes` (at most the size given at construction).
  double tbs(size_t bytes) {
    double ms = medianMs([&] { copy(dst.ptr(), src.ptr(), bytes, nullptr); });
    return 2.0 * double(bytes) / (ms * 1e-3) / 1e12;
  }
};

/// Random bf16 bits with magnitudes in [1/8, 4): never zeros, never NaN.
/// The biased exponent field is 0x7c..0x80 (2^-3..2^1); it used to be
/// 0x3c..0x40, which made every value about 1e-20 and every GEMM product an
/// f32 denormal.
inline std::vector<uint16_t> randomBf16(size_t n, std::mt19937 &rng) {
  std::vector<uint16_t> v(n);
  std::uniform_int_distribution<int> exp(0x7c, 0x80), man(0, 127), sign(0, 1);
  for (auto &x : v)
    x = uint16_t(sign(rng) << 15 | exp(rng) << 7 | man(rng));
  return v;
}

/// bf16 bits to float (bf16 is the top half of an f32).
inline float bf16ToFloat(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// Where dsl_examples/ is: $SPARSETILE_EXAMPLES_DIR, else ./dsl_examples
/// when it exists (scripts/gpu_run.sh runs the carried benches from the
/// repository root), else the source tree's path when the target defines
/// SPARSETILE_SOURCE_EXAMPLES_DIR (as tests/common/Examples.h does).
inline std::string examplesDir() {
  if (const char *env = std::getenv("SPARSETILE_EXAMPLES_DIR"))
    if (*env)
      return env;
  struct stat st;
  if (stat("dsl_examples", &st) == 0 && S_ISDIR(st.st_mode))
    return "dsl_examples";
#ifdef SPARSETILE_SOURCE_EXAMPLES_DIR
  return SPARSETILE_SOURCE_EXAMPLES_DIR;
#else
  return "dsl_examples";
#endif
}

/// Which of a bench's tables to run: all, or those named by `--tables
/// a,b,...` (a whole bench run takes minutes of a lent GPU; a question about
/// one table should not pay for the others).
class TableFilter {
public:
  void set(const std::string &list) {
    names.clear();
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(',', start);
      if (end == std::string::npos)
        end = list.size();
      if (end > start)
        names.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  bool operator()(const std::string &table) const {
    return names.empty() ||
           std::find(names.begin(), names.end(), table) != names.end();
  }

private:
  std::vector<std::string> names;
};

/// The command line of the benches that write JSON: `[--json PATH]`, and
/// `[--tables a,b]` where the bench passes `tables`. Returns false (after
/// printing the usage to stderr) on anything else.
inline bool parseBenchArgs(int argc, char **argv, std::string &jsonPath,
                           TableFilter *tables = nullptr) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      jsonPath = argv[++i];
    } else if (a.rfind("--json=", 0) == 0) {
      jsonPath = a.substr(7);
    } else if (tables && a == "--tables" && i + 1 < argc) {
      tables->set(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--json PATH]%s\n"
                   "  prints markdown tables to stdout; with --json, also "
                   "writes every measured row to PATH\n",
                   argv[0], tables ? " [--tables NAME,NAME]" : "");
      return false;
    }
  }
  return true;
}

/// One JSON object, its fields in the order they are added. Written by hand
/// so the benches need no JSON library.
class JsonObject {
public:
  /// Non-finite numbers become null (JSON has no NaN or infinity). %.9g
  /// keeps more digits than any markdown column shows.
  JsonObject &num(const std::string &k, double v) {
    char buf[32];
    if (std::isfinite(v))
      std::snprintf(buf, sizeof buf, "%.9g", v);
    else
      std::snprintf(buf, sizeof buf, "null");
    return raw(k, buf);
  }
  JsonObject &integer(const std::string &k, int64_t v) {
    return raw(k, std::to_string(v));
  }
  JsonObject &str(const std::string &k, const std::string &v) {
    return raw(k, quote(v));
  }
  JsonObject &boolean(const std::string &k, bool v) {
    return raw(k, v ? "true" : "false");
  }
  /// `v` must already be JSON (a number, a quoted string, an object...).
  JsonObject &raw(const std::string &k, const std::string &v) {
    body_ += (body_.empty() ? "" : ", ") + quote(k) + ": " + v;
    return *this;
  }
  std::string text() const { return "{" + body_ + "}"; }

  static std::string quote(const std::string &s) {
    std::string out = "\"";
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += char(c);
      } else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += char(c);
      }
    }
    return out + "\"";
  }

private:
  std::string body_;
};

/// A bench's JSON file: {"bench": NAME, "device": ..., "rows": [...]}, one
/// row per measured figure (bench/plot.py reads it).
class JsonReport {
public:
  explicit JsonReport(std::string bench) : bench_(std::move(bench)) {}
  void setDevice(const std::string &device) { device_ = device; }
  /// Why nothing was measured (no GPU): written as "skipped".
  void setSkipped(const std::string &why) { skipped_ = why; }
  /// A new row; the reference stays valid (rows live in a deque).
  JsonObject &row() { return rows_.emplace_back(); }

  /// Writes the file; on failure says why on stderr and returns false.
  /// An empty path writes nothing (no --json given).
  bool write(const std::string &path) const {
    if (path.empty())
      return true;
    std::FILE *f = std::fopen(path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cannot write %s: %s\n", path.c_str(),
                   std::strerror(errno));
      return false;
    }
    JsonObject head;
    head.str("bench", bench_);
    if (device_.empty())
      head.raw("device", "null");
    else
      head.str("device", device_);
    if (!skipped_.empty())
      head.str("skipped", skipped_);
    std::string h = head.text();
    h.pop_back(); // Reopen the object for "rows".
    std::fprintf(f, "%s, \"rows\": [", h.c_str());
    bool first = true;
    for (const JsonObject &r : rows_) {
      std::fprintf(f, "%s\n  %s", first ? "" : ",", r.text().c_str());
      first = false;
    }
    std::fprintf(f, "\n]}\n");
    bool ok = std::fflush(f) == 0 && !std::ferror(f);
    ok = std::fclose(f) == 0 && ok;
    if (!ok)
      std::fprintf(stderr, "error writing %s\n", path.c_str());
    return ok;
  }

private:
  std::string bench_, device_, skipped_;
  std::deque<JsonObject> rows_;
};

} // namespace sparsetile::bench

#endif // SPARSETILE_BENCH_BENCHUTIL_H
