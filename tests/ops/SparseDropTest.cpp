//===- SparseDropTest.cpp - SparseDrop kernels against CPU references -----===//
//
// GPU tests (skipped without a GPU) of dsl_examples/sparsedrop.tile through
// the ops::sparsedrop launchers:
//  - mask: equals a CPU model (the host Philox) bit for bit (several shapes, rows
//    of one and of two 64-bit words); bits past the last block of a row are
//    zero; keep rate within 5 sigma of 1 - p over 2^20 blocks; same seed and
//    offset give the same mask, another offset or seed another one; p = 0
//    keeps everything and p = 1 drops everything;
//  - forward, backwardX, backwardW against a float64 CPU product of the same
//    rounded inputs and mask, for both dtypes, p in {0, 0.1, 0.5, 0.9, 1},
//    ragged M, N, K, mask-block/tile ratios 1, 2 and 4, padded strides;
//    outputs are poisoned, padding must stay untouched, and dropped dX blocks
//    must be exactly +0.
// CPU-only tests: argument validation and default tilings.
// Inputs are random; SPARSETILE_TEST_SEED=N reproduces a run.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/ops/SparseDrop.h"
#include "Examples.h"
#include "HostFloat.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/Random.h"

#include <gtest/gtest.h>

#include <bitset>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace sparsetile;
namespace sd = sparsetile::ops::sparsedrop;
namespace T = sparsetile::test;

namespace {

using sparsetile::testing::testSeed;

#define REQUIRE_GPU()                                                          \
  do {                                                                         \
    std::string why_;                                                          \
    if (!rt::gpuAvailable(&why_))                                              \
      GTEST_SKIP() << "no GPU: " << why_;                                      \
  } while (0)

// --- CPU model of the mask (the runtime's host Philox) ------------------

std::vector<uint64_t> cpuMask(uint64_t seed, int64_t offset, double p,
                              int64_t M, int64_t K, int64_t bm, int64_t bk) {
  int64_t nmb = (M + bm - 1) / bm, nkb = (K + bk - 1) / bk;
  int64_t wpr = sd::maskWordsPerRow(K, bk);
  uint64_t thr = uint64_t(sd::dropThreshold(p));
  std::vector<uint64_t> w(size_t(nmb * wpr), 0);
  for (int64_t mb = 0; mb < nmb; ++mb)
    for (int64_t kb = 0; kb < nkb; ++kb) {
      if (rt::randint(seed, uint64_t(offset + mb * nkb + kb)) >= thr)
        w[size_t(mb * wpr + kb / 64)] |= uint64_t(1) << (kb % 64);
    }
  return w;
}

bool kept(const std::vector<uint64_t> &mask, int64_t wpr, int64_t mb,
          int64_t kb) {
  return (mask[size_t(mb * wpr + kb / 64)] >> (kb % 64)) & 1;
}

std::vector<uint64_t> gpuMask(uint64_t seed, int64_t offset, double p,
                              int64_t M, int64_t K, int64_t bm, int64_t bk) {
  int64_t n = sd::maskWords(M, K, bm, bk);
  rt::DeviceBuffer buf(size_t(std::max<int64_t>(n, 2)) * 8);
  buf.fill(0xa5); // poison: every word must be written
  sd::generateMask(seed, offset, p, M, K, bm, bk, buf.ptr());
  rt::Device::get().synchronize();
  auto all = buf.toHost<uint64_t>();
  all.resize(size_t(n));
  return all;
}

// --- Mask tests -----------------------------------------------------------
struct MaskShape {
  int64_t M, K, bm, bk;
};

TEST(SparseDropMask, MatchesCpuModelAndTailBitsAreZero) {
  REQUIRE_GPU();
  std::mt19937_64 rng(testSeed());
  for (MaskShape s : {MaskShape{200, 300, 64, 64}, MaskShape{1000, 1100, 16, 16},
                      MaskShape{128, 128, 128, 128}, MaskShape{4096, 8192, 128, 64},
                      MaskShape{17, 64 * 16 * 2, 16, 16}})
    for (double p : {0.0, 0.1, 0.5, 0.9, 1.0}) {
      uint64_t seed = rng();
      int64_t offset = int64_t(rng() >> 20);
      auto got = gpuMask(seed, offset, p, s.M, s.K, s.bm, s.bk);
      auto want = cpuMask(seed, offset, p, s.M, s.K, s.bm, s.bk);
      ASSERT_EQ(got.size(), want.size());
      int bad = 0;
      for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != want[i] && bad++ < 5)
          ADD_FAILURE() << "word " << i << " = " << std::bitset<64>(got[i])
                        << ", expected " << std::bitset<64>(want[i]) << " (M "
                        << s.M << " K " << s.K << " p " << p << ")";
      EXPECT_EQ(bad, 0);
      // Tail bits (CPU model never sets them; check the GPU words directly).
      int64_t nkb = (s.K + s.bk - 1) / s.bk, wpr = sd::maskWordsPerRow(s.K, s.bk);
      if (nkb % 64) {
        for (int64_t mb = 0; mb < int64_t(got.size()) / wpr; ++mb)
          ASSERT_EQ(got[size_t(mb * wpr + wpr - 1)] >> (nkb % 64), 0u)
              << "bits past block " << nkb << " set in mask row " << mb;
      }
      if (p == 0.0) {
        for (int64_t mb = 0; mb < int64_t(got.size()) / wpr; ++mb)
          for (int64_t kb = 0; kb < nkb; ++kb)
            ASSERT_TRUE(kept(got, wpr, mb, kb));
      }
      if (p == 1.0) {
        for (uint64_t w : got)
          ASSERT_EQ(w, 0u);
      }
    }
}

TEST(SparseDropMask, KeepRateMatchesOneMinusP) {
  REQUIRE_GPU();
  const int64_t M = 1024 * 16, K = 1024 * 16, b = 16; // 2^20 blocks
  for (double p : {0.05, 0.1, 0.3, 0.5, 0.9}) {
    auto m = gpuMask(testSeed(), 12345, p, M, K, b, b);
    double keptCount = 0;
    for (uint64_t w : m)
      keptCount += double(std::bitset<64>(w).count());
    double n = double(M / b) * double(K / b), q = 1 - p;
    double sigma = std::sqrt(n * p * q);
    EXPECT_NEAR(keptCount, n * q, 5 * sigma + 1) << "p = " << p;
  }
}

