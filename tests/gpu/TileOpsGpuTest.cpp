//===- TileOpsGpuTest.cpp - Atomics and bitwise reductions on the GPU -----===//
//
// Kernels written for the test (the DSL text below), compiled by the real
// compiler for the GPU at hand and checked against exact host results:
//   - atomics under contention: 64 programs x 1024 threads adding into a few
//     counters (exact totals; with one counter the returned old values are a
//     permutation of 0..n-1), i32/i64/f32 and f16/bf16 additions, i32/i64/f32
//     max and min, compare-and-swap as a spin-free "first one wins" slot,
//     exchange chains, masked lanes (no effect, 0 returned), tiles smaller
//     than the block (replicated elements update once) and scalar atomics;
//   - reduce_or / reduce_and / reduce_xor along both axes of ragged i32 and
//     i64 tiles, with several tile shapes and warp counts;
//   - cumsum along both axes of ragged i32, i64 and f32 tiles (tiles smaller
//     than a warp, replicated ones, axes spread over warps);
//   - reshape round trips between layouts that differ;
//   - barrier(): a tile stored by some warps, loaded back transposed by others;
//   - device_print: the lines vprintf writes to stdout (captured), one per
//     element and program;
//   - a strided copy launched with a unit stride (the equal-to-1 variant,
//     vector loads) and with others.
// Inputs are fresh random values (the seed is printed; set
// SPARSETILE_TEST_SEED to reproduce). Without a GPU every test is skipped.
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "HostFloat.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/JIT.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <cmath>
#include <map>
#include <random>

using namespace sparsetile;
using namespace sparsetile::rt;

