//===- Sparse24Test.cpp - 2:4 sparsity helpers against CPU references -----===//
//
// GPU tests (skipped without a GPU) of the kernels in
// dsl_examples/sparse24.tile through the ops::Sparse24 launchers:
//  - transposable mask: kept |w| sum equals the brute-force optimum over all
//    90 patterns (f64), mask and mask^T are 2:4 in every block, and the mask
//    equals the CPU reference bit for bit, tie rule included (random inputs
//    and inputs full of ties); out = W * mask; padding never written;
//  - row-wise mask vs CPU, flip count vs CPU, masked decay vs f64;
//  - MVUE: exactly 2 nonzeros per group, same seed = same bits, other offset
//    or seed = other draws, independent of launch shape, kept indices as the
//    CPU model of the RNG, and the mean over many seeds converges to x;
//  - compress24: W's and W^T's compressed operands decompress (host) to
//    W * mask bit for bit, also for masks with fewer than two kept per group;
//  - sparse_dot on a host-compressed operand vs f64; Y = X W^T and
//    dX = dY W (sparse_linear, several tilings) vs f64 products on the pruned
//    weight, bf16 and f16, ragged M and output widths (ragged I on the TMA
//    kernel too), poisoned outputs;
//  - mask24Update equals mask24Transposable + compress24 bit for bit;
//  - the weight gradient: mvue24CompressT is reproducible, 2:4, bit for bit
//    mvue24 + compress24 on dY^T; dW = S(dY^T) X vs f64 on both GEMM paths,
//    ragged shapes; the mean of dW over seeds converges to dY^T X.
// CPU-only tests: the 90-pattern enumeration, the mask search's tables
// against their derivation, the host reference against the f64 brute
// force, and argument validation.
// Inputs are random; SPARSETILE_TEST_SEED=N reproduces a run.
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "HostFloat.h"
#include "sparsetile/ops/Sparse24.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/JIT.h"
#include "sparsetile/runtime/Random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

using namespace sparsetile;
using namespace sparsetile::ops;
namespace T = sparsetile::test;

namespace {

using sparsetile::testing::testSeed;

const int kPairs[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};

/// The enumeration, independently: (pair per row, code) in order.
struct Pattern {
  int pair[4];
  uint16_t code;
};
std::vector<Pattern> enumeratePatterns() {
  std::vector<Pattern> out;
  for (int p0 = 0; p0 < 6; ++p0)
    for (int p1 = 0; p1 < 6; ++p1)
      for (int p2 = 0; p2 < 6; ++p2)
        for (int p3 = 0; p3 < 6; ++p3) {
          int p[4] = {p0, p1, p2, p3}, cnt[4] = {};
          uint16_t code = 0;
          for (int i = 0; i < 4; ++i)
            for (int e = 0; e < 2; ++e) {
              ++cnt[kPairs[p[i]][e]];
              code |= uint16_t(1u << (4 * i + kPairs[p[i]][e]));
            }
          if (cnt[0] == 2 && cnt[1] == 2 && cnt[2] == 2 && cnt[3] == 2)
            out.push_back({{p0, p1, p2, p3}, code});
        }
  return out;
}

bool validBlock(uint16_t code) {
  for (int i = 0; i < 4; ++i) {
    int r = 0, c = 0;
    for (int j = 0; j < 4; ++j)
      r += (code >> (4 * i + j)) & 1, c += (code >> (4 * j + i)) & 1;
    if (r != 2 || c != 2)
      return false;
  }
  return true;
}

// --- Host storage of bf16 / f16 / f32 -----------------------------------
int bytesOf(DType t) { return t == DType::F32 ? 4 : 2; }

struct HostArray {
  DType t;
  std::vector<uint8_t> bytes;
  HostArray(DType t, size_t n) : t(t), bytes(n * bytesOf(t)) {}
  size_t size() const { return bytes.size() / bytesOf(t); }
  float get(size_t i) const {
    if (t == DType::F32) {
      float f;
      std::memcpy(&f, &bytes[4 * i], 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, &bytes[2 * i], 2);
    return t == DType::BF16 ? T::bf16ToFloat(h) : T::halfToFloat(h);
  }
  void set(size_t i, float f) {
    if (t == DType::F32) {
      std::memcpy(&bytes[4 * i], &f, 4);
      return;
    }
    uint16_t h = t == DType::BF16 ? T::floatToBf16(f) : T::floatToHalf(f);
    std::memcpy(&bytes[2 * i], &h, 2);
  }
  bool sameBits(size_t i, const HostArray &o, size_t j) const {
    int b = bytesOf(t);
    return std::memcmp(&bytes[b * i], &o.bytes[b * j], b) == 0;
  }
  bool isPositiveZero(size_t i) const {
    for (int k = 0; k < bytesOf(t); ++k)
      if (bytes[bytesOf(t) * i + k])
        return false;
    return true;
  }
};

rt::DeviceBuffer upload(const HostArray &a) { return rt::DeviceBuffer::fromHost(a.bytes); }
HostArray download(const rt::DeviceBuffer &b, DType t) {
  HostArray a(t, b.size() / bytesOf(t));
  a.bytes = b.toHost<uint8_t>();
  return a;
}

/// The meet-in-the-middle search's tables, derived here from first
/// principles (the kernel hard-codes them as HALF_N, HALF_COMBOS, HALF_COMP).
/// A half is a (pair, pair) for two consecutive rows; its state is the
/// column counts it uses. States are numbered in order of the first half, in
/// lexicographic order, that reaches them; each lists its halves in that
/// order.
struct HalfStates {
  std::vector<std::array<int, 4>> counts;
  std::vector<std::vector<std::array<int, 2>>> halves;
  std::vector<int> comp; // the state two rows need below state s
};
const HalfStates &halfStates() {
  static const HalfStates hs = [] {
    HalfStates h;
    for (int p = 0; p < 6; ++p)
      for (int q = 0; q < 6; ++q) {
        std::array<int, 4> c{};
        for (int e = 0; e < 2; ++e)
          ++c[kPairs[p][e]], ++c[kPairs[q][e]];
        auto it = std::find(h.counts.begin(), h.counts.end(), c);
        if (it == h.counts.end()) {
          h.counts.push_back(c);
          h.halves.emplace_back();
          it = h.counts.end() - 1;
        }
        h.halves[size_t(it - h.counts.begin())].push_back({p, q});
      }
    for (const auto &c : h.counts) {
      std::array<int, 4> rest{2 - c[0], 2 - c[1], 2 - c[2], 2 - c[3]};
      h.comp.push_back(int(std::find(h.counts.begin(), h.counts.end(), rest) -
                           h.counts.begin()));
    }
    return h;
  }();
  return hs;
}

/// CPU reference of the kernel's choice (sparse24.tile, best_pattern): per
/// state, the best half for rows 0-1 and the best for rows 2-3 under the
/// complementary state (strict '>'), then the best f32 sum (r0 + r1) +
/// (r2 + r3) over the states (strict '>').
uint16_t referenceCode(const float a[4][4]) {
  const HalfStates &hs = halfStates();
  float s[4][6];
  for (int i = 0; i < 4; ++i)
    for (int p = 0; p < 6; ++p)
      s[i][p] = std::fabs(a[i][kPairs[p][0]]) + std::fabs(a[i][kPairs[p][1]]);
  // The best half of state st on rows i, i + 1: its score and bits.
  auto bestHalf = [&](size_t st, int i, float &score) {
    uint16_t code = 0;
    for (size_t n = 0; n < hs.halves[st].size(); ++n) {
      auto [p, q] = hs.halves[st][n];
      float t = s[i][p] + s[i + 1][q];
      if (n == 0 || t > score) {
        score = t;
        code = uint16_t((1u << (4 * i + kPairs[p][0])) | (1u << (4 * i + kPairs[p][1])) |
                        (1u << (4 * i + 4 + kPairs[q][0])) |
                        (1u << (4 * i + 4 + kPairs[q][1])));
      }
    }
    return code;
  };
  float best = 0;
  uint16_t code = 0;
  for (size_t st = 0; st < hs.counts.size(); ++st) {
    float top = 0, bottom = 0;
    uint16_t c = bestHalf(st, 0, top) | bestHalf(size_t(hs.comp[st]), 2, bottom);
    float total = top + bottom;
    if (st == 0 || total > best)
      best = total, code = c;
  }
  return code;
}

double keptSum(const float a[4][4], uint16_t code) {
  double s = 0;
  for (int e = 0; e < 16; ++e)
    if ((code >> e) & 1)
      s += std::fabs(double(a[e / 4][e % 4]));
  return s;
}

const char *tname(DType t) { return dtypeName(t); }

class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!rt::gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
  }
};

// --- Transposable mask ---------------------------------------------------
struct MaskCase {
  DType t;
  int64_t R, C, pad;
  bool ties; // small integers: many equal scores
};

/// A parameterized GPU test: skipped, with the reason, without a GPU.
template <typename Param>
class GpuParamTest : public ::testing::TestWithParam<Param> {
protected:
  void SetUp() override {
    std::string why;
    if (!rt::gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
  }
};

class TransposableMask : public GpuParamTest<MaskCase> {};

HostArray randomMatrix(const MaskCase &c, int64_t stride, std::mt19937_64 &rng) {
  HostArray w(c.t, c.R * stride);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> small(-2, 2);
  for (size_t i = 0; i < w.size(); ++i)
    w.set(i, c.ties ? float(small(rng)) : normal(rng));
  return w;
}

TEST_P(TransposableMask, OptimalValidAndTieRuleExact) {
  const MaskCase &c = GetParam();
  std::mt19937_64 rng(testSeed() ^ uint64_t(c.R * 131 + c.C * 7 + c.ties));
  int64_t sw = c.C + c.pad, sm = c.C + 16 * (c.pad > 0), so = c.C + 2 * c.pad;
  HostArray w = randomMatrix(c, sw, rng);
  auto wBuf = upload(w);
  rt::DeviceBuffer mBuf(c.R * sm), oBuf(c.R * so * bytesOf(c.t));
  mBuf.fill(0x7f);
  oBuf.fill(0xff);
  mask24Transposable(c.t, c.R, c.C, wBuf.ptr(), sw, mBuf.ptr(), sm, oBuf.ptr(), so);
  rt::Device::get().synchronize();
  auto mask = mBuf.toHost<int8_t>();
  HostArray out = download(oBuf, c.t);

  static const auto pats = enumeratePatterns();
  int64_t bad = 0;
  auto report = [&](const std::string &s) {
    if (bad++ < 8)
      ADD_FAILURE() << s;
  };
  for (int64_t br = 0; br < c.R / 4; ++br)
    for (int64_t bc = 0; bc < c.C / 4; ++bc) {
      float a[4][4];
      uint16_t code = 0, codeT = 0;
      bool zeroOne = true;
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          int64_t r = 4 * br + i, col = 4 * bc + j;
          a[i][j] = w.get(r * sw + col);
          int8_t m = mask[r * sm + col];
          zeroOne = zeroOne && (m == 0 || m == 1);
          code |= uint16_t((m != 0) << (4 * i + j));
          codeT |= uint16_t((m != 0) << (4 * j + i));
          // out = W * mask, bit-exact (pruned entries are +0).
          bool ok = m ? out.sameBits(r * so + col, w, r * sw + col)
                      : out.isPositiveZero(r * so + col);
          if (!ok)
            report("out[" + std::to_string(r) + ", " + std::to_string(col) +
                   "] is not W * mask");
        }
      std::string at = "block (" + std::to_string(br) + ", " + std::to_string(bc) + ")";
      if (!zeroOne)
        report(at + ": mask entries not 0/1");
      if (!validBlock(code) || !validBlock(codeT))
        report(at + ": mask or mask^T not 2:4, code 0x" + std::to_string(code));
      double best = 0, total = 0;
      for (const auto &p : pats)
        best = std::max(best, keptSum(a, p.code));
      for (int e = 0; e < 16; ++e)
        total += std::fabs(a[e / 4][e % 4]);
      double kept = keptSum(a, code);
      if (!(std::fabs(kept - best) <= 4 * 0x1p-24 * total))
        report(at + ": kept " + std::to_string(kept) + " < optimum " +
               std::to_string(best));
      uint16_t ref = referenceCode(a);
      if (code != ref)
        report(at + ": pattern " + std::bitset<16>(code).to_string() +
               ", reference (first in enumeration order) " +
               std::bitset<16>(ref).to_string());
    }
  // Padding untouched.
  for (int64_t r = 0; r < c.R; ++r) {
    for (int64_t col = c.C; col < sm; ++col)
      if (mask[r * sm + col] != 0x7f)
        report("mask padding written at row " + std::to_string(r));
    for (int64_t col = c.C; col < so; ++col)
      if (out.bytes[(r * so + col) * bytesOf(c.t)] != 0xff)
        report("out padding written at row " + std::to_string(r));
  }
  EXPECT_EQ(bad, 0);
}

std::string maskName(const ::testing::TestParamInfo<MaskCase> &info) {
  const MaskCase &c = info.param;
  return std::string(tname(c.t)) + "_" + std::to_string(c.R) + "x" +
         std::to_string(c.C) + "_pad" + std::to_string(c.pad) +
         (c.ties ? "_ties" : "_random");
}

std::vector<MaskCase> maskCases() {
  std::vector<MaskCase> v;
  for (DType t : {DType::BF16, DType::F16, DType::F32})
    for (bool ties : {false, true}) {
      v.push_back({t, 4, 4, 0, ties});
      v.push_back({t, 64, 128, 0, ties});
      v.push_back({t, 36, 100, 8, ties});
      v.push_back({t, 260, 516, 4, ties});
    }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Sparse24, TransposableMask, ::testing::ValuesIn(maskCases()),
                         maskName);

// All-equal and all-zero blocks take the first pattern; mask-only and
// in-place out-only launches agree with the full one.
TEST_F(GpuTest, TransposableAllTiesAndOutputModes) {
  const int64_t R = 8, C = 16;
  HostArray w(DType::F32, R * C);
  for (int64_t i = 0; i < R * C; ++i)
    w.set(i, (i / 4) % 4 == 0 ? 0.0f : ((i % C) < 8 ? 1.5f : -1.5f));
  auto wBuf = upload(w);
  rt::DeviceBuffer mBuf(R * C);
  mask24Transposable(DType::F32, R, C, wBuf.ptr(), C, mBuf.ptr(), C, 0, 0);
  rt::Device::get().synchronize();
  auto mask = mBuf.toHost<int8_t>();
  uint16_t first = transposable24Patterns()[0];
  for (int64_t br = 0; br < R / 4; ++br)
    for (int64_t bc = 0; bc < C / 4; ++bc)
      for (int e = 0; e < 16; ++e)
        EXPECT_EQ(mask[(4 * br + e / 4) * C + 4 * bc + e % 4], (first >> e) & 1)
            << "block " << br << "," << bc << " entry " << e;
  // In-place pruning, no mask.
  mask24Transposable(DType::F32, R, C, wBuf.ptr(), C, 0, 0, wBuf.ptr(), C);
  rt::Device::get().synchronize();
  HostArray pruned = download(wBuf, DType::F32);
  for (int64_t i = 0; i < R * C; ++i)
    EXPECT_EQ(pruned.get(i), mask[i] ? w.get(i) : 0.0f) << i;
}

