//===- Autotune.h - Pick a kernel's best configuration per shape -*- C++
//-*-===//
//
// The runtime half of autotuning, as Triton's `@triton.autotune(configs=...,
// key=[...])`: a kernel comes with candidate configurations (constants such
// as tile sizes, plus num_warps / num_stages) and the names of the arguments
// whose values form the key. The first launch for a new key compiles the
// candidates, times each with CUDA events on scratch copies of the output
// buffers (a losing candidate never writes the caller's outputs), remembers
// the winner in memory and on disk, and launches it. A second process reads
// the winner from disk and times nothing.
//
// A winner is stored under the cache directory as autotune/<key>.txt, keyed
// by the source digest, kernel, base constants, options, the candidate list,
// the key values, the GPU's name and sparsetile's version; the file carries
// its own checksum, and a file that fails it is ignored (and retuned over).
//
// SPARSETILE_AUTOTUNE=0 skips tuning (and reads no records) and uses the
// first candidate that survives pruning; SPARSETILE_AUTOTUNE_LOG=1 prints
// every candidate's time.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_AUTOTUNE_H
#define SPARSETILE_RUNTIME_AUTOTUNE_H

#include "sparsetile/runtime/JIT.h"

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace sparsetile {
namespace rt {

/// One candidate: constant values that override the kernel's base
/// constants, and code-generation options (0 keeps the base option).
struct TuneConfig {
  Constants constants;
  int numWarps = 0;
  int numStages = 0;
  int persistent = -1;     ///< 0 or 1 overrides `@persistent`; -1 keeps it.
  int warpSpecialize = -1; ///< Likewise for `@warp_specialize`.

  /// "BM=128 BN=256 num_warps=8": stable text, part of the record key.
  std::string describe() const;
};

/// The arguments of one launch, as the tuner's hooks see them.
struct LaunchArgs {
  const Arg *args;
  size_t count;
  const std::vector<KernelParam> &params;
  /// The argument named `name`; throws if the kernel has no such parameter.
  const Arg &operator[](const std::string &name) const;
};

/// The grid of a candidate, from its merged constants and the arguments.
using GridFn = std::function<Dim3(const Constants &, const LaunchArgs &)>;
/// Whether a candidate may run on these arguments; false drops it before it
/// is compiled.
using PruneFn = std::function<bool(const TuneConfig &, const LaunchArgs &)>;

/// What a launcher knows beyond the kernel's arguments (an op's problem:
/// say M, when only the grid carries it): text that joins the key, and a
/// grid and prune hook that replace the spec's for this launch. One `key`
/// must always come with the same grid and prune.
struct LaunchContext {
  std::string key;
  GridFn grid;   ///< Empty: the spec's.
  PruneFn prune; ///< Empty: the spec's.
};

/// What to tune and how to launch a candidate.
struct AutotuneSpec {
  std::vector<TuneConfig> configs;
  /// Integer scalar parameters whose values form the key (e.g. M, N, K).
  std::vector<std::string> key;
  /// Pointer parameters the kernel writes. While tuning, each is replaced by
  /// a scratch copy of the allocation holding it (cuMemGetAddressRange), so
  /// in-place kernels read the right data and the caller's buffers are not
  /// written until the winner runs.
  std::vector<std::string> outputs;
  /// The grid of a candidate (a LaunchContext may replace it).
  GridFn grid;
  /// Drops a candidate before it is compiled (e.g. a tile larger than the
  /// problem); true keeps it. Optional.
  PruneFn prune;
  int warmup = 1;      ///< Untimed launches per candidate.
  int repetitions = 5; ///< Timed launches; the median is kept.
  /// Another candidate replaces the first surviving one only when it is
  /// faster by more than this fraction. The first is the default a launcher
  /// chose by hand (the ops list it first), and a median of 5 varies by
  /// about 1% from run to run: without the margin the tuner sometimes kept
  /// a challenger that had won on noise and ran 2% slower than the default
  /// when both were timed interleaved (bench/sparsedrop/RESULTS.md).
  /// A challenger that wins is then timed once more against the first alone
  /// and kept only if it wins again by the same margin.
  double firstWithin = 0.015;
};

/// How a candidate is measured, in milliseconds; a negative time (or an
/// exception) means it could not run and is skipped. Unset (the default),
/// the candidates are compiled and timed on the GPU; tests set it.
using TuneMeasure = std::function<double(size_t index, const LaunchArgs &)>;

/// The spec a kernel's `@autotune(...)` declares (Language.md): its
/// configurations, key and outputs, and a grid that evaluates the declared
/// expressions with the candidate's constants (`constants` of the signature
/// supply the defaults) and the launch's integer arguments.
AutotuneSpec declaredSpec(const KernelSignature &signature);

/// An autotuned kernel. Thread-safe; `launch` is cheap once a key is known.
class AutotunedKernel {
public:
  AutotunedKernel(JIT &jit, KernelSource source, std::string kernelName,
                  Constants baseConstants, JITOptions options,
                  AutotuneSpec spec);

  /// Picks (or recalls) the configuration for these arguments' key, then
  /// launches it on `stream`.
  void launch(const std::vector<Arg> &args, CUstream_st *stream = nullptr,
              const LaunchContext *context = nullptr);

  /// The index into spec().configs chosen for these arguments (tuning now
  /// if the key is new).
  size_t choose(const std::vector<Arg> &args, CUstream_st *stream = nullptr,
                const LaunchContext *context = nullptr);

  /// The kernel compiled for candidate `index`.
  Kernel &candidate(size_t index);

  const AutotuneSpec &spec() const { return spec_; }
  const std::string &name() const { return name_; }
  /// The run-time parameters every candidate takes.
  const std::vector<KernelParam> &params() const { return params_; }
  /// The key text of a set of arguments ("M=4096,N=4096,K=1024").
  std::string keyOf(const std::vector<Arg> &args) const;
  /// The record file for a key (under the cache directory's autotune/).
  std::string recordPath(const std::string &key) const;

  /// Replaces how candidates are measured (tests), and the GPU name that
  /// is part of the record key (defaults to the current device's).
  void setMeasure(TuneMeasure m) { measure_ = std::move(m); }
  void setDeviceName(std::string name) { deviceName_ = std::move(name); }
  /// The limits candidates are pruned against before they are compiled
  /// (default: the current GPU's; with a measure hook and no limits set,
  /// nothing is pruned for resources).
  void setDeviceLimits(DeviceLimits limits) { limits_ = limits; }
  /// Timings of the last tuning, one per candidate (-1: pruned or failed).
  std::vector<double> lastTimings() const;

private:
  void timeOnGpu(const std::vector<size_t> &candidates, const LaunchArgs &a,
                 CUstream_st *stream, const GridFn &grid,
                 std::vector<double> &times, const std::string &key, bool log);
  size_t tune(const std::string &key, const LaunchArgs &a, CUstream_st *s,
              const GridFn &grid, const PruneFn &prune);
  Constants merged(size_t index) const;
  JITOptions optionsFor(size_t index) const;
  std::vector<size_t> fitting(const std::vector<size_t> &alive,
                              const std::string &key, bool log);
  std::string recordKeyHex(const std::string &key) const;
  bool loadRecord(const std::string &key, size_t &index) const;
  void storeRecord(const std::string &key, size_t index) const;

  JIT &jit_;
  KernelSource source_;
  std::string name_;
  Constants base_;
  JITOptions options_;
  AutotuneSpec spec_;
  std::vector<KernelParam> params_;
  TuneMeasure measure_;
  std::string deviceName_;
  std::optional<DeviceLimits> limits_;
  /// Per candidate, once: its needs (kept for every key).
  std::vector<std::optional<ResourceEstimate>> estimates_;

  mutable std::mutex mutex_;
  std::map<std::string, size_t> chosen_;
  std::vector<double> lastTimings_;
};

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_AUTOTUNE_H
