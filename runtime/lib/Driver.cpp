//===- Driver.cpp - The CUDA driver API, loaded at run time ---------------===//
//
// Loads libcuda.so.1 with dlopen on first use and resolves every entry point
// through cuGetProcAddress_v2, asking for the ABI of the cuda.h we compiled
// against. Linking libcuda instead would make every runtime executable fail
// to start on machines without a driver. Also implements the RAII wrappers
// of Driver.h (device + primary context, stream, event, device memory).
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Driver.h"
#include "DriverApi.h"
#include "DynamicLibrary.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

using namespace sparsetile::rt;
using namespace sparsetile::rt::detail;

namespace {

using GetProcAddressFn = CUresult (*)(const char *, void **, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult *);

/// The outcome of loading the driver, computed once.
struct DriverLoad {
  DriverApi api;
  GetProcAddressFn getProcAddress = nullptr;
  bool ok = false;
  std::string error; ///< Why it is unusable, when !ok.
  int deviceCount = 0;
};

void *resolve(GetProcAddressFn gpa, const char *name, std::string &error) {
  void *fn = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  CUresult r =
      gpa(name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS || !fn) {
    error = "the CUDA driver has no entry point '" + std::string(name) +
            "' for CUDA " + std::to_string(CUDA_VERSION) + " (driver too old?)";
    return nullptr;
  }
  return fn;
}

DriverLoad loadDriver() {
  DriverLoad d;
  std::string tried;
  void *handle = detail::openFirstLibrary({"libcuda.so.1"}, tried);
  if (!handle) {
    d.error = "cannot load the CUDA driver:" + tried;
    return d;
  }
  d.getProcAddress =
      reinterpret_cast<GetProcAddressFn>(dlsym(handle, "cuGetProcAddress_v2"));
  if (!d.getProcAddress) {
    d.error = "the CUDA driver has no cuGetProcAddress_v2 (driver older than "
              "CUDA 12?)";
    return d;
  }
  // Each entry point is looked up by the exact symbol cuda.h maps its name
  // to (cuMemAlloc -> cuMemAlloc_v2), so the ABI matches the prototype we
  // call through. cuGetProcAddress at CUDA_VERSION would instead return the
  // newest variant, e.g. cuCtxSynchronize_v2(CUcontext) for the
  // cuCtxSynchronize(void) prototype, which crashes.
#define SPARSETILE_STR2(x) #x
#define SPARSETILE_STR(x) SPARSETILE_STR2(x)
#define SPARSETILE_RESOLVE(name)                                               \
  d.api.name =                                                                 \
      reinterpret_cast<decltype(d.api.name)>(dlsym(handle, SPARSETILE_STR(name))); \
  if (!d.api.name) {                                                           \
    d.error = std::string("the CUDA driver has no entry point '")              \
              + SPARSETILE_STR(name) + "' (driver too old?)";                  \
    return d;                                                                  \
  }
  SPARSETILE_DRIVER_FUNCTIONS(SPARSETILE_RESOLVE)
#undef SPARSETILE_RESOLVE

  CUresult r = d.api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr;
    d.api.cuGetErrorName(r, &name);
    d.error = std::string("cuInit failed: ") + (name ? name : "unknown error");
    return d;
  }
  r = d.api.cuDeviceGetCount(&d.deviceCount);
  if (r != CUDA_SUCCESS || d.deviceCount == 0) {
    d.error = "the CUDA driver loaded but reports no GPU";
    return d;
  }
  d.ok = true;
  return d;
}

const DriverLoad &driverLoad() {
  // A function-local static is initialized once, thread-safely.
  static const DriverLoad load = loadDriver();
  return load;
}

} // namespace

const DriverApi &sparsetile::rt::detail::driverApi() {
  const DriverLoad &d = driverLoad();
  if (!d.ok)
    throw CudaError("no usable GPU: " + d.error);
  return d.api;
}

