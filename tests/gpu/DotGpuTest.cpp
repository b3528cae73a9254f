//===- DotGpuTest.cpp - Tensor-core dot against a float64 reference -------===//
//
// Runs dsl_examples/matmul.tile (and a kernel with a bias epilogue and a row
// reduction of the product) on the GPU and compares with a CPU float64
// product of the same rounded inputs, also as sm_80 PTX (the pointer ring
// read by mma.sync). Covers both dtypes, B and B^T, several
// tile shapes and warp counts, and ragged M, N, K. Outputs are poisoned.
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "GpuTest.h"
#include "HostFloat.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/JIT.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

using namespace sparsetile;
using namespace sparsetile::rt;
using sparsetile::test::bf16ToFloat;
using sparsetile::test::floatToBf16;
using sparsetile::test::floatToHalf;
using sparsetile::test::halfToFloat;

namespace {

struct DotCase {
  DType dtype;
  bool transB;
  int64_t M, N, K;
  int bm, bn, bk, warps;
  /// 1: the pointer ring gets a producer warpgroup on sm_90
  /// (JITOptions::warpSpecialize); -1: the kernel's default.
  int warpSpecialize = -1;
};

std::string name(const DotCase &c) {
  return std::string(dtypeName(c.dtype)) + (c.transB ? "_BT" : "_B") + "_M" +
         std::to_string(c.M) + "_N" + std::to_string(c.N) + "_K" +
         std::to_string(c.K) + "_tile" + std::to_string(c.bm) + "x" +
         std::to_string(c.bn) + "x" + std::to_string(c.bk) + "_w" +
         std::to_string(c.warps) + (c.warpSpecialize == 1 ? "_producer" : "");
}

/// The text of a kernel file (an example beside its imports).
std::string fileText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Random 16-bit values (as bits) and their float values.
void randomMatrix(std::vector<uint16_t> &bits, std::vector<double> &vals,
                  size_t n, DType t, std::mt19937_64 &rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  bits.resize(n);
  vals.resize(n);
  for (size_t i = 0; i < n; ++i) {
    float f = d(rng);
    bits[i] = t == DType::BF16 ? floatToBf16(f) : floatToHalf(f);
    vals[i] = t == DType::BF16 ? bf16ToFloat(bits[i]) : halfToFloat(bits[i]);
  }
}

/// Checks C (f32, [M, ldc], poisoned with 0xff bytes) against
/// start(i, j) + alpha * sum_k a(i, k) * b(k, j) in float64; the padding
/// must stay poison.
template <typename A, typename B, typename Start>
void expectProduct(const std::vector<float> &out, int64_t M, int64_t N,
                   int64_t K, int64_t ldc, double alpha, A a, B b,
                   Start start) {
  int bad = 0;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double ref = 0, mag = 0;
      for (int64_t kk = 0; kk < K; ++kk) {
        ref += a(i, kk) * b(kk, j);
        mag += std::fabs(a(i, kk) * b(kk, j));
      }
      double s = start(i, j);
      ref = s + alpha * ref;
      mag = std::fabs(s) + mag;
      double got = out[i * ldc + j];
      if (!(std::fabs(got - ref) <= 1e-5 * mag + 1e-6) && bad++ < 5)
        ADD_FAILURE() << "C[" << i << ", " << j << "] = " << got
                      << ", expected " << ref;
    }
    for (int64_t j = N; j < ldc; ++j) {
      uint32_t bits;
      std::memcpy(&bits, &out[i * ldc + j], 4);
      if (bits != 0xffffffffu && bad++ < 5)
        ADD_FAILURE() << "padding C[" << i << ", " << j << "] was written";
    }
  }
  EXPECT_EQ(bad, 0);
}

template <typename A, typename B>
void expectProduct(const std::vector<float> &out, int64_t M, int64_t N,
                   int64_t K, int64_t ldc, double alpha, A a, B b) {
  expectProduct(out, M, N, K, ldc, alpha, a, b,
                [](int64_t, int64_t) { return 0.0; });
}

using DotTest = sparsetile::testing::GpuParamTest<DotCase>;

TEST_P(DotTest, MatmulMatchesFloat64) {
  const DotCase &c = GetParam();
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^ std::hash<std::string>()(name(c)));
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, c.M * c.K, c.dtype, rng);
  // B is [K, N], or [N, K] when transposed.
  randomMatrix(b, bv, c.K * c.N, c.dtype, rng);
  int64_t ldb = c.transB ? c.K : c.N, ldc = c.N + 3;
  float alpha = 0.5f;

  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  DeviceBuffer cBuf(c.M * ldc * 4);
  cBuf.fill(0xff);
  auto src = KernelSource::fromFile(sparsetile::testing::examplesDir() + "/matmul.tile");
  JITOptions o;
  o.numWarps = c.warps;
  o.warpSpecialize = c.warpSpecialize;
  Kernel &k = JIT::global().get(
      src, "matmul",
      {{"T", dtypeName(c.dtype)}, {"TRANS_B", c.transB ? "1" : "0"},
       {"BM", std::to_string(c.bm)}, {"BN", std::to_string(c.bn)},
       {"BK", std::to_string(c.bk)}},
      o);
  k.launch(Dim3(unsigned((c.M + c.bm - 1) / c.bm),
                unsigned((c.N + c.bn - 1) / c.bn)),
           {Arg::ptr(aBuf.ptr(), c.dtype), Arg::ptr(bBuf.ptr(), c.dtype),
            Arg::ptr(cBuf.ptr(), DType::F32), Arg::i32(int32_t(c.M)),
            Arg::i32(int32_t(c.N)), Arg::i32(int32_t(c.K)),
            Arg::i32(int32_t(c.K)), Arg::i32(int32_t(ldb)),
            Arg::i32(int32_t(ldc)), Arg::f32(alpha)});
  Device::get().synchronize();
  auto out = cBuf.toHost<float>();
  expectProduct(
      out, c.M, c.N, c.K, ldc, alpha,
      [&](int64_t i, int64_t kk) { return av[i * c.K + kk]; },
      [&](int64_t kk, int64_t j) {
        return c.transB ? bv[j * c.K + kk] : bv[kk * c.N + j];
      });
}

std::vector<DotCase> dotCases() {
  std::vector<DotCase> out;
  for (DType t : {DType::BF16, DType::F16})
    for (bool tb : {false, true}) {
      out.push_back({t, tb, 64, 64, 32, 64, 64, 32, 4});
      out.push_back({t, tb, 100, 72, 48, 64, 64, 32, 4});
      out.push_back({t, tb, 129, 257, 100, 128, 128, 32, 8});
      out.push_back({t, tb, 1, 8, 16, 16, 32, 16, 1});
      out.push_back({t, tb, 33, 40, 200, 32, 64, 64, 2});
      // A producer warpgroup copies the pointer ring's stages (sm_90; the
      // option changes nothing elsewhere): ragged M, N and K, one and two
      // consumer warpgroups, K loops shorter and longer than the ring.
      out.push_back({t, tb, 100, 72, 48, 64, 64, 32, 4, 1});
      out.push_back({t, tb, 129, 257, 100, 128, 128, 32, 8, 1});
      out.push_back({t, tb, 200, 300, 1000, 128, 256, 64, 8, 1});
    }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Dot, DotTest, ::testing::ValuesIn(dotCases()),
                         [](const auto &info) { return name(info.param); });

// matmul_blocks: operands through desc<T> tensor descriptors. On an sm_90
// GPU this runs the TMA + wgmma ring (all four operand majors), elsewhere
// the plain-load fallback; both must match the float64 product.
struct BlockCase {
  DType dtype;
  bool transA, transB;
  int64_t M, N, K;
  int bm, bn, warps;
  /// PINGPONG = 1: two consumer warpgroups take alternate tiles (warps 4).
  bool pingpong = false;
};

