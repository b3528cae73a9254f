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
#include <string>
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

} // namespace sparsetile::ops::detail

#endif // SPARSETILE_OPS_OPSCOMMON_H
