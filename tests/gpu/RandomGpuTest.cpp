//===- RandomGpuTest.cpp - Philox and unsigned integers on the GPU --------===//
//
// The DSL's randint/rand/randn (Language.md, "Random numbers") against the
// runtime's host stream (sparsetile/runtime/Random.h): randint and rand bit
// for bit over many offsets and seeds (64-bit seeds and offsets, offsets that
// cross the counter's high word, 32-bit offsets that wrap, signed 32-bit
// seeds), randn to a few ulp; rand's uniformity (chi-square over 64 bins of
// 2^20 draws) and independence across neighbouring offsets and seeds
// (correlations); randn's mean and variance. Then unsigned arithmetic on
// values with the top bit set (logical shifts, unsigned division, remainder,
// comparison, maximum, uitofp/fptoui, u64 ops, u32 reductions) against the
// host. Outputs are poisoned. Skipped, with the reason, without a GPU.
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/JIT.h"
#include "sparsetile/runtime/Random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <type_traits>

using namespace sparsetile;
using namespace sparsetile::rt;

namespace {

const char *kSource = R"(
kernel rint(out: *u32, seed: u64, base: i64, n: i32) {
  let i = program_id(0) * 1024 + arange(0, 1024);
  store(out + i, randint(seed, base + i.to(i64)), mask=i < n);
}
kernel rint4(out: *u32, seed: u64, base: i64, n: i32) {
  let i = program_id(0) * 256 + arange(0, 256);
  let o = base + i.to(i64);
  store(out + 4 * i, randint(seed, o, word=0), mask=i < n / 4);
  store(out + 4 * i + 1, randint(seed, o, word=1), mask=i < n / 4);
  store(out + 4 * i + 2, randint(seed, o, word=2), mask=i < n / 4);
  store(out + 4 * i + 3, randint(seed, o, word=3), mask=i < n / 4);
}
kernel rint32(out: *u32, seed: i32, base: i32, n: i32) {
  let i = program_id(0) * 1024 + arange(0, 1024);
  store(out + i, randint(seed, base + i), mask=i < n);
}
kernel runif(out: *f32, seed: u64, base: i64, n: i32) {
  let i = program_id(0) * 1024 + arange(0, 1024);
  store(out + i, rand(seed, base + i.to(i64)), mask=i < n);
}
kernel rnorm(out: *f32, seed: u64, base: i64, n: i32) {
  let i = program_id(0) * 1024 + arange(0, 1024);
  store(out + i, randn(seed, base + i.to(i64)), mask=i < n);
}
kernel uops(a: *u32, b: *u32, o: *u32, c: *i32, f: *f32, a64: *u64,
            b64: *u64, o64: *u64, n: i32) {
  let i = program_id(0) * 256 + arange(0, 256);
  let m = i < n;
  let x = load(a + i, mask=m, other=0);
  let y = load(b + i, mask=m, other=1);
  store(o + i * 7, x >> (y % 32), mask=m);
  store(o + i * 7 + 1, x / y, mask=m);
  store(o + i * 7 + 2, x % y, mask=m);
  store(o + i * 7 + 3, maximum(x, y), mask=m);
  store(o + i * 7 + 4, (x.to(u64) + y) >> 1, mask=m);
  store(o + i * 7 + 5, (x.to(f32) * 0.75).to(u32), mask=m);
  store(o + i * 7 + 6, x.bitcast(i32) >> 4, mask=m);
  store(c + i * 2, where(x < y, 1, 0), mask=m);
  store(c + i * 2 + 1, where(x.bitcast(i32) < y.bitcast(i32), 1, 0), mask=m);
  store(f + i, x.to(f32), mask=m);
  let p = load(a64 + i, mask=m, other=0);
  let q = load(b64 + i, mask=m, other=1);
  store(o64 + i * 5, p >> (q % 64), mask=m);
  store(o64 + i * 5 + 1, p / q, mask=m);
  store(o64 + i * 5 + 2, p % q, mask=m);
  store(o64 + i * 5 + 3, where(p > q, 1, 0), mask=m);
  store(o64 + i * 5 + 4, (p.to(f64) * 0.5).to(u64), mask=m);
}
kernel ured(a: *u32, out: *u32, idx: *i32) {
  let x = load(a + arange(0, 256));
  store(out, max(x));
  store(out + 1, min(x));
  store(idx, argmax(x));
}
kernel ured64(a: *u64, out: *u64, idx: *i32) {
  let x = load(a + arange(0, 256));
  store(out, max(x));
  store(out + 1, min(x));
  store(idx, argmax(x));
}
kernel uatomic(p: *u32, v: *u32, old: *u32) {
  let i = arange(0, 256);
  let x = load(v + i);
  store(old + i, atomic_max(p + 0 * i, x));
  atomic_min(p + 1 + 0 * i, x);
}
)";

