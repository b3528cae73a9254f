//===- LaunchMemory.cpp - Descriptor blocks, tile queues, scratch ---------===//
//
// See LaunchMemory.h for why each exists and how it stays graph-safe. The
// rule throughout: nothing a captured graph points at is ever freed or
// rewritten, and nothing is allocated, copied synchronously or synchronized
// while the launch stream is capturing.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/LaunchMemory.h"
#include "DriverApi.h"
#include "sparsetile/runtime/Hash.h"
#include "sparsetile/runtime/Kernel.h"

#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

using namespace sparsetile;
using namespace sparsetile::rt;
using namespace sparsetile::rt::detail;

bool sparsetile::rt::streamIsCapturing(CUstream_st *stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = driverApi().cuStreamIsCapturing(stream, &status);
  // The legacy stream reports CUDA_ERROR_STREAM_CAPTURE_IMPLICIT while
  // another stream captures in global mode: it is not capturing itself, but
  // nothing may be enqueued on it either, and the launch will say so.
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
    return false;
  checkCu(r, "cuStreamIsCapturing");
  // An invalidated capture is still a capture: allocating now would only
  // add a second error to the first.
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

namespace {

std::mutex statsMu;
LaunchMemoryStats stats;

//===----------------------------------------------------------------------===//
// Descriptor blocks
//===----------------------------------------------------------------------===//

/// Everything a descriptor block is computed from: the tensor argument and
/// the copy box the kernel declares for it.
struct BlockKey {
  uint64_t base;
  int64_t rows, cols, ld;
  int32_t dtype, boxRows, boxCols, boxSwizzle;
  bool operator==(const BlockKey &o) const {
    return base == o.base && rows == o.rows && cols == o.cols && ld == o.ld &&
           dtype == o.dtype && boxRows == o.boxRows && boxCols == o.boxCols &&
           boxSwizzle == o.boxSwizzle;
  }
};
struct BlockKeyHash {
  size_t operator()(const BlockKey &k) const {
    uint64_t h = k.base;
    for (uint64_t v : {uint64_t(k.rows), uint64_t(k.cols), uint64_t(k.ld),
                       uint64_t(k.dtype) << 40 | uint64_t(k.boxRows) << 20 |
                           uint64_t(k.boxCols) | uint64_t(k.boxSwizzle) << 60})
      hashCombine(h, v);
    return size_t(h);
  }
};

constexpr size_t kBlock = 256;
/// Blocks per slab: 1 MiB of device memory and as much pinned host memory,
/// allocated on the first descriptor launch, so that the usual training step
/// (a few hundred distinct tensors) never needs a second slab, and never a
/// new one during a capture.
constexpr size_t kSlabBlocks = 4096;
/// Until a graph has been captured, the cache is emptied (after a device
/// synchronization) when it holds this many blocks, as a process that keeps
/// making new tensors would otherwise grow it without bound. Once a graph
/// may point at blocks, they are kept for the life of the process.
constexpr size_t kRecycleAt = 4 * kSlabBlocks;

struct Slab {
  DevicePtr dev = 0;
  unsigned char *host = nullptr;
};

struct Block {
  DevicePtr dev;
  const unsigned char *host; ///< The bytes, in pinned memory, immutable.
  bool pending; ///< Built during a capture: not yet uploaded eagerly.
};

class DescriptorArena {
public:
  DevicePtr get(const KernelParam &p, const Arg &a, CUstream stream,
                bool capturing);

private:
  void encode(const KernelParam &p, const Arg &a, unsigned char *bytes);
  std::pair<DevicePtr, unsigned char *> newSlot(bool capturing);
  void uploadNow(const Block &b);
  void uploadInGraph(const Block &b, CUstream stream);

  std::mutex mu_;
  std::unordered_map<BlockKey, Block, BlockKeyHash> blocks_;
  std::vector<Slab> slabs_;
  size_t used_ = 0; ///< Slots handed out over all slabs, in order.
  bool captured_ = false;
  CUstream upload_ = nullptr;
};

void DescriptorArena::encode(const KernelParam &p, const Arg &a,
                             unsigned char *bytes) {
  std::memset(bytes, 0, kBlock);
  if (p.boxRows > 0) {
    CUtensorMap map;
    cuuint64_t dims[2] = {cuuint64_t(a.cols()), cuuint64_t(a.rows())};
    cuuint64_t strides[1] = {cuuint64_t(a.ld() * dtypeSize(p.dtype))};
    cuuint32_t box[2] = {cuuint32_t(p.boxCols), cuuint32_t(p.boxRows)};
    cuuint32_t elementStrides[2] = {1, 1};
    CUresult r = driverApi().cuTensorMapEncodeTiled(
        &map,
        p.dtype == DType::BF16  ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
        : p.dtype == DType::F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                : CU_TENSOR_MAP_DATA_TYPE_UINT16,
        2, reinterpret_cast<void *>(a.bits()), dims, strides, box,
        elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE,
        // wgmma operands are swizzled at their row width; sparse metadata
        // is copied plainly (boxSwizzle 0).
        p.boxSwizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
        : p.boxSwizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                             : CU_TENSOR_MAP_SWIZZLE_NONE,
        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
      throw Error("encoding the TMA descriptor of parameter '" + p.name +
                  "' for " + a.describe() + " (box " +
                  std::to_string(p.boxRows) + " x " +
                  std::to_string(p.boxCols) + ") failed: " +
                  cuResultString(r));
    std::memcpy(bytes, &map, sizeof(map));
  }
  int64_t fields[4] = {int64_t(a.bits()), a.rows(), a.cols(), a.ld()};
  std::memcpy(bytes + 128, fields, sizeof(fields));
}

std::pair<DevicePtr, unsigned char *> DescriptorArena::newSlot(bool capturing) {
  const DriverApi &api = driverApi();
  if (used_ == slabs_.size() * kSlabBlocks) {
    if (capturing)
      throw Error("a CUDA graph capture needs a new descriptor slab (" +
                  std::to_string(used_) +
                  " tensor descriptors are cached): run the captured work "
                  "once before capturing it; nothing was launched");
    if (used_ >= kRecycleAt && !captured_) {
      // No graph points at any block: wait for the launches that may still
      // read them, then reuse the slabs from the start.
      checkCu(api.cuCtxSynchronize(),
              "synchronizing before reusing descriptor memory");
      blocks_.clear();
      used_ = 0;
    } else {
      Slab s;
      checkCu(api.cuMemAlloc(&s.dev, kSlabBlocks * kBlock),
              "allocating a descriptor slab");
      void *host = nullptr;
      CUresult r = api.cuMemHostAlloc(&host, kSlabBlocks * kBlock, 0);
      if (r != CUDA_SUCCESS) {
        api.cuMemFree(s.dev);
        checkCu(r, "allocating a descriptor slab's host mirror");
      }
      s.host = static_cast<unsigned char *>(host);
      slabs_.push_back(s);
    }
  }
  const Slab &s = slabs_[used_ / kSlabBlocks];
  size_t at = (used_ % kSlabBlocks) * kBlock;
  ++used_;
  return {s.dev + at, s.host + at};
}

void DescriptorArena::uploadNow(const Block &b) {
  // On a stream of our own (non-blocking: it does not wait for the legacy
  // stream's work), waiting for that one 256-byte copy only; afterwards
  // launches on every stream see the bytes.
  const DriverApi &api = driverApi();
  if (!upload_)
    checkCu(api.cuStreamCreate(&upload_, CU_STREAM_NON_BLOCKING),
            "creating the descriptor upload stream");
  checkCu(api.cuMemcpyHtoDAsync(b.dev, b.host, kBlock, upload_),
          "uploading a descriptor block");
  checkCu(api.cuStreamSynchronize(upload_), "uploading a descriptor block");
  std::lock_guard<std::mutex> lock(statsMu);
  ++stats.descriptorUploads;
}

void DescriptorArena::uploadInGraph(const Block &b, CUstream stream) {
  // A copy node of the graph, ahead of the launch that reads the block: it
  // rewrites the same immutable bytes at every replay.
  checkCu(driverApi().cuMemcpyHtoDAsync(b.dev, b.host, kBlock, stream),
          "recording a descriptor upload in the captured graph");
  std::lock_guard<std::mutex> lock(statsMu);
  ++stats.descriptorUploads;
  ++stats.capturedUploads;
}

DevicePtr DescriptorArena::get(const KernelParam &p, const Arg &a,
                               CUstream stream, bool capturing) {
  BlockKey key{a.bits(),         a.rows(),  a.cols(),  a.ld(),
               int32_t(p.dtype), p.boxRows, p.boxCols, p.boxSwizzle};
  std::lock_guard<std::mutex> lock(mu_);
  captured_ = captured_ || capturing;
  auto it = blocks_.find(key);
  if (it == blocks_.end()) {
    // Encoded before a slot is taken, so a bad tensor leaves no slot used.
    alignas(64) unsigned char bytes[kBlock];
    encode(p, a, bytes);
    auto [dev, host] = newSlot(capturing);
    std::memcpy(host, bytes, kBlock);
    it = blocks_.emplace(key, Block{dev, host, /*pending=*/true}).first;
    std::lock_guard<std::mutex> s(statsMu);
    stats.descriptorBlocks = blocks_.size();
  }
  Block &b = it->second;
  if (b.pending) {
    if (capturing) {
      uploadInGraph(b, stream); // Each graph that reads it uploads it.
    } else {
      uploadNow(b);
      b.pending = false;
    }
  }
  return b.dev;
}

DescriptorArena &arena() {
  // Never destroyed: graphs and in-flight launches may outlive static
  // destructors, and the driver frees everything at exit.
  static DescriptorArena *a = new DescriptorArena;
  return *a;
}

//===----------------------------------------------------------------------===//
// Tile queues
//===----------------------------------------------------------------------===//

/// Queues per slab, zeroed when the slab is made. A queue is zero again at
/// the end of every launch that uses it (its last program resets it), so a
/// stream's queue serves all its launches, and a captured launch's queue all
/// the graph's replays.
constexpr size_t kQueueSlab = 4096, kQueueBytes = 8;

class QueuePool {
public:
  DevicePtr get(CUstream stream, bool capturing) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!capturing) {
      auto it = byStream_.find(stream);
      if (it != byStream_.end())
        return it->second;
    }
    if (used_ == slabs_.size() * kQueueSlab) {
      if (capturing)
        throw Error("a CUDA graph capture needs a new slab of persistent-"
                    "kernel tile queues (" + std::to_string(used_) +
                    " in use): run the captured work once before capturing "
                    "it; nothing was launched");
      const DriverApi &api = driverApi();
      DevicePtr dev = 0;
      checkCu(api.cuMemAlloc(&dev, kQueueSlab * kQueueBytes),
              "allocating tile queues");
      checkCu(api.cuMemsetD8(dev, 0, kQueueSlab * kQueueBytes),
              "zeroing tile queues");
      slabs_.push_back(dev);
    }
    DevicePtr q = slabs_[used_ / kQueueSlab] + (used_ % kQueueSlab) * kQueueBytes;
    ++used_;
    if (!capturing)
      byStream_.emplace(stream, q);
    std::lock_guard<std::mutex> s(statsMu);
    ++stats.tileQueues;
    return q;
  }

private:
  std::mutex mu_;
  std::vector<DevicePtr> slabs_;
  size_t used_ = 0;
  std::unordered_map<CUstream, DevicePtr> byStream_;
};

QueuePool &queues() {
  static QueuePool *q = new QueuePool; // Never destroyed, as the arena.
  return *q;
}

//===----------------------------------------------------------------------===//
// Scratch
//===----------------------------------------------------------------------===//

std::mutex scratchMu;
ScratchAllocator allocator;
std::map<std::pair<CUstream, int>, DeviceBuffer> *ownScratch =
    new std::map<std::pair<CUstream, int>, DeviceBuffer>;

} // namespace

