//===- Autotune.cpp - Pick a kernel's best configuration per shape --------===//
//
// The flow of one launch (see Autotune.h for the contract):
//   1. the key text from the key arguments' values;
//   2. memory, then the record on disk; else
//   3. tune: prune (the hook, then what cannot fit the GPU: shared memory,
//      threads, registers, from compiles that stop before LLVM), compile
//      the survivors (in parallel threads), time each
//      on scratch outputs, keep the fastest, write the record;
//   4. launch the chosen candidate on the caller's arguments.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Autotune.h"
#include "DriverApi.h"
#include "sparsetile/runtime/Cache.h"
#include "sparsetile/runtime/Hash.h"
#include "sparsetile/runtime/Log.h"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <sstream>

#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;

namespace {

bool envFlag(const char *name, bool fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  return std::string(v) != "0";
}

constexpr const char *kRecordMagic = "sparsetile-autotune 1";

/// A progress line on stderr for a tuning that runs past a second, so that a
/// first launch that compiles and times a dozen candidates does not look
/// hung. Only on a terminal, and not when the log is on (its lines say as
/// much).
class TuneProgress {
public:
  TuneProgress(std::string what, size_t total)
      : what_(std::move(what)), total_(total),
        start_(std::chrono::steady_clock::now()),
        enabled_(::isatty(2) && !logEnabled(LogLevel::Info) &&
                 !envFlag("SPARSETILE_AUTOTUNE_LOG", false)) {}
  TuneProgress(const TuneProgress &) = delete;
  TuneProgress &operator=(const TuneProgress &) = delete;
  ~TuneProgress() {
    if (shown_)
      std::fprintf(stderr, "\rsparsetile: tuned %s in %.1f s%24s\n",
                   what_.c_str(), seconds(), "");
  }
  void step(const char *phase, size_t done) {
    if (!enabled_ || seconds() < 1.0)
      return;
    std::fprintf(stderr, "\rsparsetile: tuning %s: %s %zu/%zu (%.1f s)",
                 what_.c_str(), phase, done, total_, seconds());
    std::fflush(stderr);
    shown_ = true;
  }

private:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start_)
        .count();
  }
  std::string what_;
  size_t total_;
  std::chrono::steady_clock::time_point start_;
  bool enabled_, shown_ = false;
};

/// One line of the tuner's log: to the runtime's log at debug level when
/// that is on (SPARSETILE_LOG=2, or Python's logging), else to stderr (the
/// older SPARSETILE_AUTOTUNE_LOG=1).
__attribute__((format(printf, 1, 2))) void tuneLog(const char *format, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof(buf), format, ap);
  va_end(ap);
  std::string line(buf);
  if (!line.empty() && line.back() == '\n')
    line.pop_back();
  if (logEnabled(LogLevel::Debug))
    logMessage(LogLevel::Debug, line);
  else
    std::fprintf(stderr, "%s\n", line.c_str());
}

} // namespace

std::string TuneConfig::describe() const {
  std::string s;
  auto add = [&s](const std::string &name, const std::string &value) {
    s += (s.empty() ? "" : " ") + name + "=" + value;
  };
  for (const auto &kv : constants) // std::map: sorted, so the text is stable
    add(kv.first, kv.second);
  if (numWarps)
    add("num_warps", std::to_string(numWarps));
  if (numStages)
    add("num_stages", std::to_string(numStages));
  if (persistent >= 0)
    add("persistent", std::to_string(persistent));
  if (warpSpecialize >= 0)
    add("warp_specialize", std::to_string(warpSpecialize));
  return s.empty() ? "(defaults)" : s;
}

const Arg &LaunchArgs::operator[](const std::string &name) const {
  for (size_t i = 0; i < params.size() && i < count; ++i)
    if (params[i].name == name)
      return args[i];
  throw Error("autotune: the kernel has no parameter '" + name + "'");
}