// Several blocks a thread (L > 1, the library's form from 2^20 blocks on,
// each thread loading the next block during the current one's search) give
// the bits of one block a thread, the library's form at these sizes: mask,
// W * mask and both, on shapes whose blocks do not fill the last program,
// with padded strides.
TEST_F(GpuTest, TransposableBlocksPerThreadMatchOne) {
  std::mt19937_64 rng(testSeed() + 43);
  auto kernels = rt::KernelSource::fromFile(sparsetile::testing::examplesDir() +
                                            "/sparse24.tile");
  auto bytes = [](const rt::DeviceBuffer &b) { return b.toHost<uint8_t>(); };
  struct Case {
    DType t;
    int64_t R, C;
  };
  for (Case c : {Case{DType::BF16, 132, 260}, Case{DType::F16, 36, 1028},
                 Case{DType::F32, 68, 72}})
    for (int64_t l : {2, 4, 8}) {
      const int64_t sw = c.C + 8, sm = c.C + 16, so = c.C + 4;
      MaskCase mc{c.t, c.R, c.C, 8, l == 4};
      HostArray w = randomMatrix(mc, sw, rng);
      auto wBuf = upload(w);
      rt::DeviceBuffer m1(c.R * sm), o1(c.R * so * bytesOf(c.t));
      m1.fill(0x7f);
      o1.fill(0xff);
      mask24Transposable(c.t, c.R, c.C, wBuf.ptr(), sw, m1.ptr(), sm, o1.ptr(),
                         so);
      int64_t blocks = (c.R / 4) * (c.C / 4);
      for (int mode = 0; mode < 3; ++mode) { // mask, W * mask, both
        bool writeMask = mode != 1, writeOut = mode != 0;
        std::string what = std::string(tname(c.t)) + " " + std::to_string(c.R) +
                           " x " + std::to_string(c.C) + ", L " +
                           std::to_string(l) + ", mode " + std::to_string(mode);
        rt::Kernel &k =
            rt::JIT::global().get(kernels, "mask24_transposable",
                                  {{"T", tname(c.t)},
                                   {"WRITE_MASK", writeMask ? "1" : "0"},
                                   {"WRITE_OUT", writeOut ? "1" : "0"},
                                   {"BLOCK", "128"},
                                   {"L", std::to_string(l)}});
        rt::DeviceBuffer m2(c.R * sm), o2(c.R * so * bytesOf(c.t));
        m2.fill(0x7f);
        o2.fill(0xff);
        k.launch(rt::Dim3(unsigned((blocks + 128 * l - 1) / (128 * l))),
                 {rt::Arg::ptr(wBuf.ptr(), c.t),
                  rt::Arg::ptr(m2.ptr(), DType::I8),
                  rt::Arg::ptr(o2.ptr(), c.t), rt::Arg::i32(int32_t(c.R)),
                  rt::Arg::i32(int32_t(c.C)), rt::Arg::i32(int32_t(sw)),
                  rt::Arg::i32(int32_t(sm)), rt::Arg::i32(int32_t(so))});
        rt::Device::get().synchronize();
        if (writeMask)
          EXPECT_EQ(bytes(m2), bytes(m1)) << what << ": mask";
        else
          EXPECT_EQ(bytes(m2), std::vector<uint8_t>(m2.size(), 0x7f))
              << what << ": unwritten mask";
        if (writeOut)
          EXPECT_EQ(bytes(o2), bytes(o1)) << what << ": W * mask";
        else
          EXPECT_EQ(bytes(o2), std::vector<uint8_t>(o2.size(), 0xff))
              << what << ": unwritten out";
      }
    }
}

// --- Row-wise mask ------------------------------------------------------
TEST_F(GpuTest, RowwiseMatchesCpu) {
  std::mt19937_64 rng(testSeed() + 1);
  for (DType t : {DType::BF16, DType::F16, DType::F32})
    for (bool ties : {false, true}) {
      const int64_t R = 37, C = 132, sw = 136, sm = 144, so = 140;
      HostArray w(t, R * sw);
      std::normal_distribution<float> normal(0.f, 1.f);
      std::uniform_int_distribution<int> small(-2, 2);
      for (size_t i = 0; i < w.size(); ++i)
        w.set(i, ties ? float(small(rng)) : normal(rng));
      auto wBuf = upload(w);
      rt::DeviceBuffer mBuf(R * sm), oBuf(R * so * bytesOf(t));
      mBuf.fill(0x7f);
      oBuf.fill(0xff);
      mask24Rowwise(t, R, C, wBuf.ptr(), sw, mBuf.ptr(), sm, oBuf.ptr(), so);
      rt::Device::get().synchronize();
      auto mask = mBuf.toHost<int8_t>();
      HostArray out = download(oBuf, t);
      int bad = 0;
      for (int64_t r = 0; r < R; ++r) {
        for (int64_t g = 0; g < C / 4; ++g) {
          float a[4];
          for (int j = 0; j < 4; ++j)
            a[j] = std::fabs(w.get(r * sw + 4 * g + j));
          for (int j = 0; j < 4; ++j) {
            int rank = 0;
            for (int k = 0; k < 4; ++k)
              rank += a[k] > a[j] || (a[k] == a[j] && k < j);
            int64_t col = 4 * g + j;
            int8_t want = rank < 2;
            if (mask[r * sm + col] != want && bad++ < 5)
              ADD_FAILURE() << tname(t) << " mask[" << r << ", " << col << "] = "
                            << int(mask[r * sm + col]) << ", expected " << int(want);
            bool ok = want ? out.sameBits(r * so + col, w, r * sw + col)
                           : out.isPositiveZero(r * so + col);
            if (!ok && bad++ < 5)
              ADD_FAILURE() << tname(t) << " out[" << r << ", " << col << "]";
          }
        }
        for (int64_t col = C; col < sm; ++col)
          if (mask[r * sm + col] != 0x7f && bad++ < 5)
            ADD_FAILURE() << "mask padding written, row " << r;
      }
      EXPECT_EQ(bad, 0) << tname(t) << (ties ? " ties" : " random");
    }
}

// --- Flip rate -----------------------------------------------------------
TEST_F(GpuTest, FlipCountMatchesCpu) {
  std::mt19937_64 rng(testSeed() + 2);
  for (int64_t n : {int64_t(1), int64_t(100), int64_t(4096), int64_t(4097),
                    int64_t(1000003), int64_t(3 << 20)}) {
    std::vector<int8_t> a(n), b(n);
    std::bernoulli_distribution half(0.5), flip(0.1);
    int64_t want = 0;
    for (int64_t i = 0; i < n; ++i) {
      a[i] = half(rng);
      bool f = flip(rng);
      b[i] = f ? !a[i] : a[i];
      if (b[i] && half(rng))
        b[i] = 3; // any nonzero is "kept"
      want += f;
    }
    auto aBuf = rt::DeviceBuffer::fromHost(a), bBuf = rt::DeviceBuffer::fromHost(b);
    EXPECT_EQ(maskFlipCount(aBuf.ptr(), bBuf.ptr(), n), want) << "n = " << n;
    EXPECT_DOUBLE_EQ(maskFlipRate(aBuf.ptr(), bBuf.ptr(), n), double(want) / n);
    EXPECT_EQ(maskFlipCount(aBuf.ptr(), aBuf.ptr(), n), 0);
  }
}

// --- Masked decay ----------------------------------------------------------
TEST_F(GpuTest, MaskedDecayMatchesFloat64) {
  std::mt19937_64 rng(testSeed() + 3);
  for (DType t : {DType::BF16, DType::F16, DType::F32})
    for (int64_t n : {int64_t(7), int64_t(2048), int64_t(100003)}) {
      HostArray g(t, n + 16), w(t, n);
      std::vector<int8_t> mask(n);
      std::normal_distribution<float> normal(0.f, 1.f);
      for (int64_t i = 0; i < n + 16; ++i)
        g.set(i, normal(rng));
      for (int64_t i = 0; i < n; ++i)
        w.set(i, normal(rng)), mask[i] = int8_t(rng() % 3 == 0 ? 0 : 1);
      auto gBuf = upload(g), wBuf = upload(w);
      auto mBuf = rt::DeviceBuffer::fromHost(mask);
      float lambda = 0.25f;
      maskedDecay(t, gBuf.ptr(), wBuf.ptr(), mBuf.ptr(), n, lambda);
      rt::Device::get().synchronize();
      HostArray got = download(gBuf, t);
      double tol = t == DType::BF16 ? 0x1p-8 : t == DType::F16 ? 0x1p-10 : 0x1p-21;
      int bad = 0;
      for (int64_t i = 0; i < n + 16; ++i) {
        double want = i < n ? double(g.get(i)) +
                                  (mask[i] ? 0.0 : double(lambda) * double(w.get(i)))
                            : double(g.get(i)); // past n: untouched
        double err = std::fabs(got.get(i) - want);
        if (!(err <= tol * std::fabs(want) + 1e-6) && bad++ < 5)
          ADD_FAILURE() << tname(t) << " n " << n << " g[" << i << "] = " << got.get(i)
                        << ", expected " << want;
      }
      EXPECT_EQ(bad, 0);
    }
}

// --- MVUE ----------------------------------------------------------------
/// CPU model of the kernel's probabilities and RNG (the runtime's host
/// Philox: the top 23 bits of the group's word).
/// Group g of a tensor takes word g % 4 of the expansion at offset + g / 4.
float uniformOf(uint64_t seed, int64_t offset, int64_t g) {
  uint32_t w = rt::randint4x(seed, uint64_t(offset + g / 4))[size_t(g % 4)];
  return float(w >> 9) * 0x1p-23f;
}
void probabilities(const float x[4], double p[4]) {
  double a[4], s = 0, mx = 0;
  for (int j = 0; j < 4; ++j)
    a[j] = std::fabs(double(x[j])), s += a[j], mx = std::max(mx, a[j]);
  for (int j = 0; j < 4; ++j)
    p[j] = 2 * mx > s ? (a[j] == mx ? 1.0 : a[j] / (s - mx)) : (s > 0 ? 2 * a[j] / s : 0);
}

TEST(Sparse24Cpu, MvueProbabilitiesSumToTwo) {
  std::mt19937_64 rng(testSeed() + 4);
  std::exponential_distribution<double> e(1.0);
  for (int it = 0; it < 10000; ++it) {
    float x[4];
    for (float &v : x)
      v = float(e(rng) * (it % 3 == 0 && &v == x ? 50 : 1));
    double p[4], sum = 0;
    probabilities(x, p);
    for (double q : p) {
      EXPECT_GE(q, 0.0);
      EXPECT_LE(q, 1.0 + 1e-12);
      sum += q;
    }
    EXPECT_NEAR(sum, 2.0, 1e-9);
  }
}

class Mvue : public GpuTest {
protected:
  HostArray run(const HostArray &x, uint64_t seed, int64_t offset) {
    auto xBuf = upload(x);
    rt::DeviceBuffer yBuf(x.bytes.size());
    yBuf.fill(0xff);
    mvue24(x.t, xBuf.ptr(), yBuf.ptr(), int64_t(x.size()), seed, offset);
    rt::Device::get().synchronize();
    return download(yBuf, x.t);
  }
};

TEST_F(Mvue, TwoPerGroupReproducibleAndMatchesRngModel) {
  std::mt19937_64 rng(testSeed() + 5);
  for (DType t : {DType::BF16, DType::F16, DType::F32}) {
    const int64_t n = 4 * 10007;
    HostArray x(t, n);
    std::normal_distribution<float> normal(0.f, 1.f);
    for (int64_t i = 0; i < n; ++i) {
      float v = normal(rng);
      if ((i / 4) % 5 == 0 && i % 4 == 0)
        v *= 100; // capped groups: the big entry is always kept
      x.set(i, v == 0 ? 1.0f : v);
    }
    uint64_t seed = rng();
    HostArray y = run(x, seed, 12345);
    HostArray y2 = run(x, seed, 12345);
    EXPECT_EQ(y.bytes, y2.bytes) << tname(t) << ": same seed, different bits";
    HostArray y3 = run(x, seed, 12345 + 1);
    HostArray y4 = run(x, seed + 1, 12345);
    EXPECT_NE(y.bytes, y3.bytes) << tname(t) << ": offset ignored";
    EXPECT_NE(y.bytes, y4.bytes) << tname(t) << ": seed ignored";
    int64_t bad = 0, modelMismatch = 0;
    for (int64_t g = 0; g < n / 4; ++g) {
      float xv[4];
      double p[4];
      for (int j = 0; j < 4; ++j)
        xv[j] = x.get(4 * g + j);
      probabilities(xv, p);
      int nz = 0;
      for (int j = 0; j < 4; ++j)
        nz += y.get(4 * g + j) != 0;
      if (nz != 2 && bad++ < 5)
        ADD_FAILURE() << tname(t) << " group " << g << " has " << nz << " nonzeros";
      // Kept values are x / p (within the storage type's rounding).
      for (int j = 0; j < 4; ++j) {
        float v = y.get(4 * g + j);
        if (v == 0)
          continue;
        double want = double(xv[j]) / p[j];
        double tol = t == DType::BF16 ? 0x1p-7 : t == DType::F16 ? 0x1p-10 : 1e-5;
        if (!(std::fabs(v - want) <= tol * std::fabs(want)) && bad++ < 5)
          ADD_FAILURE() << tname(t) << " y[" << 4 * g + j << "] = " << v
                        << ", expected x / p = " << want;
      }
      // The kept indices as the CPU model of the systematic sampling picks
      // them (f64 here, f32 on the GPU: rare boundary cases may differ).
      float u = uniformOf(seed, 12345, g);
      double c = 0;
      int first = -1, second = -1;
      for (int j = 0; j < 4; ++j) {
        double lo = c;
        c += p[j];
        if (first < 0 && u >= lo && u < c)
          first = j;
        if (second < 0 && u + 1 >= lo && u + 1 < c)
          second = j;
      }
      for (int j = 0; j < 4; ++j)
        if ((y.get(4 * g + j) != 0) != (j == first || j == second)) {
          ++modelMismatch;
          break;
        }
    }
    EXPECT_EQ(bad, 0);
    EXPECT_LE(modelMismatch, n / 4 / 1000) << tname(t) << ": kept indices differ "
                                              "from the RNG model too often";
  }
}

// Results depend on (seed, offset, group index), not on where a group sits
// in the launch: a suffix run starting at a whole quad (136 groups = 34
// Philox counters), with the offset advanced by 34, gives the same bits.
TEST_F(Mvue, IndependentOfLaunchShape) {
  std::mt19937_64 rng(testSeed() + 6);
  const int64_t n = 4 * 1000, skip = 4 * 136; // 16-byte aligned suffix
  HostArray x(DType::F32, n), tail(DType::F32, n - skip);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t i = 0; i < n; ++i)
    x.set(i, normal(rng));
  for (int64_t i = skip; i < n; ++i)
    tail.set(i - skip, x.get(i));
  HostArray y = run(x, 99, 7), yt = run(tail, 99, 7 + skip / 16);
  for (int64_t i = skip; i < n; ++i)
    ASSERT_TRUE(y.sameBits(i, yt, i - skip)) << i;
}

// E[y] = x: the mean over many seeds converges, within 5 standard errors of
// the known per-entry variance x^2 (1/p - 1) / N.
TEST_F(Mvue, MeanOverSeedsConvergesToInput) {
  std::mt19937_64 rng(testSeed() + 7);
  const int64_t n = 256;
  const int N = 2000;
  HostArray x(DType::F32, n);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (int64_t i = 0; i < n; ++i)
    x.set(i, i % 16 == 0 ? 30.0f * normal(rng) : normal(rng));
  auto xBuf = upload(x);
  rt::DeviceBuffer yBuf(n * 4);
  std::vector<double> mean(n, 0.0);
  for (int s = 0; s < N; ++s) {
    mvue24(DType::F32, xBuf.ptr(), yBuf.ptr(), n, uint64_t(s) * 7919 + 1, 0);
    auto y = yBuf.toHost<float>();
    for (int64_t i = 0; i < n; ++i)
      mean[i] += y[i] / N;
  }
  int bad = 0;
  for (int64_t g = 0; g < n / 4; ++g) {
    float xv[4];
    double p[4];
    for (int j = 0; j < 4; ++j)
      xv[j] = x.get(4 * g + j);
    probabilities(xv, p);
    for (int j = 0; j < 4; ++j) {
      double sigma = std::fabs(xv[j]) * std::sqrt(std::max(0.0, 1 / p[j] - 1) / N);
      double err = std::fabs(mean[4 * g + j] - xv[j]);
      if (!(err <= 5 * sigma + 1e-5 * std::fabs(xv[j]) + 1e-6) && bad++ < 5)
        ADD_FAILURE() << "mean[" << 4 * g + j << "] = " << mean[4 * g + j]
                      << ", x = " << xv[j] << ", sigma " << sigma;
    }
  }
  EXPECT_EQ(bad, 0);
}

