//===- Kernel.cpp - Loaded modules, argument checks, launches -------------===//
//
// Implements Module (cuModuleLoadDataEx with the JIT logs captured, so a bad
// PTX reports why), the argument checker, and Kernel::launch. The checker
// runs on every launch; it is a short loop over the parameters and costs a
// few nanoseconds per argument, which is small next to cuLaunchKernel.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Kernel.h"
#include "DriverApi.h"
#include "sparsetile/runtime/Hash.h"
#include "sparsetile/runtime/LaunchMemory.h"

#include <algorithm>
#include <cinttypes>
#include <mutex>
#include <unordered_map>
#include <cstdio>

using namespace sparsetile;
using namespace sparsetile::rt;
using namespace sparsetile::rt::detail;


std::string Arg::describe() const {
  char buf[64];
  if (isTensor_) {
    std::snprintf(buf, sizeof(buf), "0x%" PRIx64, storage_);
    return std::string(dtypeName(dtype_)) + " tensor [" +
           std::to_string(rows_) + ", " + std::to_string(cols_) + "] (ld " +
           std::to_string(ld_) + ") at " + buf;
  }
  if (isPointer_) {
    std::snprintf(buf, sizeof(buf), "0x%" PRIx64, storage_);
    return (hasDType_ ? std::string("pointer to ") + dtypeName(dtype_)
                      : std::string("untyped pointer")) +
           " " + buf;
  }
  std::string s = std::string(dtypeName(dtype_)) + " scalar";
  if (isInteger())
    s += " " + std::to_string(intValue_);
  return s;
}

//===----------------------------------------------------------------------===//
// Module
//===----------------------------------------------------------------------===//