AutotunedKernel::AutotunedKernel(JIT &jit, KernelSource source,
                                 std::string kernelName,
                                 Constants baseConstants, JITOptions options,
                                 AutotuneSpec spec)
    : jit_(jit), source_(std::move(source)), name_(std::move(kernelName)),
      base_(std::move(baseConstants)), options_(std::move(options)),
      spec_(std::move(spec)) {
  if (spec_.configs.empty())
    throw Error("autotune of '" + name_ + "': no configurations");
  if (!spec_.grid)
    throw Error("autotune of '" + name_ + "': no grid function");
  // The signature (with the base constants) names the key and the outputs.
  params_ = jit_.get(source_, name_, base_, options_).params();
  // An output is a pointer or a descriptor (a block store's tensor).
  auto find = [&](const std::string &n, bool output) {
    for (const KernelParam &p : params_)
      if (p.name == n && (output ? p.isPointer || p.isDescriptor
                                 : !p.isPointer && !p.isDescriptor))
        return;
    throw Error("autotune of '" + name_ + "': no " +
                (output ? "pointer or descriptor" : "scalar") + " parameter '" +
                n + "'");
  };
  for (const std::string &k : spec_.key)
    find(k, false);
  for (const std::string &o : spec_.outputs)
    find(o, true);
}

Constants AutotunedKernel::merged(size_t index) const {
  Constants constants = base_;
  for (const auto &kv : spec_.configs.at(index).constants)
    constants[kv.first] = kv.second;
  return constants;
}

JITOptions AutotunedKernel::optionsFor(size_t index) const {
  const TuneConfig &c = spec_.configs.at(index);
  JITOptions o = options_;
  if (c.numWarps)
    o.numWarps = c.numWarps;
  if (c.numStages)
    o.numStages = c.numStages;
  if (c.persistent >= 0)
    o.persistent = c.persistent;
  if (c.warpSpecialize >= 0)
    o.warpSpecialize = c.warpSpecialize;
  return o;
}

Kernel &AutotunedKernel::candidate(size_t index) {
  return jit_.get(source_, name_, merged(index), optionsFor(index));
}

/// Why a candidate with these needs cannot run on a GPU with these limits
/// (empty: it fits). Registers: the carried values alone are a lower bound,
/// so a candidate over 255 would spill whatever ptxas does.
static std::string misfit(const ResourceEstimate &r, const DeviceLimits &l) {
  int smem = r.sharedBytes + r.dynamicSharedBytes;
  if (l.maxSharedPerBlock > 0 && smem > l.maxSharedPerBlock)
    return std::to_string(smem) + " bytes of shared memory, the GPU allows " +
           std::to_string(l.maxSharedPerBlock);
  if (l.maxThreadsPerBlock > 0 && r.numThreads > l.maxThreadsPerBlock)
    return std::to_string(r.numThreads) + " threads, the GPU allows " +
           std::to_string(l.maxThreadsPerBlock);
  constexpr int kMaxRegistersPerThread = 255; // Every sm_80/sm_90 GPU.
  if (r.carriedRegisters > kMaxRegistersPerThread)
    return "at least " + std::to_string(r.carriedRegisters) +
           " registers per thread (loop-carried values), the GPU allows " +
           std::to_string(kMaxRegistersPerThread);
  return "";
}