std::string blockName(const BlockCase &c) {
  return std::string(dtypeName(c.dtype)) + (c.transA ? "_AT" : "_A") +
         (c.transB ? "_BT" : "_B") + "_M" + std::to_string(c.M) + "_N" +
         std::to_string(c.N) + "_K" + std::to_string(c.K) + "_tile" +
         std::to_string(c.bm) + "x" + std::to_string(c.bn) + "_w" +
         std::to_string(c.warps) + (c.pingpong ? "_pingpong" : "");
}

using BlockDotTest = sparsetile::testing::GpuParamTest<BlockCase>;

TEST_P(BlockDotTest, MatchesFloat64) {
  const BlockCase &c = GetParam();
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^
                      std::hash<std::string>()(blockName(c)));
  // Stored shapes, with padded leading dimensions (multiples of 8 elements,
  // as TMA needs 16-byte row pitches).
  int64_t aRows = c.transA ? c.K : c.M, aCols = c.transA ? c.M : c.K;
  int64_t bRows = c.transB ? c.N : c.K, bCols = c.transB ? c.K : c.N;
  int64_t lda = (aCols + 8 + 7) / 8 * 8, ldb = (bCols + 16 + 7) / 8 * 8;
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, aRows * lda, c.dtype, rng);
  randomMatrix(b, bv, bRows * ldb, c.dtype, rng);
  auto A = [&](int64_t i, int64_t k) {
    return c.transA ? av[k * lda + i] : av[i * lda + k];
  };
  auto B = [&](int64_t k, int64_t j) {
    return c.transB ? bv[j * ldb + k] : bv[k * ldb + j];
  };
  int64_t ldc = c.N + 3;
  float alpha = 0.25f;
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  DeviceBuffer cBuf(c.M * ldc * 4);
  cBuf.fill(0xff);
  auto src = KernelSource::fromFile(sparsetile::testing::examplesDir() +
                                    "/matmul.tile");
  JITOptions o;
  o.numWarps = c.warps;
  Kernel &k = JIT::global().get(src, "matmul_blocks",
                                {{"T", dtypeName(c.dtype)},
                                 {"TRANS_A", c.transA ? "1" : "0"},
                                 {"TRANS_B", c.transB ? "1" : "0"},
                                 {"BM", std::to_string(c.bm)},
                                 {"BN", std::to_string(c.bn)},
                                 {"BK", "64"},
                                 {"PINGPONG", c.pingpong ? "1" : "0"}},
                                o);
  k.launch(Dim3(unsigned((c.M + c.bm - 1) / c.bm),
                unsigned((c.N + c.bn - 1) / c.bn)),
           {Arg::tensor2d(aBuf.ptr(), c.dtype, aRows, aCols, lda),
            Arg::tensor2d(bBuf.ptr(), c.dtype, bRows, bCols, ldb),
            Arg::ptr(cBuf.ptr(), DType::F32), Arg::i32(int32_t(c.M)),
            Arg::i32(int32_t(c.N)), Arg::i32(int32_t(c.K)),
            Arg::i32(int32_t(ldc)), Arg::f32(alpha)});
  Device::get().synchronize();
  expectProduct(cBuf.toHost<float>(), c.M, c.N, c.K, ldc, alpha, A, B);
}

std::vector<BlockCase> blockCases() {
  std::vector<BlockCase> out;
  for (DType t : {DType::BF16, DType::F16})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        out.push_back({t, ta, tb, 128, 128, 64, 128, 128, 8});
        out.push_back({t, ta, tb, 300, 200, 520, 128, 128, 8});
        out.push_back({t, ta, tb, 64, 256, 192, 64, 256, 4});
      }
  // Two m64 wgmmas per warpgroup (256 rows over 8 warps, 128 over 4).
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      out.push_back({DType::BF16, ta, tb, 300, 200, 130, 256, 128, 8});
      out.push_back({DType::F16, ta, tb, 128, 64, 64, 128, 64, 4});
    }
  // Fewer K steps than ring stages, and a single ragged step.
  out.push_back({DType::BF16, false, true, 130, 70, 20, 128, 128, 8});
  // Ping-pong consumers: each warpgroup owns alternate tiles (64 x 256 and
  // 128 x 128 on one warpgroup); fewer tiles than SMs, an odd count (the
  // last one is group 0's alone), many per program, fewer K steps than
  // stages, and ragged M, N, K.
  for (DType t : {DType::BF16, DType::F16})
    for (bool tb : {false, true}) {
      out.push_back({t, false, tb, 300, 200, 520, 64, 256, 4, true});
      out.push_back({t, true, tb, 300, 200, 520, 128, 128, 4, true});
      out.push_back({t, false, tb, 4100, 1030, 200, 128, 128, 4, true});
    }
  out.push_back({DType::BF16, false, true, 130, 70, 20, 64, 256, 4, true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(BlockDot, BlockDotTest,
                         ::testing::ValuesIn(blockCases()),
                         [](const auto &info) { return blockName(info.param); });

// matmul_store_block: matmul_blocks with a 16-bit C written by store_block.
// On an sm_90 GPU the persistent kernel's store is a TMA store (staged in
// shared memory, copied out by the TMA unit while the next tile runs);
// one program per tile and ping-pong groups store with masked stores, as
// every target without TMA does. C's padding columns (ldc > N) are poison
// and must stay so: the descriptor's width is N, and TMA drops what falls
// past it.
struct StoreBlockCase {
  DType dtype;
  int64_t M, N, K;
  int bm, bn, warps;
  bool persistent = true, pingpong = false;
};

std::string storeBlockName(const StoreBlockCase &c) {
  return std::string(dtypeName(c.dtype)) + "_M" + std::to_string(c.M) + "_N" +
         std::to_string(c.N) + "_K" + std::to_string(c.K) + "_tile" +
         std::to_string(c.bm) + "x" + std::to_string(c.bn) + "_w" +
         std::to_string(c.warps) + (c.persistent ? "" : "_onepertile") +
         (c.pingpong ? "_pingpong" : "");
}

using StoreBlockTest = sparsetile::testing::GpuParamTest<StoreBlockCase>;

TEST_P(StoreBlockTest, MatchesFloat64) {
  const StoreBlockCase &c = GetParam();
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^
                      std::hash<std::string>()(storeBlockName(c)));
  int64_t lda = (c.K + 8 + 7) / 8 * 8, ldb = (c.N + 16 + 7) / 8 * 8;
  int64_t ldc = (c.N + 8 + 7) / 8 * 8; // 16-byte rows, with padding
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, c.M * lda, c.dtype, rng);
  randomMatrix(b, bv, c.K * ldb, c.dtype, rng);
  float alpha = 0.25f;
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  DeviceBuffer cBuf(c.M * ldc * 2);
  cBuf.fill(0xff);
  auto src = KernelSource::fromFile(sparsetile::testing::examplesDir() +
                                    "/matmul.tile");
  JITOptions o;
  o.numWarps = c.warps;
  Kernel &k = JIT::global().get(src, "matmul_store_block",
                                {{"T", dtypeName(c.dtype)},
                                 {"BM", std::to_string(c.bm)},
                                 {"BN", std::to_string(c.bn)},
                                 {"PERSISTENT", c.persistent ? "1" : "0"},
                                 {"PINGPONG", c.pingpong ? "1" : "0"}},
                                o);
  k.launch(Dim3(unsigned((c.M + c.bm - 1) / c.bm),
                unsigned((c.N + c.bn - 1) / c.bn)),
           {Arg::tensor2d(aBuf.ptr(), c.dtype, c.M, c.K, lda),
            Arg::tensor2d(bBuf.ptr(), c.dtype, c.K, c.N, ldb),
            Arg::tensor2d(cBuf.ptr(), c.dtype, c.M, c.N, ldc),
            Arg::i32(int32_t(c.K)), Arg::f32(alpha)});
  Device::get().synchronize();
  std::vector<uint16_t> out = cBuf.toHost<uint16_t>();
  // The 16-bit result of an f32 accumulation: within the accumulation's
  // error plus one rounding to T.
  double ulp = c.dtype == DType::BF16 ? 1.0 / 256 : 1.0 / 2048;
  int bad = 0;
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < c.N; ++j) {
      double ref = 0, mag = 0;
      for (int64_t kk = 0; kk < c.K; ++kk) {
        ref += av[i * lda + kk] * bv[kk * ldb + j];
        mag += std::fabs(av[i * lda + kk] * bv[kk * ldb + j]);
      }
      ref *= alpha;
      uint16_t h = out[i * ldc + j];
      double got = c.dtype == DType::BF16 ? bf16ToFloat(h) : halfToFloat(h);
      if (!(std::fabs(got - ref) <= 1e-5 * mag + ulp * std::fabs(ref) + 1e-6) &&
          bad++ < 5)
        ADD_FAILURE() << "C[" << i << ", " << j << "] = " << got
                      << ", expected " << ref;
    }
    for (int64_t j = c.N; j < ldc; ++j)
      if (out[i * ldc + j] != 0xffff && bad++ < 5)
        ADD_FAILURE() << "padding C[" << i << ", " << j << "] was written";
  }
  EXPECT_EQ(bad, 0);
}

