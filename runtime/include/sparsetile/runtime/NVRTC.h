//===- NVRTC.h - CUDA C++ to PTX with NVRTC, loaded at run time -*- C++ -*-===//
//
// NVRTC compiles CUDA C++ source to PTX in process. The runtime uses it for
// independent reference kernels in GPU tests (so a tile kernel is checked
// against code that did not go through our compiler) and exposes it through
// JIT::getCuda. libnvrtc.so.13 is loaded with dlopen on first use, so
// nothing links it.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_NVRTC_H
#define SPARSETILE_RUNTIME_NVRTC_H

#include "sparsetile/runtime/Error.h"

#include <string>
#include <vector>

namespace sparsetile {
namespace rt {

/// What NVRTC produced.
struct NvrtcOutput {
  std::string ptx;
  /// The mangled entry name for `entryName` (equal to it for extern "C").
  std::string loweredName;
  /// Warnings (the log of a successful compile).
  std::string log;
};

/// Compiles `source` for `arch` ("sm_90" or "sm_90a"; PTX is generated for
/// the matching compute_XY). `entryName` is a __global__ function's name
/// expression (e.g. "saxpy" or "scale<float>"); its lowered name is
/// returned. Extra NVRTC options (e.g. "-DBLOCK=256") go in `options`.
/// Throws Error with the compile log on failure.
NvrtcOutput compileCudaToPtx(const std::string &source,
                             const std::string &entryName,
                             const std::string &arch,
                             const std::vector<std::string> &options = {},
                             const std::string &filename = "kernel.cu");

/// "major.minor" of the loaded NVRTC; throws if it cannot be loaded.
std::string nvrtcVersionString();

/// True when libnvrtc loads. Never throws.
bool nvrtcAvailable(std::string *whyNot = nullptr);

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_NVRTC_H