/// The candidates of `alive` that fit the GPU, from compiles that stop
/// before LLVM (in parallel threads, once per candidate). A candidate whose
/// estimate fails to compile stays: its real compile fails and is logged.
std::vector<size_t> AutotunedKernel::fitting(const std::vector<size_t> &alive,
                                             const std::string &key, bool log) {
  DeviceLimits limits;
  if (limits_)
    limits = *limits_;
  else if (measure_)
    return alive; // A test's stand-in GPU has no limits unless it sets them.
  else
    limits = Device::get().limits();
  estimates_.resize(spec_.configs.size());
  std::vector<std::future<void>> jobs;
  for (size_t i : alive)
    if (!estimates_[i])
      jobs.push_back(std::async(std::launch::async, [this, i] {
        try {
          estimates_[i] = jit_.estimate(source_, name_, merged(i),
                                        optionsFor(i));
        } catch (const std::exception &) {
          estimates_[i] = ResourceEstimate{}; // Fits; compiling tells why.
        }
      }));
  for (auto &j : jobs)
    j.get();
  std::vector<size_t> fit;
  for (size_t i : alive) {
    std::string why = misfit(*estimates_[i], limits);
    if (why.empty())
      fit.push_back(i);
    else if (log)
      tuneLog( "autotune %s [%s]: pruned %s: needs %s\n",
                   name_.c_str(), key.c_str(),
                   spec_.configs[i].describe().c_str(), why.c_str());
  }
  return fit;
}

std::string AutotunedKernel::keyOf(const std::vector<Arg> &args) const {
  LaunchArgs a{args.data(), args.size(), params_};
  std::string key;
  for (const std::string &k : spec_.key)
    key += (key.empty() ? "" : ",") + k + "=" + std::to_string(a[k].intValue());
  return key;
}

std::string AutotunedKernel::recordKeyHex(const std::string &key) const {
  KeyHasher h;
  h.add("kind", "autotune");
  h.add("source", toHex(source_.digest()));
  h.add("kernel", name_);
  for (const auto &kv : base_) {
    h.add("constant.name", kv.first);
    h.add("constant.value", kv.second);
  }
  CodegenOptions::forEachField([&](const char *n, auto field) {
    std::string tag = std::string("options.") + n;
    h.add(tag.c_str(), options_.*field);
  });
  for (const TuneConfig &c : spec_.configs)
    h.add("config", c.describe());
  h.add("key", key);
  h.add("device", deviceName_);
  h.add("version", sparsetile::version());
  return toHex(h.finish());
}

std::string AutotunedKernel::recordPath(const std::string &key) const {
  // Records sit beside the entries, trusted as they are.
  std::string dir = jit_.cache().trustedDirectory();
  return dir.empty() ? "" : dir + "/autotune/" + recordKeyHex(key) + ".txt";
}

/// Record: magic, key digest, winner index, the winner's description, then
/// the SHA-256 of those four lines. Anything else is rejected as corrupt.
bool AutotunedKernel::loadRecord(const std::string &key, size_t &index) const {
  std::string path = recordPath(key), bytes;
  if (path.empty() || !readWholeFile(path, bytes))
    return false;
  std::istringstream in(bytes);
  std::string magic, digest, idx, what, sum;
  if (!std::getline(in, magic) || !std::getline(in, digest) ||
      !std::getline(in, idx) || !std::getline(in, what) ||
      !std::getline(in, sum))
    return false;
  std::string body = magic + "\n" + digest + "\n" + idx + "\n" + what + "\n";
  if (magic != kRecordMagic || digest != recordKeyHex(key) ||
      sum != toHex(Sha256::hash(body)))
    return false;
  char *end = nullptr;
  unsigned long i = std::strtoul(idx.c_str(), &end, 10);
  if (idx.empty() || *end || i >= spec_.configs.size() ||
      spec_.configs[i].describe() != what)
    return false;
  index = i;
  return true;
}

void AutotunedKernel::storeRecord(const std::string &key, size_t index) const {
  std::string path = recordPath(key);
  if (path.empty())
    return;
  std::string body = std::string(kRecordMagic) + "\n" + recordKeyHex(key) +
                     "\n" + std::to_string(index) + "\n" +
                     spec_.configs[index].describe() + "\n";
  std::string dir = path.substr(0, path.rfind('/'));
  std::string file = path.substr(path.rfind('/') + 1);
  // A failed write only costs a retune in the next process.
  writeFileAtomically(dir, file, body + toHex(Sha256::hash(body)) + "\n");
}