std::vector<StoreBlockCase> storeBlockCases() {
  std::vector<StoreBlockCase> out;
  for (DType t : {DType::BF16, DType::F16}) {
    // Fewer tiles than SMs, ragged M, N (a partial last panel) and K.
    out.push_back({t, 300, 200, 520, 128, 128, 8});
    // Four panels a tile; two m64 wgmmas per warpgroup.
    out.push_back({t, 300, 264, 130, 128, 256, 8});
    out.push_back({t, 520, 136, 200, 256, 128, 8});
    // Many tiles per program (33 x 9 on 132 programs): the staging area is
    // reused while earlier copies may still drain.
    out.push_back({t, 4100, 1032, 200, 128, 128, 8});
    // One warpgroup: 64 x 256.
    out.push_back({t, 200, 296, 64, 64, 256, 4});
    // Fewer K steps than ring stages, and a single ragged step.
    out.push_back({t, 130, 72, 20, 128, 128, 8});
    // The masked-store forms, which take any width: one program per tile,
    // ping-pong groups.
    out.push_back({t, 300, 206, 520, 128, 128, 8, false});
    out.push_back({t, 4100, 1030, 200, 128, 128, 4, true, true});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(StoreBlock, StoreBlockTest,
                         ::testing::ValuesIn(storeBlockCases()),
                         [](const auto &info) {
                           return storeBlockName(info.param);
                         });

// TMA drops what falls past a tensor's width in 16-byte units only (on the
// H100 a 1030-wide C got columns 1030 and 1031 of its padding written), so
// a launch whose TMA-stored tensor is not a whole number of 16-byte units
// wide is refused before anything runs.
TEST(StoreBlockWidth, TmaStoreRefusesWidthsOfPartialSixteenBytes) {
  std::string why;
  if (!gpuAvailable(&why))
    GTEST_SKIP() << "no GPU: " << why;
  if (Device::get().computeMajor() != 9)
    GTEST_SKIP() << "the TMA store runs on sm_90, this is "
                 << Device::get().arch();
  const int64_t M = 130, N = 70, K = 64, ld = 80;
  DeviceBuffer aBuf(M * ld * 2), bBuf(K * ld * 2), cBuf(M * ld * 2);
  aBuf.fill(0);
  bBuf.fill(0);
  cBuf.fill(0xff);
  auto src = KernelSource::fromFile(sparsetile::testing::examplesDir() +
                                    "/matmul.tile");
  Kernel &k = JIT::global().get(src, "matmul_store_block", {{"T", "bf16"}});
  try {
    k.launch(Dim3(2, 1), {Arg::tensor2d(aBuf.ptr(), DType::BF16, M, K, ld),
                          Arg::tensor2d(bBuf.ptr(), DType::BF16, K, N, ld),
                          Arg::tensor2d(cBuf.ptr(), DType::BF16, M, N, ld),
                          Arg::i32(int32_t(K)), Arg::f32(1.0f)});
    ADD_FAILURE() << "a 70-wide TMA-stored C was launched";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("written by a TMA store"),
              std::string::npos)
        << e.what();
  }
  Device::get().synchronize();
  for (uint16_t h : cBuf.toHost<uint16_t>())
    ASSERT_EQ(h, 0xffff) << "C was written";
}

// matmul_blocks is persistent by default (PERSISTENT = 1): on sm_90 it
// takes tiles from a queue the runtime keeps per stream, which each launch's
// last program resets. Launches alternate between two streams, with a
// different alpha each time and a small grid (fewer tiles than SMs) between
// two large ones (about two tiles per SM): the last launch on each stream
// must have computed every tile, which a queue left dirty by the one before
// (tiles skipped) or shared between the streams (tiles taken by the other
// launch) would break.
TEST(PersistentQueue, LaunchesOnTwoStreamsComputeEveryTile) {
  std::string why;
  if (!gpuAvailable(&why))
    GTEST_SKIP() << "no GPU: " << why;
  const int64_t M = 4096, N = 1024, K = 128, lda = K, ldb = K, ldc = N + 4;
  std::mt19937_64 rng(sparsetile::testing::testSeed());
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, M * lda, DType::BF16, rng);
  randomMatrix(b, bv, N * ldb, DType::BF16, rng);
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  auto src = KernelSource::fromFile(sparsetile::testing::examplesDir() +
                                    "/matmul.tile");
  Kernel &k = JIT::global().get(src, "matmul_blocks",
                                {{"T", "bf16"}, {"TRANS_B", "1"}});
  Stream s1, s2;
  DeviceBuffer c1(M * ldc * 4), c2(M * ldc * 4);
  c1.fill(0xff);
  c2.fill(0xff);
  auto launch = [&](const Stream &s, DeviceBuffer &c, int64_t rows,
                    float alpha) {
    k.launch(LaunchConfig(Dim3(unsigned((rows + 127) / 128), N / 128),
                          Dim3(0, 1, 1), 0, s.handle()),
             {Arg::tensor2d(aBuf.ptr(), DType::BF16, M, K, lda),
              Arg::tensor2d(bBuf.ptr(), DType::BF16, N, K, ldb),
              Arg::ptr(c.ptr(), DType::F32), Arg::i32(int32_t(rows)),
              Arg::i32(int32_t(N)), Arg::i32(int32_t(K)),
              Arg::i32(int32_t(ldc)), Arg::f32(alpha)});
  };
  launch(s1, c1, M, 0.25f);
  launch(s2, c2, M, 1.0f);
  launch(s1, c1, 200, 0.5f);
  launch(s2, c2, M, 1.25f);
  launch(s1, c1, M, 0.75f);
  launch(s2, c2, M, 1.5f);
  s1.synchronize();
  s2.synchronize();
  auto A = [&](int64_t i, int64_t kk) { return av[i * lda + kk]; };
  auto B = [&](int64_t kk, int64_t j) { return bv[j * ldb + kk]; };
  expectProduct(c1.toHost<float>(), M, N, K, ldc, 0.75, A, B);
  expectProduct(c2.toHost<float>(), M, N, K, ldc, 1.5, A, B);
}