std::string sparsetile::rt::detail::cuResultString(CUresult r) {
  const DriverLoad &d = driverLoad();
  const char *name = nullptr, *desc = nullptr;
  if (d.api.cuGetErrorName)
    d.api.cuGetErrorName(r, &name);
  if (d.api.cuGetErrorString)
    d.api.cuGetErrorString(r, &desc);
  std::string s = name ? name : ("CUresult " + std::to_string(int(r)));
  if (desc)
    s += std::string(" (") + desc + ")";
  return s;
}

void sparsetile::rt::detail::checkCu(CUresult r, const std::string &what) {
  if (r != CUDA_SUCCESS)
    throw CudaError(what + " failed: " + cuResultString(r));
}

bool sparsetile::rt::gpuAvailable(std::string *whyNot) {
  try {
    const DriverLoad &d = driverLoad();
    if (!d.ok && whyNot)
      *whyNot = d.error;
    return d.ok;
  } catch (const std::exception &e) {
    if (whyNot)
      *whyNot = e.what();
    return false;
  }
}

void *sparsetile::rt::driverEntryPoint(const char *name) {
  driverApi(); // Throws with the reason when there is no driver.
  std::string error;
  void *fn = resolve(driverLoad().getProcAddress, name, error);
  if (!fn)
    throw CudaError(error);
  return fn;
}

int sparsetile::rt::driverVersion() {
  int v = 0;
  checkCu(driverApi().cuDriverGetVersion(&v), "cuDriverGetVersion");
  return v;
}

