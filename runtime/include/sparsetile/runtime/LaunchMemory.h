//===- LaunchMemory.h - Device memory a launch needs, graph-safe -*- C++ -*-===//
//
// Three kinds of device memory back a launch besides its arguments:
//  - the 256-byte descriptor block of each `desc<T>` argument (a TMA tensor
//    map and the tensor's shape), cached by content for the process;
//  - the tile queue of a persistent kernel (two u32, zero between launches);
//  - temporary scratch an op fills and reads within its own launches (the
//    SparseDrop kept-block lists).
//
// All three work while the launch stream is being captured into a CUDA
// graph (torch.cuda.graph, cudaStreamBeginCapture), where allocating,
// synchronous copies and synchronization are forbidden:
//  - descriptor blocks live in preallocated slabs with a pinned host mirror;
//    a block first built during a capture is uploaded by an asynchronous
//    copy node of the graph, from its mirror, which never changes;
//  - each persistent launch captured gets a queue of its own from a slab of
//    pre-zeroed queues (graphs may be replayed on any stream);
//  - scratch comes from the allocator the user sets (setScratchAllocator,
//    st_set_allocator, sparsetile.set_allocator: torch's caching allocator),
//    as triton.set_allocator does, at least while capturing.
// What cannot be had during a capture (a new slab) is an Error raised before
// anything of that launch is enqueued: run the step once before capturing,
// as torch.cuda.graph's documentation asks for every library.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_LAUNCHMEMORY_H
#define SPARSETILE_RUNTIME_LAUNCHMEMORY_H

#include "sparsetile/runtime/Driver.h"

#include <cstddef>

namespace sparsetile {
namespace rt {

/// Whether work enqueued on `stream` is being captured into a graph
/// (cuStreamIsCapturing). False without a GPU.
bool streamIsCapturing(CUstream_st *stream);

/// Device memory for temporaries, taken and given back in stream order: a
/// block freed after the launches that use it are enqueued may be handed out
/// again only to work ordered after them (torch's caching allocator, CUDA's
/// stream-ordered allocator). `alloc` returns 0 on failure.
struct ScratchAllocator {
  DevicePtr (*alloc)(size_t bytes, CUstream_st *stream, void *ctx) = nullptr;
  void (*free)(DevicePtr ptr, size_t bytes, CUstream_st *stream,
               void *ctx) = nullptr;
  void *ctx = nullptr;
  /// Use it only while the stream is capturing; eager launches keep the
  /// runtime's own per-stream buffers (no call-backs on the hot path).
  bool onlyWhileCapturing = false;
};

/// Sets the process's scratch allocator (alloc == nullptr: none, the
/// runtime's own buffers, which refuse to grow during a capture).
void setScratchAllocator(const ScratchAllocator &allocator);

/// Scratch memory for work enqueued on `stream`, for the lifetime of this
/// object (free it after enqueueing the last launch that uses it). Without
/// an allocator (or outside a capture with onlyWhileCapturing) it is the
/// runtime's buffer for (stream, slot), grown on demand; a caller uses one
/// slot per buffer it needs at once. Throws Error during a capture when no
/// allocator is set and the buffer would have to grow.
class Scratch {
public:
  Scratch(size_t bytes, CUstream_st *stream, int slot, const char *what);
  ~Scratch();
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  DevicePtr ptr() const { return ptr_; }

private:
  DevicePtr ptr_ = 0;
  size_t bytes_ = 0;
  CUstream_st *stream_ = nullptr;
  ScratchAllocator from_; ///< Set when taken from an allocator.
};

/// Counts of what the launch memory holds, for tests and benches.
struct LaunchMemoryStats {
  size_t descriptorBlocks = 0;  ///< Cached blocks.
  size_t descriptorUploads = 0; ///< Uploads since the process started.
  size_t capturedUploads = 0;   ///< Of those, copy nodes in captured graphs.
  size_t tileQueues = 0;        ///< Queues handed out.
};
LaunchMemoryStats launchMemoryStats();

namespace detail {
/// The tile queue a persistent kernel launched on `stream` uses: the
/// stream's own outside a capture, a fresh one for each captured launch.
DevicePtr tileQueue(CUstream_st *stream, bool capturing);
} // namespace detail

} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_LAUNCHMEMORY_H
