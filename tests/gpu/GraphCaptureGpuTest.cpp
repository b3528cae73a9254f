//===- GraphCaptureGpuTest.cpp - Launches captured into CUDA graphs -------===//
//
// The runtime's launch memory (LaunchMemory.h) under stream capture: a
// `desc<T>` argument first seen while capturing is uploaded by a copy node of
// the graph (the replay reads the right tensor), a block first built during a
// capture is uploaded again before an eager launch reads it, persistent
// kernels captured twice get queues of their own, and scratch taken while
// capturing comes from the allocator the user set. Skipped without a GPU.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/JIT.h"
#include "sparsetile/runtime/LaunchMemory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <vector>

using namespace sparsetile;
using namespace sparsetile::rt;

namespace {

// The driver's graph API, through driverEntryPoint (the tests do not include
// cuda.h): cuStreamBeginCapture (its newest form takes the capture mode),
// cuStreamEndCapture, cuGraphInstantiateWithFlags, cuGraphLaunch.
struct GraphApi {
  using Begin = int (*)(CUstream_st *, int);
  using End = int (*)(CUstream_st *, void **);
  using Instantiate = int (*)(void **, void *, unsigned long long);
  using Launch = int (*)(void *, CUstream_st *);
  using Destroy = int (*)(void *);
  Begin begin = reinterpret_cast<Begin>(driverEntryPoint("cuStreamBeginCapture"));
  End end = reinterpret_cast<End>(driverEntryPoint("cuStreamEndCapture"));
  Instantiate instantiate = reinterpret_cast<Instantiate>(
      driverEntryPoint("cuGraphInstantiateWithFlags"));
  Launch launch = reinterpret_cast<Launch>(driverEntryPoint("cuGraphLaunch"));
  Destroy destroyExec =
      reinterpret_cast<Destroy>(driverEntryPoint("cuGraphExecDestroy"));
  Destroy destroyGraph =
      reinterpret_cast<Destroy>(driverEntryPoint("cuGraphDestroy"));
};

/// Captures what `body` enqueues on `s` (global mode, as torch.cuda.graph
/// does) into an executable graph.
void *capture(const GraphApi &g, Stream &s, const std::function<void()> &body) {
  EXPECT_EQ(g.begin(s.handle(), /*CU_STREAM_CAPTURE_MODE_GLOBAL*/ 0), 0);
  EXPECT_TRUE(streamIsCapturing(s.handle()));
  body();
  void *graph = nullptr, *exec = nullptr;
  EXPECT_EQ(g.end(s.handle(), &graph), 0) << "the capture was invalidated";
  EXPECT_EQ(g.instantiate(&exec, graph, 0), 0);
  g.destroyGraph(graph);
  return exec;
}

const char *kCopyRows = R"(
@num_warps(4)
kernel copy_rows(a: desc<f16>, out: *f16, rows: i32, const R: i32 = 16,
                 const C: i32 = 64) {
  let r0 = program_id(0) * R;
  let t = load_block(a, [r0, 0], [R, C]);
  let r = r0 + arange(0, R);
  let c = arange(0, C);
  store(out + r[:, None] * C + c[None, :], t, mask=r[:, None] < rows);
}
@persistent(1)
@num_warps(4)
kernel stamp(out: *i32, v: i32) {
  store(out + program_id(1) * num_programs(0) + program_id(0), v);
}
)";

class GraphCaptureGpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
  }
};

std::vector<uint16_t> halves(size_t n, uint16_t seed) {
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = uint16_t(0x3c00 + ((i * 7 + seed) % 1021)); // finite f16 values
  return v;
}

} // namespace

TEST_F(GraphCaptureGpuTest, DescriptorFirstSeenInACaptureIsUploadedByTheGraph) {
  GraphApi g;
  static const KernelSource src = KernelSource::fromText(kCopyRows, "g.tile");
  Kernel &k = JIT::global().get(src, "copy_rows");
  const int rows = 40, cols = 64;
  std::vector<uint16_t> host = halves(size_t(rows) * cols, 3);
  DeviceBuffer a = DeviceBuffer::fromHost(host), out(host.size() * 2);
  Stream s;
  auto launch = [&] {
    k.launch(LaunchConfig(Dim3(3), Dim3(0), 0, s.handle()),
             {Arg::tensor2d(a.ptr(), DType::F16, rows, cols, cols),
              Arg::ptr(out.ptr(), DType::F16), Arg::i32(rows)});
  };
  // Compiled and loaded first, on another tensor of the same shape: the
  // capture then only launches (as after torch.cuda.graph's warm-up).
  DeviceBuffer warm(host.size() * 2), warmOut(host.size() * 2);
  k.launch(LaunchConfig(Dim3(3), Dim3(0), 0, s.handle()),
           {Arg::tensor2d(warm.ptr(), DType::F16, rows, cols, cols),
            Arg::ptr(warmOut.ptr(), DType::F16), Arg::i32(rows)});
  s.synchronize();
  LaunchMemoryStats before = launchMemoryStats();
  void *exec = capture(g, s, launch); // a's block is new: built in the capture
  LaunchMemoryStats after = launchMemoryStats();
  EXPECT_EQ(after.capturedUploads, before.capturedUploads + 1);
  out.fill(0xFF);
  ASSERT_EQ(g.launch(exec, s.handle()), 0);
  s.synchronize();
  EXPECT_EQ(out.toHost<uint16_t>(), host);
  // The block was never uploaded outside the graph: an eager launch must
  // upload it first, and then reads the same tensor.
  out.fill(0xFF);
  launch();
  s.synchronize();
  EXPECT_EQ(out.toHost<uint16_t>(), host);
  EXPECT_EQ(launchMemoryStats().descriptorUploads, after.descriptorUploads + 1);
  // Replays after that still copy the same bytes.
  out.fill(0xFF);
  ASSERT_EQ(g.launch(exec, s.handle()), 0);
  s.synchronize();
  EXPECT_EQ(out.toHost<uint16_t>(), host);
  g.destroyExec(exec);
}