// --- CPU-only -----------------------------------------------------------
TEST(Sparse24Cpu, NinetyDistinctValidPatternsInEnumerationOrder) {
  const auto &lib = transposable24Patterns();
  auto mine = enumeratePatterns();
  ASSERT_EQ(mine.size(), 90u);
  std::set<uint16_t> seen;
  for (size_t k = 0; k < 90; ++k) {
    EXPECT_TRUE(validBlock(lib[k])) << k;
    EXPECT_EQ(lib[k], mine[k].code) << "pattern " << k;
    seen.insert(lib[k]);
    if (k) // lexicographic in (pair of row 0, row 1, row 2)
      EXPECT_LT(std::make_tuple(mine[k - 1].pair[0], mine[k - 1].pair[1], mine[k - 1].pair[2]),
                std::make_tuple(mine[k].pair[0], mine[k].pair[1], mine[k].pair[2]));
  }
  EXPECT_EQ(seen.size(), 90u);
  // And they are all of them: every 16-bit code with 2 per row and column.
  int all = 0;
  for (unsigned code = 0; code < 65536; ++code)
    all += validBlock(uint16_t(code));
  EXPECT_EQ(all, 90);
}

/// The integers of `const NAME = [...];` in dsl_examples/sparse24.tile.
std::vector<int> dslTable(const std::string &text, const std::string &name) {
  size_t begin = text.find("const " + name + " = [");
  if (begin == std::string::npos)
    return {};
  size_t end = text.find("];", begin);
  std::vector<int> nums;
  for (size_t i = begin + name.size() + 9; i < end; ++i)
    if (std::isdigit(static_cast<unsigned char>(text[i]))) {
      int v = 0;
      while (std::isdigit(static_cast<unsigned char>(text[i])))
        v = 10 * v + (text[i++] - '0');
      nums.push_back(v);
    }
  return nums;
}

// The mask kernels' search tables (HALF_N, HALF_COMBOS, HALF_COMP) are the
// derivation of halfStates(), which the host reference searches with: the
// kernels and the reference resolve ties alike.
TEST(Sparse24Cpu, DslHalfTablesMatchTheDerivation) {
  const std::string path = sparsetile::testing::examplesDir() + "/sparse24.tile";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path << " ("
                  << sparsetile::testing::sourceTreeHint() << ")";
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const HalfStates &hs = halfStates();
  ASSERT_EQ(hs.counts.size(), 19u);
  std::vector<int> n = dslTable(text, "HALF_N"), combos = dslTable(text, "HALF_COMBOS"),
                   comp = dslTable(text, "HALF_COMP");
  ASSERT_EQ(n.size(), 19u);
  ASSERT_EQ(combos.size(), 19u * 6 * 2);
  ASSERT_EQ(comp, hs.comp);
  size_t halves = 0;
  for (size_t st = 0; st < 19; ++st) {
    ASSERT_EQ(size_t(n[st]), hs.halves[st].size()) << "state " << st;
    halves += hs.halves[st].size();
    for (size_t h = 0; h < hs.halves[st].size(); ++h) {
      EXPECT_EQ(combos[12 * st + 2 * h], hs.halves[st][h][0]) << st << "," << h;
      EXPECT_EQ(combos[12 * st + 2 * h + 1], hs.halves[st][h][1]) << st << "," << h;
    }
  }
  EXPECT_EQ(halves, 36u); // every (pair, pair) uses a column at most twice
}

// The reference (so the kernel, which must equal it bit for bit) finds an
// optimal valid pattern: random blocks against the f64 brute force over
// all 90, including blocks full of ties.
TEST(Sparse24Cpu, ReferenceIsOptimalAndValid) {
  static const auto pats = enumeratePatterns();
  std::mt19937_64 rng(testSeed() + 13);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> small(-2, 2);
  for (int trial = 0; trial < 20000; ++trial) {
    float a[4][4];
    double total = 0;
    for (auto &row : a)
      for (float &v : row) {
        v = trial % 2 ? float(small(rng)) : normal(rng);
        total += std::fabs(double(v));
      }
    uint16_t code = referenceCode(a);
    ASSERT_TRUE(validBlock(code)) << trial;
    double best = 0;
    for (const auto &p : pats)
      best = std::max(best, keptSum(a, p.code));
    ASSERT_LE(std::fabs(keptSum(a, code) - best), 4 * 0x1p-24 * total) << trial;
  }
}

TEST(Sparse24Cpu, ReferenceTieRuleTakesFirstPattern) {
  float ones[4][4];
  for (auto &r : ones)
    for (float &v : r)
      v = 1;
  EXPECT_EQ(referenceCode(ones), transposable24Patterns()[0]);
  // A unique optimum is found wherever it is in the order.
  for (size_t k = 0; k < 90; k += 7) {
    float a[4][4];
    uint16_t code = transposable24Patterns()[k];
    for (int e = 0; e < 16; ++e)
      a[e / 4][e % 4] = (code >> e) & 1 ? 2.0f : 1.0f;
    EXPECT_EQ(referenceCode(a), code) << k;
  }
}

// The metadata layout (Sparse24.h): blocks of 8 words a row by K steps of
// 128, a last partial block padded to 8 words; metaIndex is a bijection of
// the real and padding words onto 0 .. compressedMeta - 1, block b's row r
// at 8 (b R + r), its words contiguous.
TEST(Sparse24Cpu, MetaLayoutBlockedAndPaddedToWholeBlocks) {
  for (int64_t K : {64, 128, 192, 320, 768, 1024, 1280, 1600, 2048, 6400}) {
    SCOPED_TRACE("K " + std::to_string(K));
    EXPECT_EQ(metaCols(K), (K + 127) / 128 * 8);
    EXPECT_EQ(metaCols(K) % 8, 0);
    if (K % 128 == 0)
      EXPECT_EQ(metaCols(K), K / 16); // Unchanged where nothing pads.
    for (int64_t rows : {1, 8, 24, 40}) {
      EXPECT_EQ(compressedMeta(rows, K), rows * metaCols(K));
      std::vector<int> hits(size_t(compressedMeta(rows, K)), 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < metaCols(K); ++j) {
          int64_t at = metaIndex(r, j, rows, K);
          ASSERT_GE(at, 0);
          ASSERT_LT(at, compressedMeta(rows, K));
          EXPECT_EQ(at, (j / 8) * 8 * rows + r * 8 + j % 8);
          ++hits[size_t(at)];
        }
      for (int h : hits)
        EXPECT_EQ(h, 1);
    }
  }
  EXPECT_EQ(metaCols(1600), 104);
  EXPECT_EQ(uint16_t(kMetaPadWord), 0x4444);
}

// --- Compression and the sparse GEMMs ------------------------------------
/// Host decompression of a compressed operand (vals [rows, cols/2], meta
/// compressedMeta(rows, cols) words, the format of Sparse24.h) into dense
/// [rows, cols], as values of `t`. Reports (and counts in `bad`) groups whose
/// indices are not two distinct increasing ones, which
/// mma.sp::ordered_metadata rejects.
HostArray decompress(const HostArray &vals, const std::vector<int16_t> &meta,
                     int64_t rows, int64_t cols, int64_t &bad,
                     const std::string &what) {
  HostArray dense(vals.t, rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < cols / 4; ++g) {
      unsigned nib =
          (uint16_t(meta[metaIndex(r, g / 4, rows, cols)]) >> (4 * (g % 4))) &
          15;
      unsigned i0 = nib & 3, i1 = nib >> 2;
      if (i0 >= i1) {
        if (bad++ < 8)
          ADD_FAILURE() << what << ": row " << r << " group " << g
                        << " has metadata indices " << i0 << ", " << i1;
        continue;
      }
      int64_t v = r * (cols / 2) + 2 * g;
      std::memcpy(&dense.bytes[2 * (r * cols + 4 * g + i0)], &vals.bytes[2 * v], 2);
      std::memcpy(&dense.bytes[2 * (r * cols + 4 * g + i1)], &vals.bytes[2 * (v + 1)], 2);
    }
  return dense;
}

struct Compressed {
  rt::DeviceBuffer vals, meta, valsT, metaT;
};

/// Poisons all four operands (0xff: NaN values, metadata with equal
/// indices), so anything a kernel leaves unwritten fails a comparison.
void poison(Compressed &c) {
  for (auto *b : {&c.vals, &c.meta, &c.valsT, &c.metaT})
    b->fill(0xff);
}

/// W's and W^T's operands for a 2-byte W [R, C], poisoned.
Compressed poisonedOperands(int64_t R, int64_t C) {
  Compressed c{rt::DeviceBuffer(size_t(compressedValues(R, C)) * 2),
               rt::DeviceBuffer(size_t(compressedMeta(R, C)) * 2),
               rt::DeviceBuffer(size_t(compressedValues(C, R)) * 2),
               rt::DeviceBuffer(size_t(compressedMeta(C, R)) * 2)};
  poison(c);
  return c;
}

/// The four operands of `got` equal `want`'s byte for byte.
void expectSameOperands(const Compressed &got, const Compressed &want,
                        const std::string &what) {
  auto bytes = [](const rt::DeviceBuffer &b) { return b.toHost<uint8_t>(); };
  EXPECT_EQ(bytes(got.vals), bytes(want.vals)) << what << "vals";
  EXPECT_EQ(bytes(got.meta), bytes(want.meta)) << what << "meta";
  EXPECT_EQ(bytes(got.valsT), bytes(want.valsT)) << what << "valsT";
  EXPECT_EQ(bytes(got.metaT), bytes(want.metaT)) << what << "metaT";
}

/// compress24 into poisoned buffers, so anything not written fails the
/// round trip.
/// mask24Transposable's mask of W [R, C] (row stride sw), in an int8 buffer
/// of row stride sm whose padding stays zero.
rt::DeviceBuffer transposableMask(DType t, int64_t R, int64_t C,
                                  const rt::DeviceBuffer &w, int64_t sw,
                                  int64_t sm) {
  rt::DeviceBuffer mask(R * sm);
  mask.fill(0);
  mask24Transposable(t, R, C, w.ptr(), sw, mask.ptr(), sm, 0, 0);
  rt::Device::get().synchronize();
  return mask;
}

Compressed compress(DType t, int64_t R, int64_t C, const rt::DeviceBuffer &w,
                    int64_t sw, const rt::DeviceBuffer &mask, int64_t sm,
                    CompressPass1 pass1 = CompressPass1::Default) {
  Compressed c = poisonedOperands(R, C);
  compress24(t, R, C, w.ptr(), sw, mask.ptr(), sm, c.vals.ptr(), c.meta.ptr(),
             c.valsT.ptr(), c.metaT.ptr(), nullptr, pass1);
  rt::Device::get().synchronize();
  return c;
}

/// Decompresses W's and W^T's operands and compares them bit for bit with
/// W * mask (kept: W's bits; pruned: +0) and its transpose.
void expectRoundTrip(const Compressed &c, DType t, int64_t R, int64_t C,
                     const HostArray &w, int64_t sw,
                     const std::vector<int8_t> &mask, int64_t sm) {
  int64_t bad = 0;
  HostArray d = decompress(download(c.vals, t), c.meta.toHost<int16_t>(), R, C,
                           bad, "W");
  HostArray dT = decompress(download(c.valsT, t), c.metaT.toHost<int16_t>(), C,
                            R, bad, "W^T");
  // The padding words of a last partial block (cols % 128 != 0) hold
  // kMetaPadWord: the buffers were poisoned, so compress24 / mask24Update
  // must have written them (the TMA kernels read them).
  auto pads = [&](const rt::DeviceBuffer &meta, int64_t rows, int64_t cols,
                  const char *what) {
    auto m = meta.toHost<int16_t>();
    EXPECT_EQ(int64_t(m.size()), compressedMeta(rows, cols)) << what;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = cols / 16; j < metaCols(cols); ++j)
        if (m[metaIndex(r, j, rows, cols)] != kMetaPadWord && bad++ < 8)
          ADD_FAILURE() << what << " padding word " << j << " of row " << r
                        << " = " << m[metaIndex(r, j, rows, cols)];
  };
  pads(c.meta, R, C, "meta");
  pads(c.metaT, C, R, "metaT");
  for (int64_t r = 0; r < R; ++r)
    for (int64_t col = 0; col < C; ++col) {
      bool kept = mask[r * sm + col] != 0;
      for (auto [arr, i] : {std::pair{&d, r * C + col}, std::pair{&dT, col * R + r}}) {
        bool ok = kept ? arr->sameBits(i, w, r * sw + col) : arr->isPositiveZero(i);
        if (!ok && bad++ < 8)
          ADD_FAILURE() << (arr == &d ? "W" : "W^T") << " entry (" << r << ", "
                        << col << "), kept " << kept << ": decompressed "
                        << arr->get(i) << ", W " << w.get(r * sw + col);
      }
    }
  EXPECT_EQ(bad, 0);
}

struct SparseCase {
  DType t;
  int64_t M, R, C;
};
std::string sparseName(const ::testing::TestParamInfo<SparseCase> &i) {
  const SparseCase &c = i.param;
  return std::string(tname(c.t)) + "_M" + std::to_string(c.M) + "_R" +
         std::to_string(c.R) + "_C" + std::to_string(c.C);
}

class Sparse24Gemm : public GpuParamTest<SparseCase> {};