// The plain-load path of matmul_blocks (what every target without TMA
// runs): compiled for sm_80 and loaded as PTX, which the driver JIT-compiles
// for this GPU. A 128 x 256 tile stages 52 KB, so it also covers dot's
// dynamic shared memory above 48 KB.
TEST(BlockDotPlainLoads, Sm80PtxMatchesFloat64) {
  std::string why;
  if (!gpuAvailable(&why))
    GTEST_SKIP() << "no GPU: " << why;
  // The full path: matmul.tile imports tile_order.tile from beside itself.
  std::string path = sparsetile::testing::examplesDir() + "/matmul.tile";
  std::string text = fileText(path);
  CompileOptions co;
  co.arch = "sm_80";
  co.constants = {{"TRANS_B", "1"}, {"BN", "256"}};
  CompileResult r = compile(text, path, "matmul_blocks", co);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  ASSERT_GT(r.kernel.dynamicSharedBytes, 48 * 1024);
  Kernel k(r.kernel, Module::fromPtx(r.kernel.ptx));
  std::mt19937_64 rng(sparsetile::testing::testSeed());
  const int64_t M = 200, N = 300, K = 136, lda = 136, ldb = 144, ldc = 301;
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, M * lda, DType::BF16, rng);
  randomMatrix(b, bv, N * ldb, DType::BF16, rng);
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  DeviceBuffer cBuf(M * ldc * 4);
  cBuf.fill(0xff);
  k.launch(Dim3(unsigned((M + 127) / 128), unsigned((N + 255) / 256)),
           {Arg::tensor2d(aBuf.ptr(), DType::BF16, M, K, lda),
            Arg::tensor2d(bBuf.ptr(), DType::BF16, N, K, ldb),
            Arg::ptr(cBuf.ptr(), DType::F32), Arg::i32(int32_t(M)),
            Arg::i32(int32_t(N)), Arg::i32(int32_t(K)),
            Arg::i32(int32_t(ldc)), Arg::f32(1.0f)});
  Device::get().synchronize();
  expectProduct(
      cBuf.toHost<float>(), M, N, K, ldc, 1.0,
      [&](int64_t i, int64_t kk) { return av[i * lda + kk]; },
      [&](int64_t kk, int64_t j) { return bv[j * ldb + kk]; });
}

// The pointer ring on targets without wgmma: matmul (pointer tiles, as the
// Triton tutorial loads them) compiled for sm_80 takes the cp.async ring,
// read by ldmatrix + mma.sync (RingMmaSync.cpp), and runs as PTX that the
// driver JIT-compiles for this GPU. Both dtypes, B and B^T (N-major and
// K-major stages), A^T (an M-major stage, kernel below), K steps of 64 and
// of 32 (A in one 64-byte swizzled panel), 2, 4 and 8 warps; M, N and K
// ragged against the tile (a bound that masks a block along its rows is a
// multiple of 16, as the ring's 16-byte copies under one mask need: K, N
// for an N-major B, M for A^T; the last blocks are partly zero-filled).
const char *kPointerAT = R"tile(
@num_warps(4)
kernel matmul_at(a: *T, b: *T, c: *f32, M: i32, N: i32, K: i32,
                 lda: i32, ldb: i32, ldc: i32, alpha: f32,
                 const T: dtype = bf16, const BM: i32 = 64,
                 const BN: i32 = 64, const BK: i32 = 32) {
  let rm = program_id(0) * BM + arange(0, BM);
  let rn = program_id(1) * BN + arange(0, BN);
  let rk = arange(0, BK);
  let acc = zeros([BM, BN], f32);
  for k in range(0, K, BK) {
    let ka = k + rk;
    let ta = trans(load(a + ka[:, None] * lda + rm[None, :],
                        mask=(ka[:, None] < K) && (rm[None, :] < M)));
    let tb = load(b + ka[:, None] * ldb + rn[None, :],
                  mask=(ka[:, None] < K) && (rn[None, :] < N));
    acc = dot(ta, tb, acc);
  }
  store(c + rm[:, None] * ldc + rn[None, :], acc * alpha,
        mask=(rm[:, None] < M) && (rn[None, :] < N));
}
)tile";

struct RingCase {
  DType dtype;
  bool transA, transB;
  int64_t M, N, K;
  int bm, bn, bk, warps;
};

std::string ringName(const RingCase &c) {
  return std::string(dtypeName(c.dtype)) + (c.transA ? "_AT" : "_A") +
         (c.transB ? "_BT" : "_B") + "_M" + std::to_string(c.M) + "_N" +
         std::to_string(c.N) + "_K" + std::to_string(c.K) + "_tile" +
         std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" +
         std::to_string(c.bk) + "_w" + std::to_string(c.warps);
}

using PointerRingSm80Test = sparsetile::testing::GpuParamTest<RingCase>;

TEST_P(PointerRingSm80Test, MatchesFloat64) {
  const RingCase &c = GetParam();
  std::string path = sparsetile::testing::examplesDir() + "/matmul.tile";
  std::string text = kPointerAT, kernel = "matmul_at";
  if (!c.transA) {
    text = fileText(path);
    kernel = "matmul";
  }
  CompileOptions co;
  co.arch = "sm_80";
  co.numWarps = c.warps;
  co.constants = {{"T", dtypeName(c.dtype)},
                  {"BM", std::to_string(c.bm)},
                  {"BN", std::to_string(c.bn)},
                  {"BK", std::to_string(c.bk)}};
  if (!c.transA)
    co.constants["TRANS_B"] = c.transB ? "1" : "0";
  // A and B rows padded to a multiple of 16 elements beyond the matrix, as
  // a strided view would be; the JIT's promise for the integer arguments
  // that are multiples of 16 (a mask along a block's rows needs its bound
  // to be one for the ring's 16-byte copies: N for B, M for A^T).
  int64_t lda = ((c.transA ? c.M : c.K) + 31) / 16 * 16;
  int64_t ldb = ((c.transB ? c.K : c.N) + 31) / 16 * 16;
  for (auto [name, v] : {std::pair<const char *, int64_t>{"M", c.M},
                         {"N", c.N},
                         {"K", c.K},
                         {"lda", lda},
                         {"ldb", ldb}})
    if (v % 16 == 0)
      co.divisibleBy16.push_back(name);
  CompileResult r =
      compile(text, c.transA ? "matmul_at.tile" : path, kernel, co);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  // The ring, not the staged mma.sync fallback.
  ASSERT_NE(r.kernel.ptx.find("cp.async.mbarrier.arrive.noinc"),
            std::string::npos);
  ASSERT_NE(r.kernel.ptx.find("ldmatrix"), std::string::npos);
  ASSERT_EQ(r.kernel.ptx.find("wgmma"), std::string::npos);
  Kernel k(r.kernel, Module::fromPtx(r.kernel.ptx));

  std::mt19937_64 rng(sparsetile::testing::testSeed() ^
                      std::hash<std::string>()(ringName(c)));
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  // A is [M, K] (A^T: [K, M]); B is [K, N] (B^T: [N, K]).
  int64_t ldc = c.N + 3;
  randomMatrix(a, av, (c.transA ? c.K : c.M) * lda, c.dtype, rng);
  randomMatrix(b, bv, (c.transB ? c.N : c.K) * ldb, c.dtype, rng);
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  DeviceBuffer cBuf(c.M * ldc * 4);
  cBuf.fill(0xff);
  float alpha = 0.5f;
  k.launch(Dim3(unsigned((c.M + c.bm - 1) / c.bm),
                unsigned((c.N + c.bn - 1) / c.bn)),
           {Arg::ptr(aBuf.ptr(), c.dtype), Arg::ptr(bBuf.ptr(), c.dtype),
            Arg::ptr(cBuf.ptr(), DType::F32), Arg::i32(int32_t(c.M)),
            Arg::i32(int32_t(c.N)), Arg::i32(int32_t(c.K)),
            Arg::i32(int32_t(lda)), Arg::i32(int32_t(ldb)),
            Arg::i32(int32_t(ldc)), Arg::f32(alpha)});
  Device::get().synchronize();
  expectProduct(
      cBuf.toHost<float>(), c.M, c.N, c.K, ldc, alpha,
      [&](int64_t i, int64_t kk) {
        return c.transA ? av[kk * lda + i] : av[i * lda + kk];
      },
      [&](int64_t kk, int64_t j) {
        return c.transB ? bv[j * ldb + kk] : bv[kk * ldb + j];
      });
}