class RandomGpu : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
  }
  Kernel &kernel(const char *name) {
    static KernelSource src = KernelSource::fromText(kSource, "random.tile");
    return JIT::global().get(src, name);
  }
  /// out[i] = kernelName(seed, base)[i] for i < n, from a poisoned buffer.
  template <typename T, typename S, typename B>
  std::vector<T> draw(const char *name, S seed, B base, int n) {
    DeviceBuffer out(size_t(n) * sizeof(T));
    out.fill(0xa5);
    kernel(name).launch(
        Dim3(unsigned((n + 1023) / 1024)),
        {Arg::ptr(out, std::is_same_v<T, float> ? DType::F32 : DType::U32),
         seed, base, n});
    return out.toHost<T>();
  }
};

const uint64_t kSeeds[] = {0,
                           1,
                           0x5eed,
                           0xffffffffffffffffull,
                           0x8000000000000001ull,
                           0x123456789abcdef0ull};
// Bases: 0; the high counter word changes inside the range; a negative
// offset (high word 0xffffffff); a large one.
const int64_t kBases[] = {0, (int64_t(1) << 32) - 3000, -5000,
                          (int64_t(1) << 62) + 12345};

TEST_F(RandomGpu, RandintEqualsHostStream) {
  const int n = 1 << 16;
  int bad = 0;
  for (uint64_t seed : kSeeds)
    for (int64_t base : kBases) {
      auto got = draw<uint32_t>("rint", Arg::u64(seed), Arg::i64(base), n);
      for (int i = 0; i < n; ++i) {
        uint32_t want = randint(seed, uint64_t(base + i));
        if (got[i] != want && bad++ < 5)
          ADD_FAILURE() << "randint(" << seed << ", " << base + i
                        << ") = " << got[i] << ", host " << want;
      }
    }
  EXPECT_EQ(bad, 0);
}

// word=k is word k of the host's randint4x, for all four words.
TEST_F(RandomGpu, RandintWordsEqualHostRandint4x) {
  const int n = 1 << 16; // four words of n / 4 offsets
  int bad = 0;
  for (uint64_t seed : kSeeds)
    for (int64_t base : kBases) {
      DeviceBuffer out(size_t(n) * 4);
      out.fill(0xa5);
      kernel("rint4").launch(Dim3(unsigned(n / 4 / 256)),
                             {Arg::ptr(out, DType::U32), Arg::u64(seed),
                              Arg::i64(base), n});
      auto got = out.toHost<uint32_t>();
      for (int i = 0; i < n; ++i) {
        uint32_t want = randint4x(seed, uint64_t(base + i / 4))[i % 4];
        if (got[i] != want && bad++ < 5)
          ADD_FAILURE() << "randint(" << seed << ", " << base + i / 4
                        << ", word=" << i % 4 << ") = " << got[i] << ", host "
                        << want;
      }
    }
  EXPECT_EQ(bad, 0);
}