// W gets its transposable mask on the GPU, is compressed (both directions,
// round trip checked), then Y = X W^T and dX = dY W run on sparse tensor
// cores and are compared with f64 products on the pruned W (host). M and the
// output widths are ragged with respect to the 128 x 128 tiles; outputs have
// padded rows and are poisoned first, and the padding must stay untouched.
TEST_P(Sparse24Gemm, CompressRoundTripAndGemmsMatchDenseOnPrunedWeight) {
  const SparseCase &c = GetParam();
  std::mt19937_64 rng(testSeed() ^ uint64_t(c.M * 1009 + c.R * 31 + c.C));
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t sw = c.C + 8;
  int64_t pad = 8; // Output rows are N + pad elements apart.
  HostArray w(c.t, c.R * sw);
  for (size_t i = 0; i < w.size(); ++i)
    w.set(i, normal(rng));
  auto wBuf = upload(w);
  rt::DeviceBuffer mBuf(c.R * c.C);
  mask24Transposable(c.t, c.R, c.C, wBuf.ptr(), sw, mBuf.ptr(), c.C, 0, 0);
  rt::Device::get().synchronize();
  auto mask = mBuf.toHost<int8_t>();
  Compressed z = compress(c.t, c.R, c.C, wBuf, sw, mBuf, c.C);
  expectRoundTrip(z, c.t, c.R, c.C, w, sw, mask, c.C);

  // pruned[r][k] = W * mask, as the f64 reference sees it.
  std::vector<double> pruned(c.R * c.C);
  for (int64_t r = 0; r < c.R; ++r)
    for (int64_t k = 0; k < c.C; ++k)
      pruned[r * c.C + k] = mask[r * c.C + k] ? double(w.get(r * sw + k)) : 0.0;

  // out [M, N] (row stride N + pad) against ref(m, n) = sum_k a(m, k) b(k, n)
  // in f64. Tolerance: rounding the f32 sum to T (half an ulp; 2^-8 / 2^-11
  // relative, doubled) plus f32 accumulation, bounded by 2^-16 * sum |a b|.
  double rel = c.t == DType::BF16 ? 0x1p-8 : 0x1p-10;
  auto check = [&](const char *what, const rt::DeviceBuffer &outBuf, int64_t N,
                   int64_t K, auto a, auto b) {
    HostArray out = download(outBuf, c.t);
    int64_t bad = 0;
    double worst = 0;
    for (int64_t m = 0; m < c.M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          double p = a(m, k) * b(k, n);
          ref += p, mag += std::fabs(p);
        }
        double got = out.get(m * (N + pad) + n);
        double err = std::fabs(got - ref), tol = rel * std::fabs(ref) + 0x1p-16 * mag;
        worst = std::max(worst, err / (tol > 0 ? tol : 1));
        if (!(err <= tol) && bad++ < 8)
          ADD_FAILURE() << what << "[" << m << ", " << n << "] = " << got
                        << ", reference " << ref << " (tolerance " << tol << ")";
      }
      for (int64_t n = N; n < N + pad; ++n) {
        size_t i = 2 * size_t(m * (N + pad) + n);
        if ((out.bytes[i] != 0xff || out.bytes[i + 1] != 0xff) && bad++ < 8)
          ADD_FAILURE() << what << " padding written at row " << m;
      }
    }
    EXPECT_EQ(bad, 0) << what << ": worst error / tolerance " << worst;
  };

  // out [M, N] = in [M, K] . B for a fresh random `in` (b(k, n) reads B),
  // into a poisoned output.
  auto runAndCheck = [&](const char *what, int64_t N, int64_t K, auto b,
                         auto launch) {
    HostArray in(c.t, c.M * K);
    for (size_t i = 0; i < in.size(); ++i)
      in.set(i, normal(rng));
    auto inBuf = upload(in);
    rt::DeviceBuffer outBuf(c.M * (N + pad) * 2);
    outBuf.fill(0xff);
    launch(inBuf.ptr(), outBuf.ptr());
    rt::Device::get().synchronize();
    check(what, outBuf, N, K,
          [&](int64_t m, int64_t k) { return double(in.get(m * K + k)); }, b);
  };
  // Y [M, R] = X [M, C] W^T.
  runAndCheck(
      "Y", c.R, c.C, [&](int64_t k, int64_t n) { return pruned[n * c.C + k]; },
      [&](rt::DevicePtr x, rt::DevicePtr y) {
        sparse24LinearForward(c.t, c.M, c.R, c.C, z.vals.ptr(), z.meta.ptr(),
                              x, c.C, y, c.R + pad);
      });
  // Other tilings of the same kernel: small tiles on fewer warps without
  // prefetching, and wider ones with it.
  // On an sm_90 GPU the 8-warp tilings run the TMA + sparse wgmma kernel
  // where I and K allow it (tma = -1); tma = 0 keeps mma.sp.
  for (SparseLinearTiles t :
       {SparseLinearTiles{64, 32, 4, false},
        SparseLinearTiles{256, 64, 8, true},
        SparseLinearTiles{128, 128, 8, true},
        SparseLinearTiles{128, 256, 8, true},
        SparseLinearTiles{256, 128, 8, true, 0},
        // The TMA kernel without its producer warp-
        // group, and with the persistent tile loop.
        SparseLinearTiles{128, 128, 8, true, -1, 0, 0, 0},
        SparseLinearTiles{128, 128, 8, true, -1, 0, 1, 1},
        // Persistent, the transposed store staged
        // warp by warp (two and one m64 blocks per
        // warpgroup).
        SparseLinearTiles{256, 128, 8, true, -1, 0, 1, 1},
        SparseLinearTiles{256, 128, 8, true, -1, 0, 1, 0},
        SparseLinearTiles{128, 256, 8, true, -1, 0, 1, 1},
        // Clusters of two programs along I sharing
        // (multicasting) X's block; with an odd tile
        // count along I the last pair's second tile
        // lies past I.
        SparseLinearTiles{128, 128, 8, true, -1, 0, 1, 0, 2},
        SparseLinearTiles{256, 128, 8, true, -1, 0, 1, 0, 2},
        // K steps of 64 (64-byte swizzled values,
        // metadata in widened boxes), deeper rings,
        // persistent, and in clusters.
        SparseLinearTiles{256, 128, 8, true, -1, 6, 1, 0, -1, 64},
        SparseLinearTiles{128, 256, 8, true, -1, 0, 1, 0, -1, 64},
        SparseLinearTiles{128, 128, 8, true, -1, 0, 1, 1, -1, 64},
        SparseLinearTiles{128, 128, 8, true, -1, 0, 0, 0, -1, 64},
        SparseLinearTiles{256, 128, 8, true, -1, 0, 1, 0, 2, 64},
        // Ping-pong consumers: one warpgroup's tile
        // each, alternate tiles (the persistent loop
        // by default), also at K steps of 64.
        SparseLinearTiles{128, 128, 4, true, -1, 0, -1, -1, -1, 0, 1},
        SparseLinearTiles{64, 256, 4, true, -1, 0, -1, -1, -1, 0, 1},
        SparseLinearTiles{128, 64, 4, true, -1, 0, -1, 1, -1, 64, 1}}) {
    std::string tiling =
        std::to_string(t.tileI) + "x" + std::to_string(t.tileM) + " warps " +
        std::to_string(t.warps) + " stages " + std::to_string(t.stages) +
        " ws " + std::to_string(t.warpSpecialize) + " persistent " +
        std::to_string(t.persistent) + " cluster " + std::to_string(t.cluster) +
        " tileK " + std::to_string(t.tileK) + " pingpong " +
        std::to_string(t.pingpong);
    SCOPED_TRACE(tiling);
    // The default tilings, one program per tile and persistent, also with
    // an odd output stride (R + 1): the TMA kernel's transposed store cannot
    // use 16-byte vectors there and stores single elements from its
    // per-warp staging area.
    bool odd = t.tileI == 256 && t.tileM == 128 && t.tma < 0 && t.cluster < 0 &&
               t.tileK == 0;
    for (int64_t outPad :
         odd ? std::vector<int64_t>{8, 1} : std::vector<int64_t>{8}) {
      pad = outPad;
      try {
        runAndCheck(
            "Y (other tiling)", c.R, c.C,
            [&](int64_t k, int64_t n) { return pruned[n * c.C + k]; },
            [&](rt::DevicePtr x, rt::DevicePtr y) {
              sparseLinear(c.t, c.M, c.R, c.C, z.vals.ptr(), z.meta.ptr(), x,
                           c.C, y, c.R + pad, nullptr, t);
            });
      } catch (const rt::Error &e) {
        // A device fault leaves the context unusable: name the tiling that
        // caused it before the error ends the test.
        FAIL() << "tiling " << tiling << ", output stride R + " << pad << ": "
               << e.what();
      }
    }
    pad = 8;
  }
  // dX [M, C] = dY [M, R] W.
  runAndCheck(
      "dX", c.C, c.R, [&](int64_t k, int64_t n) { return pruned[k * c.C + n]; },
      [&](rt::DevicePtr dy, rt::DevicePtr dx) {
        sparse24LinearBackwardX(c.t, c.M, c.R, c.C, z.valsT.ptr(),
                                z.metaT.ptr(), dy, c.R, dx, c.C + pad);
      });
}

std::vector<SparseCase> sparseCases() {
  return {{DType::BF16, 77, 192, 320}, {DType::F16, 77, 192, 320},
          {DType::BF16, 256, 256, 128}, {DType::F16, 5, 64, 64},
          {DType::BF16, 130, 384, 192},
          // R and C multiples of 128: both GEMMs can take the TMA kernel.
          {DType::BF16, 300, 384, 512}, {DType::F16, 200, 256, 384},
          // K a multiple of 128 but I ragged against the TMA kernel's tiles
          // (the boxes past I read as zeros): the forward GEMM takes it.
          {DType::BF16, 333, 320, 384}, {DType::F16, 96, 448, 128},
          // K % 128 == 64 (GPT-2 XL's d = 1600; 192 and 320 above too): the
          // TMA kernels' last K step reads the metadata's padding words and
          // zeros past K. Y reduces over C, dX over R.
          {DType::BF16, 130, 192, 1600}, {DType::F16, 77, 1600, 320}};
}
INSTANTIATE_TEST_SUITE_P(Sparse24, Sparse24Gemm, ::testing::ValuesIn(sparseCases()),
                         sparseName);

// The fused epilogues of the 2:4 layer GEMMs (sparse24.tile's
// linear_epilogue) against f64 on the host:
//   forward: H = X W^T + b (stored to h), Y = gelu_tanh(H);
//   backward: dX = (dY W) * gelu_tanh'(H) for a given H.
// Both GEMMs take the TMA kernel on sm_90, K a multiple of 128 or, with the
// metadata's last block padded, of 64 only (K = 192, 320, 448, 1600); outputs
// have padded rows (poisoned; the padding must stay untouched) and M is
// ragged.
double geluTanhRef(double h) {
  return 0.5 * h *
         (1 + std::tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)));
}
double geluTanhGradRef(double h) {
  double t = std::tanh(0.7978845608028654 * (h + 0.044715 * h * h * h));
  return 0.5 * (1 + t) +
         0.5 * h * (1 - t * t) * 0.7978845608028654 * (1 + 0.134145 * h * h);
}

class Sparse24Epilogue : public GpuParamTest<SparseCase> {};

TEST_P(Sparse24Epilogue, BiasGeluForwardAndGeluGradMatchFloat64) {
  const SparseCase &c = GetParam();
  std::mt19937_64 rng(testSeed() ^ uint64_t(c.M * 7919 + c.R * 13 + c.C));
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t pad = 8;
  HostArray w(c.t, c.R * c.C), x(c.t, c.M * c.C), bias(c.t, c.R),
      dy(c.t, c.M * c.R), hIn(c.t, c.M * c.C);
  for (HostArray *a : {&w, &x, &bias, &dy, &hIn})
    for (size_t i = 0; i < a->size(); ++i)
      a->set(i, normal(rng));
  auto wBuf = upload(w), xBuf = upload(x), bBuf = upload(bias),
       dyBuf = upload(dy), hInBuf = upload(hIn);
  rt::DeviceBuffer mBuf(c.R * c.C);
  mask24Transposable(c.t, c.R, c.C, wBuf.ptr(), c.C, mBuf.ptr(), c.C, 0, 0);
  rt::Device::get().synchronize();
  auto mask = mBuf.toHost<int8_t>();
  Compressed z = compress(c.t, c.R, c.C, wBuf, c.C, mBuf, c.C);
  auto pruned = [&](int64_t r, int64_t k) {
    return mask[r * c.C + k] ? double(w.get(r * c.C + k)) : 0.0;
  };
  double rel = c.t == DType::BF16 ? 0x1p-8 : 0x1p-10;

  // Forward, with and without the bias.
  for (bool withBias : {true, false}) {
    SCOPED_TRACE(withBias ? "bias" : "no bias");
    rt::DeviceBuffer yBuf(c.M * (c.R + pad) * 2), hBuf(c.M * (c.R + pad) * 2);
    yBuf.fill(0xff);
    hBuf.fill(0xff);
    sparse24LinearForwardAct(c.t, c.M, c.R, c.C, z.vals.ptr(), z.meta.ptr(),
                             xBuf.ptr(), c.C, withBias ? bBuf.ptr() : 0,
                             LinearActivation::GeluTanh, hBuf.ptr(), yBuf.ptr(),
                             c.R + pad);
    rt::Device::get().synchronize();
    HostArray y = download(yBuf, c.t), h = download(hBuf, c.t);
    int64_t bad = 0;
    for (int64_t m = 0; m < c.M; ++m) {
      for (int64_t r = 0; r < c.R; ++r) {
        double ref = withBias ? double(bias.get(r)) : 0.0, mag = std::fabs(ref);
        for (int64_t k = 0; k < c.C; ++k) {
          double p = double(x.get(m * c.C + k)) * pruned(r, k);
          ref += p, mag += std::fabs(p);
        }
        size_t i = size_t(m * (c.R + pad) + r);
        double gotH = h.get(i), gotY = y.get(i);
        double tolH = rel * std::fabs(ref) + 0x1p-16 * mag;
        if (!(std::fabs(gotH - ref) <= tolH) && bad++ < 8)
          ADD_FAILURE() << "h[" << m << ", " << r << "] = " << gotH
                        << ", reference " << ref << " (tolerance " << tolH
                        << ")";
        // Y is gelu_tanh of the stored (rounded) h, in f32, rounded.
        double refY = geluTanhRef(gotH);
        double tolY = rel * std::fabs(refY) + 1e-5 * (1 + std::fabs(gotH));
        if (!(std::fabs(gotY - refY) <= tolY) && bad++ < 8)
          ADD_FAILURE() << "y[" << m << ", " << r << "] = " << gotY
                        << ", gelu_tanh(h = " << gotH << ") = " << refY;
      }
      for (int64_t r = c.R; r < c.R + pad; ++r) {
        size_t i = 2 * size_t(m * (c.R + pad) + r);
        for (const HostArray *a : {&y, &h})
          if ((a->bytes[i] != 0xff || a->bytes[i + 1] != 0xff) && bad++ < 8)
            ADD_FAILURE() << "padding written at row " << m;
      }
    }
    EXPECT_EQ(bad, 0);
  }

  // Without an activation the epilogue only adds the bias, and h is unused.
  {
    rt::DeviceBuffer yBuf(c.M * c.R * 2);
    sparse24LinearForwardAct(c.t, c.M, c.R, c.C, z.vals.ptr(), z.meta.ptr(),
                             xBuf.ptr(), c.C, bBuf.ptr(),
                             LinearActivation::None, 0, yBuf.ptr(), c.R);
    rt::Device::get().synchronize();
    HostArray y = download(yBuf, c.t);
    int64_t bad = 0;
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t r = 0; r < c.R; ++r) {
        double ref = bias.get(r), mag = std::fabs(ref);
        for (int64_t k = 0; k < c.C; ++k) {
          double p = double(x.get(m * c.C + k)) * pruned(r, k);
          ref += p, mag += std::fabs(p);
        }
        double got = y.get(size_t(m * c.R + r));
        double tol = rel * std::fabs(ref) + 0x1p-16 * mag;
        if (!(std::fabs(got - ref) <= tol) && bad++ < 8)
          ADD_FAILURE() << "y + bias [" << m << ", " << r << "] = " << got
                        << ", reference " << ref;
      }
    EXPECT_EQ(bad, 0);
  }

  // Backward: dX [M, C] = (dY [M, R] W) * gelu_tanh'(H), H [M, C] with the
  // output's row stride.
  {
    HostArray hPadded(c.t, c.M * (c.C + pad));
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t k = 0; k < c.C + pad; ++k)
        hPadded.set(size_t(m * (c.C + pad) + k),
                    k < c.C ? hIn.get(m * c.C + k) : 0.f);
    auto hpBuf = upload(hPadded);
    rt::DeviceBuffer dxBuf(c.M * (c.C + pad) * 2);
    dxBuf.fill(0xff);
    sparse24LinearBackwardXAct(c.t, c.M, c.R, c.C, z.valsT.ptr(), z.metaT.ptr(),
                               dyBuf.ptr(), c.R, LinearActivation::GeluTanh,
                               hpBuf.ptr(), dxBuf.ptr(), c.C + pad);
    rt::Device::get().synchronize();
    HostArray dx = download(dxBuf, c.t);
    int64_t bad = 0;
    for (int64_t m = 0; m < c.M; ++m) {
      for (int64_t k = 0; k < c.C; ++k) {
        double dg = 0, mag = 0;
        for (int64_t r = 0; r < c.R; ++r) {
          double p = double(dy.get(m * c.R + r)) * pruned(r, k);
          dg += p, mag += std::fabs(p);
        }
        double gp = geluTanhGradRef(hIn.get(m * c.C + k));
        double ref = dg * gp;
        double got = dx.get(size_t(m * (c.C + pad) + k));
        double tol =
            rel * std::fabs(ref) + 0x1p-16 * mag * 1.2 + 1e-5 * std::fabs(dg);
        if (!(std::fabs(got - ref) <= tol) && bad++ < 8)
          ADD_FAILURE() << "dX[" << m << ", " << k << "] = " << got
                        << ", reference " << ref << " (dG " << dg << ", gelu' "
                        << gp << ")";
      }
      for (int64_t k = c.C; k < c.C + pad; ++k) {
        size_t i = 2 * size_t(m * (c.C + pad) + k);
        if ((dx.bytes[i] != 0xff || dx.bytes[i + 1] != 0xff) && bad++ < 8)
          ADD_FAILURE() << "dX padding written at row " << m;
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Sparse24, Sparse24Epilogue,
    ::testing::ValuesIn(std::vector<SparseCase>{
        // Both GEMMs on the TMA kernel (sm_90).
        {DType::BF16, 300, 384, 512},
        {DType::F16, 200, 256, 384},
        // K % 128 == 64 (the forward's K = 192; 320 and 192; 1600): before
        // the metadata's last block was padded these fell back to mma.sp.
        {DType::BF16, 130, 384, 192},
        {DType::F16, 77, 192, 320},
        {DType::BF16, 96, 1600, 448}}),
    sparseName);

// sparse_dot on its own, with b loaded as [K, N] (staged for
// ldmatrix.trans, unlike sparse_linear's trans(X tile)) and an operand
// compressed on the host straight from the format's definition: every group
// keeps a random one of the six index pairs, so the test checks the metadata
// layout independently of compress24. out = A B in f32 vs f64.
TEST_F(GpuTest, SparseDotMatchesFloat64OnHostCompressedOperand) {
  static const char *kText = R"(
kernel sd(vals: *T, meta: *i16, b: *T, out: *f32, const T: dtype = bf16) {
  let r = arange(0, 64);
  let a = load(vals + r[:, None] * 32 + arange(0, 32)[None, :]);
  let m = load(meta + r[:, None] * 4 + arange(0, 4)[None, :]);
  let bb = load(b + r[:, None] * 64 + arange(0, 64)[None, :]);
  store(out + r[:, None] * 64 + arange(0, 64)[None, :], sparse_dot(a, m, bb));
}
)";
  const int64_t M = 64, K = 64, N = 64;
  for (DType t : {DType::BF16, DType::F16}) {
    std::mt19937_64 rng(testSeed() ^ 0x5d07 ^ uint64_t(t));
    std::normal_distribution<float> normal(0.f, 1.f);
    std::uniform_int_distribution<int> pair(0, 5);
    HostArray vals(t, M * K / 2), b(t, K * N);
    std::vector<int16_t> meta(M * K / 16, 0);
    std::vector<double> a(M * K, 0.0);
    for (int64_t r = 0; r < M; ++r)
      for (int64_t g = 0; g < K / 4; ++g) {
        const int *p = kPairs[pair(rng)];
        for (int e = 0; e < 2; ++e) {
          int64_t v = r * (K / 2) + 2 * g + e;
          vals.set(v, normal(rng));
          a[r * K + 4 * g + p[e]] = vals.get(v);
        }
        meta[r * (K / 16) + g / 4] |= int16_t((p[0] | p[1] << 2) << (4 * (g % 4)));
      }
    for (size_t i = 0; i < b.size(); ++i)
      b.set(i, normal(rng));
    auto vBuf = upload(vals), bBuf = upload(b);
    auto mBuf = rt::DeviceBuffer::fromHost(meta);
    rt::DeviceBuffer oBuf(M * N * 4);
    oBuf.fill(0xff);
    rt::Kernel &k = rt::JIT::global().get(rt::KernelSource::fromText(kText, "sd.tile"),
                                          "sd", {{"T", tname(t)}});
    k.launch(rt::Dim3(1), {rt::Arg::ptr(vBuf.ptr(), t), rt::Arg::ptr(mBuf.ptr(), DType::I16),
                           rt::Arg::ptr(bBuf.ptr(), t), rt::Arg::ptr(oBuf.ptr(), DType::F32)});
    rt::Device::get().synchronize();
    auto out = oBuf.toHost<float>();
    int64_t bad = 0;
    for (int64_t r = 0; r < M; ++r)
      for (int64_t n = 0; n < N; ++n) {
        double ref = 0, mag = 0;
        for (int64_t kk = 0; kk < K; ++kk) {
          double p = a[r * K + kk] * double(b.get(kk * N + n));
          ref += p, mag += std::fabs(p);
        }
        double err = std::fabs(out[r * N + n] - ref);
        if (!(err <= 0x1p-16 * mag) && bad++ < 8)
          ADD_FAILURE() << tname(t) << " out[" << r << ", " << n << "] = "
                        << out[r * N + n] << ", reference " << ref;
      }
    EXPECT_EQ(bad, 0) << tname(t);
  }
}

