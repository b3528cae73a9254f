//===- Driver.h - The CUDA driver API, loaded at run time -------*- C++ -*-===//
//
// The runtime talks to the GPU through the CUDA driver API, which it loads with
// dlopen("libcuda.so.1") on first use instead of linking it: CI and build
// machines have no driver, and every executable that links the runtime must
// still start there (and report GPU tests as skipped). This header exposes
// RAII wrappers for the pieces the runtime and its tests need: the device and
// its primary context, streams, events and device memory.
//
// The handle types are forward declarations of the structs cuda.h uses, so
// this header does not need cuda.h, yet its handles convert to CUstream etc.
// in code that includes cuda.h.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_DRIVER_H
#define SPARSETILE_RUNTIME_DRIVER_H

#include "sparsetile/runtime/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
struct CUmod_st;
struct CUfunc_st;

namespace sparsetile {
namespace rt {

/// A device address (same representation as CUdeviceptr).
using DevicePtr = unsigned long long;

/// True when libcuda.so.1 loads, cuInit succeeds and there is at least one
/// device. Never throws; on false, `*whyNot` (if given) says why. The answer
/// is computed once per process.
bool gpuAvailable(std::string *whyNot = nullptr);

/// Resolves a driver entry point by its cuda.h base name ("cuLaunchKernel")
/// for the CUDA version the runtime was built against. Throws when the driver
/// or the symbol is missing. Meant for benches that compare against bare
/// driver calls.
void *driverEntryPoint(const char *name);

/// The driver's version as reported by cuDriverGetVersion (e.g. 13000).
int driverVersion();

/// The GPU the runtime uses: ordinal 0, or $SPARSETILE_DEVICE. Its primary
/// context is retained for the life of the process and made current on every
/// thread that calls into the runtime.
/// What a device allows one launch (queried once with cuDeviceGetAttribute).
/// checkLaunchLimits() (Kernel.h) holds every launch to these.
struct DeviceLimits {
  int maxThreadsPerBlock = 0;
  int maxBlockDim[3] = {0, 0, 0};
  int maxGridDim[3] = {0, 0, 0};
  /// Static plus dynamic shared memory one block may use once it opts in
  /// (227 KB on an H100).
  int maxSharedPerBlock = 0;
  int maxRegistersPerBlock = 0;
};

class Device {
public:
  /// The process-wide device. Throws Error when there is no usable GPU.
  static Device &get();

  int ordinal() const { return ordinal_; }
  const std::string &name() const { return name_; }
  int computeMajor() const { return major_; }
  int computeMinor() const { return minor_; }
  /// "sm_90", "sm_80", ... from the compute capability.
  const std::string &arch() const { return arch_; }
  int multiprocessorCount() const { return smCount_; }
  size_t totalMemory() const { return totalMem_; }
  const DeviceLimits &limits() const { return limits_; }
  CUctx_st *context() const { return ctx_; }

  /// Makes the primary context current on the calling thread (cheap after
  /// the first call on a thread).
  void makeCurrent() const;
  /// cuCtxSynchronize, with errors from earlier asynchronous work reported.
  void synchronize() const;

  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

private:
  Device();
  int ordinal_ = 0;
  std::string name_, arch_;
  int major_ = 0, minor_ = 0, smCount_ = 0;
  size_t totalMem_ = 0;
  DeviceLimits limits_;
  CUctx_st *ctx_ = nullptr;
};

/// The arch string for a compute capability: (9, 0) -> "sm_90".
std::string archFromComputeCapability(int major, int minor);

/// An owned, non-blocking CUDA stream.
class Stream {
public:
  Stream();
  ~Stream();
  Stream(Stream &&other) noexcept : stream_(other.stream_) {
    other.stream_ = nullptr;
  }
  Stream &operator=(Stream &&other) noexcept;
  Stream(const Stream &) = delete;
  Stream &operator=(const Stream &) = delete;

  CUstream_st *handle() const { return stream_; }
  void synchronize() const;

private:
  CUstream_st *stream_ = nullptr;
};

/// A CUDA event for GPU-side timing.
class Event {
public:
  Event();
  ~Event();
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;

  /// Records on `stream` (nullptr: the legacy default stream).
  void record(CUstream_st *stream = nullptr);
  void synchronize() const;
  /// Milliseconds between two recorded, completed events.
  static float elapsedMs(const Event &start, const Event &end);
  CUevent_st *handle() const { return event_; }

private:
  CUevent_st *event_ = nullptr;
};

/// Owned device memory (cuMemAlloc/cuMemFree). cuMemAlloc returns 256-byte
/// aligned addresses, which satisfies the compiler's 16-byte assumption.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// Allocates `bytes` bytes (uninitialized).
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  /// Allocates and uploads a host vector.
  template <typename T> static DeviceBuffer fromHost(const std::vector<T> &v) {
    DeviceBuffer b(v.size() * sizeof(T));
    b.copyFromHost(v.data(), v.size() * sizeof(T));
    return b;
  }

  DevicePtr ptr() const { return ptr_; }
  size_t size() const { return size_; }

  /// Synchronous copies; `offset` and `bytes` are checked against size().
  void copyFromHost(const void *src, size_t bytes, size_t offset = 0);
  void copyToHost(void *dst, size_t bytes, size_t offset = 0) const;
  /// Sets every byte (0xFF makes NaN-poisoned floats); synchronous, as the
  /// copies are, so work on any stream afterwards sees the bytes.
  void fill(uint8_t byte);

  /// Downloads the whole buffer as `size() / sizeof(T)` elements.
  template <typename T> std::vector<T> toHost() const {
    std::vector<T> v(size_ / sizeof(T));
    copyToHost(v.data(), v.size() * sizeof(T));
    return v;
  }

private:
  DevicePtr ptr_ = 0;
  size_t size_ = 0;
};

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_DRIVER_H