/// Times `candidates` with the outputs redirected to scratch copies, in
/// rounds: warm-up launches of each, then repetition r of every candidate in
/// turn. A candidate's median goes to times[i]; one that fails to launch
/// gets -1 (logged). Interleaved because GPU clocks drift while a tuning
/// runs (from idle, the first seconds run slower): timed one after the
/// other, the first candidate measured slow and challengers won on that
/// alone, losing 1-3% to it when both were timed interleaved
/// (bench/sparsedrop/RESULTS.md).
void AutotunedKernel::timeOnGpu(const std::vector<size_t> &candidates,
                                const LaunchArgs &a, CUstream_st *stream,
                                const GridFn &gridFn, std::vector<double> &times,
                                const std::string &key, bool log) {
  const detail::DriverApi &api = detail::driverApi();
  // Scratch copies of each output's whole allocation, so an in-place kernel
  // reads what it would read, and the same offset inside it. The candidates
  // share them: each repetition overwrites what the last one wrote.
  std::vector<Arg> args(a.args, a.args + a.count);
  std::vector<DeviceBuffer> scratch;
  for (const std::string &o : spec_.outputs) {
    for (size_t i = 0; i < a.count && i < a.params.size(); ++i) {
      if (a.params[i].name != o)
        continue;
      CUdeviceptr base = 0;
      size_t bytes = 0;
      detail::checkCu(api.cuMemGetAddressRange(&base, &bytes, args[i].bits()),
                      "autotune: cuMemGetAddressRange of '" + o + "'");
      scratch.emplace_back(bytes);
      detail::checkCu(api.cuMemcpyDtoD(scratch.back().ptr(), base, bytes),
                      "autotune: copying '" + o + "'");
      DevicePtr moved = scratch.back().ptr() + (args[i].bits() - base);
      if (args[i].isTensor())
        args[i] = Arg::tensor2d(moved, args[i].dtype(), args[i].rows(),
                                args[i].cols(), args[i].ld());
      else
        args[i] = args[i].hasDType() ? Arg::ptr(moved, args[i].dtype())
                                     : Arg::untypedPtr(moved);
    }
  }
  struct Run {
    size_t index;
    Kernel *kernel;
    LaunchConfig cfg;
    std::vector<float> ms;
  };
  std::vector<Run> runs;
  for (size_t i : candidates) {
    Dim3 grid = gridFn(merged(i), a);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) {
      times[i] = 0.0; // An empty problem: every candidate launches nothing.
      continue;
    }
    runs.push_back({i, &candidate(i), LaunchConfig(grid, Dim3(0, 1, 1), 0,
                                                   stream), {}});
  }
  auto failed = [&](Run &r, const std::exception &e) {
    times[r.index] = -1.0;
    r.kernel = nullptr;
    if (log)
      tuneLog( "autotune %s [%s]: %s failed: %s\n", name_.c_str(),
                   key.c_str(), spec_.configs[r.index].describe().c_str(),
                   e.what());
  };
  for (int w = 0; w < spec_.warmup; ++w)
    for (Run &r : runs)
      if (r.kernel) {
        try {
          r.kernel->launch(r.cfg, args);
        } catch (const std::exception &e) {
          failed(r, e);
        }
      }
  // Every timed launch starts with a cold L2, as the benches time it, so
  // the tuner ranks candidates the way the benches do. Timed with a warm
  // L2, the tuner kept some tilings that lose in the L2-flushed bench
  // (bench/sparsedrop/RESULTS.md, autotuned against the hard-coded tiling).
  // 128 MiB covers any L2 we target (50 MB on an H100).
  constexpr size_t kFlushBytes = size_t(128) << 20;
  DeviceBuffer flush(kFlushBytes);
  CUevent start, stop;
  detail::checkCu(api.cuEventCreate(&start, 0), "cuEventCreate");
  detail::checkCu(api.cuEventCreate(&stop, 0), "cuEventCreate");
  for (int rep = 0; rep < std::max(1, spec_.repetitions); ++rep) {
    for (Run &r : runs) {
      if (!r.kernel)
        continue;
      try {
        detail::checkCu(api.cuMemsetD8Async(flush.ptr(), (unsigned char)rep,
                                            kFlushBytes, stream),
                        "autotune: flushing L2");
        api.cuEventRecord(start, stream);
        r.kernel->launch(r.cfg, args);
        api.cuEventRecord(stop, stream);
        detail::checkCu(api.cuEventSynchronize(stop), "autotune: timing");
        float ms = 0;
        api.cuEventElapsedTime(&ms, start, stop);
        r.ms.push_back(ms);
      } catch (const std::exception &e) {
        failed(r, e);
      }
    }
  }
  api.cuEventDestroy(start);
  api.cuEventDestroy(stop);
  for (Run &r : runs) {
    if (!r.kernel || r.ms.empty())
      continue;
    std::sort(r.ms.begin(), r.ms.end());
    times[r.index] = r.ms[r.ms.size() / 2];
  }
}