TEST(SparseDropMask, ReproducibleAndCounterDependent) {
  REQUIRE_GPU();
  const int64_t M = 2048, K = 4096, bm = 128, bk = 64;
  uint64_t seed = testSeed();
  auto a = gpuMask(seed, 7, 0.5, M, K, bm, bk);
  auto b = gpuMask(seed, 7, 0.5, M, K, bm, bk);
  auto c = gpuMask(seed, 7 + 1024, 0.5, M, K, bm, bk);
  auto d = gpuMask(seed ^ 0x5555, 7, 0.5, M, K, bm, bk);
  EXPECT_EQ(a, b) << "same seed and offset gave different masks";
  EXPECT_NE(a, c) << "another offset gave the same mask";
  EXPECT_NE(a, d) << "another seed gave the same mask";
  // Offsets are block counters: offset + 1 shifts the draws by one block.
  auto e = gpuMask(seed, 8, 0.5, M, K, bm, bk);
  int64_t nkb = K / bk, wpr = sd::maskWordsPerRow(K, bk);
  for (int64_t i = 0; i + 1 < (M / bm) * nkb; ++i)
    ASSERT_EQ(kept(e, wpr, i / nkb, i % nkb),
              kept(a, wpr, (i + 1) / nkb, (i + 1) % nkb))
        << "block " << i;
}

// --- GEMM tests -----------------------------------------------------------
struct HostMatrix {
  DType t;
  int64_t rows, cols, stride;
  std::vector<uint16_t> bits;
  std::vector<double> vals; // only [rows, cols]
  HostMatrix(DType t, int64_t r, int64_t c, int64_t s)
      : t(t), rows(r), cols(c), stride(s), bits(size_t(r * s), 0xffff),
        vals(size_t(r * c)) {}
  double toDouble(uint16_t h) const {
    return t == DType::BF16 ? T::bf16ToFloat(h) : T::halfToFloat(h);
  }
  void randomize(std::mt19937_64 &rng) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        uint16_t h = t == DType::BF16 ? T::floatToBf16(d(rng))
                                      : T::floatToHalf(d(rng));
        bits[size_t(i * stride + j)] = h;
        vals[size_t(i * cols + j)] = toDouble(h);
      }
  }
  double at(int64_t i, int64_t j) const { return vals[size_t(i * cols + j)]; }
};

struct GemmCase {
  DType dtype;
  int64_t M, N, K, bm, bk;
  int ratio;   ///< blockM / tileM = blockK / tileK (0: default tiling)
  int tileN;   ///< 0: default
  int pad;     ///< extra stride elements
  double p;
  int tma = -1; ///< Tiling::tma (1: the sm_90 TMA + wgmma kernels)
  int persistent = -1; ///< Tiling::persistent (1: the persistent tile loop)
  /// dX's tileK when set: a TMA tile spanning several mask blocks along K.
  int dxTileK = 0;
  int pingpong = -1; ///< Tiling::pingpong (1: alternate tiles per warpgroup)
  int listed = -1;   ///< dX's Tiling::listed (1: kept tiles first)
  int kinds = -1;    ///< dX's Tiling::kinds (1: two launches by tile kind)
};

std::string name(const GemmCase &c) {
  char pbuf[16];
  std::snprintf(pbuf, sizeof pbuf, "%03d", int(std::lround(c.p * 100)));
  return std::string(dtypeName(c.dtype)) + "_M" + std::to_string(c.M) + "_N" +
         std::to_string(c.N) + "_K" + std::to_string(c.K) + "_b" +
         std::to_string(c.bm) + "x" + std::to_string(c.bk) + "_r" +
         std::to_string(c.ratio) + "_tn" + std::to_string(c.tileN) + "_pad" +
         std::to_string(c.pad) + "_p" + pbuf + (c.tma == 1 ? "_tma" : "") +
         (c.persistent == 1 ? "_persistent" : "") +
         (c.dxTileK ? "_dxtk" + std::to_string(c.dxTileK) : "") +
         (c.pingpong == 1 ? "_pingpong" : "") +
         (c.listed == 1 ? "_dxlisted" : "") +
         (c.kinds == 1   ? "_dxkinds"
          : c.kinds == 0 ? "_dxnokinds"
                         : "");
}

class SparseDropGemm : public ::testing::TestWithParam<GemmCase> {
protected:
  void SetUp() override { REQUIRE_GPU(); }
};

sd::Tiling tilingFor(const GemmCase &c) {
  sd::Tiling t;
  t.tma = c.tma;
  t.persistent = c.persistent;
  t.pingpong = c.pingpong;
  if (c.ratio) {
    t.tileM = int(c.bm / c.ratio);
    t.tileK = int(c.bk / c.ratio);
    t.tileN = c.tileN;
  } else {
    t.tileN = c.tileN;
  }
  return t;
}

/// Compares `got` (poisoned device output, downloaded) with the f64 `ref`.
/// dropped(i, j): the entry must be exactly +0.
template <typename Ref, typename Dropped>
void compare(const char *what, const HostMatrix &got, Ref ref, Dropped dropped,
             double scale) {
  double eps = got.t == DType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  int bad = 0;
  for (int64_t i = 0; i < got.rows; ++i) {
    for (int64_t j = 0; j < got.cols; ++j) {
      uint16_t h = got.bits[size_t(i * got.stride + j)];
      if (dropped(i, j)) {
        if (h != 0 && bad++ < 5)
          ADD_FAILURE() << what << "[" << i << ", " << j
                        << "] in a dropped block has bits 0x" << std::hex << h
                        << std::dec << ", expected +0";
        continue;
      }
      double mag;
      double r = ref(i, j, mag);
      double g = got.toDouble(h);
      double tol = eps * std::fabs(r) + 1e-5 * scale * mag + 1e-6;
      if (!(std::fabs(g - r) <= tol) && bad++ < 5)
        ADD_FAILURE() << what << "[" << i << ", " << j << "] = " << g
                      << ", expected " << r << " (tol " << tol << ")";
    }
    for (int64_t j = got.cols; j < got.stride; ++j)
      if (got.bits[size_t(i * got.stride + j)] != 0xffff && bad++ < 5)
        ADD_FAILURE() << what << " padding [" << i << ", " << j
                      << "] was written";
  }
  EXPECT_EQ(bad, 0) << what;
}

HostMatrix download(const rt::DeviceBuffer &b, DType t, int64_t r, int64_t c,
                    int64_t s) {
  HostMatrix m(t, r, c, s);
  b.copyToHost(m.bits.data(), m.bits.size() * 2);
  return m;
}