std::string sparsetile::rt::archFromComputeCapability(int major, int minor) {
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

Device::Device() {
  const DriverApi &api = driverApi();
  if (const char *env = std::getenv("SPARSETILE_DEVICE"))
    ordinal_ = std::atoi(env);
  int count = 0;
  checkCu(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (ordinal_ < 0 || ordinal_ >= count)
    throw Error("SPARSETILE_DEVICE=" + std::to_string(ordinal_) +
                " but there are " + std::to_string(count) + " devices");
  CUdevice dev;
  checkCu(api.cuDeviceGet(&dev, ordinal_), "cuDeviceGet");
  char name[256] = {0};
  checkCu(api.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  name_ = name;
  checkCu(api.cuDeviceGetAttribute(
              &major_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
          "querying the compute capability");
  checkCu(api.cuDeviceGetAttribute(
              &minor_, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
          "querying the compute capability");
  checkCu(api.cuDeviceGetAttribute(
              &smCount_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev),
          "querying the SM count");
  checkCu(api.cuDeviceTotalMem(&totalMem_, dev), "cuDeviceTotalMem");
  struct Limit {
    int *value;
    CUdevice_attribute attribute;
  } limits[] = {
      {&limits_.maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&limits_.maxBlockDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X},
      {&limits_.maxBlockDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y},
      {&limits_.maxBlockDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z},
      {&limits_.maxGridDim[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X},
      {&limits_.maxGridDim[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y},
      {&limits_.maxGridDim[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z},
      {&limits_.maxSharedPerBlock,
       CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
      {&limits_.maxRegistersPerBlock,
       CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
  };
  for (const Limit &l : limits)
    checkCu(api.cuDeviceGetAttribute(l.value, l.attribute, dev),
            "querying the device's launch limits");
  arch_ = archFromComputeCapability(major_, minor_);
  // The primary context is shared with the CUDA runtime and other libraries
  // (PyTorch, cuBLAS), so our allocations interoperate with theirs. It is
  // retained for the life of the process and never released: releasing it at
  // exit would race with other static destructors.
  checkCu(api.cuDevicePrimaryCtxRetain(&ctx_, dev),
          "retaining the primary context of device " +
              std::to_string(ordinal_));
}

Device &Device::get() {
  static Device device; // Throws (and retries next call) when no GPU.
  device.makeCurrent();
  return device;
}

void Device::makeCurrent() const {
  // Per thread: the context is only set once per thread that uses us.
  thread_local CUctx_st *current = nullptr;
  if (current == ctx_)
    return;
  checkCu(driverApi().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
  current = ctx_;
}

void Device::synchronize() const {
  makeCurrent();
  checkCu(driverApi().cuCtxSynchronize(), "cuCtxSynchronize");
}

//===----------------------------------------------------------------------===//
// Stream, Event
//===----------------------------------------------------------------------===//

Stream::Stream() {
  Device::get();
  checkCu(driverApi().cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING),
          "cuStreamCreate");
}

Stream::~Stream() {
  if (stream_)
    driverApi().cuStreamDestroy(stream_); // Errors are not actionable here.
}

Stream &Stream::operator=(Stream &&other) noexcept {
  if (this != &other) {
    if (stream_)
      driverApi().cuStreamDestroy(stream_);
    stream_ = other.stream_;
    other.stream_ = nullptr;
  }
  return *this;
}

void Stream::synchronize() const {
  checkCu(driverApi().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

Event::Event() {
  Device::get();
  checkCu(driverApi().cuEventCreate(&event_, CU_EVENT_DEFAULT),
          "cuEventCreate");
}

Event::~Event() {
  if (event_)
    driverApi().cuEventDestroy(event_);
}

void Event::record(CUstream_st *stream) {
  checkCu(driverApi().cuEventRecord(event_, stream), "cuEventRecord");
}

void Event::synchronize() const {
  checkCu(driverApi().cuEventSynchronize(event_), "cuEventSynchronize");
}

float Event::elapsedMs(const Event &start, const Event &end) {
  float ms = 0;
  checkCu(driverApi().cuEventElapsedTime(&ms, start.event_, end.event_),
          "cuEventElapsedTime");
  return ms;
}

//===----------------------------------------------------------------------===//
// DeviceBuffer
//===----------------------------------------------------------------------===//

DeviceBuffer::DeviceBuffer(size_t bytes) : size_(bytes) {
  Device::get();
  if (bytes == 0)
    return;
  checkCu(driverApi().cuMemAlloc(&ptr_, bytes),
          "cuMemAlloc(" + std::to_string(bytes) + " bytes)");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_)
    driverApi().cuMemFree(ptr_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : ptr_(other.ptr_), size_(other.size_) {
  other.ptr_ = 0;
  other.size_ = 0;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    if (ptr_)
      driverApi().cuMemFree(ptr_);
    ptr_ = other.ptr_;
    size_ = other.size_;
    other.ptr_ = 0;
    other.size_ = 0;
  }
  return *this;
}

static void checkRange(size_t offset, size_t bytes, size_t size,
                       const char *what) {
  if (offset > size || bytes > size - offset)
    throw Error(std::string(what) + ": range [" + std::to_string(offset) +
                ", " + std::to_string(offset + bytes) +
                ") is outside the buffer of " + std::to_string(size) +
                " bytes");
}

void DeviceBuffer::copyFromHost(const void *src, size_t bytes, size_t offset) {
  checkRange(offset, bytes, size_, "DeviceBuffer::copyFromHost");
  if (!bytes)
    return;
  Device::get();
  checkCu(driverApi().cuMemcpyHtoD(ptr_ + offset, src, bytes),
          "cuMemcpyHtoD(" + std::to_string(bytes) + " bytes)");
}

void DeviceBuffer::copyToHost(void *dst, size_t bytes, size_t offset) const {
  checkRange(offset, bytes, size_, "DeviceBuffer::copyToHost");
  if (!bytes)
    return;
  Device::get();
  checkCu(driverApi().cuMemcpyDtoH(dst, ptr_ + offset, bytes),
          "cuMemcpyDtoH(" + std::to_string(bytes) + " bytes)");
}

void DeviceBuffer::fill(uint8_t byte) {
  if (!size_)
    return;
  Device::get();
  // cuMemsetD8 on device memory returns before the bytes are set, queued
  // on the legacy stream, which a non-blocking stream does not wait for: a
  // kernel launched right after on one raced its own poisoning (seen as a
  // NaN in GpuTest.SaxpyFromNvrtcMatchesCpu with four test processes
  // sharing the GPU).
  checkCu(driverApi().cuMemsetD8(ptr_, byte, size_), "cuMemsetD8");
  checkCu(driverApi().cuStreamSynchronize(nullptr), "cuStreamSynchronize");
}
