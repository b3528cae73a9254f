//===- JitLink.h - PTX to cubin with nvJitLink ------------------*- C++ -*-===//
//
// nvJitLink assembles PTX into a cubin for a given arch without a GPU or a
// driver. Cache entries store the cubin next to the PTX so that a warm
// process loads machine code directly instead of paying the driver's PTX JIT.
// libnvJitLink.so.13 is loaded with dlopen on first use.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_JITLINK_H
#define SPARSETILE_RUNTIME_JITLINK_H

#include "sparsetile/runtime/Error.h"

#include <string>
#include <vector>

namespace sparsetile {
namespace rt {

/// Assembles `ptx` into a cubin for `arch` ("sm_90", "sm_90a"). Throws Error
/// with nvJitLink's error log on failure. `options` are extra nvJitLink
/// options (e.g. "-O3", "-lineinfo"). `infoLog`, when given, receives
/// nvJitLink's info log: ptxas's advisories, such as the performance ones
/// (C75xx) that tests must keep away.
std::string linkPtxToCubin(const std::string &ptx, const std::string &arch,
                           const std::vector<std::string> &options = {},
                           std::string *infoLog = nullptr);

/// "major.minor" of the loaded nvJitLink (the CUDA toolkit version used for
/// cubins; part of cache keys). Throws if it cannot be loaded.
std::string jitLinkVersionString();

/// True when libnvJitLink loads. Never throws.
bool jitLinkAvailable(std::string *whyNot = nullptr);

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_JITLINK_H
