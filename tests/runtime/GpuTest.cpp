//===- GpuTest.cpp - Driver, module and launch tests on a GPU -------------===//
//
// Everything here needs a GPU and is skipped (GTEST_SKIP, reported as
// "Skipped" by ctest) without one. Reference kernels come from NVRTC, so the
// launcher is checked independently of the tile compiler: outputs are
// poisoned with 0xFF bytes (NaN) first and compared with a CPU reference.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/JIT.h"
#include "sparsetile/runtime/NVRTC.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;
namespace fs = std::filesystem;

namespace {

const char *kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float *x, const float *y,
                                 float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
)";

std::vector<KernelParam> saxpyParams() {
  return {{"a", false, DType::F32, false},
          {"x", true, DType::F32, false},
          {"y", true, DType::F32, false},
          {"out", true, DType::F32, false},
          {"n", false, DType::I32, false}};
}

class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
    if (!nvrtcAvailable(&why))
      GTEST_SKIP() << why;
    dir = fs::temp_directory_path() /
          ("sparsetile-gpu-test-" + std::to_string(getpid()));
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  JITConfig config() {
    JITConfig c;
    c.cache.directory = dir.string();
    return c;
  }
  fs::path dir;
};

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.f, 2.f);
  std::vector<float> v(n);
  for (float &f : v)
    f = d(rng);
  return v;
}

bool isPoison(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits == 0xFFFFFFFFu;
}

} // namespace

TEST_F(GpuTest, DeviceInfo) {
  Device &d = Device::get();
  EXPECT_EQ(d.arch(),
            archFromComputeCapability(d.computeMajor(), d.computeMinor()));
  EXPECT_GT(d.multiprocessorCount(), 0);
  EXPECT_GT(driverVersion(), 0);
  EXPECT_NE(driverEntryPoint("cuLaunchKernel"), nullptr);
  std::printf("device %d: %s (%s, %d SMs)\n", d.ordinal(), d.name().c_str(),
              d.arch().c_str(), d.multiprocessorCount());
}

TEST_F(GpuTest, BufferRoundTripAndBounds) {
  std::vector<float> v = randomFloats(1000, 1);
  DeviceBuffer b = DeviceBuffer::fromHost(v);
  EXPECT_EQ(b.ptr() % 256, 0u);
  EXPECT_EQ(b.toHost<float>(), v);
  b.fill(0xFF);
  for (float f : b.toHost<float>())
    ASSERT_TRUE(isPoison(f));
  std::vector<float> big(2000);
  EXPECT_THROW(b.copyFromHost(big.data(), big.size() * 4), Error);
}

void runSaxpy(Kernel &k, unsigned seed) {
  const int n = 100003; // Not a multiple of the block: exercises the mask.
  const int pad = 64;
  std::vector<float> x = randomFloats(n, seed), y = randomFloats(n, seed + 1);
  float a = 1.75f;
  DeviceBuffer dx = DeviceBuffer::fromHost(x), dy = DeviceBuffer::fromHost(y);
  DeviceBuffer dout((n + pad) * sizeof(float));
  dout.fill(0xFF);
  Stream stream;
  unsigned grid = (n + 255) / 256;
  k.launch(LaunchConfig(grid, Dim3(0), 0, stream.handle()),
           {a, Arg::ptr(dx, DType::F32), Arg::ptr(dy, DType::F32),
            Arg::ptr(dout, DType::F32), n});
  stream.synchronize();
  std::vector<float> out = dout.toHost<float>();
  for (int i = 0; i < n; ++i) {
    float ref = std::fma(a, x[i], y[i]);
    ASSERT_NEAR(out[i], ref, 1e-5f * (1 + std::fabs(ref))) << "at " << i;
  }
  for (int i = n; i < n + pad; ++i)
    ASSERT_TRUE(isPoison(out[i])) << "wrote past n at " << i;
}

TEST_F(GpuTest, SaxpyFromNvrtcMatchesCpu) {
  JIT jit(config());
  CudaOptions o;
  o.numThreads = 256;
  Kernel &k = jit.getCuda(kSaxpy, "saxpy", saxpyParams(), o);
  runSaxpy(k, 7);
  EXPECT_EQ(&jit.getCuda(kSaxpy, "saxpy", saxpyParams(), o), &k);

  // A warm JIT loads the cubin from disk and computes the same.
  JIT warm(config());
  Kernel &k2 = warm.getCuda(kSaxpy, "saxpy", saxpyParams(), o);
  EXPECT_EQ(warm.cache().stats().diskHits, 1u);
  runSaxpy(k2, 11);

  // PTX-only entries are JIT-compiled by the driver.
  JITConfig ptxOnly = config();
  ptxOnly.buildCubin = false;
  ptxOnly.cache.enabled = false;
  JIT jit3(ptxOnly);
  runSaxpy(jit3.getCuda(kSaxpy, "saxpy", saxpyParams(), o), 13);
}