// Masks that are not 2:4 everywhere: groups with 0, 1 or 2 kept entries get
// the documented padding indices (distinct, increasing, value 0), so the
// round trip still gives W * mask; C is not a multiple of the 128-column
// program width.
TEST_F(GpuTest, CompressPadsGroupsWithFewerThanTwoKept) {
  for (DType t : {DType::BF16, DType::F16}) {
    const int64_t R = 32, C = 144, sw = 160, sm = 176;
    std::mt19937_64 rng(testSeed() ^ 0xc0ffee ^ uint64_t(t));
    std::normal_distribution<float> normal(0.f, 1.f);
    HostArray w(t, R * sw);
    for (size_t i = 0; i < w.size(); ++i)
      w.set(i, normal(rng));
    // Each group of 4 along a row keeps a random subset of size 0..2 (every
    // pattern of up to two entries, including the single kept at index 3).
    std::vector<int8_t> mask(R * sm, 0);
    std::uniform_int_distribution<int> pick(0, 10);
    const int subsets[11] = {0x0, 0x1, 0x2, 0x4, 0x8, 0x3, 0x5, 0x9, 0x6, 0xa, 0xc};
    for (int64_t r = 0; r < R; ++r)
      for (int64_t g = 0; g < C / 4; ++g) {
        int bits = subsets[pick(rng)];
        for (int j = 0; j < 4; ++j)
          mask[r * sm + 4 * g + j] = int8_t((bits >> j) & 1);
      }
    // W^T's groups (4 rows of a column) may have more than two kept: drop
    // the extras so they have at most two as well.
    for (int64_t col = 0; col < C; ++col)
      for (int64_t g = 0; g < R / 4; ++g) {
        int kept = 0;
        for (int i = 0; i < 4; ++i) {
          int8_t &m = mask[(4 * g + i) * sm + col];
          if (m && ++kept > 2)
            m = 0;
        }
      }
    auto wBuf = upload(w);
    auto mBuf = rt::DeviceBuffer::fromHost(mask);
    Compressed z = compress(t, R, C, wBuf, sw, mBuf, sm);
    expectRoundTrip(z, t, R, C, w, sw, mask, sm);
  }
}

// Every way of reading W^T's units (CompressPass1) gives compress24's and
// mask24Update's outputs bit for bit, padding included: R and C ragged
// against the 64 x 64 blocks (a block's columns past C masked off in the
// transposed loads), padded strides, masks with 0-2 kept per group.
TEST_F(GpuTest, CompressPass1FormsAgreeBitForBit) {
  std::mt19937_64 rng(testSeed() + 29);
  struct Case {
    DType t;
    int64_t R, C;
  };
  const CompressPass1 forms[] = {CompressPass1::Columns, CompressPass1::Pairs,
                                 CompressPass1::Transposed,
                                 CompressPass1::Once};
  for (Case c : {Case{DType::BF16, 192, 320}, Case{DType::F16, 80, 48},
                 Case{DType::BF16, 16, 144}, Case{DType::F16, 128, 64}}) {
    const int64_t sw = c.C + 8, sm = c.C + 16;
    std::string what = std::string(tname(c.t)) + " " + std::to_string(c.R) +
                       " x " + std::to_string(c.C);
    MaskCase mc{c.t, c.R, c.C, 8, false};
    HostArray w = randomMatrix(mc, sw, rng);
    auto wBuf = upload(w);
    // A transposable mask, then W * mask round-trips through every form.
    rt::DeviceBuffer mask = transposableMask(c.t, c.R, c.C, wBuf, sw, sm);
    auto bytes = [](const rt::DeviceBuffer &b) { return b.toHost<uint8_t>(); };
    std::vector<int8_t> hostMask(size_t(c.R * sm));
    {
      auto m = bytes(mask);
      std::memcpy(hostMask.data(), m.data(), hostMask.size());
    }
    Compressed ref = compress(c.t, c.R, c.C, wBuf, sw, mask, sm,
                              CompressPass1::Columns);
    expectRoundTrip(ref, c.t, c.R, c.C, w, sw, hostMask, sm);
    for (CompressPass1 p : forms) {
      std::string form = what + ", pass 1 form " + std::to_string(int(p));
      Compressed z = compress(c.t, c.R, c.C, wBuf, sw, mask, sm, p);
      expectSameOperands(z, ref, form + ": ");
      // The fused update recomputes the same mask and compresses its W * mask.
      rt::DeviceBuffer mask2(c.R * sm), out(c.R * sw * 2);
      mask2.fill(0);
      Compressed f = poisonedOperands(c.R, c.C);
      mask24Update(c.t, c.R, c.C, wBuf.ptr(), sw, mask2.ptr(), sm, out.ptr(),
                   sw, f.vals.ptr(), f.meta.ptr(), f.valsT.ptr(),
                   f.metaT.ptr(), nullptr, p);
      rt::Device::get().synchronize();
      EXPECT_EQ(bytes(mask2), bytes(mask)) << form << ": update's mask";
      expectSameOperands(f, ref, form + ": update's ");
    }
  }
}

// compress24's one-read form over rectangular blocks (BLKC != BLK: a line's
// metadata words leave in one wider store, bench/NOTES.md; 64 x 128 at 8
// warps is the library's) gives the bits of the square 64 x 64 block at 4
// warps: every output, padding included (all poisoned alike), and so does
// mask24_update over the 8-warp shapes (its mask against
// mask24Transposable's). Ragged R and C against the blocks, padded strides.
TEST_F(GpuTest, CompressRectangularBlocksMatchSquare) {
  std::mt19937_64 rng(testSeed() + 31);
  auto kernels = rt::KernelSource::fromFile(
      sparsetile::testing::examplesDir() + "/sparse24.tile");
  struct Block {
    int blk, blkc, warps;
  };
  struct Case {
    DType t;
    int64_t R, C;
  };
  // A block kernel of sparse24.tile compiled for block `b`, and the grid
  // that covers an R x C matrix with its blocks (BLKC 0: square).
  auto blockKernel = [&](const char *name, DType t, Block b) -> rt::Kernel & {
    rt::JITOptions o;
    o.numWarps = b.warps;
    return rt::JIT::global().get(kernels, name,
                                 {{"T", tname(t)},
                                  {"TI", "i16"},
                                  {"BLK", std::to_string(b.blk)},
                                  {"BLKC", std::to_string(b.blkc)}},
                                 o);
  };
  auto blockGrid = [](int64_t R, int64_t C, Block b) {
    int64_t cols = b.blkc ? b.blkc : b.blk;
    return rt::Dim3(
        unsigned(((R + b.blk - 1) / b.blk) * ((C + cols - 1) / cols)));
  };
  // The padding words of meta's and metaT's last blocks (every case here
  // has C or R % 128 != 0), which the library launches meta_pad24 for after
  // the block kernel: the kernels launched alone leave them poisoned.
  auto padMeta = [&](Compressed &z, int64_t R, int64_t C) {
    rt::Kernel &k =
        rt::JIT::global().get(kernels, "meta_pad24", {{"BR", "512"}});
    for (auto [meta, rows, cols] :
         {std::tuple{&z.meta, R, C}, std::tuple{&z.metaT, C, R}})
      if (cols % 128)
        k.launch(rt::Dim3(unsigned((rows + 511) / 512)),
                 {rt::Arg::ptr(meta->ptr(), DType::I16),
                  rt::Arg::i32(int32_t(rows)), rt::Arg::i32(int32_t(cols))});
  };
  for (Case c : {Case{DType::BF16, 192, 320}, Case{DType::F16, 80, 400},
                 Case{DType::BF16, 272, 144}})
    for (Block b : {Block{64, 128, 8}, Block{128, 64, 8}, Block{128, 128, 16}}) {
      const int64_t sw = c.C + 8, sm = c.C + 16;
      std::string what = std::string(tname(c.t)) + " " + std::to_string(c.R) +
                         " x " + std::to_string(c.C) + ", block " +
                         std::to_string(b.blk) + " x " + std::to_string(b.blkc);
      MaskCase mc{c.t, c.R, c.C, 8, false};
      HostArray w = randomMatrix(mc, sw, rng);
      auto wBuf = upload(w);
      rt::DeviceBuffer mask = transposableMask(c.t, c.R, c.C, wBuf, sw, sm);
      // compress24 over `blk` x `blkc` blocks (0: square) into poisoned
      // operands.
      auto compressOver = [&](Block blk) {
        Compressed z = poisonedOperands(c.R, c.C);
        blockKernel("compress24", c.t, blk)
            .launch(blockGrid(c.R, c.C, blk),
                    {rt::Arg::ptr(wBuf.ptr(), c.t),
                     rt::Arg::ptr(mask.ptr(), DType::I8),
                     rt::Arg::ptr(z.vals.ptr(), c.t),
                     rt::Arg::ptr(z.meta.ptr(), DType::I16),
                     rt::Arg::ptr(z.valsT.ptr(), c.t),
                     rt::Arg::ptr(z.metaT.ptr(), DType::I16),
                     rt::Arg::i32(int32_t(c.R)), rt::Arg::i32(int32_t(c.C)),
                     rt::Arg::i32(int32_t(sw)), rt::Arg::i32(int32_t(sm))});
        padMeta(z, c.R, c.C);
        rt::Device::get().synchronize();
        return z;
      };
      Compressed ref = compressOver(Block{64, 0, 4});
      Compressed z = compressOver(b);
      expectSameOperands(z, ref, what + ": ");
      // The library's (the 64 x 128 block) gives the same bits.
      expectSameOperands(compress(c.t, c.R, c.C, wBuf, sw, mask, sm), ref,
                         what + ": library's ");
      if (b.warps != 8)
        continue;
      // The fused mask update over the same block: the library's mask and
      // W * mask, then the same compressed operands.
      rt::DeviceBuffer mask2(c.R * sm), out(c.R * sw * 2);
      mask2.fill(0);
      out.fill(0xff);
      poison(z);
      blockKernel("mask24_update", c.t, b)
          .launch(blockGrid(c.R, c.C, b),
                  {rt::Arg::ptr(wBuf.ptr(), c.t),
                   rt::Arg::ptr(mask2.ptr(), DType::I8),
                   rt::Arg::ptr(out.ptr(), c.t),
                   rt::Arg::ptr(z.vals.ptr(), c.t),
                   rt::Arg::ptr(z.meta.ptr(), DType::I16),
                   rt::Arg::ptr(z.valsT.ptr(), c.t),
                   rt::Arg::ptr(z.metaT.ptr(), DType::I16),
                   rt::Arg::i32(int32_t(c.R)), rt::Arg::i32(int32_t(c.C)),
                   rt::Arg::i32(int32_t(sw)), rt::Arg::i32(int32_t(sm)),
                   rt::Arg::i32(int32_t(sw))});
      padMeta(z, c.R, c.C);
      rt::Device::get().synchronize();
      EXPECT_EQ(mask2.toHost<uint8_t>(), mask.toHost<uint8_t>())
          << what << ": update's mask";
      expectSameOperands(z, ref, what + ": update's ");
    }
}