TEST_F(RandomGpu, Randint32BitOffsetsAndSeeds) {
  // A 32-bit offset is its 32 bits (wrapping past INT32_MAX here); an i32
  // seed sign-extends to 64 bits.
  const int n = 1 << 14;
  int bad = 0;
  for (int32_t seed : {0, 7, -1, INT32_MIN})
    for (int32_t base : {0, INT32_MAX - 5000, -3}) {
      auto got = draw<uint32_t>("rint32", Arg::i32(seed), Arg::i32(base), n);
      for (int i = 0; i < n; ++i) {
        uint32_t off = uint32_t(base) + uint32_t(i);
        uint32_t want = randint(uint64_t(int64_t(seed)), off);
        if (got[i] != want && bad++ < 5)
          ADD_FAILURE() << "randint(i32 " << seed << ", i32 " << int32_t(off)
                        << ") = " << got[i] << ", host " << want;
      }
    }
  EXPECT_EQ(bad, 0);
}

TEST_F(RandomGpu, RandEqualsHostAndIsUniform) {
  const int n = 1 << 20;
  uint64_t seed = sparsetile::testing::testSeed();
  auto u = draw<float>("runif", Arg::u64(seed), Arg::i64(0), n);
  std::vector<double> bins(64, 0);
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    float want = rand(seed, uint64_t(i));
    if (std::memcmp(&u[i], &want, 4) != 0 && bad++ < 5)
      ADD_FAILURE() << "rand(" << seed << ", " << i << ") = " << u[i]
                    << ", host " << want;
    if (!(u[i] >= 0.0f && u[i] < 1.0f) && bad++ < 5)
      ADD_FAILURE() << "rand out of [0, 1): " << u[i];
    bins[std::min(63, int(u[i] * 64))] += 1;
  }
  EXPECT_EQ(bad, 0);
  // Chi-square with 63 degrees of freedom: P(chi2 > 132) < 1e-6
  // (Wilson-Hilferty), so a correct generator fails once in a million runs.
  double expect = double(n) / 64, chi2 = 0;
  for (double b : bins)
    chi2 += (b - expect) * (b - expect) / expect;
  EXPECT_LT(chi2, 132.0) << "seed " << seed;
}

/// Pearson correlation of x[i] and y[i].
double correlation(const std::vector<float> &x, const std::vector<float> &y,
                   size_t n) {
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    sx += x[i], sy += y[i], sxx += double(x[i]) * x[i];
    syy += double(y[i]) * y[i], sxy += double(x[i]) * y[i];
  }
  double cx = sxx - sx * sx / n, cy = syy - sy * sy / n;
  return (sxy - sx * sy / n) / std::sqrt(cx * cy);
}

TEST_F(RandomGpu, RandIndependentAcrossOffsetsAndSeeds) {
  const int n = 1 << 20;
  uint64_t seed = sparsetile::testing::testSeed();
  auto u = draw<float>("runif", Arg::u64(seed), Arg::i64(0), n + 1);
  auto v = draw<float>("runif", Arg::u64(seed + 1), Arg::i64(0), n);
  std::vector<float> next(u.begin() + 1, u.end());
  // Under independence a correlation of n pairs has sd 1/sqrt(n) = 0.001;
  // 0.006 is 6 sd (two-sided P ~ 2e-9).
  EXPECT_LT(std::fabs(correlation(u, next, n)), 0.006) << "offsets o, o + 1";
  EXPECT_LT(std::fabs(correlation(u, v, n)), 0.006) << "seeds s, s + 1";
}