namespace {

const char *kSource = R"(
# Every element adds 1 to counters[i % NC] and keeps the old value; i64 and
# f32 totals take small integers (exact in f32).
kernel counts(counters: *i32, olds: *i32, tot64: *i64, totf: *f32, n: i32,
              const NC: i32 = 4, const BLOCK: i32 = 1024) {
  let i = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = i < n;
  store(olds + i, atomic_add(counters + i % NC, 1, mask=m), mask=m);
  atomic_add(tot64 + i % NC, (i % 7 + 1).to(i64) * 1000000007, mask=m);
  atomic_add(totf + i % NC, (i % 5).to(f32), mask=m);
}

# Extrema into out[0:NC] (max) and out[NC:2NC] (min), for i32, i64, f32.
kernel extrema(x: *i32, f: *f32, out: *i32, out64: *i64, fout: *f32, n: i32,
               const NC: i32 = 4, const BLOCK: i32 = 1024) {
  let i = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = i < n;
  let v = load(x + i, mask=m);
  let w = v.to(i64) * 3000000019;
  let fv = load(f + i, mask=m);
  atomic_max(out + i % NC, v, mask=m);
  atomic_min(out + NC + i % NC, v, mask=m);
  atomic_max(out64 + i % NC, w, mask=m);
  atomic_min(out64 + NC + i % NC, w, mask=m);
  atomic_max(fout + i % NC, fv, mask=m);
  atomic_min(fout + NC + i % NC, fv, mask=m, sem=relaxed, scope=gpu);
}

# Compare-and-swap: the first element to reach flags[i % M] (zeroed) writes
# i + 1 and gets 0; every other one fails and gets the winner's i + 1.
# Exchange: each slot's old values chain through every writer.
kernel swaps(flags: *i32, olds: *i32, slots: *i64, xolds: *i64, n: i32,
             const M: i32 = 8, const BLOCK: i32 = 1024) {
  let i = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = i < n;
  store(olds + i, atomic_cas(flags + i % M, 0, i + 1, mask=m), mask=m);
  store(xolds + i, atomic_xchg(slots + i % M, (i + 1).to(i64), mask=m), mask=m);
}

# Tiles smaller than the block (16 and 2x4 elements over 128 threads) and a
# scalar: each element is updated once per program, and every thread sees
# the old values. Masked-off elements return 0.
@num_warps(4)
kernel replicated(c: *i32, olds: *i32, c2: *i32, ticket: *i32, tickets: *i32,
                  mc: *i32, molds: *i32) {
  let p = program_id(0);
  let j = arange(0, 16);
  store(olds + p * 16 + j, atomic_add(c + j, 1));
  let r = arange(0, 2)[:, None];
  let k = arange(0, 4)[None, :];
  atomic_add(c2 + r * 4 + k, r + 1);
  store(tickets + p, atomic_add(ticket, 1));
  let keep = (j + p) % 3 == 0;
  store(molds + p * 16 + j, atomic_add(mc + j, 1, mask=keep) + 1);
}

kernel half_add(h: *T, n: i32, const T: dtype = f16, const BLOCK: i32 = 1024) {
  let i = program_id(0) * BLOCK + arange(0, BLOCK);
  atomic_add(h + i % 64, 1.0, mask=i < n);
}

# Bitwise reductions of a ragged [R, C] tile along both axes.
kernel bitred(x: *T, out: *T, R: i32, C: i32,
              const T: dtype = i32, const BR: i32 = 8, const BC: i32 = 64) {
  let r = arange(0, BR);
  let c = arange(0, BC);
  let m = (r < R)[:, None] && (c < C)[None, :];
  let offs = r[:, None] * C + c[None, :];
  let v = load(x + offs, mask=m);
  let va = load(x + offs, mask=m, other=-1);
  store(out + c, reduce_or(v, axis=0), mask=c < C);
  store(out + BC + c, reduce_and(va, axis=0), mask=c < C);
  store(out + 2 * BC + c, reduce_xor(v, axis=0), mask=c < C);
  store(out + 3 * BC + r, reduce_or(v, axis=1), mask=r < R);
  store(out + 3 * BC + BR + r, reduce_and(va, axis=1), mask=r < R);
  store(out + 3 * BC + 2 * BR + r, xor_sum(v, axis=1), mask=r < R);
}

# Inclusive prefix sums of a ragged [R, C] tile along both axes.
kernel scan(x: *T, out0: *T, out1: *T, R: i32, C: i32,
            const T: dtype = i32, const BR: i32 = 8, const BC: i32 = 64) {
  let r = arange(0, BR);
  let c = arange(0, BC);
  let m = (r < R)[:, None] && (c < C)[None, :];
  let offs = r[:, None] * C + c[None, :];
  let v = load(x + offs, mask=m);
  store(out0 + offs, cumsum(v, axis=0), mask=m);
  store(out1 + offs, cumsum(v, axis=1), mask=m);
}

# 1-D scan of a computed (not loaded) tile and of a loaded one.
kernel scan1d(x: *i32, out: *i32, out2: *i32, const B: i32 = 1024) {
  let i = arange(0, B);
  store(out + i, cumsum(load(x + i)));
  store(out2 + i, cumsum(i % 3));
}

# Reshape round trips: [BR, BC] -> [BC, BR] -> [BR * BC] -> back, with a
# cumsum in between so that the values are materialized (not recomputed).
kernel reshapes(x: *i32, out: *i32, flat: *i32,
                const BR: i32 = 8, const BC: i32 = 64) {
  let offs = arange(0, BR)[:, None] * BC + arange(0, BC)[None, :];
  let v = load(x + offs);
  let w = reshape(v, [BC, BR]);
  let f = reshape(w, [BR * BC]);
  store(flat + arange(0, BR * BC), f);
  let back = reshape(cumsum(w, axis=1), [BR, BC]);
  store(out + offs, back);
}

# Transposes through shared memory (Exchange.cpp picks each layout by its
# bank wavefronts: swizzled, padded or plain): out gets trans(v) in the
# canonical layout, out8 the same elements handed out eight per thread
# (compress24's pass 1 reads its tiles so).
kernel transposes(x: *T, out: *T, out8: *T, const T: dtype = i32,
                  const R: i32 = 32, const C: i32 = 64) {
  let r = arange(0, R)[:, None];
  let c = arange(0, C)[None, :];
  let v = load(x + r * C + c);
  let i = arange(0, C)[:, None];
  let j = arange(0, R)[None, :];
  store(out + i * R + j, trans(v));
  let q = arange(0, R * C / 8)[:, None];
  let k = arange(0, 8)[None, :];
  store(out8 + q * 8 + k, reshape(trans(v), [R * C / 8, 8]));
}

# barrier(): each program stores its [B, B] tile to tmp, then reads it back
# transposed, so every thread loads elements other warps stored.
@num_warps(8)
kernel through_global(x: *i32, tmp: *i32, y: *i32, const B: i32 = 64) {
  let base = program_id(0) * B * B;
  let r = arange(0, B)[:, None];
  let c = arange(0, B)[None, :];
  store(tmp + base + r * B + c, load(x + base + r * B + c) + 1);
  barrier();
  store(y + base + r * B + c, load(tmp + base + c * B + r));
}

# Clusters of two programs: each writes its cluster and its rank in it.
@cluster(2)
@num_warps(4)
kernel cluster_ids(out: *i32) {
  store(out + 2 * program_id(0), cluster_id());
  store(out + 2 * program_id(0) + 1, cluster_rank());
}

# Rows of x at stride ld, columns at stride sk, nk blocks of 64 columns into
# a dense y, through pointer tiles advanced in the loop: sk = 1 takes the
# equal-to-1 variant (16-byte loads), other strides the general one.
@num_warps(4)
kernel strided_copy(x: *i16, y: *i16, ld: i32, sk: i32, nk: i32) {
  let r = arange(0, 16);
  let c = arange(0, 64);
  let p = x + r[:, None] * ld + c[None, :] * sk;
  let q = y + r[:, None] * (64 * nk) + c[None, :];
  for k in range(0, nk) {
    store(q, load(p));
    p += 64 * sk;
    q += 64;
  }
}

# device_print of a tile replicated over the block: each element once.
@num_warps(4)
kernel printer(x: *i32) {
  device_print("v =", load(x + arange(0, 8)) + program_id(0));
}
)";

class TileOpsGpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (!gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
    RecordProperty("seed", std::to_string(sparsetile::testing::testSeed()));
  }
  static const KernelSource &source() {
    static KernelSource s = KernelSource::fromText(kSource, "tile_ops.tile");
    return s;
  }
  static Kernel &kernel(const char *name, const Constants &c = {},
                        int warps = 0) {
    JITOptions o;
    if (warps)
      o.numWarps = warps;
    return JIT::global().get(source(), name, c, o);
  }
  std::mt19937_64 rng{sparsetile::testing::testSeed()};
};

template <typename T> DeviceBuffer filled(size_t n, T v) {
  return DeviceBuffer::fromHost(std::vector<T>(n, v));
}

/// 64 programs x 1024 threads add into NC counters.
TEST_F(TileOpsGpuTest, AddUnderContention) {
  const int programs = 64, block = 1024;
  for (int nc : {1, 4, 8}) {
    const int n = programs * block - 37; // the last program is ragged
    auto counters = filled<int32_t>(nc, 0), olds = filled<int32_t>(n, -1);
    auto tot64 = filled<int64_t>(nc, 0);
    auto totf = filled<float>(nc, 0.0f);
    kernel("counts", {{"NC", std::to_string(nc)}}, /*warps=*/32)
        .launch(Dim3(programs),
                {Arg::ptr(counters, DType::I32), Arg::ptr(olds, DType::I32),
                 Arg::ptr(tot64, DType::I64), Arg::ptr(totf, DType::F32),
                 Arg::i32(n)});
    Device::get().synchronize();
    std::vector<int64_t> wantCount(nc), want64(nc);
    std::vector<double> wantF(nc);
    for (int i = 0; i < n; ++i) {
      wantCount[i % nc] += 1;
      want64[i % nc] += int64_t(i % 7 + 1) * 1000000007;
      wantF[i % nc] += i % 5;
    }
    auto c = counters.toHost<int32_t>();
    auto c64 = tot64.toHost<int64_t>();
    auto cf = totf.toHost<float>();
    for (int k = 0; k < nc; ++k) {
      EXPECT_EQ(c[k], wantCount[k]) << "NC " << nc << " counter " << k;
      EXPECT_EQ(c64[k], want64[k]) << "NC " << nc << " counter " << k;
      EXPECT_EQ(double(cf[k]), wantF[k]) << "NC " << nc << " counter " << k;
    }
    // Per counter, the old values are 0, 1, ..., count - 1 in some order.
    auto o = olds.toHost<int32_t>();
    std::vector<std::vector<int32_t>> seen(nc);
    for (int i = 0; i < n; ++i)
      seen[i % nc].push_back(o[i]);
    for (int k = 0; k < nc; ++k) {
      std::sort(seen[k].begin(), seen[k].end());
      for (size_t t = 0; t < seen[k].size(); ++t)
        if (seen[k][t] != int32_t(t)) {
          ADD_FAILURE() << "NC " << nc << " counter " << k
                        << ": sorted old values differ from 0..n-1 at " << t
                        << " (" << seen[k][t] << ")";
          break;
        }
    }
  }
}

TEST_F(TileOpsGpuTest, MaxMin) {
  const int programs = 64, block = 1024, nc = 4;
  const int n = programs * block - 1000;
  std::uniform_int_distribution<int32_t> di(INT_MIN, INT_MAX);
  std::uniform_real_distribution<float> df(-1e6f, 1e6f);
  for (int round = 0; round < 3; ++round) {
    std::vector<int32_t> x(n);
    std::vector<float> f(n);
    for (int i = 0; i < n; ++i) {
      x[i] = round == 2 ? -std::abs(di(rng) / 2) - 1 : di(rng);
      // Round 1: only non-negative floats, round 2: only negative ones (the
      // two branches of the bit-pattern comparison), with signed zeros.
      float v = df(rng);
      f[i] = round == 1 ? std::fabs(v) : round == 2 ? -std::fabs(v) - 1 : v;
      if (i % 977 == 0)
        f[i] = round == 2 ? -0.0f : 0.0f;
    }
    auto xb = DeviceBuffer::fromHost(x), fb = DeviceBuffer::fromHost(f);
    std::vector<int32_t> initI(2 * nc);
    std::vector<int64_t> init64(2 * nc);
    std::vector<float> initF(2 * nc);
    for (int k = 0; k < nc; ++k) {
      initI[k] = INT_MIN, initI[nc + k] = INT_MAX;
      init64[k] = INT64_MIN, init64[nc + k] = INT64_MAX;
      initF[k] = -INFINITY, initF[nc + k] = INFINITY;
    }
    auto out = DeviceBuffer::fromHost(initI);
    auto out64 = DeviceBuffer::fromHost(init64);
    auto fout = DeviceBuffer::fromHost(initF);
    kernel("extrema", {}, 32).launch(
        Dim3(programs),
        {Arg::ptr(xb, DType::I32), Arg::ptr(fb, DType::F32),
         Arg::ptr(out, DType::I32), Arg::ptr(out64, DType::I64),
         Arg::ptr(fout, DType::F32), Arg::i32(n)});
    Device::get().synchronize();
    auto gi = out.toHost<int32_t>();
    auto g64 = out64.toHost<int64_t>();
    auto gf = fout.toHost<float>();
    for (int k = 0; k < nc; ++k) {
      int32_t mx = INT_MIN, mn = INT_MAX;
      int64_t mx64 = INT64_MIN, mn64 = INT64_MAX;
      float fmx = -INFINITY, fmn = INFINITY;
      for (int i = k; i < n; i += nc) {
        mx = std::max(mx, x[i]), mn = std::min(mn, x[i]);
        int64_t w = int64_t(x[i]) * 3000000019LL;
        mx64 = std::max(mx64, w), mn64 = std::min(mn64, w);
        fmx = std::max(fmx, f[i]), fmn = std::min(fmn, f[i]);
      }
      EXPECT_EQ(gi[k], mx) << "round " << round << " counter " << k;
      EXPECT_EQ(gi[nc + k], mn) << "round " << round << " counter " << k;
      EXPECT_EQ(g64[k], mx64) << "round " << round << " counter " << k;
      EXPECT_EQ(g64[nc + k], mn64) << "round " << round << " counter " << k;
      EXPECT_EQ(gf[k], fmx) << "round " << round << " counter " << k;
      EXPECT_EQ(gf[nc + k], fmn) << "round " << round << " counter " << k;
    }
  }
}