size_t AutotunedKernel::tune(const std::string &key, const LaunchArgs &a,
                             CUstream_st *stream, const GridFn &grid,
                             const PruneFn &prune) {
  bool log = envFlag("SPARSETILE_AUTOTUNE_LOG", false) ||
             logEnabled(LogLevel::Debug);
  std::vector<size_t> alive;
  for (size_t i = 0; i < spec_.configs.size(); ++i)
    if (!prune || prune(spec_.configs[i], a))
      alive.push_back(i);
    else if (log)
      tuneLog( "autotune %s [%s]: pruned %s\n", name_.c_str(),
                   key.c_str(), spec_.configs[i].describe().c_str());
  if (alive.empty())
    throw Error("autotune of '" + name_ + "' [" + key +
                "]: every configuration was pruned");
  if (!envFlag("SPARSETILE_AUTOTUNE", true))
    return alive.front();
  alive = fitting(alive, key, log);
  if (alive.empty())
    throw Error("autotune of '" + name_ + "' [" + key +
                "]: no configuration fits the GPU (SPARSETILE_AUTOTUNE_LOG=1 "
                "shows each one's needs)");

  // Compile the survivors in parallel (the JIT is thread-safe); a candidate
  // that does not compile is skipped, not an error. A test's measure hook
  // needs no compiled kernels.
  std::vector<std::future<void>> builds;
  for (size_t i : alive)
    builds.push_back(std::async(std::launch::async, [this, i, &a] {
      if (!measure_)
        candidate(i).variantFor(a.args, a.count);
    }));
  std::vector<double> times(spec_.configs.size(), -1.0);
  auto failed = [&](std::vector<double> &out, size_t i,
                    const std::exception &e) {
    out[i] = -1.0;
    if (log)
      tuneLog( "autotune %s [%s]: %s failed: %s\n", name_.c_str(),
                   key.c_str(), spec_.configs[i].describe().c_str(), e.what());
  };
  // Times `which` into `out`: the test hook, or interleaved on the GPU.
  auto measureAll = [&](const std::vector<size_t> &which,
                        std::vector<double> &out) {
    if (!measure_)
      return timeOnGpu(which, a, stream, grid, out, key, log);
    for (size_t i : which) {
      try {
        out[i] = measure_(i, a);
      } catch (const std::exception &e) {
        failed(out, i, e);
      }
    }
  };
  TuneProgress progress(name_ + " [" + key + "]", alive.size());
  std::vector<size_t> built;
  for (size_t j = 0; j < alive.size(); ++j) {
    progress.step("compiling", j);
    try {
      builds[j].get();
      built.push_back(alive[j]);
    } catch (const std::exception &e) {
      failed(times, alive[j], e);
    }
  }
  progress.step("timing", built.size());
  measureAll(built, times);
  if (log)
    for (size_t i : built)
      if (times[i] >= 0)
        tuneLog( "autotune %s [%s]: %s %.4f ms\n", name_.c_str(),
                     key.c_str(), spec_.configs[i].describe().c_str(),
                     times[i]);
  size_t best = spec_.configs.size();
  for (size_t i : alive)
    if (times[i] >= 0 &&
        (best == spec_.configs.size() || times[i] < times[best]))
      best = i;
  size_t first = alive.front();
  if (best != first && times[first] >= 0 &&
      times[best] > times[first] * (1.0 - spec_.firstWithin))
    best = first; // Within noise of the default: keep it.
  if (best != first && times[first] >= 0) {
    // A challenger that won the round must win again, timed against the
    // default alone. One tuning decision taken on an outlier kept a tiling
    // 1.64x slower than the default for a whole bench run (a 0.13 ms
    // kernel, where one slow sample of the default moves a median of 5;
    // bench/NOTES.md, "SparseDrop re-measured").
    std::vector<double> again(spec_.configs.size(), -1.0);
    measureAll({first, best}, again);
    bool confirmed = again[best] >= 0 &&
                     (again[first] < 0 ||
                      again[best] <= again[first] * (1.0 - spec_.firstWithin));
    if (log)
      tuneLog(
                   "autotune %s [%s]: confirming %s: %.4f ms against the "
                   "default's %.4f ms: %s\n",
                   name_.c_str(), key.c_str(),
                   spec_.configs[best].describe().c_str(), again[best],
                   again[first], confirmed ? "kept" : "the default stays");
    if (!confirmed)
      best = first;
  }
  lastTimings_ = times;
  if (best == spec_.configs.size())
    throw Error("autotune of '" + name_ + "' [" + key +
                "]: no configuration could run (SPARSETILE_AUTOTUNE_LOG=1 "
                "shows why)");
  storeRecord(key, best);
  if (logEnabled(LogLevel::Info))
    logMessage(LogLevel::Info, "autotune " + name_ + " [" + key + "]: chose " +
                                   spec_.configs[best].describe() + " of " +
                                   std::to_string(alive.size()) +
                                   " candidates");
  return best;
}