TEST_P(SparseDropGemm, AllThreeMatchFloat64) {
  const GemmCase &c = GetParam();
  if (c.tma == 1 && rt::Device::get().computeMajor() != 9)
    GTEST_SKIP() << "the TMA + wgmma kernels need an sm_90 GPU, this is "
                 << rt::Device::get().arch();
  std::mt19937_64 rng(testSeed() ^ std::hash<std::string>()(name(c)));
  sd::Problem pr{c.dtype, c.M, c.N, c.K, c.bm, c.bk, c.p};
  sd::Tiling t = tilingFor(c);
  int64_t sx = c.K + c.pad, sw = c.K + c.pad, sy = c.N + c.pad;
  HostMatrix X(c.dtype, c.M, c.K, sx), W(c.dtype, c.N, c.K, sw),
      dY(c.dtype, c.M, c.N, sy);
  X.randomize(rng);
  W.randomize(rng);
  dY.randomize(rng);
  uint64_t seed = rng();
  int64_t nmb = (c.M + c.bm - 1) / c.bm, nkb = (c.K + c.bk - 1) / c.bk;
  int64_t wpr = sd::maskWordsPerRow(c.K, c.bk);
  rt::DeviceBuffer maskBuf(size_t(std::max<int64_t>(nmb * wpr, 2)) * 8);
  sd::generateMask(seed, 0, c.p, c.M, c.K, c.bm, c.bk, maskBuf.ptr());
  rt::Device::get().synchronize();
  auto mask = maskBuf.toHost<uint64_t>();
  mask.resize(size_t(nmb * wpr));
  ASSERT_EQ(mask, cpuMask(seed, 0, c.p, c.M, c.K, c.bm, c.bk));
  auto keep = [&](int64_t i, int64_t k) {
    return kept(mask, wpr, i / c.bm, k / c.bk);
  };
  (void)nkb;
  double s = c.p < 1 ? double(float(1.0 / (1.0 - c.p))) : 0.0;

  auto xBuf = rt::DeviceBuffer::fromHost(X.bits);
  auto wBuf = rt::DeviceBuffer::fromHost(W.bits);
  auto dyBuf = rt::DeviceBuffer::fromHost(dY.bits);
  rt::DeviceBuffer yBuf(size_t(c.M * sy) * 2), dxBuf(size_t(c.M * sx) * 2),
      dwBuf(size_t(c.N * sw) * 2);
  yBuf.fill(0xff);
  dxBuf.fill(0xff);
  dwBuf.fill(0xff);
  sd::forward(pr, xBuf.ptr(), sx, wBuf.ptr(), sw, maskBuf.ptr(), yBuf.ptr(), sy,
              nullptr, t);
  sd::Tiling tx = t;
  if (c.dxTileK)
    tx.tileK = c.dxTileK;
  tx.listed = c.listed;
  tx.kinds = c.kinds;
  sd::backwardX(pr, dyBuf.ptr(), sy, wBuf.ptr(), sw, maskBuf.ptr(),
                dxBuf.ptr(), sx, nullptr, tx);
  sd::backwardW(pr, dyBuf.ptr(), sy, xBuf.ptr(), sx, maskBuf.ptr(),
                dwBuf.ptr(), sw, nullptr, t);
  rt::Device::get().synchronize();

  auto never = [](int64_t, int64_t) { return false; };
  compare("Y", download(yBuf, c.dtype, c.M, c.N, sy),
          [&](int64_t i, int64_t j, double &mag) {
            double r = 0;
            mag = 0;
            for (int64_t k = 0; k < c.K; ++k)
              if (keep(i, k)) {
                double v = X.at(i, k) * W.at(j, k);
                r += v;
                mag += std::fabs(v);
              }
            return r * s;
          },
          never, s);
  compare("dX", download(dxBuf, c.dtype, c.M, c.K, sx),
          [&](int64_t i, int64_t k, double &mag) {
            double r = 0;
            mag = 0;
            for (int64_t j = 0; j < c.N; ++j) {
              double v = dY.at(i, j) * W.at(j, k);
              r += v;
              mag += std::fabs(v);
            }
            return r * s;
          },
          [&](int64_t i, int64_t k) { return !keep(i, k); }, s);
  compare("dW", download(dwBuf, c.dtype, c.N, c.K, sw),
          [&](int64_t j, int64_t k, double &mag) {
            double r = 0;
            mag = 0;
            for (int64_t i = 0; i < c.M; ++i)
              if (keep(i, k)) {
                double v = dY.at(i, j) * X.at(i, k);
                r += v;
                mag += std::fabs(v);
              }
            return r * s;
          },
          never, s);
}