DevicePtr sparsetile::rt::descriptorBlock(const KernelParam &p, const Arg &a,
                                          CUstream_st *stream, bool capturing) {
  return arena().get(p, a, stream, capturing);
}

DevicePtr sparsetile::rt::detail::tileQueue(CUstream_st *stream,
                                            bool capturing) {
  return queues().get(stream, capturing);
}

void sparsetile::rt::setScratchAllocator(const ScratchAllocator &a) {
  if (a.alloc && !a.free)
    throw Error("setScratchAllocator: an allocator needs a free function");
  std::lock_guard<std::mutex> lock(scratchMu);
  allocator = a.alloc ? a : ScratchAllocator{};
}

Scratch::Scratch(size_t bytes, CUstream_st *stream, int slot,
                 const char *what)
    : bytes_(bytes), stream_(stream) {
  bool capturing = streamIsCapturing(stream);
  ScratchAllocator a;
  {
    std::lock_guard<std::mutex> lock(scratchMu);
    a = allocator;
  }
  if (a.alloc && (capturing || !a.onlyWhileCapturing)) {
    // Given back through the same allocator, whatever is set by then.
    from_ = a;
    ptr_ = a.alloc(bytes, stream, a.ctx);
    if (!ptr_) {
      from_ = ScratchAllocator{};
      throw Error(std::string(what) + ": the scratch allocator returned no "
                  "memory for " + std::to_string(bytes) + " bytes");
    }
    if (ptr_ % 16) {
      a.free(ptr_, bytes, stream, a.ctx);
      from_ = ScratchAllocator{};
      throw Error(std::string(what) + ": the scratch allocator returned an "
                  "address that is not 16-byte aligned");
    }
    return;
  }
  std::lock_guard<std::mutex> lock(scratchMu);
  DeviceBuffer &b = (*ownScratch)[{stream, slot}];
  if (b.size() < bytes) {
    if (capturing)
      throw Error(std::string(what) + " needs " + std::to_string(bytes) +
                  " bytes of scratch while the stream is captured into a "
                  "CUDA graph: set an allocator (sparsetile.set_allocator, "
                  "st_set_allocator) or run the work once before capturing; "
                  "nothing was launched");
    // Launches on this stream may still read the old buffer.
    if (b.size())
      Device::get().synchronize();
    b = DeviceBuffer(bytes);
  }
  ptr_ = b.ptr();
}

Scratch::~Scratch() {
  if (from_.free && ptr_)
    from_.free(ptr_, bytes_, stream_, from_.ctx);
}

LaunchMemoryStats sparsetile::rt::launchMemoryStats() {
  std::lock_guard<std::mutex> lock(statsMu);
  return stats;
}