TEST_F(TileOpsGpuTest, CompareAndSwapAndExchange) {
  const int programs = 64, block = 1024, slotsN = 8;
  const int n = programs * block - 3;
  auto flags = filled<int32_t>(slotsN, 0), olds = filled<int32_t>(n, -1);
  auto slots = filled<int64_t>(slotsN, 0), xolds = filled<int64_t>(n, -1);
  kernel("swaps", {{"M", std::to_string(slotsN)}}, 32)
      .launch(Dim3(programs),
              {Arg::ptr(flags, DType::I32), Arg::ptr(olds, DType::I32),
               Arg::ptr(slots, DType::I64), Arg::ptr(xolds, DType::I64),
               Arg::i32(n)});
  Device::get().synchronize();
  auto f = flags.toHost<int32_t>();
  auto o = olds.toHost<int32_t>();
  auto s = slots.toHost<int64_t>();
  auto xo = xolds.toHost<int64_t>();
  for (int k = 0; k < slotsN; ++k) {
    // One winner per slot: it wrote its i + 1 and saw 0; the rest saw it.
    int winner = f[k] - 1;
    ASSERT_TRUE(winner >= 0 && winner < n && winner % slotsN == k)
        << "slot " << k << " holds " << f[k];
    int bad = 0;
    for (int i = k; i < n; i += slotsN) {
      int32_t want = i == winner ? 0 : f[k];
      if (o[i] != want && bad++ < 5)
        ADD_FAILURE() << "cas at " << i << " returned " << o[i] << ", want "
                      << want;
    }
    // Exchange: the old values and the final one are {0} and every i + 1.
    std::vector<int64_t> got{s[k]}, want{0};
    for (int i = k; i < n; i += slotsN) {
      got.push_back(xo[i]);
      want.push_back(i + 1);
    }
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << "exchange chain of slot " << k;
  }
}

TEST_F(TileOpsGpuTest, ReplicatedMaskedAndScalar) {
  const int programs = 64;
  auto c = filled<int32_t>(16, 0), olds = filled<int32_t>(16 * programs, -1);
  auto c2 = filled<int32_t>(8, 0), ticket = filled<int32_t>(1, 0);
  auto tickets = filled<int32_t>(programs, -1);
  auto mc = filled<int32_t>(16, 0), molds = filled<int32_t>(16 * programs, -9);
  kernel("replicated").launch(
      Dim3(programs),
      {Arg::ptr(c, DType::I32), Arg::ptr(olds, DType::I32),
       Arg::ptr(c2, DType::I32), Arg::ptr(ticket, DType::I32),
       Arg::ptr(tickets, DType::I32), Arg::ptr(mc, DType::I32),
       Arg::ptr(molds, DType::I32)});
  Device::get().synchronize();
  auto hc = c.toHost<int32_t>(), ho = olds.toHost<int32_t>();
  auto hc2 = c2.toHost<int32_t>(), ht = tickets.toHost<int32_t>();
  auto hmc = mc.toHost<int32_t>(), hmo = molds.toHost<int32_t>();
  EXPECT_EQ(ticket.toHost<int32_t>()[0], programs);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(hc[j], programs) << "element " << j << " (updated once each)";
    std::vector<int32_t> seen;
    for (int p = 0; p < programs; ++p)
      seen.push_back(ho[p * 16 + j]);
    std::sort(seen.begin(), seen.end());
    for (int p = 0; p < programs; ++p)
      EXPECT_EQ(seen[p], p) << "old values of element " << j;
    // Masked: kept lanes count and see 0..kept-1; the others see 0 (+1).
    int kept = 0;
    std::vector<int32_t> keptOlds;
    for (int p = 0; p < programs; ++p) {
      if ((j + p) % 3 == 0) {
        ++kept;
        keptOlds.push_back(hmo[p * 16 + j] - 1);
      } else {
        EXPECT_EQ(hmo[p * 16 + j], 1) << "masked-off lane returns 0";
      }
    }
    EXPECT_EQ(hmc[j], kept) << "masked counter " << j;
    std::sort(keptOlds.begin(), keptOlds.end());
    for (int t = 0; t < kept; ++t)
      EXPECT_EQ(keptOlds[t], t) << "masked old values of element " << j;
  }
  for (int e = 0; e < 8; ++e)
    EXPECT_EQ(hc2[e], programs * (e / 4 + 1)) << "2-D element " << e;
  std::sort(ht.begin(), ht.end());
  for (int p = 0; p < programs; ++p)
    EXPECT_EQ(ht[p], p) << "scalar tickets";
}