// Bad arguments are errors, never launches: these need no GPU.
// --- The fused mask update ------------------------------------------------
// mask24Update against mask24Transposable + compress24, bit for bit, every
// output and its padding (all poisoned alike first). Random weights and
// weights full of ties (the tie rule must be the same), R and C ragged
// against the fused kernel's 64 x 128 blocks, padded row strides.
TEST_F(GpuTest, MaskUpdateEqualsSeparateKernelsBitForBit) {
  std::mt19937_64 rng(testSeed() + 13);
  struct Case {
    DType t;
    int64_t R, C;
    bool ties;
  };
  for (Case c : {Case{DType::BF16, 192, 320, false}, Case{DType::F16, 80, 48, false},
                 Case{DType::BF16, 128, 144, true}, Case{DType::F16, 16, 16, true}}) {
    MaskCase mc{c.t, c.R, c.C, 8, c.ties};
    const int64_t sw = c.C + 8, sm = c.C + 16, so = c.C + 24;
    HostArray w = randomMatrix(mc, sw, rng);
    auto wBuf = upload(w);
    auto poisoned = [](size_t bytes) {
      rt::DeviceBuffer b(bytes);
      b.fill(0xff);
      return b;
    };
    // Separate kernels.
    rt::DeviceBuffer mask1 = poisoned(c.R * sm), out1 = poisoned(c.R * so * 2);
    mask24Transposable(c.t, c.R, c.C, wBuf.ptr(), sw, mask1.ptr(), sm,
                       out1.ptr(), so);
    rt::Device::get().synchronize();
    Compressed z = compress(c.t, c.R, c.C, wBuf, sw, mask1, sm);
    // The fused step.
    rt::DeviceBuffer mask2 = poisoned(c.R * sm), out2 = poisoned(c.R * so * 2);
    Compressed f = poisonedOperands(c.R, c.C);
    mask24Update(c.t, c.R, c.C, wBuf.ptr(), sw, mask2.ptr(), sm, out2.ptr(),
                 so, f.vals.ptr(), f.meta.ptr(), f.valsT.ptr(), f.metaT.ptr());
    rt::Device::get().synchronize();
    std::string what = std::string(tname(c.t)) + " " + std::to_string(c.R) +
                       " x " + std::to_string(c.C) + (c.ties ? " ties" : "");
    auto same = [&](const char *name, const rt::DeviceBuffer &a,
                    const rt::DeviceBuffer &b) {
      auto x = a.toHost<uint8_t>(), y = b.toHost<uint8_t>();
      size_t first = 0;
      while (first < x.size() && x[first] == y[first])
        ++first;
      EXPECT_EQ(first, x.size()) << what << ": " << name
                                 << " differs first at byte " << first;
    };
    same("mask", mask1, mask2);
    same("W * mask", out1, out2);
    same("vals", z.vals, f.vals);
    same("meta", z.meta, f.meta);
    same("valsT", z.valsT, f.valsT);
    same("metaT", z.metaT, f.metaT);
    // In place (out = w, same stride): W pruned where it lies, the same
    // bits in every output; W's row padding untouched.
    auto wIn = upload(w);
    rt::DeviceBuffer mask3 = poisoned(c.R * sm);
    Compressed g = poisonedOperands(c.R, c.C);
    mask24Update(c.t, c.R, c.C, wIn.ptr(), sw, mask3.ptr(), sm, wIn.ptr(), sw,
                 g.vals.ptr(), g.meta.ptr(), g.valsT.ptr(), g.metaT.ptr());
    rt::Device::get().synchronize();
    same("mask (in place)", mask1, mask3);
    same("vals (in place)", z.vals, g.vals);
    same("meta (in place)", z.meta, g.meta);
    same("valsT (in place)", z.valsT, g.valsT);
    same("metaT (in place)", z.metaT, g.metaT);
    {
      auto pruned = out1.toHost<uint8_t>(), inPlace = wIn.toHost<uint8_t>(),
           orig = wBuf.toHost<uint8_t>();
      int64_t bad = 0;
      for (int64_t r = 0; r < c.R; ++r)
        for (int64_t k = 0; k < 2 * sw; ++k) {
          uint8_t want = k < 2 * c.C ? pruned[r * so * 2 + k] : orig[r * sw * 2 + k];
          bad += inPlace[r * sw * 2 + k] != want;
        }
      EXPECT_EQ(bad, 0) << what << ": bytes of W pruned in place that differ";
    }
    // And the mask is a real one (not both kernels writing nothing).
    auto m = mask1.toHost<int8_t>();
    int64_t kept = 0;
    for (int64_t r = 0; r < c.R; ++r)
      for (int64_t k = 0; k < c.C; ++k)
        kept += m[r * sm + k] == 1;
    EXPECT_EQ(kept, c.R * c.C / 2) << what;
  }
}

// --- The weight gradient: fused MVUE compression and dW -----------------
struct GradCase {
  DType t;
  int64_t M, R, C;
};
std::string gradName(const ::testing::TestParamInfo<GradCase> &i) {
  const GradCase &c = i.param;
  return std::string(tname(c.t)) + "_M" + std::to_string(c.M) + "_R" +
         std::to_string(c.R) + "_C" + std::to_string(c.C);
}

/// For M % 16 == 0: the fused operand (hv, hm) equals the unfused path bit
/// for bit: mvue24 on the contiguous dY^T, mask = result != 0, compress24
/// (W^T's outputs unused). The fused kernel computes MVUE with its own,
/// leaner arithmetic (sparse24.tile, lean_*); this is what holds the two to
/// the same bits.
void expectFusedEqualsUnfused(const GradCase &c, const HostArray &dy,
                              int64_t lddy, uint64_t seed, int64_t offset,
                              const HostArray &hv,
                              const std::vector<int16_t> &hm) {
  const int64_t kp = sparse24GradTokens(c.M);
  HostArray dyT(c.t, c.R * c.M);
  for (int64_t r = 0; r < c.R; ++r)
    for (int64_t t = 0; t < c.M; ++t)
      std::memcpy(&dyT.bytes[2 * (r * c.M + t)], &dy.bytes[2 * (t * lddy + r)], 2);
  auto dyTBuf = upload(dyT);
  rt::DeviceBuffer yBuf(dyT.bytes.size());
  yBuf.fill(0xff);
  mvue24(c.t, dyTBuf.ptr(), yBuf.ptr(), c.R * c.M, seed, offset);
  rt::Device::get().synchronize();
  HostArray y = download(yBuf, c.t);
  std::vector<int8_t> mask(c.R * c.M);
  for (size_t i = 0; i < mask.size(); ++i)
    mask[i] = y.get(i) != 0;
  rt::DeviceBuffer maskBuf = rt::DeviceBuffer::fromHost(mask);
  Compressed z = compress(c.t, c.R, c.M, yBuf, c.M, maskBuf, c.M);
  HostArray zv = download(z.vals, c.t);
  std::vector<int16_t> zm = z.meta.toHost<int16_t>();
  int64_t diff = 0;
  for (int64_t r = 0; r < c.R; ++r) {
    for (int64_t k = 0; k < c.M / 2; ++k)
      if (!hv.sameBits(r * (kp / 2) + k, zv, r * (c.M / 2) + k) && diff++ < 8)
        ADD_FAILURE() << "vals[" << r << ", " << k << "]: fused "
                      << hv.get(r * (kp / 2) + k) << ", unfused "
                      << zv.get(r * (c.M / 2) + k) << " (tokens "
                      << 4 * (k / 2) << "..)";
    for (int64_t k = 0; k < c.M / 16; ++k) {
      int16_t f = hm[metaIndex(r, k, c.R, kp)],
              u = zm[metaIndex(r, k, c.R, c.M)];
      if (f != u && diff++ < 8)
        ADD_FAILURE() << "meta[" << r << ", " << k << "]: fused " << f
                      << ", unfused " << u;
    }
  }
  EXPECT_EQ(diff, 0);
}

class Sparse24GradW : public GpuParamTest<GradCase> {
protected:
  /// mvue24CompressT into poisoned (0xff) buffers.
  std::pair<rt::DeviceBuffer, rt::DeviceBuffer>
  fused(const GradCase &c, const rt::DeviceBuffer &dy, int64_t lddy,
        uint64_t seed, int64_t offset) {
    int64_t kp = sparse24GradTokens(c.M);
    rt::DeviceBuffer vals(size_t(compressedValues(c.R, kp)) * 2),
        meta(size_t(compressedMeta(c.R, kp)) * 2);
    vals.fill(0xff);
    meta.fill(0xff);
    mvue24CompressT(c.t, c.M, c.R, dy.ptr(), lddy, vals.ptr(), meta.ptr(),
                    seed, offset);
    rt::Device::get().synchronize();
    return {std::move(vals), std::move(meta)};
  }
};

// dY [M, R] (row stride R + 8) is sparsified and compressed in one kernel;
// the operand must be (1) a valid 2:4 operand with exactly two nonzeros in
// every group of four tokens that has two, zeros past M; (2) reproducible
// and seed-dependent; (3) for M % 16 == 0, bit for bit mvue24 on dY^T
// followed by compress24; (4) dW = S(dY^T) X on the GPU (default dispatch:
// TMA + sparse wgmma on sm_90, and mma.sp with tma = 0) agrees with the f64
// product of the decompressed operand and X, into a poisoned f32 output
// whose padding must stay untouched.
TEST_P(Sparse24GradW, FusedMvueCompressRoundTripAndGemmMatchesDense) {
  const GradCase &c = GetParam();
  std::mt19937_64 rng(testSeed() ^ uint64_t(c.M * 7919 + c.R * 131 + c.C));
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t lddy = c.R + 8, kp = sparse24GradTokens(c.M);
  HostArray dy(c.t, c.M * lddy);
  for (int64_t t = 0; t < c.M; ++t)
    for (int64_t r = 0; r < lddy; ++r) {
      float v = normal(rng);
      // Some groups with one or no nonzero (padding rules), some capped.
      if ((t / 4 + r) % 23 == 0)
        v = 0;
      else if ((t / 4 + r) % 29 == 0 && t % 4 != 1)
        v = 0;
      else if ((t / 4 + r) % 7 == 0 && t % 4 == 2)
        v *= 60;
      dy.set(t * lddy + r, v);
    }
  auto dyBuf = upload(dy);
  const uint64_t seed = rng();
  const int64_t offset = 1000003;
  auto [vals, meta] = fused(c, dyBuf, lddy, seed, offset);
  auto again = fused(c, dyBuf, lddy, seed, offset);
  EXPECT_EQ(vals.toHost<uint8_t>(), again.first.toHost<uint8_t>());
  EXPECT_EQ(meta.toHost<int16_t>(), again.second.toHost<int16_t>());
  auto other = fused(c, dyBuf, lddy, seed + 1, offset);
  EXPECT_NE(vals.toHost<uint8_t>(), other.first.toHost<uint8_t>())
      << "seed ignored";

  int64_t bad = 0;
  HostArray hv = download(vals, c.t);
  std::vector<int16_t> hm = meta.toHost<int16_t>();
  HostArray a = decompress(hv, hm, c.R, kp, bad, "S(dY^T)");
  for (int64_t r = 0; r < c.R; ++r)
    for (int64_t g = 0; g < kp / 4; ++g) {
      int nzIn = 0, nzOut = 0;
      for (int j = 0; j < 4; ++j) {
        int64_t t = 4 * g + j;
        nzIn += t < c.M && dy.get(t * lddy + r) != 0;
        float v = a.get(r * kp + t);
        nzOut += v != 0;
        // A kept value is dY / p with p <= 1: never smaller in magnitude.
        if (v != 0 && !(t < c.M && std::fabs(v) >= std::fabs(dy.get(t * lddy + r))) &&
            bad++ < 8)
          ADD_FAILURE() << "row " << r << " token " << t << ": " << v;
      }
      if (nzOut != std::min(nzIn, 2) && bad++ < 8)
        ADD_FAILURE() << "row " << r << " group " << g << ": " << nzOut
                      << " nonzeros from " << nzIn;
    }
  EXPECT_EQ(bad, 0);

  if (c.M % 16 == 0)
    expectFusedEqualsUnfused(c, dy, lddy, seed, offset, hv, hm);

  // dW [R, C] (row stride C + pad, f32) = A [R, kp] X [M, C] (stride C + 8).
  const int64_t ldx = c.C + 8, pad = 4;
  HostArray x(c.t, c.M * ldx);
  for (size_t i = 0; i < x.size(); ++i)
    x.set(i, normal(rng));
  auto xBuf = upload(x);
  // The TMA kernel alone, in clusters of two (multicast X) and with K steps
  // of 64, and mma.sp.
  // Ping-pong (last field) on 128 x 128 tiles of one warpgroup.
  for (auto [tma, cluster, tileK, persistent, pingpong] :
       {std::tuple{-1, 1, 0, -1, 0}, std::tuple{-1, 2, 0, -1, 0},
        std::tuple{-1, 1, 64, -1, 0}, std::tuple{-1, 1, 0, 1, 0},
        std::tuple{-1, 1, 0, 0, 0}, std::tuple{0, 1, 0, -1, 0},
        std::tuple{-1, 1, 0, -1, 1}}) {
    SparseLinearTiles tiles;
    tiles.tma = tma;
    tiles.cluster = cluster;
    tiles.tileK = tileK;
    tiles.persistent = persistent;
    if (pingpong) {
      tiles.pingpong = 1;
      tiles.warps = 4;
      tiles.tileI = 128;
      tiles.tileM = 128;
    }
    rt::DeviceBuffer dw(size_t(c.R * (c.C + pad)) * 4);
    dw.fill(0xff);
    sparse24LinearBackwardW(c.t, c.M, c.R, c.C, vals.ptr(), meta.ptr(),
                            xBuf.ptr(), ldx, dw.ptr(), c.C + pad, nullptr,
                            tiles);
    rt::Device::get().synchronize();
    auto out = dw.toHost<float>();
    int64_t wrong = 0;
    for (int64_t r = 0; r < c.R; ++r) {
      for (int64_t n = 0; n < c.C; ++n) {
        double ref = 0, mag = 0;
        for (int64_t t = 0; t < c.M; ++t) {
          double p = double(a.get(r * kp + t)) * x.get(t * ldx + n);
          ref += p, mag += std::fabs(p);
        }
        double got = out[r * (c.C + pad) + n];
        double tol = 0x1p-20 * std::fabs(ref) + 0x1p-16 * mag;
        if (!(std::fabs(got - ref) <= tol) && wrong++ < 8)
          ADD_FAILURE() << "tma " << tma << " dW[" << r << ", " << n
                        << "] = " << got << ", reference " << ref << " (tileK "
                        << tileK << ", persistent " << persistent
                        << ", pingpong " << pingpong << ")";
      }
      for (int64_t n = c.C; n < c.C + pad; ++n) {
        uint32_t bits;
        std::memcpy(&bits, &out[r * (c.C + pad) + n], 4);
        if (bits != 0xffffffffu && wrong++ < 8)
          ADD_FAILURE() << "tma " << tma << " padding written at row " << r;
      }
    }
    EXPECT_EQ(wrong, 0) << "tma " << tma;
  }
}

