//===- DslExamplesGpuTest.cpp - The DSL examples, run on the GPU ----------===//
//
// Each example in dsl_examples/ is JIT-compiled by the real compiler for the
// GPU at hand and launched on fresh random inputs (the seed is printed; set
// SPARSETILE_TEST_SEED to reproduce). Outputs are poisoned with 0xFF bytes
// (NaN) first, so an element the kernel failed to write is caught, and every
// element outside the logical output (tails, row-stride gaps) must still hold
// the poison afterwards. Results are compared with
//   - vector_add: an NVRTC CUDA C++ kernel (References.h) and a CPU reference,
//   - softmax:    a CPU double-precision reference (and an NVRTC double one),
//   - swiglu_fwd: an NVRTC CUDA C++ kernel and a CPU double reference,
// with tolerances by dtype (f32: 1e-5 relative; bf16: 1e-2 relative).
// Shapes include ragged ones and both divisible-by-16 and odd integer
// arguments, so both compiled divisibility variants run.
//
// Without a GPU every test is skipped with the reason (GTEST_SKIP).
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "References.h"
#include "sparsetile/runtime/Autotune.h"
#include "sparsetile/runtime/NVRTC.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;
namespace fs = std::filesystem;
namespace st = sparsetile::testing;

namespace {

// --- bf16 on the host, as bit patterns. ---
float bf16ToFloat(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t floatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
bool isNan16(uint16_t b) { return (b & 0x7fffu) > 0x7f80u; }
bool isPoison16(uint16_t b) { return b == 0xFFFFu; }
bool isPoison32(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u == 0xFFFFFFFFu;
}

unsigned ceilDiv(long long a, long long b) { return unsigned((a + b - 1) / b); }

/// A per-case generator: the run's seed mixed with the case's parameters.
std::mt19937_64 rngFor(std::initializer_list<long long> tag) {
  uint64_t h = st::testSeed();
  for (long long t : tag)
    h = h * 0x9e3779b97f4a7c15ull + uint64_t(t) + 1;
  return std::mt19937_64(h);
}

/// |got - want| <= rel * |want| + abs, and got is a number.
::testing::AssertionResult close(double got, double want, double rel,
                                 double abs) {
  if (std::isfinite(got) && std::fabs(got - want) <= rel * std::fabs(want) + abs)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "got " << got << ", want " << want << " (diff "
         << std::fabs(got - want) << ", tolerance "
         << rel * std::fabs(want) + abs << ")";
}

class DslGpuTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() { st::testSeed(); }

  void SetUp() override {
    std::string why;
    if (!gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
    if (!nvrtcAvailable(&why))
      GTEST_SKIP() << "no NVRTC for the reference kernels: " << why;
    RecordProperty("seed", std::to_string(st::testSeed()));
    dir = fs::temp_directory_path() /
          ("sparsetile-dsl-gpu-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    jit = std::make_unique<JIT>(config());
  }
  void TearDown() override {
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

  static const KernelSource &source(const char *file) {
    static std::map<std::string, KernelSource> sources;
    auto it = sources.find(file);
    if (it == sources.end())
      it = sources
               .emplace(file, KernelSource::fromFile(st::examplesDir() + "/" +
                                                     file))
               .first;
    return it->second;
  }

  Kernel &reference(const char *src, const char *entry,
                    std::vector<KernelParam> params) {
    CudaOptions o;
    o.numThreads = st::kRefBlock;
    return jit->getCuda(src, entry, params, o);
  }

  fs::path dir;
  std::unique_ptr<JIT> jit;
};

// ------------------------------------------------------------------------
// vector_add
// ------------------------------------------------------------------------

struct VectorAddRun {
  std::vector<float> x, y, out, ref;
};

/// Runs the tile kernel (and the NVRTC reference) for n elements; returns
/// host copies. `pad` elements past n are checked for poison by the caller.
VectorAddRun runVectorAdd(Kernel &tile, Kernel &refKernel, int n, int pad) {
  VectorAddRun r;
  auto rng = rngFor({1, n});
  std::uniform_real_distribution<float> d(-100.f, 100.f);
  r.x.resize(size_t(n));
  r.y.resize(size_t(n));
  for (int i = 0; i < n; ++i) {
    r.x[size_t(i)] = d(rng);
    r.y[size_t(i)] = d(rng);
  }
  DeviceBuffer dx = DeviceBuffer::fromHost(r.x), dy = DeviceBuffer::fromHost(r.y);
  DeviceBuffer dout(size_t(n + pad) * 4), dref(size_t(n + pad) * 4);
  dout.fill(0xFF);
  dref.fill(0xFF);
  Stream s;
  auto X = Arg::ptr(dx, DType::F32), Y = Arg::ptr(dy, DType::F32);
  tile.launch(LaunchConfig(ceilDiv(n, 1024), Dim3(0), 0, s.handle()),
              {X, Y, Arg::ptr(dout, DType::F32), n});
  refKernel.launch(LaunchConfig(ceilDiv(n, st::kRefBlock), Dim3(0), 0, s.handle()),
                   {X, Y, Arg::ptr(dref, DType::F32), n});
  s.synchronize();
  r.out = dout.toHost<float>();
  r.ref = dref.toHost<float>();
  return r;
}

} // namespace

TEST_F(DslGpuTest, VectorAddMatchesNvrtcAndCpu) {
  Kernel &k = jit->get(source("vector_add.tile"), "vector_add");
  Kernel &ref = reference(st::kRefVectorAdd, "ref_vector_add",
                          {{"x", true, DType::F32, false},
                           {"y", true, DType::F32, false},
                           {"out", true, DType::F32, false},
                           {"n", false, DType::I32, false}});
  const int pad = 67;
  // Odd sizes (plain variant) and multiples of 16 (the div16 variant).
  for (int n : {1, 15, 1000, 1025, 100003, 16, 1024, 4096, 1 << 20}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    VectorAddRun r = runVectorAdd(k, ref, n, pad);
    for (int i = 0; i < n; ++i) {
      double want = double(r.x[size_t(i)]) + double(r.y[size_t(i)]);
      ASSERT_FALSE(std::isnan(r.out[size_t(i)])) << "element " << i << " not written";
      ASSERT_TRUE(close(r.out[size_t(i)], want, 1e-5, 1e-6)) << "cpu, at " << i;
      ASSERT_TRUE(close(r.out[size_t(i)], r.ref[size_t(i)], 1e-5, 1e-6))
          << "nvrtc, at " << i;
    }
    for (int i = n; i < n + pad; ++i)
      ASSERT_TRUE(isPoison32(r.out[size_t(i)])) << "wrote past n at " << i;
  }
  // Both divisibility variants were compiled.
  std::vector<Arg> odd = {Arg::untypedPtr(0), Arg::untypedPtr(0),
                          Arg::untypedPtr(0), 1000};
  std::vector<Arg> even = {Arg::untypedPtr(0), Arg::untypedPtr(0),
                           Arg::untypedPtr(0), 1024};
  Kernel &vOdd = k.variantFor(odd.data(), odd.size());
  Kernel &vEven = k.variantFor(even.data(), even.size());
  EXPECT_NE(&vOdd, &vEven);
  EXPECT_FALSE(vOdd.info().params[3].divisibleBy16);
  EXPECT_TRUE(vEven.info().params[3].divisibleBy16);
  // n = 1 ran the variant specialized for a value of 1 (Triton's
  // equal-to-1 specialization).
  std::vector<Arg> one = {Arg::untypedPtr(0), Arg::untypedPtr(0),
                          Arg::untypedPtr(0), 1};
  Kernel &vOne = k.variantFor(one.data(), one.size());
  EXPECT_NE(&vOne, &vOdd);
  EXPECT_TRUE(vOne.info().params[3].equalToOne);
  // 3 tile variants (odd, multiple of 16, one) + 1 reference kernel.
  EXPECT_EQ(jit->cache().stats().misses, 4u);
}

TEST_F(DslGpuTest, VectorAddFromTheDiskCacheInAWarmJit) {
  Kernel &ref = reference(st::kRefVectorAdd, "ref_vector_add",
                          {{"x", true, DType::F32, false},
                           {"y", true, DType::F32, false},
                           {"out", true, DType::F32, false},
                           {"n", false, DType::I32, false}});
  runVectorAdd(jit->get(source("vector_add.tile"), "vector_add"), ref, 4096, 0);
  JIT warm(config());
  Kernel &k = warm.get(source("vector_add.tile"), "vector_add");
  VectorAddRun r = runVectorAdd(k, ref, 4096, 16);
  EXPECT_EQ(warm.cache().stats().diskHits, 1u);
  EXPECT_EQ(warm.cache().stats().misses, 0u);
  for (int i = 0; i < 4096; ++i)
    ASSERT_EQ(r.out[size_t(i)], r.ref[size_t(i)]) << "at " << i;
}

// ------------------------------------------------------------------------
// softmax
// ------------------------------------------------------------------------

TEST_F(DslGpuTest, SoftmaxMatchesCpuDouble) {
  Kernel &ref = reference(st::kRefSoftmax, "ref_softmax",
                          {{"x", true, DType::F32, false},
                           {"out", true, DType::F32, false},
                           {"n_cols", false, DType::I32, false},
                           {"stride", false, DType::I32, false},
                           {"rows", false, DType::I32, false}});
  int cases = 0;
  for (int nCols : {1, 37, 1000, 1024})
    for (int rows : {1, 3, 129})
      for (int extra : {0, 13, 32}) { // Row stride - n_cols: views too.
        // BLOCK >= n_cols: the default 1024, and the tightest power of two
        // (down to 1: fewer elements than threads).
        int tight = 1;
        while (tight < nCols)
          tight *= 2;
        for (int block : {1024, tight}) {
          if (block == tight && tight == 1024 && extra != 0)
            continue; // Same kernel as the default; shapes already covered.
          const int stride = nCols + extra;
          SCOPED_TRACE("n_cols " + std::to_string(nCols) + ", rows " +
                       std::to_string(rows) + ", stride " +
                       std::to_string(stride) + ", BLOCK " +
                       std::to_string(block));
          Kernel &k = jit->get(source("softmax.tile"), "softmax",
                               {{"BLOCK", std::to_string(block)}});
          auto rng = rngFor({2, nCols, rows, stride, block});
          std::uniform_real_distribution<float> d(-8.f, 8.f);
          std::uniform_real_distribution<float> shift(-60.f, 60.f);
          const size_t total = size_t(rows) * size_t(stride);
          std::vector<float> x(total, 0.f);
          for (int r = 0; r < rows; ++r) {
            float s = shift(rng); // Large offsets: needs the max subtraction.
            for (int c = 0; c < nCols; ++c)
              x[size_t(r) * size_t(stride) + size_t(c)] = d(rng) + s;
          }
          DeviceBuffer dx = DeviceBuffer::fromHost(x);
          DeviceBuffer dout(total * 4), dref(total * 4);
          dout.fill(0xFF);
          dref.fill(0xFF);
          Stream st_;
          k.launch(LaunchConfig(unsigned(rows), Dim3(0), 0, st_.handle()),
                   {Arg::ptr(dx, DType::F32), Arg::ptr(dout, DType::F32), nCols,
                    stride});
          ref.launch(LaunchConfig(ceilDiv(rows, st::kRefBlock), Dim3(0), 0,
                                  st_.handle()),
                     {Arg::ptr(dx, DType::F32), Arg::ptr(dref, DType::F32),
                      nCols, stride, rows});
          st_.synchronize();
          std::vector<float> out = dout.toHost<float>(),
                             gpuRef = dref.toHost<float>();
          for (int r = 0; r < rows; ++r) {
            const float *xr = &x[size_t(r) * size_t(stride)];
            double m = -INFINITY, sum = 0;
            for (int c = 0; c < nCols; ++c)
              m = std::max(m, double(xr[c]));
            for (int c = 0; c < nCols; ++c)
              sum += std::exp(double(xr[c]) - m);
            double rowSum = 0;
            for (int c = 0; c < stride; ++c) {
              size_t i = size_t(r) * size_t(stride) + size_t(c);
              if (c >= nCols) {
                ASSERT_TRUE(isPoison32(out[i]))
                    << "wrote into the stride gap at row " << r << " col " << c;
                continue;
              }
              ASSERT_FALSE(std::isnan(out[i]))
                  << "row " << r << " col " << c << " not written";
              double want = std::exp(double(xr[c]) - m) / sum;
              ASSERT_TRUE(close(out[i], want, 1e-5, 1e-9))
                  << "cpu, row " << r << " col " << c;
              ASSERT_TRUE(close(out[i], gpuRef[i], 1e-5, 1e-9))
                  << "nvrtc, row " << r << " col " << c;
              rowSum += out[i];
            }
            ASSERT_TRUE(close(rowSum, 1.0, 1e-5, 0)) << "row " << r;
          }
          ++cases;
        }
      }
  std::printf("softmax: %d shape/BLOCK cases\n", cases);
}

// ------------------------------------------------------------------------
// swiglu_fwd
// ------------------------------------------------------------------------

TEST_F(DslGpuTest, SwigluFwdMatchesNvrtcAndCpu) {
  Kernel &k = jit->get(source("swiglu_fwd.tile"), "swiglu_fwd");
  Kernel &ref = reference(st::kRefSwigluFwd, "ref_swiglu_fwd",
                          {{"h", true, DType::BF16, false},
                           {"y", true, DType::BF16, false},
                           {"F", false, DType::I32, false},
                           {"stride_h", false, DType::I32, false},
                           {"stride_y", false, DType::I32, false}});
  struct Shape {
    int M, F;
  };
  for (Shape sh : {Shape{1, 11}, Shape{3, 1000}, Shape{17, 4096},
                   Shape{5, 1025}, Shape{2, 64}})
    for (bool view : {false, true}) {
      const int M = sh.M, F = sh.F;
      // A view: h rows padded by 16 elements, y rows by 8.
      const int strideH = 2 * F + (view ? 16 : 0);
      const int strideY = F + (view ? 8 : 0);
      SCOPED_TRACE("M " + std::to_string(M) + ", F " + std::to_string(F) +
                   ", stride_h " + std::to_string(strideH) + ", stride_y " +
                   std::to_string(strideY));
      auto rng = rngFor({3, M, F, strideH, strideY});
      std::uniform_real_distribution<float> d(-6.f, 6.f);
      std::vector<uint16_t> h(size_t(M) * size_t(strideH), 0);
      for (int r = 0; r < M; ++r)
        for (int c = 0; c < 2 * F; ++c)
          h[size_t(r) * size_t(strideH) + size_t(c)] = floatToBf16(d(rng));
      DeviceBuffer dh = DeviceBuffer::fromHost(h);
      const size_t ySize = size_t(M) * size_t(strideY);
      DeviceBuffer dy(ySize * 2), dref(ySize * 2);
      dy.fill(0xFF);
      dref.fill(0xFF);
      Stream s;
      auto H = Arg::ptr(dh, DType::BF16);
      k.launch(LaunchConfig(Dim3(ceilDiv(F, 1024), unsigned(M)), Dim3(0), 0,
                            s.handle()),
               {H, Arg::ptr(dy, DType::BF16), F, strideH, strideY});
      ref.launch(LaunchConfig(Dim3(ceilDiv(F, st::kRefBlock), unsigned(M)),
                              Dim3(0), 0, s.handle()),
                 {H, Arg::ptr(dref, DType::BF16), F, strideH, strideY});
      s.synchronize();
      std::vector<uint16_t> y = dy.toHost<uint16_t>(),
                            yr = dref.toHost<uint16_t>();
      for (int r = 0; r < M; ++r)
        for (int c = 0; c < strideY; ++c) {
          size_t i = size_t(r) * size_t(strideY) + size_t(c);
          if (c >= F) {
            ASSERT_TRUE(isPoison16(y[i]))
                << "wrote into the stride gap at row " << r << " col " << c;
            continue;
          }
          ASSERT_FALSE(isNan16(y[i])) << "row " << r << " col " << c
                                      << " not written";
          double g = bf16ToFloat(h[size_t(r) * size_t(strideH) + size_t(c)]);
          double u = bf16ToFloat(h[size_t(r) * size_t(strideH) + size_t(F + c)]);
          double want = g / (1.0 + std::exp(-g)) * u;
          double got = bf16ToFloat(y[i]);
          ASSERT_TRUE(close(got, want, 1e-2, 1e-6))
              << "cpu, row " << r << " col " << c;
          ASSERT_TRUE(close(got, bf16ToFloat(yr[i]), 1e-2, 1e-6))
              << "nvrtc, row " << r << " col " << c;
        }
    }
}

// @persistent kernels: about one program per SM loops over the grid the
// launch asked for. Every virtual program (x, y) writes a value made of its
// coordinates and of num_programs, so a program skipped, or a wrong (x, y)
// or grid size, shows against the poisoned output. Grids with fewer programs
// than SMs and with many more, and a ragged second axis; a grid with a third
// axis is refused before anything runs.
TEST_F(DslGpuTest, PersistentKernelVisitsEveryProgram) {
  static const KernelSource src = KernelSource::fromText(R"(
@persistent(1)
@num_warps(4)
kernel tiles(out: *i32) {
  let x = program_id(0);
  let y = program_id(1);
  let v = y * num_programs(0) + x;
  store(out + v, x * 4096 + y * 4 + (num_programs(1) % 4));
}
)", "persistent.tile");
  Kernel &k = jit->get(src, "tiles");
  struct Grid {
    unsigned x, y;
  };
  int sms = Device::get().multiprocessorCount();
  for (Grid g : {Grid{5, 1}, Grid{3, 7}, Grid{unsigned(sms) * 9 + 5, 3},
                 Grid{1000, 33}}) {
    size_t n = size_t(g.x) * g.y;
    DeviceBuffer out(n * 4);
    out.fill(0xFF);
    k.launch(LaunchConfig(Dim3(g.x, g.y)), {Arg::ptr(out.ptr(), DType::I32)});
    Device::get().synchronize();
    std::vector<int32_t> got = out.toHost<int32_t>();
    for (unsigned y = 0; y < g.y; ++y)
      for (unsigned x = 0; x < g.x; ++x) {
        int32_t want = int32_t(x * 4096 + y * 4 + g.y % 4);
        ASSERT_EQ(got[size_t(y) * g.x + x], want)
            << "grid " << g.x << "x" << g.y << ", program (" << x << ", " << y
            << ")";
      }
  }
  DeviceBuffer out(64);
  try {
    k.launch(LaunchConfig(Dim3(2, 2, 2)), {Arg::ptr(out.ptr(), DType::I32)});
    ADD_FAILURE() << "a 3-D grid was launched";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("persistent"), std::string::npos)
        << e.what();
  }
}

// Autotuning on the GPU: tuning an in-place kernel (out += 2 x) leaves the
// caller's output untouched (candidates run on scratch copies, which start
// from the output's contents), the winner's result equals the first
// candidate's, and a second tuner on the same cache directory (a second
// process) times nothing.
TEST_F(DslGpuTest, AutotuneTimesOnScratchOutputsAndKeepsTheWinner) {
  static const KernelSource src = KernelSource::fromText(R"(
kernel axpy(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 128) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = offs < n;
  store(out + offs, load(out + offs, mask=m) + 2.0 * load(x + offs, mask=m), mask=m);
}
)", "axpy.tile");
  AutotuneSpec spec;
  for (const char *b : {"128", "256", "1024"})
    spec.configs.push_back(TuneConfig{{{"BLOCK", b}}});
  spec.configs.push_back(TuneConfig{{{"BLOCK", "512"}}, 8});
  spec.key = {"n"};
  spec.outputs = {"out"};
  spec.grid = [](const Constants &c, const LaunchArgs &a) {
    return Dim3(ceilDiv(a["n"].intValue(), std::stoll(c.at("BLOCK"))));
  };
  const int n = 1 << 20;
  std::mt19937_64 rng = rngFor({n});
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> x(n), out0(n);
  for (float &v : x)
    v = u(rng);
  for (float &v : out0)
    v = u(rng);
  DeviceBuffer dx = DeviceBuffer::fromHost(x), dout = DeviceBuffer::fromHost(out0);
  std::vector<Arg> args = {Arg::ptr(dx.ptr(), DType::F32),
                           Arg::ptr(dout.ptr(), DType::F32), Arg::i32(n)};

  AutotunedKernel tuned(*jit, src, "axpy", {}, JITOptions(), spec);
  size_t winner = tuned.choose(args);
  Device::get().synchronize();
  EXPECT_EQ(dout.toHost<float>(), out0) << "tuning wrote the caller's output";
  std::vector<double> times = tuned.lastTimings();
  for (size_t i = 0; i < times.size(); ++i)
    EXPECT_GT(times[i], 0.0) << spec.configs[i].describe();

  tuned.launch(args);
  Device::get().synchronize();
  std::vector<float> got = dout.toHost<float>();
  // The first candidate, on a fresh copy of the same input.
  DeviceBuffer ref = DeviceBuffer::fromHost(out0);
  tuned.candidate(0).launch(LaunchConfig(Dim3(ceilDiv(n, 128))),
                            {Arg::ptr(dx.ptr(), DType::F32),
                             Arg::ptr(ref.ptr(), DType::F32), Arg::i32(n)});
  Device::get().synchronize();
  EXPECT_EQ(got, ref.toHost<float>()) << "winner " << winner;
  for (int i = 0; i < n; i += 4099)
    ASSERT_FLOAT_EQ(got[size_t(i)], out0[size_t(i)] + 2.f * x[size_t(i)]);

  JIT second(config());
  AutotunedKernel again(second, src, "axpy", {}, JITOptions(), spec);
  again.setMeasure([](size_t, const LaunchArgs &) -> double {
    ADD_FAILURE() << "a second process timed a candidate";
    return 1.0;
  });
  EXPECT_EQ(again.choose(args), winner);
}

// Functions of an imported file (a dtype parameter, a generic one), a
// static_range over a constant table and the table as a tile, on the GPU:
// out = Horner's rule over COEF at x (as the CPU evaluates it, in f32; the
// GPU may contract a * x + c into an FMA, hence the tolerance) and
// idx = COEF[i % 4] + i, on a ragged n.
TEST_F(DslGpuTest, ImportedFunctionsAndStaticTablesMatchCpu) {
  fs::create_directories(dir / "src" / "lib");
  std::ofstream(dir / "src" / "lib" / "common.tile") << R"(
const COEF = [3, -1, 4, 1];
fn load_as(const T: dtype, p: *T, offs, m) -> f32 {
  return load(p + offs, mask=m, other=0.0).to(f32);
}
fn horner(x) {
  let acc = x * 0.0 + COEF[0];
  for i in static_range(1, len(COEF)) {
    acc = acc * x + COEF[i];
  }
  return acc;
}
)";
  std::ofstream(dir / "src" / "main.tile") << R"(
import "lib/common.tile";
kernel k(x: *f32, out: *f32, idx: *i32, n: i32) {
  let offs = program_id(0) * 1024 + arange(0, 256)[:, None] * 4
             + arange(0, 4)[None, :];
  let m = offs < n;
  let v = load_as(f32, x, offs, m);
  store(out + offs, horner(v), mask=m);
  store(idx + offs, COEF.to_tile(i32)[None, :] + offs, mask=m);
}
)";
  KernelSource src = KernelSource::fromFile((dir / "src" / "main.tile").string());
  ASSERT_EQ(src.imports().size(), 1u);
  Kernel &k = jit->get(src, "k");
  const int coef[4] = {3, -1, 4, 1};
  std::mt19937 rng(st::testSeed());
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  for (int n : {1, 1000, 4096 + 37}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float &v : x)
      v = dist(rng);
    DeviceBuffer dx = DeviceBuffer::fromHost(x);
    DeviceBuffer dout(size_t(n) * 4 + 4096), didx(size_t(n) * 4 + 4096);
    dout.fill(0xFF);
    didx.fill(0xFF);
    k.launch(LaunchConfig(ceilDiv(n, 1024)),
             {Arg::ptr(dx.ptr(), DType::F32), Arg::ptr(dout.ptr(), DType::F32),
              Arg::ptr(didx.ptr(), DType::I32), Arg::i32(n)});
    Device::get().synchronize();
    std::vector<float> out = dout.toHost<float>();
    std::vector<int32_t> idx = didx.toHost<int32_t>();
    for (int i = 0; i < n; ++i) {
      float acc = x[size_t(i)] * 0.0f + float(coef[0]);
      for (int c = 1; c < 4; ++c)
        acc = acc * x[size_t(i)] + float(coef[c]);
      EXPECT_NEAR(out[size_t(i)], acc, 1e-5f * (1.0f + std::fabs(acc)))
          << "n " << n << " i " << i;
      EXPECT_EQ(idx[size_t(i)], coef[i % 4] + i) << "n " << n << " i " << i;
    }
    // Nothing past n was written.
    uint32_t poison;
    std::memcpy(&poison, &out[size_t(n)], 4);
    EXPECT_EQ(poison, 0xFFFFFFFFu);
    EXPECT_EQ(idx[size_t(n)], -1);
  }
}