std::vector<GemmCase> gemmCases() {
  std::vector<GemmCase> out;
  for (DType t : {DType::BF16, DType::F16})
    for (double p : {0.0, 0.1, 0.5, 0.9, 1.0}) {
      // Ragged shape, mask blocks 64 and 128, tile ratios 1, 2, 4.
      out.push_back({t, 200, 136, 300, 64, 64, 1, 64, 0, p});
      out.push_back({t, 200, 136, 300, 64, 64, 2, 32, 8, p});
      out.push_back({t, 200, 136, 300, 64, 64, 4, 64, 3, p});
      out.push_back({t, 200, 136, 300, 128, 128, 2, 64, 0, p});
      out.push_back({t, 200, 136, 300, 128, 64, 4, 32, 5, p});
      // Default tiling (128-wide tiles with 8 warps, blocks 128).
      out.push_back({t, 300, 260, 400, 128, 128, 0, 0, 0, p});
      // Two mask words per row (nkb = 69 > 64), blocks 16.
      out.push_back({t, 48, 40, 1100, 16, 16, 1, 32, 0, p});
      // 128 x 64 x 128 tiles: the forward's and dW's staged operands take
      // 53 KB of dynamic shared memory (the ops refused such tilings while
      // they restated the compiler's staging arithmetic against 48 KB).
      if (p == 0.1 || p == 0.5)
        out.push_back({t, 256, 192, 384, 128, 128, 1, 64, 0, p});
      // The TMA + wgmma kernels: ragged shapes, mask blocks one and two
      // tiles, padded strides, a mask row over two words (nkb = 66).
      out.push_back({t, 300, 264, 400, 128, 128, 0, 0, 0, p, 1});
      out.push_back({t, 520, 200, 600, 256, 256, 0, 0, 8, p, 1});
      out.push_back({t, 136, 72, 8448, 128, 128, 0, 0, 0, p, 1});
      // The persistent tile loop: fewer tiles than SMs, and (dX: 65 x 5
      // tiles) more than two per program; ragged M, N, K.
      if (p == 0.0 || p == 0.5 || p == 1.0) {
        out.push_back({t, 300, 264, 400, 128, 128, 0, 0, 0, p, 1, 1});
        out.push_back({t, 8200, 264, 520, 128, 128, 0, 0, 8, p, 1, 1});
        // dX's 128 x 256 tile over two 128 x 128 mask blocks (zeros in the
        // dropped one's columns), ragged K, one program per tile and
        // persistent; and 256-row mask blocks.
        out.push_back({t, 300, 264, 600, 128, 128, 0, 0, 8, p, 1, 0, 256});
        out.push_back({t, 8200, 264, 520, 128, 128, 0, 0, 0, p, 1, 1, 256});
        out.push_back({t, 520, 200, 600, 256, 128, 0, 0, 0, p, 1, 0, 256});
      }
      if (p == 0.1 || p == 0.9)
        out.push_back({t, 300, 264, 600, 128, 128, 0, 0, 8, p, 1, 0, 256});
      // dX's kept tiles first from the tile list (the default from
      // p = 0.7), at every p: ragged M and K, padded strides, and a mask
      // row over two words (nkb = 66) with more tiles than programs.
      out.push_back({t, 300, 264, 600, 128, 128, 0, 0, 8, p, 1, -1, 0, -1, 1});
      if (p == 0.1 || p == 0.5)
        out.push_back(
            {t, 300, 72, 8448, 128, 128, 0, 0, 0, p, 1, -1, 0, -1, 1});
      // dX's tiles by kind (the default for 0.1 <= p < 0.6 on 128 x 128
      // blocks), at every p: an odd number of mask blocks per row (K = 600, the
      // last one without a pair), a mask row over two words (nkb = 66), and
      // more pairs than programs (M = 8200); padded strides. The single-launch
      // kernel of the default before it (persistent, 128 x 128) stays
      // covered where by kind would be the default.
      out.push_back(
          {t, 300, 264, 600, 128, 128, 0, 0, 8, p, 1, -1, 0, -1, -1, 1});
      if (p == 0.1 || p == 0.5 || p == 0.9) {
        out.push_back(
            {t, 300, 72, 8448, 128, 128, 0, 0, 0, p, 1, -1, 0, -1, -1, 1});
        out.push_back(
            {t, 8200, 264, 520, 128, 128, 0, 0, 8, p, 1, -1, 0, -1, -1, 1});
      }
      if (p == 0.5)
        out.push_back(
            {t, 300, 264, 400, 128, 128, 0, 0, 0, p, 1, 1, 0, -1, -1, 0});
      // Ping-pong consumers (one-warpgroup tiles, alternate tiles per
      // warpgroup): fewer tiles than SMs, and (M = 4200: 66 row blocks of
      // 64) two to five per program; ragged M, N, K; dX's 64 x 256 tile
      // over two mask blocks.
      if (p != 0.1)
        out.push_back({t, 300, 264, 400, 128, 128, 0, 0, 0, p, 1, 1, 0, 1});
      if (p != 0.1) {
        out.push_back({t, 4200, 264, 520, 128, 128, 0, 0, 8, p, 1, 1, 0, 1});
        out.push_back({t, 4200, 264, 520, 128, 128, 0, 0, 0, p, 1, 1, 256, 1});
      }
    }
  return out;
}

INSTANTIATE_TEST_SUITE_P(SparseDrop, SparseDropGemm,
                         ::testing::ValuesIn(gemmCases()),
                         [](const auto &info) { return name(info.param); });

// Ping-pong consumers on a layer-sized problem (4096 tiles of 64 x 256,
// about 31 per program; at p = 0.9 most tiles have one or two kept blocks,
// so the two groups alternate quickly): their results equal the cooperative
// kernels' bit for bit, as both accumulate the same K steps in the same
// order. Without the groups' turns (tile.turn_wait), a group could wait on
// a stage whose previous use had not landed; on the H100 that ran as a
// launch failure at this size and p = 0.9, which the small cases above did
// not show.
TEST(SparseDropPingPong, LayerSizedMatchesCooperativeBitForBit) {
  REQUIRE_GPU();
  if (rt::Device::get().computeMajor() != 9)
    GTEST_SKIP() << "ping-pong runs on the TMA + wgmma kernels (sm_90), this "
                    "is "
                 << rt::Device::get().arch();
  const int64_t M = 16384, N = 4096, K = 4096;
  std::mt19937_64 rng(testSeed() ^ 0x9e3779b97f4a7c15ull);
  HostMatrix X(DType::BF16, M, K, K), W(DType::BF16, N, K, K),
      dY(DType::BF16, M, N, N);
  X.randomize(rng);
  W.randomize(rng);
  dY.randomize(rng);
  auto xBuf = rt::DeviceBuffer::fromHost(X.bits);
  auto wBuf = rt::DeviceBuffer::fromHost(W.bits);
  auto dyBuf = rt::DeviceBuffer::fromHost(dY.bits);
  for (double p : {0.5, 0.9}) {
    sd::Problem pr{DType::BF16, M, N, K, 128, 128, p};
    rt::DeviceBuffer maskBuf(size_t(sd::maskWords(M, K, 128, 128)) * 8);
    sd::generateMask(rng(), 0, p, M, K, 128, 128, maskBuf.ptr());
    std::vector<std::vector<uint16_t>> outs[2];
    for (int pingpong : {0, 1}) {
      sd::Tiling t;
      t.tma = 1;
      t.persistent = 1;
      t.pingpong = pingpong;
      // One-warpgroup tiles for ping-pong, 8-warp tiles otherwise.
      sd::Tiling tx = t, tw = t;
      if (pingpong)
        t.tileM = 64, tx.tileM = 64, tx.tileK = 128, tw.tileN = 128;
      rt::DeviceBuffer y(size_t(M * N) * 2), dx(size_t(M * K) * 2),
          dw(size_t(N * K) * 2);
      y.fill(0xff);
      dx.fill(0xff);
      dw.fill(0xff);
      sd::forward(pr, xBuf.ptr(), K, wBuf.ptr(), K, maskBuf.ptr(), y.ptr(), N,
                  nullptr, t);
      sd::backwardX(pr, dyBuf.ptr(), N, wBuf.ptr(), K, maskBuf.ptr(), dx.ptr(),
                    K, nullptr, tx);
      sd::backwardW(pr, dyBuf.ptr(), N, xBuf.ptr(), K, maskBuf.ptr(), dw.ptr(),
                    K, nullptr, tw);
      rt::Device::get().synchronize();
      outs[pingpong] = {y.toHost<uint16_t>(), dx.toHost<uint16_t>(),
                        dw.toHost<uint16_t>()};
    }
    const char *names[] = {"Y", "dX", "dW"};
    for (int i = 0; i < 3; ++i) {
      const auto &a = outs[0][i], &b = outs[1][i];
      int64_t differ = 0, first = -1;
      for (size_t j = 0; j < a.size(); ++j)
        if (a[j] != b[j] && differ++ == 0)
          first = int64_t(j);
      EXPECT_EQ(differ, 0) << names[i] << " at p = " << p << ": " << differ
                           << " elements differ, the first at " << first;
    }
  }
}