std::shared_ptr<Module> Module::fromPtx(const std::string &ptx) {
  const DriverApi &api = driverApi();
  Device::get();
  // The driver wants NUL-terminated PTX; std::string guarantees that.
  std::string errorLog(16 * 1024, '\0'), infoLog(16 * 1024, '\0');
  CUjit_option opts[] = {
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {
      errorLog.data(), reinterpret_cast<void *>(uintptr_t(errorLog.size() - 1)),
      infoLog.data(), reinterpret_cast<void *>(uintptr_t(infoLog.size() - 1))};
  CUmodule m = nullptr;
  CUresult r = api.cuModuleLoadDataEx(&m, ptx.c_str(), 4, opts, vals);
  if (r != CUDA_SUCCESS) {
    errorLog.resize(std::strlen(errorLog.c_str()));
    throw Error(
        "loading PTX into the driver (cuModuleLoadDataEx) failed: " +
        cuResultString(r) +
        (errorLog.empty() ? std::string() : "\nJIT error log:\n" + errorLog));
  }
  return std::shared_ptr<Module>(new Module(m));
}

std::shared_ptr<Module> Module::fromCubin(const std::string &cubin) {
  const DriverApi &api = driverApi();
  Device::get();
  CUmodule m = nullptr;
  checkCu(api.cuModuleLoadDataEx(&m, cubin.data(), 0, nullptr, nullptr),
          "loading a cubin (" + std::to_string(cubin.size()) +
              " bytes) with cuModuleLoadDataEx");
  return std::shared_ptr<Module>(new Module(m));
}

Module::~Module() {
  if (module_)
    driverApi().cuModuleUnload(module_);
}

CUfunc_st *Module::function(const std::string &name) const {
  CUfunction f = nullptr;
  checkCu(driverApi().cuModuleGetFunction(&f, module_, name.c_str()),
          "looking up kernel '" + name + "' in its module");
  return f;
}

//===----------------------------------------------------------------------===//
// Argument checks
//===----------------------------------------------------------------------===//

static std::string paramLabel(const CompiledKernel &k, size_t i) {
  return "kernel '" + k.name + "': parameter " + std::to_string(i) + " '" +
         k.params[i].name + "'";
}

static std::string paramType(const KernelParam &p) {
  if (p.isDescriptor)
    return std::string("desc<") + dtypeName(p.dtype) + ">";
  return p.isPointer ? std::string("*") + dtypeName(p.dtype)
                     : std::string(dtypeName(p.dtype));
}

/// What TMA and the descriptor block need of a tensor argument.
static void checkTensor(const CompiledKernel &k, size_t i, const Arg &a) {
  const KernelParam &p = k.params[i];
  if (!a.isTensor())
    throw Error(paramLabel(k, i) + " expects a " + paramType(p) +
                " tensor (Arg::tensor2d) but got " + a.describe());
  if (!argTypeMatches(p.dtype, a.dtype()))
    throw Error(paramLabel(k, i) + " expects " + paramType(p) + " but got " +
                a.describe());
  int64_t esize = dtypeSize(p.dtype);
  if (a.rows() <= 0 || a.cols() <= 0 || a.rows() >= (int64_t(1) << 31) ||
      a.cols() >= (int64_t(1) << 31))
    throw Error(paramLabel(k, i) + ": tensor " + a.describe() +
                " must have 1 to 2^31-1 rows and columns");
  if (a.ld() < a.cols() || a.ld() >= (int64_t(1) << 31))
    throw Error(paramLabel(k, i) + ": tensor " + a.describe() +
                " needs cols <= ld < 2^31");
  if (a.bits() % 16 != 0 || (a.ld() * esize) % 16 != 0)
    throw Error(paramLabel(k, i) + ": tensor " + a.describe() +
                " must start 16-byte aligned with rows a multiple of 16 bytes "
                "apart (TMA's requirement)");
  // TMA stores drop what falls past the width in 16-byte units only.
  if (p.tmaStore && (a.cols() * esize) % 16 != 0)
    throw Error(paramLabel(k, i) + ": tensor " + a.describe() +
                " is written by a TMA store (store_block), which needs a "
                "width of whole 16-byte units (a multiple of " +
                std::to_string(16 / esize) +
                " elements): past any other width it would write up to " +
                std::to_string(16 / esize - 1) + " elements of the padding");
}

void sparsetile::rt::checkArguments(const CompiledKernel &k, const Arg *args,
                                    size_t count) {
  if (count != k.params.size()) {
    std::string sig;
    for (size_t i = 0; i < k.params.size(); ++i)
      sig += (i ? ", " : "") + k.params[i].name + ": " + paramType(k.params[i]);
    throw Error("kernel '" + k.name + "' takes " +
                std::to_string(k.params.size()) + " arguments (" + sig +
                ") but " + std::to_string(count) + " were given");
  }
  for (size_t i = 0; i < count; ++i) {
    const KernelParam &p = k.params[i];
    const Arg &a = args[i];
    if (p.isDescriptor || a.isTensor()) {
      if (!p.isDescriptor)
        throw Error(paramLabel(k, i) + " expects " + paramType(p) +
                    " but got " + a.describe());
      checkTensor(k, i, a);
      continue;
    }
    if (p.isPointer != a.isPointer()) {
      std::string hint = p.isPointer && a.isInteger()
                             ? " (wrap a raw device address with "
                               "Arg::ptr(address, DType))"
                             : "";
      throw Error(paramLabel(k, i) + " expects " + paramType(p) + " but got " +
                  a.describe() + hint);
    }
    if (p.isPointer) {
      if (a.hasDType() && !argTypeMatches(p.dtype, a.dtype()))
        throw Error(paramLabel(k, i) + " expects " + paramType(p) +
                    " but got " + a.describe());
      if (a.bits() % 16 != 0)
        throw Error(paramLabel(k, i) + ": pointer " + a.describe() +
                    " is not 16-byte aligned (compiled kernels assume "
                    "16-byte aligned pointers)");
      continue;
    }
    if (!argTypeMatches(p.dtype, a.dtype()))
      throw Error(paramLabel(k, i) + " expects " + paramType(p) + " but got " +
                  a.describe());
    if (p.divisibleBy16 && a.intValue() % 16 != 0)
      throw Error(paramLabel(k, i) +
                  " was compiled assuming a multiple of "
                  "16 but got " +
                  a.describe());
    if (p.equalToOne && a.intValue() != 1)
      throw Error(paramLabel(k, i) + " was compiled assuming 1 but got " +
                  a.describe());
  }
}

//===----------------------------------------------------------------------===//
// Device limits
//===----------------------------------------------------------------------===//

void sparsetile::rt::checkLaunchLimits(const std::string &name,
                                       const LaunchNeeds &n,
                                       const DeviceLimits &l) {
  // A limit of 0 is unknown and not checked.
  auto check = [&](const std::string &what, uint64_t need, int limit,
                   const std::string &hint) {
    if (limit > 0 && need > uint64_t(limit))
      throw Error("kernel '" + name + "': " + what + " " +
                  std::to_string(need) + " exceeds the device's limit of " +
                  std::to_string(limit) + hint + "; nothing was launched");
  };
  const char axes[] = "xyz";
  unsigned block[3] = {n.block.x, n.block.y, n.block.z};
  unsigned grid[3] = {n.grid.x, n.grid.y, n.grid.z};
  uint64_t threads = uint64_t(block[0]) * block[1] * block[2];
  if (threads == 0)
    throw Error("kernel '" + name + "': a block of 0 threads (block " +
                std::to_string(block[0]) + "x" + std::to_string(block[1]) +
                "x" + std::to_string(block[2]) + "); nothing was launched");
  check("threads per block", threads, l.maxThreadsPerBlock, "");
  for (int i = 0; i < 3; ++i)
    check(std::string("block dimension ") + axes[i], block[i],
          l.maxBlockDim[i], "");
  for (int i = 0; i < 3; ++i)
    check(std::string("grid dimension ") + axes[i], grid[i], l.maxGridDim[i],
          "");
  check("shared memory per block (bytes, " +
            std::to_string(n.staticSharedBytes) + " static + " +
            std::to_string(n.dynamicSharedBytes) + " dynamic)",
        uint64_t(n.staticSharedBytes) + n.dynamicSharedBytes,
        l.maxSharedPerBlock, " (use smaller tiles or fewer stages)");
  if (n.registersPerThread > 0)
    check("registers per block (" + std::to_string(n.registersPerThread) +
              " per thread x " + std::to_string(threads) + " threads)",
          uint64_t(n.registersPerThread) * threads, l.maxRegistersPerBlock,
          " (use fewer warps or smaller tiles)");
  if (n.maxThreadsForFunction > 0 && threads > uint64_t(n.maxThreadsForFunction))
    throw Error("kernel '" + name + "': threads per block " +
                std::to_string(threads) + " exceeds the " +
                std::to_string(n.maxThreadsForFunction) +
                " this kernel can run with (" +
                std::to_string(n.registersPerThread) +
                " registers per thread); nothing was launched");
}

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

Kernel::Kernel(CompiledKernel info, std::shared_ptr<Module> module)
    : name_(info.name), params_(info.params), info_(std::move(info)),
      module_(std::move(module)) {
  if (!module_)
    throw Error("kernel '" + name_ + "': no module");
  function_ = module_->function(info_.name);
}

Kernel::Kernel(std::string name, std::vector<KernelParam> params,
               VariantFactory factory, bool specialize)
    : name_(std::move(name)), params_(std::move(params)),
      factory_(std::move(factory)) {
  if (!factory_)
    throw Error("kernel '" + name_ + "': no variant factory");
  info_.name = name_;
  info_.params = params_;
  if (specialize)
    intParams_ = specializableParams(params_);
}

std::vector<int>
Kernel::specializableParams(const std::vector<KernelParam> &params) {
  std::vector<int> out;
  for (size_t i = 0; i < params.size() && out.size() < 32; ++i)
    if (!params[i].isPointer &&
        (params[i].dtype == DType::I32 || params[i].dtype == DType::I64))
      out.push_back(int(i));
  return out;
}

const CompiledKernel &Kernel::info() const {
  if (factory_)
    throw Error("kernel '" + name_ +
                "' specializes per launch; use variant(mask).info()");
  return info_;
}

uint64_t Kernel::divisibilityMask(const Arg *args, size_t count) const {
  uint64_t mask = 0;
  for (size_t j = 0; j < intParams_.size(); ++j) {
    size_t i = size_t(intParams_[j]);
    if (i >= count || !args[i].isInteger())
      continue;
    if (args[i].intValue() % 16 == 0)
      mask |= uint64_t(1) << j;
    else if (args[i].intValue() == 1)
      mask |= uint64_t(1) << (32 + j);
  }
  return mask;
}

Kernel &Kernel::variant(uint64_t mask) {
  if (!factory_)
    return *this;
  std::lock_guard<std::mutex> lock(variantsMutex_);
  for (auto &v : variants_)
    if (v.first == mask)
      return *v.second;
  // Built under the lock: concurrent first launches of one kernel wait for
  // one compile instead of duplicating it.
  std::unique_ptr<Kernel> k = factory_(mask);
  Kernel &ref = *k;
  variants_.emplace_back(mask, std::move(k));
  return ref;
}

Kernel &Kernel::variantFor(const Arg *args, size_t count) {
  if (!factory_)
    return *this;
  if (count != params_.size())
    checkArguments(info_, args, count); // Throws the count message.
  return variant(divisibilityMask(args, count));
}

void Kernel::launch(const LaunchConfig &config, const Arg *args, size_t count) {
  if (factory_) {
    // Check against the declared signature first so a bad argument is
    // reported without compiling anything.
    checkArguments(info_, args, count);
    variantFor(args, count).launch(config, args, count);
    return;
  }
  checkArguments(info_, args, count);
  Dim3 block = config.block;
  if (block.x == 0) {
    if (info_.numThreads <= 0)
      throw Error("kernel '" + name_ +
                  "' declares no block size: pass LaunchConfig::block");
    block = Dim3(unsigned(info_.numThreads), 1, 1);
  }
  const DriverApi &api = driverApi();
  Device &device = Device::get();
  unsigned dyn = std::max<unsigned>(config.dynamicSharedBytes,
                                    unsigned(info_.dynamicSharedBytes));
  // Every device limit is checked before anything is set or launched, so a
  // launch the driver would refuse says which limit and by how much.
  if (numRegs_.load(std::memory_order_acquire) < 0) {
    int regs = 0, shared = 0, maxThreads = 0;
    checkCu(api.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS,
                                   function_),
            "kernel '" + name_ + "': querying its registers");
    checkCu(api.cuFuncGetAttribute(&shared,
                                   CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                   function_),
            "kernel '" + name_ + "': querying its shared memory");
    checkCu(api.cuFuncGetAttribute(&maxThreads,
                                   CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                   function_),
            "kernel '" + name_ + "': querying its block size limit");
    staticShared_.store(shared, std::memory_order_relaxed);
    maxThreads_.store(maxThreads, std::memory_order_relaxed);
    numRegs_.store(regs, std::memory_order_release);
  }
  if (info_.clusterSize > 1 && config.grid.x % uint32_t(info_.clusterSize))
    throw Error("kernel '" + name_ + "' runs in clusters of " +
                std::to_string(info_.clusterSize) +
                " programs (@cluster): its grid's x must be a multiple of " +
                std::to_string(info_.clusterSize) + ", got " +
                std::to_string(config.grid.x));
  LaunchNeeds needs;
  // A persistent kernel's grid is recomputed below to fit the device.
  needs.grid = info_.persistent ? Dim3() : config.grid;
  needs.block = block;
  needs.staticSharedBytes = staticShared_.load(std::memory_order_relaxed);
  needs.dynamicSharedBytes = dyn;
  needs.registersPerThread = numRegs_.load(std::memory_order_relaxed);
  needs.maxThreadsForFunction = maxThreads_.load(std::memory_order_relaxed);
  checkLaunchLimits(name_, needs, device.limits());
  if (dyn > maxDynamicShared_.load(std::memory_order_relaxed)) {
    // Above 48 KB of dynamic shared memory a kernel must opt in.
    checkCu(api.cuFuncSetAttribute(
                function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                int(dyn)),
            "kernel '" + name_ + "': allowing " + std::to_string(dyn) +
                " bytes of dynamic shared memory");
    maxDynamicShared_.store(dyn, std::memory_order_relaxed);
  }
  // A persistent kernel runs about one program per SM (as many as fit at
  // once) over the grid asked for, which it receives as hidden parameters
  // after the declared ones: the grid's X and Y, and its tile queue.
  Dim3 grid = config.grid;
  int32_t askedGrid[2] = {0, 0};
  if (info_.persistent) {
    uint64_t total = uint64_t(grid.x) * grid.y;
    if (grid.z != 1 || total > uint64_t(INT32_MAX))
      throw Error("kernel '" + name_ +
                  "' is @persistent: its grid must be X x Y x 1 with X * Y "
                  "below 2^31, got " +
                  std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" +
                  std::to_string(grid.z));
    int perSM = occupancy_.load(std::memory_order_relaxed);
    if (perSM <= 0) {
      checkCu(api.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                  &perSM, function_, int(block.x * block.y * block.z), dyn),
              "kernel '" + name_ + "': occupancy query");
      perSM = std::max(perSM, 1);
      occupancy_.store(perSM, std::memory_order_relaxed);
    }
    uint64_t programs = std::min<uint64_t>(
        total, uint64_t(perSM) * uint64_t(Device::get().multiprocessorCount()));
    askedGrid[0] = int32_t(grid.x);
    askedGrid[1] = int32_t(grid.y);
    grid = Dim3(unsigned(std::max<uint64_t>(programs, 1)), 1, 1);
  }
  // Descriptor blocks and tile queues are handed out differently while the
  // stream is captured into a graph (LaunchMemory.h).
  bool capturing = false;
  bool needsMemory = info_.persistent;
  for (size_t i = 0; i < count && !needsMemory; ++i)
    needsMemory = args[i].isTensor();
  if (needsMemory)
    capturing = streamIsCapturing(config.stream);
  DevicePtr queue =
      info_.persistent ? tileQueue(config.stream, capturing) : 0;
  size_t hidden = info_.persistent ? 3 : 0;
  void *params[64];
  std::vector<void *> heapParams;
  void **p = params;
  if (count + hidden > 64) {
    heapParams.resize(count + hidden);
    p = heapParams.data();
  }
  if (hidden) {
    p[count] = &askedGrid[0];
    p[count + 1] = &askedGrid[1];
    p[count + 2] = &queue;
  }
  // Descriptor arguments pass the address of their device block.
  DevicePtr blocks[64];
  std::vector<DevicePtr> heapBlocks;
  DevicePtr *slots = blocks;
  if (count > 64) {
    heapBlocks.resize(count);
    slots = heapBlocks.data();
  }
  for (size_t i = 0; i < count; ++i) {
    if (args[i].isTensor()) {
      slots[i] = descriptorBlock(info_.params[i], args[i], config.stream,
                                 capturing);
      p[i] = &slots[i];
    } else {
      p[i] = args[i].storage();
    }
  }
  CUresult r = api.cuLaunchKernel(function_, grid.x, grid.y, grid.z, block.x,
                                  block.y, block.z, dyn, config.stream, p,
                                  nullptr);
  if (r != CUDA_SUCCESS)
    throw CudaError("launching kernel '" + name_ + "' (grid " +
                std::to_string(config.grid.x) + "x" +
                std::to_string(config.grid.y) + "x" +
                std::to_string(config.grid.z) + ", block " +
                std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
                std::to_string(block.z) + ", " + std::to_string(dyn) +
                " B dynamic shared) failed: " + cuResultString(r));
}