std::vector<RingCase> ringCases() {
  return {
      {DType::BF16, false, false, 200, 304, 176, 128, 128, 64, 4},
      {DType::F16, false, true, 200, 300, 176, 128, 128, 64, 4},
      {DType::BF16, false, true, 129, 257, 96, 128, 128, 64, 8},
      {DType::F16, false, false, 129, 272, 96, 128, 128, 32, 8},
      {DType::BF16, false, false, 100, 80, 48, 64, 64, 32, 4},
      {DType::F16, false, true, 65, 130, 208, 64, 128, 64, 2},
      {DType::BF16, true, false, 208, 160, 112, 128, 64, 64, 4},
      {DType::F16, true, false, 112, 208, 80, 64, 128, 32, 8},
  };
}

INSTANTIATE_TEST_SUITE_P(PointerRing, PointerRingSm80Test,
                         ::testing::ValuesIn(ringCases()),
                         [](const auto &info) { return ringName(info.param); });

// A pointer K loop inside a loop over tiles (a persistent-style kernel
// written by hand): the ring is set up again for each tile (tile.ring_init
// in the outer loop: its mbarriers' phases start over, after a block
// barrier), on sm_90 (wgmma) and sm_80 (mma.sync), as PTX.
const char *kNestedRing = R"tile(
@num_warps(8)
kernel mm(a: *bf16, b: *bf16, c: *f32, M: i32, N: i32, K: i32, lda: i32,
          ldb: i32, ldc: i32, tiles: i32) {
  for t in range(0, tiles) {
    let rm = (program_id(0) + t * num_programs(0)) * 128 + arange(0, 128);
    let rn = arange(0, 128);
    let rk = arange(0, 64);
    let acc = zeros([128, 128], f32);
    for k in range(0, K, 64) {
      let kk = k + rk;
      let ta = load(a + rm[:, None] * lda + kk[None, :],
                    mask=(rm[:, None] < M) && (kk[None, :] < K), other=0.0);
      let tb = load(b + kk[:, None] * ldb + rn[None, :],
                    mask=(kk[:, None] < K) && (rn[None, :] < N), other=0.0);
      acc = dot(ta, tb, acc);
    }
    store(c + rm[:, None] * ldc + rn[None, :], acc,
          mask=(rm[:, None] < M) && (rn[None, :] < N));
  }
}
)tile";

using NestedRingTest = sparsetile::testing::GpuParamTest<const char *>;

TEST_P(NestedRingTest, EveryTileMatchesFloat64) {
  CompileOptions co;
  co.arch = GetParam();
  co.divisibleBy16 = {"N", "K", "lda", "ldb"};
  CompileResult r = compile(kNestedRing, "nested.tile", "mm", co);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  ASSERT_NE(r.kernel.ptx.find("cp.async.mbarrier.arrive.noinc"),
            std::string::npos);
  Kernel k(r.kernel, Module::fromPtx(r.kernel.ptx));
  const int64_t M = 700, N = 112, K = 176, lda = 192, ldb = 128, ldc = 115;
  const int64_t programs = 2,
                tiles = (M + 128 * programs - 1) / (128 * programs);
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^ 0x7e57);
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, M * lda, DType::BF16, rng);
  randomMatrix(b, bv, K * ldb, DType::BF16, rng);
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  DeviceBuffer cBuf(M * ldc * 4);
  cBuf.fill(0xff);
  k.launch(Dim3(unsigned(programs)),
           {Arg::ptr(aBuf.ptr(), DType::BF16),
            Arg::ptr(bBuf.ptr(), DType::BF16), Arg::ptr(cBuf.ptr(), DType::F32),
            Arg::i32(int32_t(M)), Arg::i32(int32_t(N)), Arg::i32(int32_t(K)),
            Arg::i32(int32_t(lda)), Arg::i32(int32_t(ldb)),
            Arg::i32(int32_t(ldc)), Arg::i32(int32_t(tiles))});
  Device::get().synchronize();
  expectProduct(
      cBuf.toHost<float>(), M, N, K, ldc, 1.0,
      [&](int64_t i, int64_t kk) { return av[i * lda + kk]; },
      [&](int64_t kk, int64_t j) { return bv[kk * ldb + j]; });
}

INSTANTIATE_TEST_SUITE_P(Archs, NestedRingTest,
                         ::testing::Values("sm_90", "sm_80"),
                         [](const auto &info) {
                           return std::string(info.param);
                         });

// sparsedrop.tile's pointer kernels compiled for sm_80 (skipped without a
// GPU by the fixture).
using SparseDropSm80Ring = sparsetile::testing::GpuTest;

// SparseDrop's dX = scale * (dY @ W) on kept mask blocks (zeros elsewhere),
// sparsedrop.tile's pointer kernel sdd_dx: on sm_80 its K loop (inside the
// program's kept-block branch) takes the ring too. One mask bit a 128 x 128
// tile; M, N and K ragged against it (N and K multiples of 16, as the
// ring's copies under masks along the rows need).
TEST_F(SparseDropSm80Ring, SddDxMatchesFloat64) {
  std::string path = sparsetile::testing::examplesDir() + "/sparsedrop.tile";
  std::string text = fileText(path);
  CompileOptions co;
  co.arch = "sm_80";
  co.divisibleBy16 = {"N", "K", "lddy", "ldw"};
  CompileResult r = compile(text, path, "sdd_dx", co);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  ASSERT_NE(r.kernel.ptx.find("ldmatrix"), std::string::npos);
  ASSERT_NE(r.kernel.ptx.find("cp.async.mbarrier.arrive.noinc"),
            std::string::npos);
  Kernel k(r.kernel, Module::fromPtx(r.kernel.ptx));
  const int64_t M = 300, N = 208, K = 272, bm = 128, bk = 128;
  const int64_t lddy = 224, ldw = 272, lddx = 283;
  const int64_t nmb = (M + bm - 1) / bm, nkb = (K + bk - 1) / bk, wpr = 1;
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^ 0x5dd);
  std::vector<uint16_t> dy, w;
  std::vector<double> dyv, wv;
  randomMatrix(dy, dyv, M * lddy, DType::BF16, rng);
  randomMatrix(w, wv, N * ldw, DType::BF16, rng);
  std::vector<int64_t> mask(nmb * wpr, 0);
  for (int64_t i = 0; i < nmb; ++i)
    for (int64_t j = 0; j < nkb; ++j)
      if ((i + 2 * j) % 3 != 1) // kept and dropped blocks in every row
        mask[i * wpr] |= int64_t(1) << j;
  auto dyBuf = DeviceBuffer::fromHost(dy), wBuf = DeviceBuffer::fromHost(w);
  auto maskBuf = DeviceBuffer::fromHost(mask);
  DeviceBuffer dxBuf(M * lddx * 2);
  dxBuf.fill(0xff);
  const float scale = 1.25f;
  k.launch(
      Dim3(unsigned(nmb * nkb)),
      {Arg::ptr(dyBuf.ptr(), DType::BF16), Arg::ptr(wBuf.ptr(), DType::BF16),
       Arg::ptr(maskBuf.ptr(), DType::I64), Arg::ptr(dxBuf.ptr(), DType::BF16),
       Arg::i32(int32_t(M)), Arg::i32(int32_t(N)), Arg::i32(int32_t(K)),
       Arg::i32(int32_t(lddy)), Arg::i32(int32_t(ldw)), Arg::i32(int32_t(lddx)),
       Arg::i32(int32_t(bm)), Arg::i32(int32_t(bk)), Arg::i32(int32_t(wpr)),
       Arg::f32(scale)});
  Device::get().synchronize();
  auto dx = dxBuf.toHost<uint16_t>();
  int bad = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < K; ++j) {
      bool kept = (mask[(i / bm) * wpr] >> (j / bk)) & 1;
      double ref = 0, mag = 0;
      for (int64_t n = 0; kept && n < N; ++n) {
        ref += dyv[i * lddy + n] * wv[n * ldw + j];
        mag += std::fabs(dyv[i * lddy + n] * wv[n * ldw + j]);
      }
      ref *= scale;
      double got = bf16ToFloat(dx[i * lddx + j]);
      // bf16 output: its rounding (2^-9 relative) and the f32 sum's error;
      // a dropped block must be exactly zero.
      double tol = 8e-3 * std::fabs(ref) + 1e-4 * scale * mag + 1e-6;
      if (!(std::fabs(got - ref) <= tol) && bad++ < 5)
        ADD_FAILURE() << "dX[" << i << ", " << j << "] = " << got
                      << ", expected " << ref << (kept ? "" : " (dropped)");
    }
  EXPECT_EQ(bad, 0);
}