std::vector<GradCase> gradCases() {
  return {{DType::BF16, 256, 128, 128}, {DType::F16, 128, 64, 192},
          {DType::BF16, 512, 256, 320},
          // Ragged: tokens (padded to 128), features and output columns.
          {DType::BF16, 77, 100, 72}, {DType::F16, 301, 40, 136},
          {DType::BF16, 130, 264, 200},
          // M % 16 == 0 but not % 128: the aligned path's padding units.
          {DType::F16, 208, 64, 128},
          // GPT-2 XL's feature width 1600 (a multiple of 64, not of 128)
          // as dW's rows and as its columns.
          {DType::BF16, 256, 1600, 192}, {DType::BF16, 200, 320, 1600}};
}
INSTANTIATE_TEST_SUITE_P(Sparse24, Sparse24GradW, ::testing::ValuesIn(gradCases()),
                         gradName);

// Past 65535 programs along tokens (here 32 blocks of 128 tokens each, the
// launcher's choice at this shape: M > 268,431,360) mvue24CompressT
// launches them over the grid's y and z. With one feature a unit's Philox
// counter is offset + t0/16, independent of M, so a window of the long
// problem's output must equal the output of the window alone (dY from
// token T0, M - T0 tokens, offset + T0/16), bit for bit: one window in the
// first z slice and one at the end, in the second, with the padding past M.
TEST_F(GpuTest, FusedMvueCompressPastTheGridsYLimit) {
  std::mt19937_64 rng(testSeed() + 41);
  std::normal_distribution<float> normal(0.f, 1.f);
  const DType t = DType::BF16;
  const int64_t M = 65535 * 32 * 128 + 80, kp = sparse24GradTokens(M);
  ASSERT_EQ(kp / 128, 2097121); // 65536 programs: two z slices of 32768
  HostArray dy(t, M);
  for (int64_t i = 0; i < M; ++i)
    dy.set(i, i % 23 == 0 ? 0.f : normal(rng));
  auto dyBuf = upload(dy);
  const uint64_t seed = rng();
  const int64_t offset = 77;
  auto run = [&](int64_t T0, int64_t m, int64_t off) {
    int64_t k = sparse24GradTokens(m);
    rt::DeviceBuffer vals(size_t(compressedValues(1, k)) * 2),
        meta(size_t(compressedMeta(1, k)) * 2);
    vals.fill(0xff);
    meta.fill(0xff);
    mvue24CompressT(t, m, 1, dyBuf.ptr() + rt::DevicePtr(T0 * 2), 1, vals.ptr(),
                    meta.ptr(), seed, off);
    rt::Device::get().synchronize();
    return std::pair(vals.toHost<uint16_t>(), meta.toHost<uint16_t>());
  };
  auto [vals, meta] = run(0, M, offset);
  for (int64_t T0 : {int64_t(0), kp - 4096}) {
    SCOPED_TRACE("window at token " + std::to_string(T0));
    const int64_t m = std::min<int64_t>(4096, M - T0);
    auto [wv, wm] = run(T0, m, offset + T0 / 16);
    ASSERT_EQ(wv.size(), 2048u);
    EXPECT_TRUE(std::equal(wv.begin(), wv.end(), vals.begin() + T0 / 2));
    EXPECT_TRUE(std::equal(wm.begin(), wm.end(), meta.begin() + T0 / 16));
  }
  // Every unit of the long problem written (no 0xffff poison left: a value
  // of 0xffff is a NaN, which MVUE never produces from finite input).
  EXPECT_EQ(std::count(vals.begin(), vals.end(), uint16_t(0xffff)), 0);
  EXPECT_EQ(std::count(meta.begin(), meta.end(), uint16_t(0xffff)), 0);
}

// The fused kernel's MVUE arithmetic is written apart from mvue24's (fewer
// compares and selects); on groups built to hit its edges it must still
// give mvue24 + compress24's bits: equal magnitudes and ties for the
// maximum, 2 max == sum exactly (the capped boundary), capped groups whose
// others sum to 0, one or two nonzeros, signed zeros, subnormals, and
// values whose kept magnitudes overflow f16. Several seeds, so that both
// drawn points fall in many places of each pattern.
TEST_F(GpuTest, FusedMvueCompressMatchesUnfusedOnEdgeGroups) {
  const std::vector<std::array<float, 4>> patterns = {
      {1, 1, 1, 1},       {2, 2, 1, 0.5f},   {2, 1, 1, 0},     {3, 1, 1, 1},
      {1, 3, 1, 1},       {10, 1, 0.5f, 0.25f}, {0, 0, 0, 5},   {0, 5, 0, 0},
      {0, 0, 0, 0},       {-0.f, 0, -0.f, 0}, {0, 1, 0, 1},     {1, 0, 0, 1},
      {0, 0, 1, 1},       {4, 4, 0, 0},      {0.25f, 0.5f, 1, 2}, {6, 1, 1, 4},
      {1e-39f, 1e-39f, 0, 3e-39f}, {1e-40f, 0, 0, 0}, {6e-8f, 6e-8f, 1.2e-7f, 0},
      {60000, 50000, 1, 0}, {60000, 60000, 60000, 60000}, {1e4f, 1e-3f, 2e-3f, 0},
      {1, 1.0000001f, 1, 0.9999999f}, {7, 2, 3, 2}};
  std::mt19937_64 rng(testSeed() + 97);
  for (DType t : {DType::BF16, DType::F16})
    for (int s = 0; s < 3; ++s) {
      const GradCase c{t, 256, 96, 0};
      const int64_t lddy = c.R + 8;
      HostArray dy(t, c.M * lddy);
      for (int64_t tok = 0; tok < c.M; tok += 4)
        for (int64_t r = 0; r < lddy; ++r) {
          const auto &p = patterns[size_t(rng() % patterns.size())];
          // Each entry's sign at random; rotate the pattern's positions.
          const int rot = int(rng() % 4);
          for (int j = 0; j < 4; ++j) {
            float v = p[size_t((j + rot) % 4)];
            dy.set((tok + j) * lddy + r, rng() % 2 ? -v : v);
          }
        }
      auto dyBuf = upload(dy);
      const uint64_t seed = rng();
      const int64_t offset = int64_t(rng() % 100000);
      const int64_t kp = sparse24GradTokens(c.M);
      rt::DeviceBuffer vals(size_t(compressedValues(c.R, kp)) * 2),
          meta(size_t(compressedMeta(c.R, kp)) * 2);
      vals.fill(0xff);
      meta.fill(0xff);
      mvue24CompressT(t, c.M, c.R, dyBuf.ptr(), lddy, vals.ptr(), meta.ptr(),
                      seed, offset);
      rt::Device::get().synchronize();
      SCOPED_TRACE(std::string(tname(t)) + " seed round " + std::to_string(s));
      expectFusedEqualsUnfused(c, dy, lddy, seed, offset, download(vals, t),
                               meta.toHost<int16_t>());
    }
}

// The persistent TMA kernels on more tiles than programs (256 tiles of
// 256 x 128 against at most one program per SM) equal one program per
// tile bit for bit: each tile accumulates the same K steps in the same
// order. Found missing: the kernels take their tile from cluster_id(),
// which the persistent loop did not map to the step's tile, so every step
// of a program recomputed its first tile; the other tests' problems had
// fewer tiles than programs, where that happens to cover every tile once.
TEST_F(GpuTest, PersistentGemmsOnManyTilesMatchOneProgramPerTile) {
  if (rt::Device::get().computeMajor() != 9)
    GTEST_SKIP() << "the persistent loop is the TMA kernels' (sm_90), this is "
                 << rt::Device::get().arch();
  const int64_t M = 8192, R = 1024, C = 256;
  const DType t = DType::BF16;
  std::mt19937_64 rng(testSeed() ^ 0x7e57ull);
  std::normal_distribution<float> normal(0.f, 1.f);
  HostArray w(t, R * C), x(t, M * C), dy(t, M * R);
  for (HostArray *a : {&w, &x, &dy})
    for (size_t i = 0; i < a->size(); ++i)
      a->set(i, normal(rng));
  auto wBuf = upload(w), xBuf = upload(x), dyBuf = upload(dy);
  rt::DeviceBuffer mBuf(R * C);
  mask24Transposable(t, R, C, wBuf.ptr(), C, mBuf.ptr(), C, 0, 0);
  Compressed z = compress(t, R, C, wBuf, C, mBuf, C);
  int64_t kp = sparse24GradTokens(M);
  rt::DeviceBuffer gv(size_t(compressedValues(R, kp)) * 2),
      gm(size_t(compressedMeta(R, kp)) * 2);
  mvue24CompressT(t, M, R, dyBuf.ptr(), R, gv.ptr(), gm.ptr(), 7, 0);
  std::vector<uint8_t> outs[2][2];
  for (int persistent : {0, 1}) {
    SparseLinearTiles tiles{256, 128, 8, true};
    tiles.tma = 1;
    tiles.persistent = persistent;
    rt::DeviceBuffer y(size_t(M * R) * 2), dw(size_t(R * C) * 4);
    y.fill(0xff);
    dw.fill(0xff);
    sparseLinear(t, M, R, C, z.vals.ptr(), z.meta.ptr(), xBuf.ptr(), C,
                 y.ptr(), R, nullptr, tiles);
    tiles.tileM = 128;
    sparse24LinearBackwardW(t, M, R, C, gv.ptr(), gm.ptr(), xBuf.ptr(), C,
                            dw.ptr(), C, nullptr, tiles);
    rt::Device::get().synchronize();
    outs[persistent][0] = y.toHost<uint8_t>();
    outs[persistent][1] = dw.toHost<uint8_t>();
  }
  const char *names[] = {"Y", "dW"};
  for (int i = 0; i < 2; ++i) {
    const auto &a = outs[0][i], &b = outs[1][i];
    int64_t differ = 0;
    for (size_t j = 0; j < a.size(); ++j)
      differ += a[j] != b[j];
    EXPECT_EQ(differ, 0) << names[i] << ": bytes differ between the persistent "
                         << "kernel and one program per tile";
  }
}

// E[S(dY^T)] = dY^T, so the mean of dW over seeds converges to dY^T X (f64).
// Per entry the tolerance is 5 standard errors of the observed samples plus
// the f16 rounding of the kept values (2^-11 relative, one-sided at worst).
TEST_F(GpuTest, GradWMeanOverSeedsConvergesToDense) {
  std::mt19937_64 rng(testSeed() + 11);
  std::normal_distribution<float> normal(0.f, 1.f);
  const int64_t M = 128, R = 32, C = 32;
  const int N = 400;
  HostArray dy(DType::F16, M * R), x(DType::F16, M * C);
  for (size_t i = 0; i < dy.size(); ++i)
    dy.set(i, i % 13 == 0 ? 20 * normal(rng) : normal(rng));
  for (size_t i = 0; i < x.size(); ++i)
    x.set(i, normal(rng));
  auto dyBuf = upload(dy), xBuf = upload(x);
  rt::DeviceBuffer vals(size_t(compressedValues(R, M)) * 2),
      meta(size_t(compressedMeta(R, M)) * 2), dw(size_t(R * C) * 4);
  std::vector<double> sum(R * C, 0.0), sq(R * C, 0.0);
  for (int s = 0; s < N; ++s) {
    mvue24CompressT(DType::F16, M, R, dyBuf.ptr(), R, vals.ptr(), meta.ptr(),
                    uint64_t(s) * 104729 + 3, 0);
    sparse24LinearBackwardW(DType::F16, M, R, C, vals.ptr(), meta.ptr(),
                            xBuf.ptr(), C, dw.ptr(), C);
    auto out = dw.toHost<float>();
    for (int64_t i = 0; i < R * C; ++i)
      sum[i] += out[i], sq[i] += double(out[i]) * out[i];
  }
  int bad = 0;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t n = 0; n < C; ++n) {
      double ref = 0, mag = 0;
      for (int64_t t = 0; t < M; ++t) {
        double p = double(dy.get(t * R + r)) * x.get(t * C + n);
        ref += p, mag += std::fabs(p);
      }
      int64_t i = r * C + n;
      double mean = sum[i] / N;
      double var = std::max(0.0, sq[i] / N - mean * mean);
      double tol = 5 * std::sqrt(var / N) + 0x1p-10 * mag;
      if (!(std::fabs(mean - ref) <= tol) && bad++ < 8)
        ADD_FAILURE() << "mean dW[" << r << ", " << n << "] = " << mean
                      << ", dY^T X = " << ref << " (tolerance " << tol << ")";
    }
  EXPECT_EQ(bad, 0);
}

// dW stored in the operands' dtype is the f32 dW rounded to nearest even,
// bit for bit: the same tiling accumulates in the same order, and only the
// store differs (staged per warp as f32, converted after the read-back on
// the persistent TMA kernel). Both GEMM paths, aligned and ragged shapes
// (C % 8 != 0 takes narrower stores), with a row stride wider than C; the
// padding columns must keep their poison.
TEST_F(GpuTest, GradWInOperandDtypeIsF32Rounded) {
  struct Case {
    int64_t M, R, C, lddw;
    int tma, persistent;
  };
  const Case cases[] = {{2048, 512, 256, 256, -1, -1},
                        {1000, 320, 200, 208, -1, -1},
                        {2048, 512, 256, 256, -1, 0},
                        {2048, 512, 256, 264, 0, -1},
                        {1000, 320, 200, 200, 0, -1}};
  std::mt19937_64 rng(testSeed() ^ 0xd1ull);
  std::normal_distribution<float> normal(0.f, 1.f);
  for (DType t : {DType::BF16, DType::F16})
    for (const Case &c : cases) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " M " + std::to_string(c.M) +
                   " R " + std::to_string(c.R) + " C " + std::to_string(c.C) +
                   " tma " + std::to_string(c.tma) + " persistent " +
                   std::to_string(c.persistent));
      HostArray dy(t, c.M * c.R), x(t, c.M * c.C);
      for (HostArray *a : {&dy, &x})
        for (size_t i = 0; i < a->size(); ++i)
          a->set(i, normal(rng));
      auto dyBuf = upload(dy), xBuf = upload(x);
      int64_t kp = sparse24GradTokens(c.M);
      rt::DeviceBuffer gv(size_t(compressedValues(c.R, kp)) * 2),
          gm(size_t(compressedMeta(c.R, kp)) * 2);
      mvue24CompressT(t, c.M, c.R, dyBuf.ptr(), c.R, gv.ptr(), gm.ptr(), 5, 0);
      SparseLinearTiles tiles;
      tiles.tma = c.tma;
      tiles.persistent = c.persistent;
      rt::DeviceBuffer d32(size_t(c.R * c.lddw) * 4),
          d16(size_t(c.R * c.lddw) * 2);
      d32.fill(0xff);
      d16.fill(0xff);
      sparse24LinearBackwardW(t, c.M, c.R, c.C, gv.ptr(), gm.ptr(), xBuf.ptr(),
                              c.C, d32.ptr(), c.lddw, nullptr, tiles);
      sparse24LinearBackwardW(t, c.M, c.R, c.C, gv.ptr(), gm.ptr(), xBuf.ptr(),
                              c.C, d16.ptr(), c.lddw, nullptr, tiles, t);
      rt::Device::get().synchronize();
      HostArray f32 = download(d32, DType::F32), got = download(d16, t);
      HostArray want(t, got.size());
      int64_t bad = 0, nonzero = 0;
      for (int64_t r = 0; r < c.R; ++r)
        for (int64_t n = 0; n < c.lddw; ++n) {
          size_t i = size_t(r * c.lddw + n);
          bool stored = n < c.C;
          if (stored) {
            want.set(i, f32.get(i));
            nonzero += f32.get(i) != 0.f;
          }
          bool ok =
              stored ? got.sameBits(i, want, i)
                     : got.bytes[2 * i] == 0xff && got.bytes[2 * i + 1] == 0xff;
          if (!ok && bad++ < 8)
            ADD_FAILURE() << "dW[" << r << ", " << n << "] = " << got.get(i)
                          << (stored ? ", want " : " past C, want the poison")
                          << (stored ? std::to_string(want.get(i)) : "");
        }
      EXPECT_EQ(bad, 0);
      EXPECT_GT(nonzero, c.R * c.C / 2); // not a zero result
    }
}