TEST_F(TileOpsGpuTest, HalfPrecisionAdd) {
  const int programs = 4, block = 1024, n = programs * block - 5;
  std::vector<DType> types{DType::F16};
  if (Device::get().computeMajor() >= 9)
    types.push_back(DType::BF16); // atom.add.noftz.bf16 needs sm_90
  for (DType t : types) {
    auto h = filled<uint16_t>(64, 0);
    kernel("half_add", {{"T", dtypeName(t)}}, 32)
        .launch(Dim3(programs), {Arg::ptr(h, t), Arg::i32(n)});
    Device::get().synchronize();
    auto got = h.toHost<uint16_t>();
    for (int k = 0; k < 64; ++k) {
      int want = (n - k + 63) / 64; // counts are exact in both types
      float g = t == DType::F16 ? sparsetile::test::halfToFloat(got[k])
                                : sparsetile::test::bf16ToFloat(got[k]);
      EXPECT_EQ(g, float(want)) << dtypeName(t) << " counter " << k;
    }
  }
}

/// A ragged [R, C] problem in a [BR, BC] tile on `warps` warps.
struct TileCase {
  DType dtype;
  int R, C, BR, BC, warps;

  std::string tag() const {
    return std::string(dtypeName(dtype)) + " " + std::to_string(R) + "x" +
           std::to_string(C) + " in " + std::to_string(BR) + "x" +
           std::to_string(BC) + " w" + std::to_string(warps);
  }
  Constants constants() const {
    return {{"T", dtypeName(dtype)},
            {"BR", std::to_string(BR)},
            {"BC", std::to_string(BC)}};
  }
};

TEST_F(TileOpsGpuTest, BitwiseReductions) {
  const TileCase cases[] = {
      {DType::I32, 8, 64, 8, 64, 4},   {DType::I32, 5, 37, 8, 64, 4},
      {DType::I32, 3, 3, 4, 4, 1},     {DType::I32, 100, 7, 128, 8, 8},
      {DType::I32, 31, 200, 32, 256, 8}, {DType::I64, 6, 50, 8, 64, 4},
      {DType::I64, 64, 2, 64, 2, 2},   {DType::I64, 17, 130, 32, 256, 4},
  };
  for (const TileCase &bc : cases) {
    bool wide = bc.dtype == DType::I64;
    std::vector<int64_t> x(size_t(bc.R) * bc.C);
    for (auto &v : x) {
      // Sparse bits, so that or/and are not all ones/zeros.
      uint64_t a = rng(), b = rng(), c = rng();
      v = int64_t(a & b & (c | (c >> 7)));
      if (!wide)
        v = int32_t(v);
    }
    for (int i = 0; i < bc.C; i += 3)
      x[i] = -1; // and over a column of all ones keeps bits
    size_t outN = 3 * bc.BC + 3 * bc.BR;
    DeviceBuffer xb, ob;
    if (wide) {
      xb = DeviceBuffer::fromHost(x);
      ob = filled<int64_t>(outN, 0x5a5a);
    } else {
      xb = DeviceBuffer::fromHost(std::vector<int32_t>(x.begin(), x.end()));
      ob = filled<int32_t>(outN, 0x5a5a);
    }
    kernel("bitred", bc.constants(), bc.warps)
        .launch(Dim3(1), {Arg::ptr(xb, bc.dtype), Arg::ptr(ob, bc.dtype),
                          Arg::i32(bc.R), Arg::i32(bc.C)});
    Device::get().synchronize();
    std::vector<int64_t> got;
    if (wide) {
      got = ob.toHost<int64_t>();
    } else {
      auto g = ob.toHost<int32_t>();
      got.assign(g.begin(), g.end());
    }
    std::string tag = bc.tag();
    for (int c = 0; c < bc.C; ++c) {
      int64_t o = 0, a = -1, e = 0;
      for (int r = 0; r < bc.R; ++r) {
        int64_t v = x[size_t(r) * bc.C + c];
        o |= v, a &= v, e ^= v;
      }
      EXPECT_EQ(got[c], o) << tag << " or, column " << c;
      EXPECT_EQ(got[bc.BC + c], a) << tag << " and, column " << c;
      EXPECT_EQ(got[2 * bc.BC + c], e) << tag << " xor, column " << c;
    }
    for (int r = 0; r < bc.R; ++r) {
      int64_t o = 0, a = -1, e = 0;
      for (int c = 0; c < bc.C; ++c) {
        int64_t v = x[size_t(r) * bc.C + c];
        o |= v, a &= v, e ^= v;
      }
      size_t base = 3 * bc.BC;
      EXPECT_EQ(got[base + r], o) << tag << " or, row " << r;
      EXPECT_EQ(got[base + bc.BR + r], a) << tag << " and, row " << r;
      EXPECT_EQ(got[base + 2 * bc.BR + r], e) << tag << " xor, row " << r;
    }
  }
}