// sparsedrop.tile's dsd_fwd (Y = s (X . mask) W^T) and dsd_dw (dW = s dY^T
// (X . mask)) on sm_80: their dot sits under the mask bit's `if` inside the
// K loop, which the ring takes (skipped blocks copy nothing and run no
// MMA). Kept and dropped blocks in every mask row and column; M ragged,
// N and K multiples of 16 (the ring's copies under masks along the rows).
TEST_F(SparseDropSm80Ring, DsdFwdAndDwMatchFloat64) {
  std::string path = sparsetile::testing::examplesDir() + "/sparsedrop.tile";
  std::string text = fileText(path);
  const int64_t M = 300, N = 208, K = 272, bm = 128, bk = 128;
  const int64_t ldx = 288, ldw = 288, lddy = 224, ldo = 291;
  const int64_t nmb = (M + bm - 1) / bm, nkb = (K + bk - 1) / bk, wpr = 1;
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^ 0xd5d);
  std::vector<uint16_t> x, w, dy;
  std::vector<double> xv, wv, dyv;
  randomMatrix(x, xv, M * ldx, DType::BF16, rng);
  randomMatrix(w, wv, N * ldw, DType::BF16, rng);
  randomMatrix(dy, dyv, M * lddy, DType::BF16, rng);
  std::vector<int64_t> mask(nmb * wpr, 0);
  for (int64_t i = 0; i < nmb; ++i)
    for (int64_t j = 0; j < nkb; ++j)
      if ((i + 2 * j) % 3 != 1)
        mask[i * wpr] |= int64_t(1) << j;
  auto kept = [&](int64_t i, int64_t kk) {
    return (mask[(i / bm) * wpr] >> (kk / bk)) & 1;
  };
  auto xBuf = DeviceBuffer::fromHost(x), wBuf = DeviceBuffer::fromHost(w),
       dyBuf = DeviceBuffer::fromHost(dy);
  auto maskBuf = DeviceBuffer::fromHost(mask);
  const float scale = 1.25f;
  for (const char *kernel : {"dsd_fwd", "dsd_dw"}) {
    SCOPED_TRACE(kernel);
    bool fwd = std::string(kernel) == "dsd_fwd";
    CompileOptions co;
    co.arch = "sm_80";
    co.divisibleBy16 = fwd ? std::vector<std::string>{"K", "ldx", "ldw"}
                           : std::vector<std::string>{"N", "K", "lddy", "ldx"};
    CompileResult r = compile(text, path, kernel, co);
    ASSERT_TRUE(r.ok) << r.diagnostics;
    ASSERT_NE(r.kernel.ptx.find("cp.async.mbarrier.arrive.noinc"),
              std::string::npos);
    Kernel k(r.kernel, Module::fromPtx(r.kernel.ptx));
    // Y [M, N] or dW [N, K], rows ldo apart, poisoned.
    int64_t rows = fwd ? M : N, cols = fwd ? N : K;
    DeviceBuffer out(rows * ldo * 2);
    out.fill(0xff);
    unsigned programs = unsigned(fwd ? nmb * ((N + 127) / 128)
                                     : ((N + 127) / 128) * ((K + 127) / 128));
    std::vector<Arg> args = {
        Arg::ptr(fwd ? xBuf.ptr() : dyBuf.ptr(), DType::BF16),
        Arg::ptr(fwd ? wBuf.ptr() : xBuf.ptr(), DType::BF16),
        Arg::ptr(maskBuf.ptr(), DType::I64),
        Arg::ptr(out.ptr(), DType::BF16),
        Arg::i32(int32_t(M)),
        Arg::i32(int32_t(N)),
        Arg::i32(int32_t(K)),
        Arg::i32(int32_t(fwd ? ldx : lddy)),
        Arg::i32(int32_t(fwd ? ldw : ldx)),
        Arg::i32(int32_t(ldo)),
        Arg::i32(int32_t(bm)),
        Arg::i32(int32_t(bk)),
        Arg::i32(int32_t(wpr)),
        Arg::f32(scale)};
    k.launch(Dim3(programs), args);
    Device::get().synchronize();
    auto got = out.toHost<uint16_t>();
    int bad = 0;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        // Y[i, j] = s sum_k X[i, k] W[j, k] over kept (i, k);
        // dW[i, j] = s sum_m dY[m, i] X[m, j] over kept (m, j).
        double ref = 0, mag = 0;
        for (int64_t t = 0; t < (fwd ? K : M); ++t) {
          double term =
              fwd ? (kept(i, t) ? xv[i * ldx + t] * wv[j * ldw + t] : 0)
                  : (kept(t, j) ? dyv[t * lddy + i] * xv[t * ldx + j] : 0);
          ref += term;
          mag += std::fabs(term);
        }
        ref *= scale;
        double v = bf16ToFloat(got[i * ldo + j]);
        double tol = 8e-3 * std::fabs(ref) + 1e-4 * scale * mag + 1e-6;
        if (!(std::fabs(v - ref) <= tol) && bad++ < 5)
          ADD_FAILURE() << (fwd ? "Y[" : "dW[") << i << ", " << j << "] = " << v
                        << ", expected " << ref;
      }
    EXPECT_EQ(bad, 0);
  }
}

// A K loop whose dot runs only where a flag says so (`if keep { acc =
// dot(...) }`, as SparseDrop skips dropped blocks): the ring fills a
// skipped iteration's stage with nothing but every thread's arrival, and
// the consumers skip its MMAs but still release the stage. On sm_90
// (wgmma, starting from poison until a step ran) and on sm_80 (mma.sync),
// from zeros or onto a loaded C; keep fractions 0, 0.5 and 1, with one row
// of programs that keeps nothing and one whose first step is skipped.
const char *kGuardedRing = R"tile(
@num_warps(8)
kernel guarded(a: *T, b: *T, keep: *i32, c: *f32, M: i32, N: i32, K: i32,
               lda: i32, ldb: i32, ldc: i32, nk: i32,
               const T: dtype = bf16, const ONTO: i32 = 0) {
  let rm = program_id(0) * 128 + arange(0, 128);
  let rn = program_id(1) * 128 + arange(0, 128);
  let rk = arange(0, 64);
  let cp = c + rm[:, None] * ldc + rn[None, :];
  let cm = (rm[:, None] < M) && (rn[None, :] < N);
  let acc = zeros([128, 128], f32);
  if ONTO != 0 {
    acc = load(cp, mask=cm, other=0.0);
  }
  for k in range(0, K, 64) {
    if load(keep + program_id(0) * nk + k / 64) != 0 {
      let kk = k + rk;
      let ta = load(a + rm[:, None] * lda + kk[None, :],
                    mask=(rm[:, None] < M) && (kk[None, :] < K), other=0.0);
      let tb = load(b + kk[:, None] * ldb + rn[None, :],
                    mask=(kk[:, None] < K) && (rn[None, :] < N), other=0.0);
      acc = dot(ta, tb, acc);
    }
  }
  store(cp, acc, mask=cm);
}
)tile";

struct GuardedCase {
  const char *arch;
  DType dtype;
  double keep; ///< Fraction of (program row, K step) pairs kept.
  bool onto;   ///< Accumulate onto C as loaded, not from zeros.
};

using GuardedRingTest = sparsetile::testing::GpuParamTest<GuardedCase>;