// A fixed tiling the compiler refuses is the op's CompileError, naming the
// tiling and the compiler's count, and nothing runs: the ops take what a
// kernel needs of shared memory from the compiler instead of restating its
// arithmetic. At 256 x 256 x 128 one ring stage (128 KB) leaves no room
// for a second, and the dot's staged operands (134 KB) are over the 99 KB
// that mma.sync's staging may take. (128 x 256 x 128 was refused too until
// the ring took dots inside the mask bit's `if`: it runs on the ring now.)
TEST(SparseDropTilings, RefusedTilingIsNamedAndNothingRuns) {
  REQUIRE_GPU();
  const int64_t M = 256, N = 512, K = 256;
  std::mt19937_64 rng(testSeed() ^ 0x5eed);
  HostMatrix X(DType::BF16, M, K, K), W(DType::BF16, N, K, K);
  X.randomize(rng);
  W.randomize(rng);
  auto xBuf = rt::DeviceBuffer::fromHost(X.bits);
  auto wBuf = rt::DeviceBuffer::fromHost(W.bits);
  std::vector<uint16_t> poison(size_t(M * N), 0xffff);
  auto yBuf = rt::DeviceBuffer::fromHost(poison);
  rt::DeviceBuffer mask(size_t(sd::maskWords(M, K, 256, 128)) * 8);
  sd::generateMask(7, 0, 0.1, M, K, 256, 128, mask.ptr());
  sd::Problem pr{DType::BF16, M, N, K, 256, 128, 0.1};
  try {
    sd::forward(pr, xBuf.ptr(), K, wBuf.ptr(), K, mask.ptr(), yBuf.ptr(), N,
                nullptr, {256, 256, 128, 8});
    ADD_FAILURE() << "no error for a 256 x 256 x 128 tiling";
  } catch (const rt::CompileError &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("sparsetile forward: the tiling 256 x 256 x 128, 8 warps "
                     "does not compile"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("needs 137216 bytes of shared memory"), std::string::npos)
        << m;
  }
  rt::Device::get().synchronize();
  std::vector<uint16_t> y(poison.size());
  yBuf.copyToHost(y.data(), y.size() * 2);
  EXPECT_EQ(y, poison) << "Y was written";
}

// --- CPU-only: argument validation ----------------------------------------
constexpr rt::DevicePtr kP = 0x10000; // aligned, never dereferenced

template <typename F> void expectError(F f, const std::string &needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << "message: " << e.what();
  }
}

sd::Problem good() { return {DType::BF16, 256, 256, 256, 128, 128, 0.1}; }

TEST(SparseDropValidation, DefaultTilings) {
  auto t = sd::resolveTiling(good(), "dsd_fwd");
  EXPECT_EQ(t.tileM, 128);
  EXPECT_EQ(t.tileN, 128);
  EXPECT_EQ(t.tileK, 32);
  EXPECT_EQ(t.warps, 8);
  t = sd::resolveTiling(good(), "sdd_dx");
  EXPECT_EQ(t.tileM, 128);
  EXPECT_EQ(t.tileN, 32);
  EXPECT_EQ(t.tileK, 128);
  t = sd::resolveTiling(good(), "dsd_dw");
  EXPECT_EQ(t.tileM, 32);
  EXPECT_EQ(t.tileN, 128);
  EXPECT_EQ(t.tileK, 128);
  sd::Problem p = good();
  p.blockM = 48; // largest power-of-two divisor 16
  p.blockK = 96;
  t = sd::resolveTiling(p, "dsd_fwd");
  EXPECT_EQ(t.tileM, 16);
  EXPECT_EQ(t.tileK, 32);
  EXPECT_EQ(t.warps, 4);
  t = sd::resolveTiling(p, "sdd_dx");
  EXPECT_EQ(t.tileK, 32);
  // A 16 x 16 output tile only splits over 2 warps.
  p.blockK = 16;
  t = sd::resolveTiling(p, "sdd_dx");
  EXPECT_EQ(t.tileM, 16);
  EXPECT_EQ(t.tileK, 16);
  EXPECT_EQ(t.warps, 2);
}

/// A 1024^3 problem with square mask blocks, for the TMA tiling checks.
sd::Problem tmaProblem(int64_t block) {
  sd::Problem p = good();
  p.M = p.N = p.K = 1024;
  p.blockM = p.blockK = block;
  return p;
}

// The TMA kernels' tilings (no GPU needed): tiles within mask blocks, and
// dX's tile spanning whole mask blocks along K (zeros in dropped columns).
TEST(SparseDropValidation, TmaTilings) {
  sd::Problem p = tmaProblem(128);
  sd::Tiling want, t;
  std::string why;
  ASSERT_TRUE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why))
      << why;
  EXPECT_EQ(t.tileM, 128);
  EXPECT_EQ(t.tileK, 128);
  want.tileK = 256;
  EXPECT_TRUE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why))
      << why;
  EXPECT_EQ(t.tileK, 256);
  // dW's tile must lie in one mask column block.
  EXPECT_FALSE(sd::resolveTmaTiling(p, "dsd_dw", want, 1024, 1024, t, why));
  EXPECT_NE(why.find("not multiples of the tile"), std::string::npos) << why;
  // Spanning needs whole blocks.
  p.blockK = 96;
  EXPECT_FALSE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why));
}

// Tiles whose accumulators would spill (ptxas C7511 and local memory) are
// refused with the reason; the largest that fit are accepted.
TEST(SparseDropValidation, TmaTilesFitTheirAccumulators) {
  sd::Problem p = tmaProblem(256);
  sd::Tiling want, t;
  std::string why;
  want.tileM = 256, want.tileN = 256, want.warps = 8;
  EXPECT_FALSE(sd::resolveTmaTiling(p, "dsd_fwd", want, 1024, 1024, t, why));
  EXPECT_NE(why.find("256 accumulators per thread"), std::string::npos) << why;
  want.tileM = 128, want.warps = 4;
  EXPECT_FALSE(sd::resolveTmaTiling(p, "dsd_fwd", want, 1024, 1024, t, why));
  want.tileM = 128, want.warps = 8;
  EXPECT_TRUE(sd::resolveTmaTiling(p, "dsd_fwd", want, 1024, 1024, t, why))
      << why;
  want = sd::Tiling();
  want.tileN = 256, want.tileK = 256; // dW: 256 rows x 256 columns
  EXPECT_FALSE(sd::resolveTmaTiling(p, "dsd_dw", want, 1024, 1024, t, why));
  // Every default resolves.
  for (const char *k : {"dsd_fwd", "sdd_dx", "dsd_dw"})
    EXPECT_TRUE(sd::resolveTmaTiling(p, k, sd::Tiling(), 1024, 1024, t, why))
        << k << ": " << why;
}