TEST_F(TileOpsGpuTest, Cumsum) {
  const TileCase cases[] = {
      {DType::I32, 8, 64, 8, 64, 4},    {DType::I32, 5, 37, 8, 64, 4},
      {DType::I32, 3, 3, 4, 4, 1},      {DType::I32, 2, 3, 2, 4, 4},
      {DType::I32, 100, 7, 128, 8, 8},  {DType::I32, 31, 200, 32, 256, 8},
      {DType::I32, 1000, 1, 1024, 1, 8}, {DType::I32, 1, 1000, 1, 1024, 8},
      {DType::I64, 6, 50, 8, 64, 4},    {DType::I64, 64, 2, 64, 2, 2},
      {DType::F32, 17, 130, 32, 256, 4}, {DType::F32, 256, 16, 256, 16, 8},
  };
  for (const TileCase &sc : cases) {
    size_t n = size_t(sc.R) * sc.C;
    std::vector<int64_t> x(n);
    std::uniform_int_distribution<int64_t> d(
        sc.dtype == DType::I64 ? -(int64_t(1) << 40) : -1000,
        sc.dtype == DType::I64 ? int64_t(1) << 40 : 1000);
    for (auto &v : x)
      v = d(rng); // f32: small integers, so every order sums exactly
    std::vector<int64_t> want0(n), want1(n);
    for (int r = 0; r < sc.R; ++r)
      for (int c = 0; c < sc.C; ++c) {
        size_t i = size_t(r) * sc.C + c;
        want0[i] = x[i] + (r ? want0[i - sc.C] : 0);
        want1[i] = x[i] + (c ? want1[i - 1] : 0);
      }
    DeviceBuffer xb, o0, o1;
    auto upload = [&](const std::vector<int64_t> &v) {
      if (sc.dtype == DType::I64)
        return DeviceBuffer::fromHost(v);
      if (sc.dtype == DType::F32)
        return DeviceBuffer::fromHost(std::vector<float>(v.begin(), v.end()));
      return DeviceBuffer::fromHost(std::vector<int32_t>(v.begin(), v.end()));
    };
    auto download = [&](const DeviceBuffer &b) {
      if (sc.dtype == DType::I64)
        return b.toHost<int64_t>();
      std::vector<int64_t> r;
      if (sc.dtype == DType::F32)
        for (float f : b.toHost<float>())
          r.push_back(int64_t(f));
      else
        for (int32_t v : b.toHost<int32_t>())
          r.push_back(v);
      return r;
    };
    xb = upload(x);
    o0 = upload(std::vector<int64_t>(n, 12345));
    o1 = upload(std::vector<int64_t>(n, 12345));
    kernel("scan", sc.constants(), sc.warps)
        .launch(Dim3(1), {Arg::ptr(xb, sc.dtype), Arg::ptr(o0, sc.dtype),
                          Arg::ptr(o1, sc.dtype), Arg::i32(sc.R),
                          Arg::i32(sc.C)});
    Device::get().synchronize();
    auto g0 = download(o0), g1 = download(o1);
    std::string tag = sc.tag();
    int bad = 0;
    for (size_t i = 0; i < n && bad < 5; ++i) {
      if (g0[i] != want0[i] && ++bad)
        ADD_FAILURE() << tag << " axis 0 at " << i << ": " << g0[i]
                      << ", want " << want0[i];
      if (g1[i] != want1[i] && ++bad)
        ADD_FAILURE() << tag << " axis 1 at " << i << ": " << g1[i]
                      << ", want " << want1[i];
    }
  }
}

