//===- AutotuneGpuTest.cpp - Kernels that declare @autotune, on the GPU ---===//
//
// The path a user takes: configurations declared in the source, the
// autotuned kernel from JIT::getAutotuned alone (grid, key and outputs read
// from the declaration). On fresh random inputs (the seed is printed; set
// SPARSETILE_TEST_SEED to reproduce):
//   - an in-place kernel (out += 2 x): tuning leaves the caller's output
//     exactly as it was, and the winner's result equals the first
//     configuration's bit for bit;
//   - the bench's GEMM with a leaky-ReLU epilogue (its configurations change
//     tiles, warps, stages and the persistent loop): a poisoned output stays
//     poisoned through tuning, and the winner's output matches the first
//     configuration's (f16, same K order, so within f16 rounding);
//   - SPARSETILE_AUTOTUNE=0 takes the first configuration and times nothing.
// Without a GPU every test is skipped with the reason.
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "HostFloat.h"
#include "sparsetile/runtime/Autotune.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;
namespace fs = std::filesystem;
namespace st = sparsetile::testing;

namespace {

const char *kAxpy = R"(
@autotune(key=[n], grid=[cdiv(n, BLOCK)],
          configs=[{BLOCK: 128}, {BLOCK: 1024, num_warps: 8}, {BLOCK: 256}])
kernel axpy(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 512) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = offs < n;
  let o = out + offs;
  store(o, load(o, mask=m) + 2.0 * load(x + offs, mask=m), mask=m);
}
)";

/// bench/autotune/gemm_leaky_relu.tile of the source tree given at run time
/// (SourceTree.h).
std::string gemmPath() {
  return sparsetile::testing::sourcePath("bench/autotune/gemm_leaky_relu.tile");
}

double f16ToDouble(uint16_t h) { return sparsetile::test::halfToFloat(h); }

class AutotuneGpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
    RecordProperty("seed", std::to_string(st::testSeed()));
    unsetenv("SPARSETILE_AUTOTUNE");
    dir = fs::temp_directory_path() /
          ("sparsetile-autotune-gpu-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    jit = std::make_unique<JIT>(config());
  }
  void TearDown() override {
    unsetenv("SPARSETILE_AUTOTUNE");
    jit.reset();
    if (!dir.empty())
      fs::remove_all(dir);
  }
  JITConfig config() const {
    JITConfig c;
    c.cache.directory = dir.string();
    c.cache.enabled = true;
    return c;
  }

  fs::path dir;
  std::unique_ptr<JIT> jit;
};

} // namespace

TEST_F(AutotuneGpuTest, InPlaceKernelIsUntouchedByTuningAndExact) {
  static const KernelSource src = KernelSource::fromText(kAxpy, "axpy.tile");
  const int n = (1 << 20) + 37; // ragged: every candidate masks a tail
  std::mt19937_64 rng(st::testSeed());
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(n), out0(n);
  for (float &v : x)
    v = u(rng);
  for (float &v : out0)
    v = u(rng);
  DeviceBuffer dx = DeviceBuffer::fromHost(x);
  DeviceBuffer dout = DeviceBuffer::fromHost(out0);
  std::vector<Arg> args = {Arg::ptr(dx.ptr(), DType::F32),
                           Arg::ptr(dout.ptr(), DType::F32), Arg::i32(n)};

  AutotunedKernel *k = jit->getAutotuned(src, "axpy");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->spec().outputs, std::vector<std::string>{"out"});
  size_t winner = k->choose(args);
  Device::get().synchronize();
  EXPECT_EQ(dout.toHost<float>(), out0) << "tuning wrote the caller's output";
  for (double t : k->lastTimings())
    EXPECT_GT(t, 0.0);

  k->launch(args);
  Device::get().synchronize();
  std::vector<float> got = dout.toHost<float>();
  DeviceBuffer ref = DeviceBuffer::fromHost(out0);
  k->candidate(0).launch(LaunchConfig(Dim3((n + 127) / 128)),
                         {Arg::ptr(dx.ptr(), DType::F32),
                          Arg::ptr(ref.ptr(), DType::F32), Arg::i32(n)});
  Device::get().synchronize();
  EXPECT_EQ(got, ref.toHost<float>()) << "winner " << winner;
  for (int i = 0; i < n; i += 4099)
    ASSERT_FLOAT_EQ(got[size_t(i)], out0[size_t(i)] + 2.f * x[size_t(i)]);
}