TEST_F(RandomGpu, RandnMatchesHostAndMoments) {
  const int n = 1 << 20;
  uint64_t seed = sparsetile::testing::testSeed();
  auto z = draw<float>("rnorm", Arg::u64(seed), Arg::i64(1000), n);
  double s = 0, s2 = 0;
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    float want = randn(seed, uint64_t(1000 + i));
    // libdevice's log/cos against the host's: a few ulp of the terms.
    if (!(std::fabs(z[i] - want) <= 2e-5f * (1 + std::fabs(want))) && bad++ < 5)
      ADD_FAILURE() << "randn(" << seed << ", " << 1000 + i << ") = " << z[i]
                    << ", host " << want;
    s += z[i];
    s2 += double(z[i]) * z[i];
  }
  EXPECT_EQ(bad, 0);
  double mean = s / n, var = s2 / n - mean * mean;
  // 6 standard errors: 6/sqrt(n) for the mean, 6 sqrt(2/n) for the variance.
  EXPECT_LT(std::fabs(mean), 0.006);
  EXPECT_LT(std::fabs(var - 1.0), 0.0085);
}

TEST_F(RandomGpu, UnsignedArithmeticMatchesHost) {
  const int n = 1000;
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^ 0x75);
  std::vector<uint32_t> a(n), b(n);
  std::vector<uint64_t> a64(n), b64(n);
  for (int i = 0; i < n; ++i) {
    // Most values have the top bit set; a few small divisors.
    a[i] = uint32_t(rng()) | (i % 4 ? 0x80000000u : 0);
    b[i] = i % 3 ? uint32_t(rng()) | 0x80000000u : uint32_t(rng() % 1000 + 1);
    a64[i] = rng() | (i % 4 ? 0x8000000000000000ull : 0);
    b64[i] = i % 3 ? rng() | 0x8000000000000000ull : rng() % 100000 + 1;
  }
  auto da = DeviceBuffer::fromHost(a), db = DeviceBuffer::fromHost(b);
  auto da64 = DeviceBuffer::fromHost(a64), db64 = DeviceBuffer::fromHost(b64);
  DeviceBuffer o(size_t(n) * 7 * 4), c(size_t(n) * 2 * 4), f(size_t(n) * 4),
      o64(size_t(n) * 5 * 8);
  for (DeviceBuffer *p : {&o, &c, &f, &o64})
    p->fill(0xa5);
  kernel("uops").launch(Dim3(unsigned((n + 255) / 256)),
                        {Arg::ptr(da, DType::U32), Arg::ptr(db, DType::U32),
                         Arg::ptr(o, DType::U32), Arg::ptr(c, DType::I32),
                         Arg::ptr(f, DType::F32), Arg::ptr(da64, DType::U64),
                         Arg::ptr(db64, DType::U64), Arg::ptr(o64, DType::U64),
                         n});
  auto ho = o.toHost<uint32_t>();
  auto hc = c.toHost<int32_t>();
  auto hf = f.toHost<float>();
  auto ho64 = o64.toHost<uint64_t>();
  int bad = 0;
  auto check = [&](bool ok, const char *what, int i) {
    if (!ok && bad++ < 8)
      ADD_FAILURE() << what << " at " << i << ": a=" << a[i] << " b=" << b[i]
                    << " a64=" << a64[i] << " b64=" << b64[i];
  };
  for (int i = 0; i < n; ++i) {
    uint32_t x = a[i], y = b[i];
    const uint32_t *r = &ho[size_t(i) * 7];
    check(r[0] == x >> (y % 32), "x >> (y % 32)", i);
    check(r[1] == x / y, "x / y", i);
    check(r[2] == x % y, "x % y", i);
    check(r[3] == std::max(x, y), "maximum", i);
    check(r[4] == uint32_t((uint64_t(x) + y) >> 1), "(x + y) >> 1 in u64", i);
    check(r[5] == uint32_t(float(x) * 0.75f), "fptoui", i);
    check(r[6] == uint32_t(int32_t(x) >> 4), "i32 >> (arithmetic)", i);
    check(hc[size_t(i) * 2] == (x < y), "x < y", i);
    check(hc[size_t(i) * 2 + 1] == (int32_t(x) < int32_t(y)), "i32 <", i);
    check(hf[i] == float(x), "uitofp", i);
    uint64_t p = a64[i], q = b64[i];
    const uint64_t *r64 = &ho64[size_t(i) * 5];
    check(r64[0] == p >> (q % 64), "u64 >>", i);
    check(r64[1] == p / q, "u64 /", i);
    check(r64[2] == p % q, "u64 %", i);
    check(r64[3] == uint64_t(p > q), "u64 >", i);
    check(r64[4] == uint64_t(double(p) * 0.5), "u64 uitofp/fptoui", i);
  }
  EXPECT_EQ(bad, 0);
}

