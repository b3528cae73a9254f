//===- DriverApi.h - Driver entry points resolved at run time ---*- C++ -*-===//
//
// Internal to the runtime. The table of CUDA driver functions, resolved
// through cuGetProcAddress_v2 for the CUDA version of our cuda.h, so each
// pointer has exactly the ABI that cuda.h's prototype (after its _v2/_v4
// macro renames) describes. Only the runtime's .cpp files include cuda.h.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_LIB_DRIVERAPI_H
#define SPARSETILE_RUNTIME_LIB_DRIVERAPI_H

#include "sparsetile/runtime/Error.h"

#include <cuda.h>
#include <string>

namespace sparsetile {
namespace rt {
namespace detail {

// X-macro: every driver function the runtime calls. The name is the cuda.h
// base name; decltype(&name) picks up the versioned prototype cuda.h maps it
// to.
#define SPARSETILE_DRIVER_FUNCTIONS(X)                                         \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceTotalMem)                                                          \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuCtxSetCurrent)                                                           \
  X(cuCtxSynchronize)                                                          \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy)                                                           \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamIsCapturing)                                                       \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy)                                                            \
  X(cuEventRecord)                                                             \
  X(cuEventSynchronize)                                                        \
  X(cuEventElapsedTime)                                                        \
  X(cuMemAlloc)                                                                \
  X(cuMemFree)                                                                 \
  X(cuMemcpyHtoD)                                                              \
  X(cuMemcpyHtoDAsync)                                                         \
  X(cuMemHostAlloc)                                                            \
  X(cuMemcpyDtoH)                                                              \
  X(cuMemcpyDtoD)                                                              \
  X(cuMemGetAddressRange)                                                      \
  X(cuMemsetD8)                                                                \
  X(cuMemsetD8Async)                                                           \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuFuncGetAttribute)                                                        \
  X(cuFuncSetAttribute)                                                        \
  X(cuLaunchKernel)                                                            \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                               \
  X(cuTensorMapEncodeTiled)

/// The resolved driver. Obtained through driverApi(), which throws when the
/// driver cannot be loaded or initialized.
struct DriverApi {
#define SPARSETILE_DECLARE(name) decltype(&::name) name = nullptr;
  SPARSETILE_DRIVER_FUNCTIONS(SPARSETILE_DECLARE)
#undef SPARSETILE_DECLARE
};

/// The loaded, cuInit-ed driver. Throws Error when unavailable.
const DriverApi &driverApi();

/// Throws Error("<what>: CUDA_ERROR_X (description)") unless `r` is success.
void checkCu(CUresult r, const std::string &what);

/// "CUDA_ERROR_X (description)" for a result code.
std::string cuResultString(CUresult r);

} // namespace detail
} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_LIB_DRIVERAPI_H