TEST(Sparse24Cpu, RejectsBadArguments) {
  const rt::DevicePtr p = 256, q = 512, r = 768;
  // The fused epilogues: an unknown activation, h without one, no h with
  // one, a misaligned bias, and dX's epilogue without an activation.
  auto fwd = [&](int act, rt::DevicePtr bias, rt::DevicePtr h) {
    sparse24LinearForwardAct(DType::BF16, 8, 64, 128, p, q, r, 128, bias,
                             LinearActivation(act), h, r + 4096, 64);
  };
  EXPECT_THROW(fwd(2, 0, p + 8192), rt::Error);
  EXPECT_THROW(fwd(0, 0, p + 8192), rt::Error);
  EXPECT_THROW(fwd(1, 0, 0), rt::Error);
  EXPECT_THROW(fwd(0, p + 2, 0), rt::Error);
  EXPECT_THROW(sparse24LinearBackwardXAct(DType::BF16, 8, 64, 128, p, q, r, 64,
                                          LinearActivation::None, p + 8192,
                                          r + 4096, 128),
               rt::Error);
  EXPECT_THROW(sparse24LinearBackwardXAct(DType::BF16, 8, 64, 128, p, q, r, 64,
                                          LinearActivation::GeluTanh, 0,
                                          r + 4096, 128),
               rt::Error);
  auto tm = [&](DType t, int64_t R, int64_t C, rt::DevicePtr w, int64_t sw,
                rt::DevicePtr m, int64_t sm, rt::DevicePtr o, int64_t so) {
    mask24Transposable(t, R, C, w, sw, m, sm, o, so);
  };
  EXPECT_THROW(tm(DType::I32, 8, 8, p, 8, q, 8, r, 8), rt::Error);  // dtype
  EXPECT_THROW(tm(DType::F64, 8, 8, p, 8, q, 8, r, 8), rt::Error);  // dtype
  EXPECT_THROW(tm(DType::BF16, 6, 8, p, 8, q, 8, r, 8), rt::Error); // R % 4
  EXPECT_THROW(tm(DType::BF16, 8, 6, p, 8, q, 8, r, 8), rt::Error); // C % 4
  EXPECT_THROW(tm(DType::BF16, -4, 8, p, 8, q, 8, r, 8), rt::Error);
  EXPECT_THROW(tm(DType::BF16, 8, 8, p, 4, q, 8, r, 8), rt::Error); // strideW < C
  EXPECT_THROW(tm(DType::BF16, 8, 8, p, 8, q, 4, r, 8), rt::Error); // strideMask
  EXPECT_THROW(tm(DType::BF16, 8, 8, p, 8, q, 8, r, 4), rt::Error); // strideOut
  EXPECT_THROW(tm(DType::BF16, 8, 8, 0, 8, q, 8, r, 8), rt::Error); // null w
  EXPECT_THROW(tm(DType::BF16, 8, 8, p, 8, 0, 8, 0, 8), rt::Error); // no output
  EXPECT_THROW(tm(DType::BF16, 8, 8, p + 2, 8, q, 8, r, 8), rt::Error); // align
  EXPECT_THROW(tm(DType::BF16, 8, 8, p, 8, q + 1, 8, r, 8), rt::Error);
  EXPECT_THROW(tm(DType::BF16, 8, 8, p, int64_t(1) << 31, q, 8, r, 8), rt::Error);
  EXPECT_THROW(tm(DType::BF16, int64_t(1) << 20, int64_t(1) << 20, p,
                  int64_t(1) << 20, q, int64_t(1) << 20, 0, 0), rt::Error); // groups
  // Row-wise accepts any R, needs C % 4.
  EXPECT_THROW(mask24Rowwise(DType::F16, 3, 10, p, 10, q, 10, r, 10), rt::Error);
  EXPECT_THROW(mask24Rowwise(DType::I8, 3, 8, p, 8, q, 8, r, 8), rt::Error);
  EXPECT_THROW(maskFlipCount(p, q + 4, 10), rt::Error);
  EXPECT_THROW(maskFlipCount(0, q, 10), rt::Error);
  EXPECT_THROW(maskFlipCount(p, q, -1), rt::Error);
  EXPECT_THROW(maskFlipCountPartials(p, q, 10, 0), rt::Error);
  EXPECT_THROW(maskedDecay(DType::I32, p, q, r, 10, 0.1f), rt::Error);
  EXPECT_THROW(maskedDecay(DType::BF16, p, q, r + 8, 10, 0.1f), rt::Error);
  EXPECT_THROW(maskedDecay(DType::BF16, p, 0, r, 10, 0.1f), rt::Error);
  EXPECT_THROW(mvue24(DType::BF16, p, q, 10, 1, 0), rt::Error); // n % 4
  EXPECT_THROW(mvue24(DType::F64, p, q, 8, 1, 0), rt::Error);
  EXPECT_THROW(mvue24(DType::F32, p, q + 2, 8, 1, 0), rt::Error);
  // Compression and the sparse GEMMs.
  const rt::DevicePtr s = 1024;
  auto cz = [&](DType t, int64_t R, int64_t C, rt::DevicePtr w, int64_t sw) {
    compress24(t, R, C, w, sw, q, C, r, s, r + 4096, s + 4096);
  };
  EXPECT_THROW(cz(DType::F32, 16, 16, p, 16), rt::Error); // not a tensor-core type
  EXPECT_THROW(cz(DType::BF16, 8, 16, p, 16), rt::Error); // R % 16
  EXPECT_THROW(cz(DType::BF16, 16, 20, p, 20), rt::Error); // C % 16
  EXPECT_THROW(cz(DType::BF16, 16, 16, p, 8), rt::Error);  // strideW < C
  EXPECT_THROW(cz(DType::BF16, 16, 16, p + 2, 16), rt::Error); // align
  EXPECT_THROW(compress24(DType::F16, 16, 16, p, 16, q, 16, 0, s, r, s), rt::Error);
  auto sl = [&](DType t, int64_t M, int64_t I, int64_t K, int64_t ldx,
                int64_t ldo, rt::DevicePtr x) {
    sparseLinear(t, M, I, K, p, q, x, ldx, r, ldo);
  };
  EXPECT_THROW(sl(DType::F32, 8, 8, 64, 64, 8, s), rt::Error);  // dtype
  EXPECT_THROW(sl(DType::BF16, 8, 8, 32, 32, 8, s), rt::Error); // K % 64
  EXPECT_THROW(sl(DType::BF16, -1, 8, 64, 64, 8, s), rt::Error);
  EXPECT_THROW(sl(DType::BF16, 8, 8, 64, 32, 8, s), rt::Error); // ldx < K
  EXPECT_THROW(sl(DType::BF16, 8, 16, 64, 64, 8, s), rt::Error); // ldo < I
  EXPECT_THROW(sl(DType::BF16, 8, 8, 64, 64, 8, 0), rt::Error);  // null x
  EXPECT_THROW(sl(DType::BF16, 8, 8, 64, 64, 8, s + 8), rt::Error); // align
  try {
    sparse24LinearForward(DType::BF16, 8, 64, 96, p, q, s, 96, r, 64);
    FAIL() << "expected an error";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("sparse24LinearForward: C = 96 is not "
                                         "a multiple of 64"),
              std::string::npos)
        << e.what();
  }
  try {
    sparse24LinearBackwardX(DType::BF16, 8, 64, 96, p, q, s, 32, r, 96);
    FAIL() << "expected an error";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("lddy = 32 is smaller than R = 64"),
              std::string::npos)
        << e.what();
  }
  auto tiles = [&](SparseLinearTiles t) {
    sparseLinear(DType::BF16, 8, 8, 64, p, q, s, 64, r, 8, nullptr, t);
  };
  EXPECT_THROW(tiles({96, 128, 8, true}), rt::Error);  // not a power of two
  EXPECT_THROW(tiles({128, 512, 8, true}), rt::Error); // too large
  EXPECT_THROW(tiles({128, 128, 3, true}), rt::Error); // warps
  EXPECT_THROW(tiles({16, 16, 8, true}), rt::Error);   // cannot split
  EXPECT_THROW(tiles({128, 128, 8, true, -1, 0, -1, -1, -1, 32}),
               rt::Error);                              // tileK
  EXPECT_NO_THROW(sl(DType::BF16, 0, 8, 64, 64, 8, s)); // empty: no launch
  EXPECT_NO_THROW(cz(DType::BF16, 0, 16, p, 16));
  try {
    tm(DType::BF16, 6, 8, p, 8, q, 8, r, 8);
    FAIL() << "expected an error";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("multiples of 4"), std::string::npos) << e.what();
  }
  // Empty problems launch nothing and need no GPU.
  EXPECT_NO_THROW(tm(DType::BF16, 0, 8, p, 8, q, 8, r, 8));
  EXPECT_EQ(maskFlipCount(p, q, 0), 0);
  EXPECT_NO_THROW(mvue24(DType::BF16, p, q, 0, 1, 0));
  // The weight gradient: fused MVUE compression and dW.
  auto mc = [&](DType t, int64_t M, int64_t R, rt::DevicePtr dy, int64_t ld,
                rt::DevicePtr vals) {
    mvue24CompressT(t, M, R, dy, ld, vals, s, 1, 0);
  };
  EXPECT_THROW(mc(DType::F32, 16, 16, p, 16, r), rt::Error);  // dtype
  EXPECT_THROW(mc(DType::BF16, -1, 16, p, 16, r), rt::Error); // M
  EXPECT_THROW(mc(DType::BF16, 16, 16, p, 8, r), rt::Error);  // lddy < R
  EXPECT_THROW(mc(DType::BF16, 16, 16, p + 2, 16, r), rt::Error); // align
  EXPECT_THROW(mc(DType::BF16, 16, 16, p, 16, 0), rt::Error);     // null
  EXPECT_THROW(mc(DType::BF16, int64_t(1) << 31, 16, p, 16, r), rt::Error);
  // Within i32, but without room for programs past the last (z slices).
  EXPECT_THROW(mc(DType::BF16, (int64_t(1) << 31) - 4096, 16, p, 16, r),
               rt::Error);
  EXPECT_NO_THROW(mc(DType::BF16, 0, 16, p, 16, r)); // empty: no launch
  auto gw = [&](DType t, int64_t M, int64_t R, int64_t C, rt::DevicePtr x,
                int64_t ldx, int64_t lddw, SparseLinearTiles tl = {}) {
    sparse24LinearBackwardW(t, M, R, C, p, q, x, ldx, r, lddw, nullptr, tl);
  };
  EXPECT_THROW(gw(DType::F32, 16, 16, 16, s, 16, 16), rt::Error); // dtype
  EXPECT_THROW(gw(DType::BF16, 16, -16, 16, s, 16, 16), rt::Error);
  EXPECT_THROW(gw(DType::BF16, 16, 16, 16, s, 8, 16), rt::Error);  // ldx < C
  EXPECT_THROW(gw(DType::BF16, 16, 16, 16, s, 16, 8), rt::Error);  // lddw < C
  EXPECT_THROW(gw(DType::BF16, 16, 16, 16, s + 4, 16, 16), rt::Error); // align
  EXPECT_THROW(gw(DType::BF16, 16, 16, 16, 0, 16, 16), rt::Error); // null x
  EXPECT_THROW(gw(DType::BF16, 16, 16, 16, s, 16, 16, {128, 128, 3, true}),
               rt::Error); // tiles
  EXPECT_NO_THROW(gw(DType::BF16, 16, 0, 16, s, 16, 16)); // empty
  // dW in f32 or the operands' dtype only.
  for (DType dwt : {DType::F16, DType::I16, DType::F64})
    try {
      sparse24LinearBackwardW(DType::BF16, 16, 16, 16, p, q, s, 16, r, 16,
                              nullptr, {}, dwt);
      ADD_FAILURE() << "dW as " << dtypeName(dwt) << ": expected an error";
    } catch (const rt::Error &e) {
      EXPECT_NE(std::string(e.what()).find(
                    std::string("sparse24LinearBackwardW: dW must be f32 or "
                                "bf16 (the operands' dtype), got ") +
                    dtypeName(dwt)),
                std::string::npos)
          << e.what();
    }
  try {
    gw(DType::BF16, 16, 16, 16, s, 16, 8);
    FAIL() << "expected an error";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("sparse24LinearBackwardW: lddw = 8 "
                                         "is smaller than C = 16"),
              std::string::npos)
        << e.what();
  }
  auto mu = [&](DType t, int64_t R, int64_t C, rt::DevicePtr w,
                rt::DevicePtr out, int64_t so) {
    mask24Update(t, R, C, w, C, q, C, out, so, r, s, r + 4096, s + 4096);
  };
  EXPECT_THROW(mu(DType::F32, 16, 16, p, p + 4096, 16), rt::Error); // dtype
  EXPECT_THROW(mu(DType::BF16, 8, 16, p, p + 4096, 16), rt::Error); // R % 16
  EXPECT_THROW(mu(DType::BF16, 16, 24, p, p + 4096, 24), rt::Error); // C % 16
  EXPECT_THROW(mu(DType::BF16, 16, 16, p, p + 4096, 8), rt::Error); // stride
  EXPECT_THROW(mu(DType::BF16, 16, 16, p, 0, 16), rt::Error);        // no out
  EXPECT_THROW(mu(DType::BF16, 16, 16, p, p + 4100, 16), rt::Error); // align
  try { // In place takes W's own stride.
    mu(DType::BF16, 16, 16, p, p, 32);
    FAIL() << "expected an error";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("mask24Update: out = w (in place) "
                                         "needs strideOut = strideW"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(mu(DType::BF16, 0, 16, p, p + 4096, 16)); // empty
  // The TMA kernel's conditions: any K (a multiple of 64, as sparseLinear
  // requires anyway: K = 192 reads the metadata's padded last block), any
  // I. With no GPU the forced kernel fails on the device query, not on K
  // or a ragged I (with one, these pointers must not be launched on).
  SparseLinearTiles forceTma;
  forceTma.tma = 1;
  if (!rt::gpuAvailable()) {
    try {
      sparseLinear(DType::BF16, 8, 128, 192, p, q, s, 192, r, 128, nullptr,
                   forceTma);
      FAIL() << "expected an error";
    } catch (const rt::Error &e) {
      EXPECT_EQ(std::string(e.what()).find("multiple of 128"),
                std::string::npos)
          << e.what();
    }
  }
  if (!rt::gpuAvailable()) {
    try {
      sparseLinear(DType::BF16, 8, 100, 128, p, q, s, 128, r, 100, nullptr,
                   forceTma);
      FAIL() << "expected an error";
    } catch (const rt::Error &e) {
      EXPECT_EQ(std::string(e.what()).find("I %"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(sparse24GradTokens(1), 128);
  EXPECT_EQ(sparse24GradTokens(128), 128);
  EXPECT_EQ(sparse24GradTokens(129), 256);
}

} // namespace
