//===- LaunchLimitsTest.cpp - Device limits checked before launch (no GPU) ===//
//
// checkLaunchLimits() runs before every launch with the limits the device
// reported; here it gets an H100's numbers directly, so it needs no GPU. Each
// limit is exceeded by one and must be named with both numbers; a launch at
// exactly the limits passes.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Kernel.h"

#include <gtest/gtest.h>

using namespace sparsetile;
using namespace sparsetile::rt;

namespace {

/// An H100's limits (cuDeviceGetAttribute on the GPU machine).
DeviceLimits h100() {
  DeviceLimits l;
  l.maxThreadsPerBlock = 1024;
  l.maxBlockDim[0] = 1024;
  l.maxBlockDim[1] = 1024;
  l.maxBlockDim[2] = 64;
  l.maxGridDim[0] = 2147483647;
  l.maxGridDim[1] = 65535;
  l.maxGridDim[2] = 65535;
  l.maxSharedPerBlock = 232448;
  l.maxRegistersPerBlock = 65536;
  return l;
}

/// A launch that fits: 128 threads, 32 registers, 16 KB of shared memory.
LaunchNeeds fits() {
  LaunchNeeds n;
  n.grid = Dim3(100, 2, 1);
  n.block = Dim3(128);
  n.staticSharedBytes = 16384;
  n.registersPerThread = 32;
  n.maxThreadsForFunction = 1024;
  return n;
}

/// checkLaunchLimits' message, or "" when it accepts.
std::string check(const LaunchNeeds &n, const DeviceLimits &l = h100()) {
  try {
    checkLaunchLimits("k", n, l);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

bool has(const std::string &m, const std::string &part) {
  return m.find(part) != std::string::npos;
}

} // namespace

TEST(LaunchLimits, WithinLimitsPasses) {
  EXPECT_EQ(check(fits()), "");
  LaunchNeeds edge = fits();
  edge.grid = Dim3(2147483647u, 65535, 65535);
  edge.block = Dim3(16, 1, 64); // 1024 threads, z at its limit.
  edge.staticSharedBytes = 0;
  edge.dynamicSharedBytes = 232448;
  EXPECT_EQ(check(edge), "");
}

TEST(LaunchLimits, ThreadsAndBlockDimensions) {
  LaunchNeeds n = fits();
  n.block = Dim3(1025);
  std::string m = check(n);
  EXPECT_TRUE(has(m, "kernel 'k': threads per block 1025 exceeds the "
                     "device's limit of 1024"))
      << m;
  EXPECT_TRUE(has(m, "nothing was launched")) << m;
  n.block = Dim3(1, 1, 65);
  EXPECT_TRUE(has(check(n), "block dimension z 65 exceeds the device's limit "
                            "of 64"))
      << check(n);
  n.block = Dim3(0);
  EXPECT_TRUE(has(check(n), "a block of 0 threads")) << check(n);
}

TEST(LaunchLimits, GridDimensions) {
  LaunchNeeds n = fits();
  n.grid = Dim3(1, 65536, 1);
  EXPECT_TRUE(has(check(n), "grid dimension y 65536 exceeds the device's "
                            "limit of 65535"))
      << check(n);
  n.grid = Dim3(1, 1, 70000);
  EXPECT_TRUE(has(check(n), "grid dimension z 70000")) << check(n);
  n.grid = Dim3(4294967295u, 1, 1);
  EXPECT_TRUE(has(check(n), "grid dimension x 4294967295 exceeds the "
                            "device's limit of 2147483647"))
      << check(n);
}

TEST(LaunchLimits, SharedMemoryCountsStaticAndDynamic) {
  LaunchNeeds n = fits();
  n.staticSharedBytes = 40000;
  n.dynamicSharedBytes = 232448 - 40000 + 1;
  std::string m = check(n);
  EXPECT_TRUE(has(m, "shared memory per block (bytes, 40000 static + 192449 "
                     "dynamic) 232449 exceeds the device's limit of 232448"))
      << m;
}

TEST(LaunchLimits, Registers) {
  LaunchNeeds n = fits();
  n.block = Dim3(1024);
  n.registersPerThread = 65; // 66560 > 65536
  n.maxThreadsForFunction = 0;
  std::string m = check(n);
  EXPECT_TRUE(has(m, "registers per block (65 per thread x 1024 threads) "
                     "66560 exceeds the device's limit of 65536"))
      << m;
  // The driver's own per-function bound, when it is tighter.
  n.registersPerThread = 64;
  n.maxThreadsForFunction = 512;
  m = check(n);
  EXPECT_TRUE(has(m, "threads per block 1024 exceeds the 512 this kernel can "
                     "run with (64 registers per thread)"))
      << m;
}

TEST(LaunchLimits, UnknownLimitsAreNotChecked) {
  LaunchNeeds n = fits();
  n.block = Dim3(4096);
  n.registersPerThread = 0;
  n.maxThreadsForFunction = 0;
  EXPECT_EQ(check(n, DeviceLimits()), "");
}