TEST_F(AutotuneGpuTest, GemmWinnerMatchesTheFirstConfiguration) {
  static const KernelSource src = KernelSource::fromFile(gemmPath());
  const int M = 1000, N = 776, K = 512; // ragged M and N
  std::mt19937_64 rng(st::testSeed() + 1);
  std::uniform_int_distribution<int> exp(11, 14), man(0, 1023), sign(0, 1);
  auto random = [&](size_t count) {
    std::vector<uint16_t> v(count);
    for (auto &h : v)
      h = uint16_t(sign(rng) << 15 | exp(rng) << 10 | man(rng));
    return v;
  };
  std::vector<uint16_t> a = random(size_t(M) * K), b = random(size_t(K) * N);
  DeviceBuffer da = DeviceBuffer::fromHost(a), db = DeviceBuffer::fromHost(b);
  DeviceBuffer dc(size_t(M) * N * 2), first(size_t(M) * N * 2);
  dc.fill(0xff);
  auto argsFor = [&](DevicePtr c) {
    return std::vector<Arg>{Arg::tensor2d(da.ptr(), DType::F16, M, K, K),
                            Arg::tensor2d(db.ptr(), DType::F16, K, N, N),
                            Arg::ptr(c, DType::F16),
                            Arg::i32(M),
                            Arg::i32(N),
                            Arg::i32(K),
                            Arg::i32(N),
                            Arg::f32(0.01f)};
  };
  AutotunedKernel *k = jit->getAutotuned(src, "gemm_leaky_relu");
  ASSERT_NE(k, nullptr);
  std::vector<Arg> args = argsFor(dc.ptr());
  size_t winner = k->choose(args);
  Device::get().synchronize();
  for (uint16_t h : dc.toHost<uint16_t>())
    ASSERT_EQ(h, 0xFFFF) << "tuning wrote the caller's output";
  int ran = 0;
  for (double t : k->lastTimings())
    ran += t > 0;
  EXPECT_GE(ran, 2) << "fewer than two configurations ran";

  k->launch(args);
  std::vector<Arg> firstArgs = argsFor(first.ptr());
  const AutotuneSpec &spec = k->spec();
  LaunchArgs la{firstArgs.data(), firstArgs.size(), k->candidate(0).params()};
  k->candidate(0).launch(LaunchConfig(spec.grid(spec.configs[0].constants, la)),
                         firstArgs);
  Device::get().synchronize();
  std::vector<uint16_t> got = dc.toHost<uint16_t>(),
                        want = first.toHost<uint16_t>();
  for (size_t i = 0; i < got.size(); ++i) {
    double g = f16ToDouble(got[i]), w = f16ToDouble(want[i]);
    ASSERT_LE(std::fabs(g - w), 2e-3 * std::fabs(w) + 1e-3)
        << "element " << i << ", winner " << spec.configs[winner].describe();
  }
  // A spot check against float64, so both cannot be wrong the same way.
  for (int r : {0, M - 1, M / 3})
    for (int c : {0, N - 1, N / 2}) {
      double s = 0;
      for (int j = 0; j < K; ++j)
        s += f16ToDouble(a[size_t(r) * K + j]) *
             f16ToDouble(b[size_t(j) * N + c]);
      s = s > 0 ? s : 0.01 * s;
      EXPECT_NEAR(f16ToDouble(got[size_t(r) * N + c]), s,
                  1e-2 * std::fabs(s) + 1e-2);
    }
}

TEST_F(AutotuneGpuTest, DisabledTakesTheFirstConfiguration) {
  setenv("SPARSETILE_AUTOTUNE", "0", 1);
  static const KernelSource src = KernelSource::fromText(kAxpy, "axpy.tile");
  DeviceBuffer dx(4096 * 4), dout(4096 * 4);
  dx.fill(0);
  dout.fill(0);
  AutotunedKernel *k = jit->getAutotuned(src, "axpy");
  ASSERT_NE(k, nullptr);
  k->setMeasure([](size_t, const LaunchArgs &) -> double {
    ADD_FAILURE() << "SPARSETILE_AUTOTUNE=0 timed a candidate";
    return 1.0;
  });
  EXPECT_EQ(k->choose({Arg::ptr(dx.ptr(), DType::F32),
                       Arg::ptr(dout.ptr(), DType::F32), Arg::i32(4096)}),
            0u);
}
