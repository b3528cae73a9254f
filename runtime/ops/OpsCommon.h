//===- OpsCommon.h - What every launcher in runtime/ops checks -*- C++ -*-===//
//
// The argument checks and helpers the ops' launchers share, so an error
// reads the same from every op ("sparsetile <op>: <what>") and a new op
// starts from them instead of copying them.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_OPS_OPSCOMMON_H
#define SPARSETILE_OPS_OPSCOMMON_H

#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/JIT.h"

#include <cstdint>
#include <string>

namespace sparsetile::ops::detail {

/// Kernels index with i32: sizes, strides and offsets must stay below this.
constexpr int64_t kI32Limit = int64_t(1) << 31;

/// The embedded dsl_examples/ file `name` (e.g. "sparsedrop.tile") as a
/// KernelSource, built once per name and kept for the process.
const rt::KernelSource &embeddedSource(const std::string &name);

/// Throws rt::Error("sparsetile <op>: <what>").
[[noreturn]] void fail(const std::string &op, const std::string &what);

/// A device pointer the kernels may read with 16-byte accesses: non-null
/// and 16-byte aligned.
void checkPointer(const std::string &op, const char *name, rt::DevicePtr p);

} // namespace sparsetile::ops::detail

#endif // SPARSETILE_OPS_OPSCOMMON_H