/// list_order, compiled from dsl_examples/sparsedrop.tile.
rt::Kernel &listOrderKernel(const rt::Constants &constants) {
  return rt::JIT::global().get(
      rt::KernelSource::fromFile(sparsetile::testing::examplesDir() +
                                 "/sparsedrop.tile"),
      "list_order", constants);
}

// list_order ranks the kept-block lists longest first, ties by index: a
// permutation (every list once) with the counts beside it, over more lists
// than one program ranks (BLOCK 128) and with runs of equal counts.
TEST(SparseDropLists, ListOrderRanksLongestFirst) {
  REQUIRE_GPU();
  rt::Kernel &k = listOrderKernel({});
  rt::Kernel &identity = listOrderKernel({{"RANKED", "0"}});
  std::mt19937 rng(testSeed());
  for (int n : {1, 5, 128, 300}) {
    std::vector<int32_t> counts(static_cast<size_t>(n));
    for (int32_t &c : counts)
      c = int32_t(rng() % 7); // Few values: many ties.
    auto cBuf = rt::DeviceBuffer::fromHost(counts);
    rt::DeviceBuffer oBuf(size_t(2 * n) * 4);
    oBuf.fill(0xff);
    // (lists, cap, tiles: read only with TILES = 1.)
    std::vector<rt::Arg> args = {rt::Arg::ptr(cBuf.ptr(), DType::I32),
                                 rt::Arg::ptr(oBuf.ptr(), DType::I32),
                                 rt::Arg::i32(n),
                                 rt::Arg::ptr(cBuf.ptr(), DType::I32),
                                 rt::Arg::i32(0),
                                 rt::Arg::ptr(oBuf.ptr(), DType::I32)};
    k.launch(rt::Dim3(unsigned((n + 127) / 128)), args);
    rt::Device::get().synchronize();
    std::vector<int32_t> order = oBuf.toHost<int32_t>();
    std::vector<int32_t> want(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      want[size_t(i)] = i;
    std::stable_sort(want.begin(), want.end(), [&](int32_t a, int32_t b) {
      return counts[size_t(a)] > counts[size_t(b)];
    });
    for (int s = 0; s < n; ++s) {
      ASSERT_EQ(order[size_t(s)], want[size_t(s)])
          << "n " << n << " rank " << s;
      ASSERT_EQ(order[size_t(n + s)], counts[size_t(want[size_t(s)])])
          << "n " << n << " rank " << s;
    }
    // RANKED = 0 (Tiling::ranked = 0): index order, the counts beside it.
    oBuf.fill(0xff);
    identity.launch(rt::Dim3(unsigned((n + 127) / 128)), args);
    rt::Device::get().synchronize();
    order = oBuf.toHost<int32_t>();
    for (int s = 0; s < n; ++s) {
      ASSERT_EQ(order[size_t(s)], s) << "n " << n;
      ASSERT_EQ(order[size_t(n + s)], counts[size_t(s)]) << "n " << n;
    }
  }
}

// list_order's tile list (TILES = 1, dX's LISTED): every block once, kept
// ones first, rows in rank order, each row's list order kept; dropped ones
// after in the same row order; entry 0 the number of kept blocks. The
// lists are laid out as mask_lists leaves them: a row's kept blocks, then
// its dropped ones.
TEST(SparseDropLists, TileListPutsKeptBlocksFirst) {
  REQUIRE_GPU();
  rt::Kernel &k = listOrderKernel({{"TILES", "1"}});
  std::mt19937 rng(testSeed());
  for (auto [n, cap] : {std::pair<int, int>{3, 5}, {130, 40}, {300, 66}}) {
    std::vector<int32_t> counts(static_cast<size_t>(n)),
        lists(size_t(n) * size_t(cap));
    for (int i = 0; i < n; ++i) {
      std::vector<int32_t> kb(static_cast<size_t>(cap));
      for (int e = 0; e < cap; ++e)
        kb[size_t(e)] = e;
      std::shuffle(kb.begin(), kb.end(), rng);
      counts[size_t(i)] = int32_t(rng() % 5 == 0 ? 0 : rng() % (cap + 1));
      for (int e = 0; e < cap; ++e)
        lists[size_t(i * cap + e)] = kb[size_t(e)];
    }
    auto cBuf = rt::DeviceBuffer::fromHost(counts);
    auto lBuf = rt::DeviceBuffer::fromHost(lists);
    rt::DeviceBuffer oBuf(size_t(2 * n) * 4), tBuf(size_t(1 + n * cap) * 4);
    tBuf.fill(0xff);
    k.launch(rt::Dim3(unsigned((n + 127) / 128)),
             {rt::Arg::ptr(cBuf.ptr(), DType::I32),
              rt::Arg::ptr(oBuf.ptr(), DType::I32), rt::Arg::i32(n),
              rt::Arg::ptr(lBuf.ptr(), DType::I32), rt::Arg::i32(cap),
              rt::Arg::ptr(tBuf.ptr(), DType::I32)});
    rt::Device::get().synchronize();
    std::vector<int32_t> got = tBuf.toHost<int32_t>();
    std::vector<int32_t> rows(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      rows[size_t(i)] = i;
    std::stable_sort(rows.begin(), rows.end(), [&](int32_t a, int32_t b) {
      return counts[size_t(a)] > counts[size_t(b)];
    });
    std::vector<int32_t> want = {0};
    for (bool kept : {true, false})
      for (int32_t r : rows)
        for (int e = kept ? 0 : counts[size_t(r)];
             e < (kept ? counts[size_t(r)] : cap); ++e) {
          want.push_back(r * cap + lists[size_t(r * cap + e)]);
          want[0] += kept;
        }
    ASSERT_EQ(got, want) << "n " << n << " cap " << cap;
  }
}

// dX's single-block list for its tiles by kind (mask_lists PAIRS = 1, then
// list_order TILES = 2), against a host model of the mask: entry 0 the
// number of tiles, then the kept blocks whose pair (kb ^ 1, absent past
// nkb) is dropped, rows by their number of such blocks (ties by index),
// each row's in increasing order, then the dropped blocks in the same row
// order, each row's from its list's end (decreasing kb). Kept pairs are
// not listed. Odd nkb, a row over two words, more rows than one program.
TEST(SparseDropLists, SinglesListHoldsSinglesThenDropped) {
  REQUIRE_GPU();
  rt::Kernel &lists = rt::JIT::global().get(
      rt::KernelSource::fromFile(sparsetile::testing::examplesDir() +
                                 "/sparsedrop.tile"),
      "mask_lists", {{"PAIRS", "1"}});
  rt::Kernel &order = listOrderKernel({{"TILES", "2"}});
  std::mt19937_64 rng(testSeed());
  for (auto [nmb, nkb] :
       {std::pair<int, int>{3, 5}, {130, 32}, {300, 66}, {7, 1}}) {
    for (double p : {0.1, 0.5}) {
      int64_t wpr = (nkb + 63) / 64;
      std::vector<uint64_t> mask(size_t(nmb * wpr), 0);
      for (int r = 0; r < nmb; ++r)
        for (int kb = 0; kb < nkb; ++kb)
          if (double(rng() % 1000) >= p * 1000)
            mask[size_t(r * wpr + kb / 64)] |= uint64_t(1) << (kb % 64);
      auto mBuf = rt::DeviceBuffer::fromHost(mask);
      rt::DeviceBuffer lBuf(size_t(nmb * nkb) * 4), cBuf(size_t(2 * nmb) * 4),
          oBuf(size_t(2 * nmb) * 4), tBuf(size_t(1 + nmb * nkb) * 4);
      tBuf.fill(0xff);
      lists.launch(rt::Dim3(unsigned(nmb)),
                   {rt::Arg::ptr(mBuf.ptr(), DType::I64),
                    rt::Arg::ptr(lBuf.ptr(), DType::I32),
                    rt::Arg::ptr(cBuf.ptr(), DType::I32), rt::Arg::i32(nmb),
                    rt::Arg::i32(nkb), rt::Arg::i32(int32_t(wpr)),
                    rt::Arg::i32(nkb)});
      order.launch(rt::Dim3(unsigned((nmb + 127) / 128)),
                   {rt::Arg::ptr(cBuf.ptr(), DType::I32),
                    rt::Arg::ptr(oBuf.ptr(), DType::I32), rt::Arg::i32(nmb),
                    rt::Arg::ptr(lBuf.ptr(), DType::I32), rt::Arg::i32(nkb),
                    rt::Arg::ptr(tBuf.ptr(), DType::I32)});
      rt::Device::get().synchronize();
      std::vector<int32_t> got = tBuf.toHost<int32_t>();
      auto keptAt = [&](int r, int kb) {
        return kb < nkb && kept(mask, wpr, r, kb);
      };
      std::vector<std::vector<int32_t>> singles(static_cast<size_t>(nmb)),
          dropped(static_cast<size_t>(nmb));
      for (int r = 0; r < nmb; ++r)
        for (int kb = 0; kb < nkb; ++kb) {
          if (!keptAt(r, kb))
            dropped[size_t(r)].insert(dropped[size_t(r)].begin(), kb);
          else if (!keptAt(r, kb ^ 1))
            singles[size_t(r)].push_back(kb);
        }
      std::vector<int32_t> rows(static_cast<size_t>(nmb));
      for (int i = 0; i < nmb; ++i)
        rows[size_t(i)] = i;
      std::stable_sort(rows.begin(), rows.end(), [&](int32_t a, int32_t b) {
        return singles[size_t(a)].size() > singles[size_t(b)].size();
      });
      std::vector<int32_t> want = {0};
      for (auto *kind : {&singles, &dropped})
        for (int32_t r : rows)
          for (int32_t kb : (*kind)[size_t(r)]) {
            want.push_back(r * nkb + kb);
            ++want[0];
          }
      got.resize(want.size());
      ASSERT_EQ(got, want) << "nmb " << nmb << " nkb " << nkb << " p " << p;
    }
  }
}

// The tile order follows the drop rate: the forward's groups of 8 / (1 - p)
// row blocks, dW's and dX's smaller groups at high p (bench/NOTES.md, "The
// tile order follows p"); a requested group stands.
TEST(SparseDropValidation, GroupFollowsKeptFraction) {
  sd::Tiling want, t;
  std::string why;
  auto groupAt = [&](double rate, const char *kernel) {
    sd::Problem p = tmaProblem(128);
    p.p = rate;
    EXPECT_TRUE(sd::resolveTmaTiling(p, kernel, want, 1024, 1024, t, why))
        << why;
    return t.group;
  };
  EXPECT_EQ(groupAt(0.0, "dsd_fwd"), 8);
  EXPECT_EQ(groupAt(0.5, "dsd_fwd"), 16);
  EXPECT_EQ(groupAt(0.9, "dsd_fwd"), 80);
  EXPECT_EQ(groupAt(1.0, "dsd_fwd"), 1 << 20);
  EXPECT_EQ(groupAt(0.5, "dsd_dw"), 8);
  EXPECT_EQ(groupAt(0.7, "dsd_dw"), 4);
  EXPECT_EQ(groupAt(0.5, "sdd_dx"), 8);
  EXPECT_EQ(groupAt(0.9, "sdd_dx"), 1);
  want.group = 4;
  EXPECT_EQ(groupAt(0.9, "dsd_fwd"), 4);
}

// dX's kept-tiles-first form: on by default from p = 0.7 where the tile is
// a mask block (then persistent), off below and for tiles spanning blocks;
// asked for where it cannot run, it says why.
TEST(SparseDropValidation, ListedDxTiles) {
  sd::Problem p = tmaProblem(128);
  sd::Tiling want, t;
  std::string why;
  p.p = 0.9;
  ASSERT_TRUE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why))
      << why;
  EXPECT_EQ(t.listed, 1);
  EXPECT_EQ(t.persistent, 1);
  p.p = 0.5;
  want.kinds = 0; // (By kind, the default here, lists its single blocks.)
  ASSERT_TRUE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why));
  EXPECT_EQ(t.listed, 0);
  want.kinds = -1;
  p.p = 0.9;
  want.tileK = 256; // Two mask blocks per tile.
  ASSERT_TRUE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why));
  EXPECT_EQ(t.listed, 0);
  want.listed = 1;
  EXPECT_FALSE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why));
  EXPECT_NE(why.find("whole mask blocks"), std::string::npos) << why;
  want = sd::Tiling();
  want.listed = 1;
  want.persistent = 0;
  EXPECT_FALSE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why));
  EXPECT_NE(why.find("persistent"), std::string::npos) << why;
  // The forward and dW take lists of their own: the field is ignored.
  EXPECT_TRUE(sd::resolveTmaTiling(p, "dsd_fwd", want, 1024, 1024, t, why))
      << why;
  EXPECT_EQ(t.listed, 0);
}