TEST_F(TileOpsGpuTest, Cumsum1D) {
  for (int warps : {1, 4, 32}) {
    std::vector<int32_t> x(1024);
    for (auto &v : x)
      v = int32_t(rng() % 2001) - 1000;
    auto xb = DeviceBuffer::fromHost(x);
    auto out = filled<int32_t>(1024, 7), out2 = filled<int32_t>(1024, 7);
    kernel("scan1d", {}, warps)
        .launch(Dim3(1), {Arg::ptr(xb, DType::I32), Arg::ptr(out, DType::I32),
                          Arg::ptr(out2, DType::I32)});
    Device::get().synchronize();
    auto g = out.toHost<int32_t>(), g2 = out2.toHost<int32_t>();
    int32_t acc = 0, acc2 = 0;
    for (int i = 0; i < 1024; ++i) {
      acc += x[i];
      acc2 += i % 3;
      ASSERT_EQ(g[i], acc) << "warps " << warps << " at " << i;
      ASSERT_EQ(g2[i], acc2) << "warps " << warps << " at " << i;
    }
  }
}

TEST_F(TileOpsGpuTest, ReshapeRoundTrips) {
  const int shapes[][3] = {{8, 64, 4}, {2, 4, 4}, {64, 2, 2}, {32, 32, 8}};
  for (auto &sh : shapes) {
    int BR = sh[0], BC = sh[1], n = BR * BC;
    std::vector<int32_t> x(n);
    for (auto &v : x)
      v = int32_t(rng() % 1000);
    auto xb = DeviceBuffer::fromHost(x);
    auto out = filled<int32_t>(n, -1), flat = filled<int32_t>(n, -1);
    kernel("reshapes",
           {{"BR", std::to_string(BR)}, {"BC", std::to_string(BC)}}, sh[2])
        .launch(Dim3(1), {Arg::ptr(xb, DType::I32), Arg::ptr(out, DType::I32),
                          Arg::ptr(flat, DType::I32)});
    Device::get().synchronize();
    auto g = out.toHost<int32_t>(), f = flat.toHost<int32_t>();
    EXPECT_EQ(f, x) << BR << "x" << BC << ": reshape keeps row-major order";
    // back[i] = cumsum of w = x viewed [BC, BR], along its rows.
    for (int i = 0; i < n; ++i) {
      int32_t want = 0;
      for (int k = i - i % BR; k <= i; ++k)
        want += x[k];
      ASSERT_EQ(g[i], want) << BR << "x" << BC << " at " << i;
    }
  }
}

/// Every element lands where trans() puts it, for each element width, tile
/// shape and warp count (so under each layout the cost model picks), with
/// the outputs poisoned first. Bytes are compared, so the integer types
/// stand for every type of their width.
/// A unit stride picks the variant compiled with the stride as the constant
/// 1 (vector loads); both variants copy the same elements.
TEST_F(TileOpsGpuTest, UnitStrideVariant) {
  const int rows = 16, nk = 5;
  for (int sk : {1, 3, 16}) {
    const int ld = 64 * nk * sk + 16; // a multiple of 16
    std::vector<int16_t> x(size_t(rows) * ld);
    for (auto &v : x)
      v = int16_t(rng());
    auto xb = DeviceBuffer::fromHost(x);
    auto yb = filled<int16_t>(size_t(rows) * 64 * nk, -1);
    std::vector<Arg> args = {Arg::ptr(xb, DType::I16), Arg::ptr(yb, DType::I16),
                             Arg::i32(ld), Arg::i32(sk), Arg::i32(nk)};
    Kernel &k = kernel("strided_copy");
    k.launch(LaunchConfig(Dim3(1)), args);
    Device::get().synchronize();
    auto y = yb.toHost<int16_t>();
    for (int r = 0; r < rows; ++r)
      for (int j = 0; j < 64 * nk; ++j)
        ASSERT_EQ(y[size_t(r) * 64 * nk + j], x[size_t(r) * ld + size_t(j) * sk])
            << "sk " << sk << " row " << r << " column " << j;
    const std::string &ptx = k.variantFor(args.data(), args.size()).info().ptx;
    EXPECT_EQ(ptx.find("ld.global.v4") != std::string::npos, sk == 1)
        << "sk " << sk;
  }
}

TEST_F(TileOpsGpuTest, TransposesThroughSharedMemory) {
  struct Type {
    const char *name;
    DType dtype;
    size_t bytes;
  };
  const Type types[] = {{"i8", DType::I8, 1},
                        {"i16", DType::I16, 2},
                        {"i32", DType::I32, 4},
                        {"i64", DType::I64, 8}};
  const int shapes[][2] = {{32, 64},  {64, 32}, {16, 128},
                           {128, 16}, {8, 8},   {64, 64}};
  for (const Type &t : types)
    for (auto &sh : shapes)
      for (int warps : {1, 4, 8}) {
        int R = sh[0], C = sh[1];
        size_t n = size_t(R) * C * t.bytes;
        std::vector<uint8_t> x(n);
        for (auto &b : x)
          b = uint8_t(rng());
        auto xb = DeviceBuffer::fromHost(x);
        auto out = filled<uint8_t>(n, 0xA5), out8 = filled<uint8_t>(n, 0x5A);
        kernel("transposes",
               {{"T", t.name},
                {"R", std::to_string(R)},
                {"C", std::to_string(C)}},
               warps)
            .launch(Dim3(1), {Arg::ptr(xb, t.dtype), Arg::ptr(out, t.dtype),
                              Arg::ptr(out8, t.dtype)});
        Device::get().synchronize();
        auto g = out.toHost<uint8_t>(), g8 = out8.toHost<uint8_t>();
        for (int i = 0; i < C; ++i)
          for (int j = 0; j < R; ++j)
            for (size_t b = 0; b < t.bytes; ++b) {
              uint8_t want = x[(size_t(j) * C + i) * t.bytes + b];
              size_t at = (size_t(i) * R + j) * t.bytes + b;
              ASSERT_EQ(g[at], want) << t.name << " " << R << "x" << C << ", "
                                     << warps << " warps: out at " << i << ","
                                     << j;
              ASSERT_EQ(g8[at], want) << t.name << " " << R << "x" << C
                                      << ", " << warps << " warps: out8 at "
                                      << i << "," << j;
            }
      }
}