size_t AutotunedKernel::choose(const std::vector<Arg> &args,
                               CUstream_st *stream,
                               const LaunchContext *context) {
  if (args.size() != params_.size())
    throw Error("autotune of '" + name_ + "': takes " +
                std::to_string(params_.size()) + " arguments, got " +
                std::to_string(args.size()));
  std::string key = keyOf(args);
  if (context && !context->key.empty())
    key += "|" + context->key;
  const GridFn &grid = context && context->grid ? context->grid : spec_.grid;
  const PruneFn &prune =
      context && context->prune ? context->prune : spec_.prune;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = chosen_.find(key);
  if (it != chosen_.end())
    return it->second;
  if (deviceName_.empty())
    deviceName_ = Device::get().name();
  size_t index = 0;
  LaunchArgs a{args.data(), args.size(), params_};
  // The prune hook is code, not part of the record's key: a recorded winner
  // it now rejects is retuned. With tuning off, records are not read either:
  // SPARSETILE_AUTOTUNE=0 must reproduce the first configuration.
  if (!envFlag("SPARSETILE_AUTOTUNE", true) || !loadRecord(key, index) ||
      (prune && !prune(spec_.configs[index], a)))
    index = tune(key, a, stream, grid, prune);
  chosen_[key] = index;
  return index;
}

void AutotunedKernel::launch(const std::vector<Arg> &args, CUstream_st *stream,
                             const LaunchContext *context) {
  size_t index = choose(args, stream, context);
  LaunchArgs a{args.data(), args.size(), params_};
  const GridFn &gridFn = context && context->grid ? context->grid : spec_.grid;
  Dim3 grid = gridFn(merged(index), a);
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return; // An empty problem launches nothing (CUDA would reject it).
  candidate(index).launch(LaunchConfig(grid, Dim3(0, 1, 1), 0, stream), args);
}

std::vector<double> AutotunedKernel::lastTimings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lastTimings_;
}