// dX's tiles by kind: on by default for 0.1 <= p < 0.6 where the tile is a
// mask block of at most 128 columns (then persistent, its single blocks
// listed), off at p = 0 and from the listed range on, off when the tiling
// asks for two-block tiles or ping-pong; asked for where it cannot run, it
// says why; the forward and dW ignore it.
TEST(SparseDropValidation, DxTilesByKind) {
  sd::Problem p = tmaProblem(128);
  sd::Tiling want, t;
  std::string why;
  auto kindsAt = [&](double rate) {
    p.p = rate;
    EXPECT_TRUE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why))
        << why;
    return t.kinds;
  };
  EXPECT_EQ(kindsAt(0.0), 0);
  EXPECT_EQ(kindsAt(0.05), 0);
  EXPECT_EQ(kindsAt(0.1), 1);
  EXPECT_EQ(t.persistent, 1);
  EXPECT_EQ(t.listed, 1);
  EXPECT_EQ(t.tileK, 128);
  EXPECT_EQ(kindsAt(0.5), 1);
  EXPECT_EQ(kindsAt(0.6), 0);
  EXPECT_EQ(kindsAt(0.7), 0);
  EXPECT_EQ(t.listed, 1); // The kept-first list from here.
  want.tileK = 256;
  EXPECT_EQ(kindsAt(0.3), 0);
  want.kinds = 1;
  EXPECT_FALSE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why));
  EXPECT_NE(why.find("by kind"), std::string::npos) << why;
  want = sd::Tiling();
  want.kinds = 1;
  want.persistent = 0;
  EXPECT_FALSE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why));
  EXPECT_NE(why.find("persistent"), std::string::npos) << why;
  want.persistent = -1;
  want.pingpong = 1;
  want.warps = 4;
  want.tileM = 64;
  EXPECT_FALSE(sd::resolveTmaTiling(p, "sdd_dx", want, 1024, 1024, t, why));
  want = sd::Tiling();
  want.kinds = 1;
  EXPECT_EQ(kindsAt(0.9), 1); // Asked for, it runs at any p.
  EXPECT_TRUE(sd::resolveTmaTiling(p, "dsd_fwd", want, 1024, 1024, t, why))
      << why;
  EXPECT_EQ(t.kinds, 0);
}