TEST_F(GpuTest, BadArgumentsThrowBeforeLaunch) {
  JIT jit(config());
  CudaOptions o;
  o.numThreads = 256;
  Kernel &k = jit.getCuda(kSaxpy, "saxpy", saxpyParams(), o);
  DeviceBuffer x(1024), out(1024);
  out.fill(0xFF);
  auto X = Arg::ptr(x, DType::F32), O = Arg::ptr(out, DType::F32);
  // Count.
  EXPECT_THROW(k.launch(1, {1.f, X, X, O}), Error);
  // Scalar type: i64 n, f64 a.
  EXPECT_THROW(k.launch(1, {1.f, X, X, O, int64_t(10)}), Error);
  EXPECT_THROW(k.launch(1, {1.0, X, X, O, 10}), Error);
  // Pointer element type.
  EXPECT_THROW(k.launch(1, {1.f, X, X, Arg::ptr(out, DType::BF16), 10}), Error);
  // Scalar where a pointer goes.
  EXPECT_THROW(k.launch(1, {1.f, X, X, out.ptr(), 10}), Error);
  // Misaligned pointer.
  EXPECT_THROW(
      k.launch(1, {1.f, X, X, Arg::ptr(out.ptr() + 4, DType::F32), 10}), Error);
  Device::get().synchronize();
  for (float f : out.toHost<float>())
    ASSERT_TRUE(isPoison(f)) << "a rejected launch ran";
  // A launch beyond the device's limits is an Error naming the limit,
  // raised before anything is launched (checkLaunchLimits).
  auto limitError = [&](const LaunchConfig &c) -> std::string {
    try {
      k.launch(c, {1.f, X, X, O, 10});
    } catch (const Error &e) {
      return e.what();
    }
    return "";
  };
  const DeviceLimits &lim = Device::get().limits();
  std::string m = limitError(LaunchConfig(1, Dim3(4096)));
  EXPECT_NE(m.find("threads per block 4096 exceeds the device's limit of " +
                   std::to_string(lim.maxThreadsPerBlock)),
            std::string::npos)
      << m;
  m = limitError(LaunchConfig(Dim3(1, unsigned(lim.maxGridDim[1]) + 1), 256));
  EXPECT_NE(m.find("grid dimension y"), std::string::npos) << m;
  m = limitError(
      LaunchConfig(1, 256, unsigned(lim.maxSharedPerBlock) + 1024));
  EXPECT_NE(m.find("shared memory per block"), std::string::npos) << m;
  Device::get().synchronize();
  for (float f : out.toHost<float>())
    ASSERT_TRUE(isPoison(f)) << "a launch beyond the limits ran";
}

TEST_F(GpuTest, BadPtxReportsTheJitLog) {
  try {
    Module::fromPtx(".version 8.0\n.target " + Device::get().arch() +
                    "\n.address_size 64\n.visible .entry k() { bogus; }\n");
    FAIL();
  } catch (const Error &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cuModuleLoadDataEx"), std::string::npos) << m;
    EXPECT_NE(m.find("CUDA_ERROR_"), std::string::npos) << m;
    EXPECT_NE(m.find("JIT error log"), std::string::npos) << m;
  }
}

// Divisibility specialization end to end: a fake tile compiler that returns
// NVRTC PTX, so the dispatch is tested without the real compiler.
TEST_F(GpuTest, DivisibilityVariantsDispatchPerLaunch) {
  int compiles = 0;
  std::vector<std::vector<std::string>> divs;
  JITConfig c = config();
  c.hooks.compilerVersion = "fake";
  c.hooks.toolchainVersion = "fake";
  c.hooks.listKernels = [](const std::string &, const std::string &,
                           std::vector<KernelSignature> &ks, std::string &,
                           const rt::Constants &) {
    ks = {{"saxpy", saxpyParams(), {}}};
    return true;
  };
  c.hooks.compile = [&](const std::string &, const std::string &,
                        const std::string &name, const CompileOptions &o) {
    ++compiles;
    divs.push_back(o.divisibleBy16);
    CompileResult r;
    r.ok = true;
    r.kernel.name = name;
    r.kernel.arch = o.arch;
    r.kernel.ptx = compileCudaToPtx(kSaxpy, name, o.arch).ptx;
    r.kernel.params = saxpyParams();
    r.kernel.params[4].divisibleBy16 = !o.divisibleBy16.empty();
    r.kernel.numThreads = 256;
    return r;
  };
  JIT jit(c);
  Kernel &k = jit.get(KernelSource::fromText("fake"), "saxpy");
  runSaxpy(k, 3); // n = 100003: not divisible.
  EXPECT_EQ(compiles, 1);
  EXPECT_TRUE(divs.back().empty());
  // n = 1024: divisible -> a second variant.
  DeviceBuffer d(1024 * 4);
  d.fill(0x3F); // ~0.75f each: the kernel reads it (initcheck flagged it).
  auto D = Arg::ptr(d, DType::F32);
  k.launch(4, {1.f, D, D, D, 1024});
  EXPECT_EQ(compiles, 2);
  EXPECT_EQ(divs.back(), std::vector<std::string>{"n"});
  k.launch(4, {1.f, D, D, D, 1024});
  runSaxpy(k, 5);
  EXPECT_EQ(compiles, 2);
  Device::get().synchronize();
}

TEST_F(GpuTest, EventsTimeWork) {
  Event start, end;
  Stream s;
  start.record(s.handle());
  end.record(s.handle());
  end.synchronize();
  EXPECT_GE(Event::elapsedMs(start, end), 0.f);
}