TEST_F(RandomGpu, UnsignedReductions) {
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^ 0x7ed);
  for (int trial = 0; trial < 4; ++trial) {
    // Distinct values, both halves of the range (so signed order differs).
    std::vector<uint32_t> a(256);
    for (int i = 0; i < 256; ++i)
      a[i] = (uint32_t(rng()) & ~0xffu) | uint32_t(i);
    auto da = DeviceBuffer::fromHost(a);
    DeviceBuffer out(8), idx(4);
    out.fill(0xa5);
    idx.fill(0xa5);
    kernel("ured").launch(Dim3(1),
                          {Arg::ptr(da, DType::U32), Arg::ptr(out, DType::U32),
                           Arg::ptr(idx, DType::I32)});
    auto r = out.toHost<uint32_t>();
    auto best = std::max_element(a.begin(), a.end());
    EXPECT_EQ(r[0], *best);
    EXPECT_EQ(r[1], *std::min_element(a.begin(), a.end()));
    EXPECT_EQ(idx.toHost<int32_t>()[0], int(best - a.begin()));
  }
}

TEST_F(RandomGpu, UnsignedReductionsOf64BitAndAtomics) {
  std::mt19937_64 rng(sparsetile::testing::testSeed() ^ 0x64);
  for (int trial = 0; trial < 4; ++trial) {
    // Distinct values in both halves of the range: the signed order differs.
    std::vector<uint64_t> a(256);
    for (int i = 0; i < 256; ++i)
      a[i] = (rng() & ~uint64_t(0xff)) | uint64_t(i);
    auto da = DeviceBuffer::fromHost(a);
    DeviceBuffer out(16), idx(4);
    out.fill(0xa5);
    idx.fill(0xa5);
    kernel("ured64").launch(Dim3(1), {Arg::ptr(da, DType::U64),
                                      Arg::ptr(out, DType::U64),
                                      Arg::ptr(idx, DType::I32)});
    auto r = out.toHost<uint64_t>();
    auto best = std::max_element(a.begin(), a.end());
    EXPECT_EQ(r[0], *best);
    EXPECT_EQ(r[1], *std::min_element(a.begin(), a.end()));
    EXPECT_EQ(idx.toHost<int32_t>()[0], int(best - a.begin()));

    // atomic_max / atomic_min on *u32 order unsigned (atom.max.u32): 256
    // contending threads, values with the top bit set among them.
    std::vector<uint32_t> v(256);
    for (uint32_t &x : v)
      x = uint32_t(rng());
    v[7] = 0x80000000u | v[7];
    std::vector<uint32_t> start = {0x7fffffffu, 0xffffffffu};
    auto dp = DeviceBuffer::fromHost(start);
    auto dv = DeviceBuffer::fromHost(v);
    DeviceBuffer old(256 * 4);
    old.fill(0xa5);
    kernel("uatomic").launch(Dim3(1), {Arg::ptr(dp, DType::U32),
                                       Arg::ptr(dv, DType::U32),
                                       Arg::ptr(old, DType::U32)});
    auto p = dp.toHost<uint32_t>();
    uint32_t mx = std::max(start[0], *std::max_element(v.begin(), v.end()));
    EXPECT_EQ(p[0], mx);
    EXPECT_EQ(p[1], std::min(start[1], *std::min_element(v.begin(), v.end())));
    // Each old value is what p[0] held before that thread's max: never above
    // the final maximum, and at least the start.
    for (uint32_t o : old.toHost<uint32_t>()) {
      EXPECT_LE(o, mx);
      EXPECT_GE(o, start[0]);
    }
  }
}

} // namespace