/// Values stored by other warps before barrier() are what the loads after
/// it see (tmp starts poisoned with -1; each program's block is its own).
TEST_F(TileOpsGpuTest, BarrierOrdersGlobalMemory) {
  const int B = 64, programs = 264, n = B * B * programs;
  std::vector<int32_t> x(n);
  for (auto &v : x)
    v = int32_t(rng() % 1000000);
  auto xb = DeviceBuffer::fromHost(x);
  auto tmp = filled<int32_t>(n, -1), y = filled<int32_t>(n, -1);
  for (int rep = 0; rep < 4; ++rep) {
    kernel("through_global")
        .launch(Dim3(programs), {Arg::ptr(xb, DType::I32),
                                 Arg::ptr(tmp, DType::I32),
                                 Arg::ptr(y, DType::I32)});
    Device::get().synchronize();
    auto g = y.toHost<int32_t>();
    for (int p = 0; p < programs; ++p)
      for (int r = 0; r < B; ++r)
        for (int c = 0; c < B; ++c)
          ASSERT_EQ(g[p * B * B + r * B + c], x[p * B * B + c * B + r] + 1)
              << "program " << p << " (" << r << ", " << c << "), rep " << rep;
    tmp = filled<int32_t>(n, -1);
    y = filled<int32_t>(n, -1);
  }
}

// @cluster(2): programs 2c and 2c + 1 form cluster c (ranks 0 and 1), on
// sm_90; a grid that is not a whole number of clusters is refused before
// anything runs, with the kernel's name and the grid.
TEST_F(TileOpsGpuTest, ClusterIdAndRank) {
  if (Device::get().computeMajor() < 9)
    GTEST_SKIP() << "thread block clusters need sm_90";
  const int programs = 6;
  auto out = filled<int32_t>(2 * programs, -1);
  Kernel &k = kernel("cluster_ids");
  k.launch(Dim3(programs), {Arg::ptr(out, DType::I32)});
  Device::get().synchronize();
  auto got = out.toHost<int32_t>();
  for (int p = 0; p < programs; ++p) {
    EXPECT_EQ(got[2 * p], p / 2) << "program " << p;
    EXPECT_EQ(got[2 * p + 1], p % 2) << "program " << p;
  }
  auto untouched = filled<int32_t>(2 * programs, -1);
  try {
    k.launch(Dim3(3), {Arg::ptr(untouched, DType::I32)});
    FAIL() << "a grid of 3 programs in clusters of 2 was launched";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("grid's x must be a multiple of 2, "
                                         "got 3"),
              std::string::npos)
        << e.what();
  }
  Device::get().synchronize();
  for (int32_t v : untouched.toHost<int32_t>())
    EXPECT_EQ(v, -1);
}

TEST_F(TileOpsGpuTest, DevicePrintOncePerElement) {
  std::vector<int32_t> x(8);
  for (int k = 0; k < 8; ++k)
    x[k] = 100 + k;
  auto xb = DeviceBuffer::fromHost(x);
  Kernel &k = kernel("printer");
  // vprintf's buffer reaches stdout at synchronization: capture fd 1.
  std::string path = ::testing::TempDir() + "sparsetile_device_print.txt";
  std::fflush(stdout);
  int saved = dup(1);
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0) << path;
  dup2(fd, 1);
  k.launch(Dim3(2), {Arg::ptr(xb, DType::I32)});
  Device::get().synchronize();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::map<std::string, int> lines;
  int total = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("pid (", 0) == 0) {
      ++lines[line];
      ++total;
    }
  std::remove(path.c_str());
  EXPECT_EQ(total, 16) << "one line per element and program";
  for (int p = 0; p < 2; ++p)
    for (int e = 0; e < 8; ++e) {
      std::ostringstream want;
      want << "pid (" << p << ", 0, 0) idx (" << e << ") v = " << 100 + e + p;
      EXPECT_EQ(lines[want.str()], 1) << "'" << want.str() << "'";
    }
}

} // namespace