TEST_P(GuardedRingTest, MatchesFloat64) {
  const GuardedCase &g = GetParam();
  CompileOptions co;
  co.arch = g.arch;
  co.constants = {{"T", dtypeName(g.dtype)}, {"ONTO", g.onto ? "1" : "0"}};
  co.divisibleBy16 = {"N", "K", "lda", "ldb"};
  CompileResult r = compile(kGuardedRing, "guarded.tile", "guarded", co);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  // The ring, not mma.sync over plain loads.
  ASSERT_NE(r.kernel.ptx.find("cp.async.mbarrier.arrive.noinc"),
            std::string::npos);
  ASSERT_EQ(r.kernel.ptx.find("wgmma") != std::string::npos,
            std::string(g.arch) == "sm_90");
  Kernel k(r.kernel, Module::fromPtx(r.kernel.ptx));
  const int64_t M = 420, N = 208, K = 400, lda = 416, ldb = 224, ldc = 211;
  const int64_t rows = (M + 127) / 128, nk = (K + 63) / 64;
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^
                      std::hash<std::string>()(std::string(g.arch)) ^
                      uint64_t(g.keep * 1000) ^ (g.onto ? 0x0a : 0));
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, M * lda, g.dtype, rng);
  randomMatrix(b, bv, K * ldb, g.dtype, rng);
  std::bernoulli_distribution kept(g.keep);
  std::vector<int32_t> keep(rows * nk);
  for (int32_t &f : keep)
    f = kept(rng);
  if (g.keep > 0 && g.keep < 1) {
    for (int64_t s = 0; s < nk; ++s) // Row 1 keeps nothing,
      keep[nk + s] = 0;
    keep[0] = 0, keep[1] = 1; // row 0 skips its first step.
  }
  std::vector<float> start(M * ldc);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (float &x : start)
    x = d(rng);
  // C poisoned; with `onto` its matrix (not its padding) starts from
  // `start`.
  std::vector<float> c(M * ldc);
  const uint32_t poison = 0xffffffffu;
  for (int64_t i = 0; i < M * ldc; ++i)
    if (g.onto && i % ldc < N)
      c[i] = start[i];
    else
      std::memcpy(&c[i], &poison, 4);
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  auto keepBuf = DeviceBuffer::fromHost(keep);
  auto cBuf = DeviceBuffer::fromHost(c);
  k.launch(Dim3(unsigned(rows), unsigned((N + 127) / 128)),
           {Arg::ptr(aBuf.ptr(), g.dtype), Arg::ptr(bBuf.ptr(), g.dtype),
            Arg::ptr(keepBuf.ptr(), DType::I32),
            Arg::ptr(cBuf.ptr(), DType::F32), Arg::i32(int32_t(M)),
            Arg::i32(int32_t(N)), Arg::i32(int32_t(K)), Arg::i32(int32_t(lda)),
            Arg::i32(int32_t(ldb)), Arg::i32(int32_t(ldc)),
            Arg::i32(int32_t(nk))});
  Device::get().synchronize();
  expectProduct(
      cBuf.toHost<float>(), M, N, K, ldc, 1.0,
      [&](int64_t i, int64_t kk) {
        return keep[(i / 128) * nk + kk / 64] ? av[i * lda + kk] : 0.0;
      },
      [&](int64_t kk, int64_t j) { return bv[kk * ldb + j]; },
      [&](int64_t i, int64_t j) {
        return g.onto ? double(start[i * ldc + j]) : 0.0;
      });
}

INSTANTIATE_TEST_SUITE_P(
    Guarded, GuardedRingTest,
    ::testing::Values(GuardedCase{"sm_90", DType::BF16, 0.5, false},
                      GuardedCase{"sm_90", DType::F16, 0.5, true},
                      GuardedCase{"sm_90", DType::BF16, 0.0, false},
                      GuardedCase{"sm_90", DType::F16, 1.0, false},
                      GuardedCase{"sm_80", DType::F16, 0.5, false},
                      GuardedCase{"sm_80", DType::BF16, 0.5, true},
                      GuardedCase{"sm_80", DType::BF16, 0.0, true},
                      GuardedCase{"sm_80", DType::F16, 1.0, false}),
    [](const auto &info) {
      const GuardedCase &g = info.param;
      return std::string(g.arch) + "_" + dtypeName(g.dtype) + "_keep" +
             std::to_string(int(g.keep * 100)) + (g.onto ? "_onto" : "");
    });

// A dot result used by code in other layouts: a broadcast bias added in the
// tensor-core layout, and a row sum that moves the product to the canonical
// layout.
const char *kEpilogue = R"tile(
@num_warps(4)
kernel epilogue(a: *bf16, b: *bf16, bias: *f32, c: *f32, rowsum: *f32) {
  let r = arange(0, 32);
  let n = arange(0, 64);
  let k = arange(0, 32);
  let ta = load(a + r[:, None] * 32 + k[None, :]);
  let tb = load(b + k[:, None] * 64 + n[None, :]);
  let acc = dot(ta, tb) + load(bias + n)[None, :];
  store(c + r[:, None] * 64 + n[None, :], acc);
  store(rowsum + r, sum(acc, axis=1));
}
)tile";

TEST(DotEpilogue, BiasAndRowSumMatchFloat64) {
  std::string why;
  if (!gpuAvailable(&why))
    GTEST_SKIP() << "no GPU: " << why;
  std::mt19937_64 rng(sparsetile::testing::testSeed());
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, 32 * 32, DType::BF16, rng);
  randomMatrix(b, bv, 32 * 64, DType::BF16, rng);
  std::vector<float> bias(64);
  for (auto &x : bias)
    x = float(rng() % 1000) / 100.0f - 5.0f;
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  auto biasBuf = DeviceBuffer::fromHost(bias);
  DeviceBuffer cBuf(32 * 64 * 4), sBuf(32 * 4);
  cBuf.fill(0xff);
  sBuf.fill(0xff);
  Kernel &k = JIT::global().get(KernelSource::fromText(kEpilogue, "epilogue.tile"),
                                "epilogue");
  k.launch(Dim3(1), {Arg::ptr(aBuf.ptr(), DType::BF16),
                     Arg::ptr(bBuf.ptr(), DType::BF16),
                     Arg::ptr(biasBuf.ptr(), DType::F32),
                     Arg::ptr(cBuf.ptr(), DType::F32),
                     Arg::ptr(sBuf.ptr(), DType::F32)});
  Device::get().synchronize();
  auto c = cBuf.toHost<float>();
  auto s = sBuf.toHost<float>();
  for (int i = 0; i < 32; ++i) {
    double rowRef = 0;
    for (int j = 0; j < 64; ++j) {
      double ref = bias[j];
      for (int kk = 0; kk < 32; ++kk)
        ref += av[i * 32 + kk] * bv[kk * 64 + j];
      rowRef += ref;
      ASSERT_NEAR(c[i * 64 + j], ref, 1e-4) << "C[" << i << ", " << j << "]";
    }
    ASSERT_NEAR(s[i], rowRef, 2e-3) << "rowsum[" << i << "]";
  }
}

} // namespace

