//===- OpsCommon.h - What every launcher in runtime/ops checks -*- C++ -*-===//
//
// The argument checks and helpers the ops' launchers share, so an error
// reads the same from every op ("sparsetile <op>: <what>") and a new op
// starts from them instead of copying them.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_OPS_OPSCOMMON_H
#define SPARSETILE_OPS_OPSCOMMON_H

#include "sparsetile/runtime/Autotune.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/JIT.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace sparsetile::ops::detail {

/// Kernels index with i32: sizes, strides and offsets must stay below this.
constexpr int64_t kI32Limit = int64_t(1) << 31;

/// The embedded dsl_examples/ file `name` (e.g. "sparsedrop.tile") as a
/// KernelSource, built once per name and kept for the process; with
/// $SPARSETILE_OPS_SOURCE_DIR set, that directory's file `name` instead
/// (throws rt::Error if it cannot be read).
const rt::KernelSource &embeddedSource(const std::string &name);

/// Throws rt::Error("sparsetile <op>: <what>").
[[noreturn]] void fail(const std::string &op, const std::string &what);

/// Launches `kernel` with a tiling the caller fixed, described by
/// `tiling` ("128 x 256 x 64, 8 warps"). The launch compiles the variant
/// these arguments need first; a compile failure becomes `op`'s
/// rt::CompileError naming the tiling, and nothing runs. What a tiling needs of
/// shared memory is the compiler's to count (convert-tile-to-gpu's plan; the
/// kernel's total is in its #tile.launch, and a tiling past the target's
/// limit does not compile), so the ops do not restate it.
void launchTiling(const std::string &op, const std::string &tiling,
                  rt::Kernel &kernel, const rt::LaunchConfig &config,
                  const std::vector<rt::Arg> &args);

/// A device pointer the kernels may read with 16-byte accesses: non-null
/// and 16-byte aligned.
void checkPointer(const std::string &op, const char *name, rt::DevicePtr p);

/// An op's kernel autotuned over `configs`, kept for the process per
/// (source, kernel, base constants, options, configs, outputs). Put the
/// op's fixed tiling first: SPARSETILE_AUTOTUNE=0 then keeps it. An op
/// drops the candidates its problem cannot run before calling this, and
/// passes its problem's key and grid with each launch (rt::LaunchContext):
///
///   rt::LaunchContext ctx{"M=..,N=..", gridOfConstants};
///   tunedKernel(src, "gemm", base, {}, configs, {"c"}).launch(args, s, &ctx);
rt::AutotunedKernel &tunedKernel(const rt::KernelSource &source,
                                 const std::string &kernel,
                                 const rt::Constants &base,
                                 const rt::JITOptions &options,
                                 const std::vector<rt::TuneConfig> &configs,
                                 const std::vector<std::string> &outputs);

/// `configs` without repeats (two requests an op resolves to one tiling),
/// first occurrences kept in order.
std::vector<rt::TuneConfig>
uniqueConfigs(const std::vector<rt::TuneConfig> &configs);

/// An integer constant of a candidate (`BLOCK` of {"BLOCK": "1024"}).
int64_t constantOf(const rt::Constants &c, const std::string &name);

/// The bytes of the values a launch decision depends on, as a hash-map key.
/// The ops decide once per problem (the candidate tilings, the tuned choice,
/// the grid) and a repeated call with the same shapes looks the decision up
/// instead of rebuilding the tuner's strings and candidate lists, which cost
/// tens of microseconds of host time a call (bench/NOTES.md, "The sparse
/// layers in a training step").
class DecisionKey {
public:
  template <typename T> DecisionKey &add(const T &v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char *>(&v), sizeof(v));
    return *this;
  }
  DecisionKey &add(const std::string &s) {
    add(s.size());
    bytes_ += s;
    return *this;
  }
  const std::string &str() const { return bytes_; }

private:
  std::string bytes_;
};

/// A thread-safe map from DecisionKey to what was decided. Entries are never
/// removed: a process sees a handful of shapes.
template <typename V> class Decisions {
public:
  bool find(const DecisionKey &k, V &out) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(k.str());
    if (it == map_.end())
      return false;
    out = it->second;
    return true;
  }
  void put(const DecisionKey &k, const V &v) {
    std::lock_guard<std::mutex> lock(mu_);
    map_.emplace(k.str(), v);
  }

private:
  std::mutex mu_;
  std::unordered_map<std::string, V> map_;
};

/// A decided launch: the kernel (owned by the JIT, for the process) and its
/// grid; the caller sets the stream.
struct Chosen {
  rt::Kernel *kernel = nullptr;
  rt::LaunchConfig config;
};

} // namespace sparsetile::ops::detail

#endif // SPARSETILE_OPS_OPSCOMMON_H
