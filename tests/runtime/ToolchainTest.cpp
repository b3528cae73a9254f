//===- ToolchainTest.cpp - NVRTC, nvJitLink and driver loading ------------===//
//
// NVRTC and nvJitLink need no GPU, so CUDA C++ -> PTX -> cubin is tested
// everywhere the toolkit is installed. Also checks that a missing driver is
// reported, not fatal.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/JitLink.h"
#include "sparsetile/runtime/Kernel.h"
#include "sparsetile/runtime/NVRTC.h"

#include <gtest/gtest.h>

using namespace sparsetile::rt;

namespace {
const char *kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T> __global__ void scale(T *x, T s) { x[threadIdx.x] *= s; }
template __global__ void scale<float>(float *, float);
)";

#define REQUIRE_TOOLKIT()                                                      \
  do {                                                                         \
    std::string why;                                                           \
    if (!nvrtcAvailable(&why) || !jitLinkAvailable(&why))                      \
      GTEST_SKIP() << why;                                                     \
  } while (0)
} // namespace

TEST(Toolchain, NvrtcToPtxToCubin) {
  REQUIRE_TOOLKIT();
  NvrtcOutput out = compileCudaToPtx(kSaxpy, "saxpy", "sm_90");
  EXPECT_EQ(out.loweredName, "saxpy");
  EXPECT_NE(out.ptx.find(".entry saxpy"), std::string::npos);
  EXPECT_NE(out.ptx.find(".target sm_90"), std::string::npos);
  std::string cubin = linkPtxToCubin(out.ptx, "sm_90");
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f"
                                "ELF");
  // Also for sm_80 and an arch-specific target.
  EXPECT_FALSE(
      linkPtxToCubin(compileCudaToPtx(kSaxpy, "saxpy", "sm_80").ptx, "sm_80")
          .empty());
  EXPECT_FALSE(
      linkPtxToCubin(compileCudaToPtx(kSaxpy, "saxpy", "sm_90a").ptx, "sm_90a")
          .empty());
  EXPECT_FALSE(nvrtcVersionString().empty());
  EXPECT_FALSE(jitLinkVersionString().empty());
}

TEST(Toolchain, TemplateEntryIsLowered) {
  REQUIRE_TOOLKIT();
  NvrtcOutput out = compileCudaToPtx(kSaxpy, "scale<float>", "sm_90");
  EXPECT_NE(out.loweredName, "scale<float>");
  EXPECT_NE(out.ptx.find(out.loweredName), std::string::npos);
}

TEST(Toolchain, CompileErrorsCarryTheLog) {
  REQUIRE_TOOLKIT();
  try {
    compileCudaToPtx("__global__ void k() { undeclared_thing(); }", "k",
                     "sm_90", {}, "broken.cu");
    FAIL() << "expected an Error";
  } catch (const Error &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("broken.cu"), std::string::npos) << m;
    EXPECT_NE(m.find("undeclared_thing"), std::string::npos) << m;
  }
}

TEST(Toolchain, BadPtxCarriesTheLinkLog) {
  REQUIRE_TOOLKIT();
  try {
    linkPtxToCubin(".version 8.0\n.target sm_90\n.address_size 64\n"
                   ".visible .entry k() { bogus_instruction; }\n",
                   "sm_90");
    FAIL() << "expected an Error";
  } catch (const Error &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("nvJitLink"), std::string::npos) << m;
    EXPECT_NE(m.find("bogus_instruction"), std::string::npos) << m;
  }
}

TEST(Driver, MissingGpuIsReportedNotFatal) {
  std::string why;
  bool ok = gpuAvailable(&why);
  EXPECT_EQ(gpuAvailable(), ok); // Stable.
  if (ok)
    GTEST_SKIP() << "a GPU is present; nothing to check here";
  EXPECT_FALSE(why.empty());
  EXPECT_THROW(Device::get(), Error);
  EXPECT_THROW(DeviceBuffer(16), Error);
  EXPECT_THROW(Module::fromPtx(".version 8.0"), Error);
  EXPECT_THROW(driverEntryPoint("cuLaunchKernel"), Error);
  try {
    Device::get();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("no usable GPU"), std::string::npos);
  }
}

TEST(Driver, ArchFromComputeCapability) {
  EXPECT_EQ(archFromComputeCapability(9, 0), "sm_90");
  EXPECT_EQ(archFromComputeCapability(8, 6), "sm_86");
  EXPECT_EQ(archFromComputeCapability(12, 0), "sm_120");
}