TEST(SparseDropValidation, GpuCaseTilingsAreValid) {
  for (const GemmCase &c : gemmCases()) {
    sd::Problem pr{c.dtype, c.M, c.N, c.K, c.bm, c.bk, c.p};
    for (const char *k : {"dsd_fwd", "sdd_dx", "dsd_dw"})
      EXPECT_NO_THROW(sd::resolveTiling(pr, k, tilingFor(c)))
          << name(c) << " " << k;
  }
}

TEST(SparseDropValidation, MaskSizes) {
  EXPECT_EQ(sd::maskWordsPerRow(300, 64), 1);
  EXPECT_EQ(sd::maskWordsPerRow(64 * 64, 64), 1);
  EXPECT_EQ(sd::maskWordsPerRow(64 * 64 + 1, 64), 2);
  EXPECT_EQ(sd::maskWords(200, 300, 64, 64), 4);
  EXPECT_EQ(sd::maskWords(0, 300, 64, 64), 0);
  EXPECT_EQ(sd::dropThreshold(0.0), 0);
  EXPECT_EQ(sd::dropThreshold(1.0), int64_t(1) << 32);
  EXPECT_EQ(sd::dropThreshold(0.5), int64_t(1) << 31);
}

TEST(SparseDropValidation, RejectsBadArguments) {
  auto fwd = [](sd::Problem p, sd::Tiling t = {}, rt::DevicePtr x = kP,
                int64_t sx = 256, rt::DevicePtr mask = kP) {
    return [=] { sd::forward(p, x, sx, kP, 256, mask, kP, 256, nullptr, t); };
  };
  sd::Problem p = good();
  p.dtype = DType::F32;
  expectError(fwd(p), "dtype must be bf16 or f16");
  p = good();
  p.blockM = 100;
  expectError(fwd(p), "blockM = 100 must be a positive multiple of 16");
  p = good();
  p.blockK = 0;
  expectError(fwd(p), "blockK = 0");
  p = good();
  p.p = 1.5;
  expectError(fwd(p), "must be in [0, 1]");
  p = good();
  p.p = std::nan("");
  expectError(fwd(p), "must be in [0, 1]");
  p = good();
  p.M = -1;
  expectError(fwd(p), "M = -1 out of range");
  expectError(fwd(good(), {64, 0, 256, 0}), "blockK = 128 is not a multiple of tileK = 256");
  p = good();
  p.blockM = 64;
  expectError(fwd(p, {128, 0, 0, 0}),
              "blockM = 64 is not a multiple of tileM = 128");
  expectError(fwd(good(), {128, 24, 32, 8}), "tileN = 24 must be a power of two");
  expectError(fwd(good(), {0, 0, 0, 3}), "warps = 3");
  expectError([] { sd::backwardX(good(), kP, 256, kP, 256, kP, kP, 256, nullptr,
                                 {16, 32, 16, 4}); },
              "16 x 16 output tile cannot be split over 4 warps");
  expectError(fwd(good(), {}, kP + 8), "X is not 16-byte aligned");
  expectError(fwd(good(), {}, 0), "X is null");
  expectError(fwd(good(), {}, kP, 255), "stride of X = 255 is smaller");
  expectError(fwd(good(), {}, kP, 256, 0), "mask is null");
  expectError(fwd(good(), {}, kP, 256, kP + 4), "mask is not 16-byte aligned");
  p = good();
  p.M = 1 << 20;
  p.K = 4096;
  expectError([=] { sd::forward(p, kP, 4096, kP, 4096, kP, kP, 256); },
              "beyond int32");
  expectError([] { sd::backwardX(good(), kP, 100, kP, 256, kP, kP, 256); },
              "backwardX: stride of dY = 100");
  expectError([] { sd::backwardW(good(), kP, 256, kP, 256, kP, kP + 2, 256); },
              "backwardW: dW is not 16-byte aligned");
  expectError([] { sd::generateMask(1, 0, -0.1, 10, 10, 16, 16, kP); },
              "generateMask: p = ");
  expectError([] { sd::generateMask(1, 0, 0.1, 10, 10, 8, 16, kP); },
              "blockM = 8");
  expectError([] { sd::generateMask(1, 0, 0.1, 10, 10, 16, 16, kP + 8); },
              "maskOut is not 16-byte aligned");
  expectError([] { sd::resolveTiling(good(), "nope"); }, "unknown kernel");
}

} // namespace