TEST_F(GraphCaptureGpuTest, CapturedPersistentLaunchesHaveQueuesOfTheirOwn) {
  GraphApi g;
  static const KernelSource src = KernelSource::fromText(kCopyRows, "g.tile");
  Kernel &k = JIT::global().get(src, "stamp");
  Stream s;
  const unsigned gx = unsigned(Device::get().multiprocessorCount()) * 3 + 1;
  DeviceBuffer a(size_t(gx) * 4 * 4), b(size_t(gx) * 4 * 4);
  auto stamp = [&](DeviceBuffer &out, int v) {
    k.launch(LaunchConfig(Dim3(gx, 4), Dim3(0), 0, s.handle()),
             {Arg::ptr(out.ptr(), DType::I32), Arg::i32(v)});
  };
  stamp(a, 0); // An eager launch first: the stream's own queue.
  size_t queues = launchMemoryStats().tileQueues;
  void *exec = capture(g, s, [&] {
    stamp(a, 1);
    stamp(b, 2);
  });
  EXPECT_EQ(launchMemoryStats().tileQueues, queues + 2);
  for (int replay = 0; replay < 3; ++replay) {
    a.fill(0);
    b.fill(0);
    ASSERT_EQ(g.launch(exec, s.handle()), 0);
    s.synchronize();
    for (int32_t v : a.toHost<int32_t>())
      ASSERT_EQ(v, 1) << "replay " << replay;
    for (int32_t v : b.toHost<int32_t>())
      ASSERT_EQ(v, 2) << "replay " << replay;
  }
  // The stream's queue is still zero and usable eagerly.
  stamp(a, 5);
  s.synchronize();
  for (int32_t v : a.toHost<int32_t>())
    ASSERT_EQ(v, 5);
  g.destroyExec(exec);
}

namespace {
struct Pool {
  std::vector<DevicePtr> handedOut, givenBack;
  DeviceBuffer block{1 << 20};
};
} // namespace

TEST_F(GraphCaptureGpuTest, ScratchWhileCapturingComesFromTheAllocator) {
  Pool pool;
  Stream s;
  ScratchAllocator a;
  a.alloc = [](size_t bytes, CUstream_st *, void *ctx) -> DevicePtr {
    auto *p = static_cast<Pool *>(ctx);
    if (bytes > p->block.size())
      return 0;
    p->handedOut.push_back(p->block.ptr());
    return p->block.ptr();
  };
  a.free = [](DevicePtr ptr, size_t, CUstream_st *, void *ctx) {
    static_cast<Pool *>(ctx)->givenBack.push_back(ptr);
  };
  a.ctx = &pool;
  a.onlyWhileCapturing = true;
  setScratchAllocator(a);
  {
    Scratch eager(4096, s.handle(), 7, "test"); // Not capturing: own buffer.
    EXPECT_NE(eager.ptr(), pool.block.ptr());
  }
  EXPECT_TRUE(pool.handedOut.empty());
  GraphApi g;
  EXPECT_EQ(g.begin(s.handle(), 0), 0);
  {
    Scratch captured(4096, s.handle(), 7, "test");
    EXPECT_EQ(captured.ptr(), pool.block.ptr());
  }
  void *graph = nullptr;
  EXPECT_EQ(g.end(s.handle(), &graph), 0);
  g.destroyGraph(graph);
  EXPECT_EQ(pool.handedOut.size(), 1u);
  EXPECT_EQ(pool.givenBack, pool.handedOut);
  // Without an allocator, a buffer that would have to grow during a capture
  // is refused before anything is enqueued, and the capture stays valid.
  setScratchAllocator(ScratchAllocator{});
  EXPECT_EQ(g.begin(s.handle(), 0), 0);
  EXPECT_THROW(Scratch(size_t(64) << 20, s.handle(), 7, "test"), Error);
  EXPECT_EQ(g.end(s.handle(), &graph), 0);
  g.destroyGraph(graph);
}