namespace {

// Dots outside any loop on sm_90: tile-pipeline-tma takes each as a K loop
// of one iteration (PipelineStandalone.cpp), its operands through one
// cp.async ring stage and one wgmma. one_dot starts from zeros (not
// materialized: accumulate false); bias_dot reads a transposed A (an
// M-major stage) and accumulates onto a loaded tile.
const char *kWgmmaPointerDots = R"tile(
@num_warps(8)
kernel one_dot(a: *f16, b: *f16, c: *f32, lda: i32, ldb: i32, ldc: i32) {
  let r = arange(0, 128);
  let n = arange(0, 128);
  let k = arange(0, 64);
  let ta = load(a + r[:, None] * lda + k[None, :]);
  let tb = load(b + k[:, None] * ldb + n[None, :]);
  store(c + r[:, None] * ldc + n[None, :], dot(ta, tb));
}

@num_warps(4)
kernel bias_dot(a: *bf16, b: *bf16, c: *f32, bias: *f32, ldc: i32) {
  let r = arange(0, 64);
  let n = arange(0, 128);
  let k = arange(0, 64);
  let acc = load(bias + r[:, None] * 128 + n[None, :]);
  let ta = load(a + k[:, None] * 64 + r[None, :]);
  let tb = load(b + k[:, None] * 128 + n[None, :]);
  acc = dot(trans(ta), tb, acc);
  store(c + r[:, None] * ldc + n[None, :], acc);
}

@num_warps(4)
kernel bias_loop(a: *f16, b: *f16, c: *f32, bias: *f32, K: i32) {
  let r = arange(0, 64);
  let n = arange(0, 128);
  let k = arange(0, 64);
  let acc = load(bias + r[:, None] * 128 + n[None, :]);
  for kk in range(0, K, 64) {
    let ta = load(a + r[:, None] * K + (kk + k)[None, :]);
    let tb = load(b + (kk + k)[:, None] * 128 + n[None, :]);
    acc = dot(ta, tb, acc);
  }
  store(c + r[:, None] * 128 + n[None, :], acc);
}
)tile";

/// `kernel` for sm_90, with `divisible` (its row strides the loads step
/// by) known to be multiples of 16, as the JIT's variant for them.
CompileResult compileSm90(const char *kernel,
                          std::vector<std::string> divisible,
                          int warpSpecialize = -1) {
  CompileOptions co;
  co.arch = "sm_90";
  co.divisibleBy16 = std::move(divisible);
  co.warpSpecialize = warpSpecialize;
  return compile(kWgmmaPointerDots, "wgmma_pointer_dots.tile", kernel, co);
}

/// A bias of 64 x 128 f32 values in [-10, 10).
std::vector<float> randomBias(std::mt19937_64 &rng) {
  std::vector<float> bias(64 * 128);
  for (auto &x : bias)
    x = float(rng() % 2000) / 100.0f - 10.0f;
  return bias;
}

class WgmmaPointerDotTest : public sparsetile::testing::GpuTest {
protected:
  void SetUp() override {
    sparsetile::testing::GpuTest::SetUp();
    if (!IsSkipped() && Device::get().computeMajor() != 9)
      GTEST_SKIP() << "wgmma runs on sm_90, this is " << Device::get().arch();
  }
};

TEST_F(WgmmaPointerDotTest, StandaloneZeroAccumulatorMatchesFloat64) {
  CompileResult r = compileSm90("one_dot", {"lda", "ldb"});
  ASSERT_TRUE(r.ok) << r.diagnostics;
  ASSERT_NE(r.kernel.ptx.find("wgmma.mma_async"), std::string::npos);
  ASSERT_EQ(r.kernel.ptx.find("mma.sync"), std::string::npos);
  Kernel k(r.kernel, Module::fromPtx(r.kernel.ptx));
  const int64_t lda = 80, ldb = 144, ldc = 131;
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^ 0x51a7d);
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, 128 * lda, DType::F16, rng);
  randomMatrix(b, bv, 64 * ldb, DType::F16, rng);
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  DeviceBuffer cBuf(128 * ldc * 4);
  cBuf.fill(0xff);
  k.launch(Dim3(1),
           {Arg::ptr(aBuf.ptr(), DType::F16), Arg::ptr(bBuf.ptr(), DType::F16),
            Arg::ptr(cBuf.ptr(), DType::F32), Arg::i32(int32_t(lda)),
            Arg::i32(int32_t(ldb)), Arg::i32(int32_t(ldc))});
  Device::get().synchronize();
  // Columns 128 .. ldc stay poison (expectProduct checks them).
  expectProduct(
      cBuf.toHost<float>(), 128, 128, 64, ldc, 1.0,
      [&](int64_t i, int64_t kk) { return av[i * lda + kk]; },
      [&](int64_t kk, int64_t j) { return bv[kk * ldb + j]; });
}

TEST_F(WgmmaPointerDotTest, StandaloneTransposedAOntoLoadedTileMatchesFloat64) {
  CompileResult r = compileSm90("bias_dot", {});
  ASSERT_TRUE(r.ok) << r.diagnostics;
  ASSERT_NE(r.kernel.ptx.find("wgmma.mma_async"), std::string::npos);
  Kernel k(r.kernel, Module::fromPtx(r.kernel.ptx));
  const int64_t ldc = 128;
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^ 0xb1a5);
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, 64 * 64, DType::BF16, rng); // [K, M]
  randomMatrix(b, bv, 64 * 128, DType::BF16, rng);
  std::vector<float> bias = randomBias(rng);
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  auto biasBuf = DeviceBuffer::fromHost(bias);
  DeviceBuffer cBuf(64 * ldc * 4);
  cBuf.fill(0xff);
  k.launch(Dim3(1),
           {Arg::ptr(aBuf.ptr(), DType::BF16),
            Arg::ptr(bBuf.ptr(), DType::BF16), Arg::ptr(cBuf.ptr(), DType::F32),
            Arg::ptr(biasBuf.ptr(), DType::F32), Arg::i32(int32_t(ldc))});
  Device::get().synchronize();
  expectProduct(
      cBuf.toHost<float>(), 64, 128, 64, ldc, 1.0,
      [&](int64_t i, int64_t kk) { return av[kk * 64 + i]; },
      [&](int64_t kk, int64_t j) { return bv[kk * 128 + j]; },
      [&](int64_t i, int64_t j) { return double(bias[i * 128 + j]); });
}

// A K loop on the pointer ring whose accumulator starts from a loaded tile:
// the tile's move into wgmma's layout goes through shared memory, which
// must happen before the ring's copies land there (tile-assign-layouts).
// Both with the block's threads copying and with a producer warpgroup.
class KLoopOntoLoadedTile : public WgmmaPointerDotTest,
                            public ::testing::WithParamInterface<int> {};

TEST_P(KLoopOntoLoadedTile, MatchesFloat64) {
  CompileResult r = compileSm90("bias_loop", {"K"}, GetParam());
  ASSERT_TRUE(r.ok) << r.diagnostics;
  ASSERT_NE(r.kernel.ptx.find("cp.async.mbarrier.arrive.noinc"),
            std::string::npos);
  ASSERT_EQ(r.kernel.ptx.find("setmaxnreg") != std::string::npos,
            GetParam() == 1);
  Kernel k(r.kernel, Module::fromPtx(r.kernel.ptx));
  const int64_t K = 320; // Five K steps, more than the ring's stages.
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^ 0xb1a6);
  std::vector<uint16_t> a, b;
  std::vector<double> av, bv;
  randomMatrix(a, av, 64 * K, DType::F16, rng);
  randomMatrix(b, bv, K * 128, DType::F16, rng);
  std::vector<float> bias = randomBias(rng);
  auto aBuf = DeviceBuffer::fromHost(a), bBuf = DeviceBuffer::fromHost(b);
  auto biasBuf = DeviceBuffer::fromHost(bias);
  DeviceBuffer cBuf(64 * 128 * 4);
  cBuf.fill(0xff);
  k.launch(Dim3(1),
           {Arg::ptr(aBuf.ptr(), DType::F16), Arg::ptr(bBuf.ptr(), DType::F16),
            Arg::ptr(cBuf.ptr(), DType::F32),
            Arg::ptr(biasBuf.ptr(), DType::F32), Arg::i32(int32_t(K))});
  Device::get().synchronize();
  expectProduct(
      cBuf.toHost<float>(), 64, 128, K, 128, 1.0,
      [&](int64_t i, int64_t kk) { return av[i * K + kk]; },
      [&](int64_t kk, int64_t j) { return bv[kk * 128 + j]; },
      [&](int64_t i, int64_t j) { return double(bias[i * 128 + j]); });
}

INSTANTIATE_TEST_SUITE_P(WgmmaPointerDot, KLoopOntoLoadedTile,
                         ::testing::Values(-1, 1), [](const auto &info) {
                           return std::string(info.param == 1 ? "Producer"
                                                              : "Copying");
                         });

} // namespace
