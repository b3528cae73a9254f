//===- AttentionSm80GpuTest.cpp - Attention's chained ring as sm_80 PTX ---===//
//
// The fused-attention port (bench/triton_parity/kernels/attention.tile, the
// Triton tutorial's design) compiled for sm_80, where its key loop takes the
// pointer ring read by mma.sync (PipelineChain.cpp with mma_sync: S = Q K^T
// from a Q held in registers, P from the accumulator of S, both
// synchronous), and run as PTX that the driver JIT-compiles for this GPU.
// Checked against a float64 softmax(Q K^T * scale) V of the same f16
// inputs, with the log-sum-exp, for D 64 and 128, full and causal, N not a
// multiple of the block. Outputs are poisoned.
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "GpuTest.h"
#include "HostFloat.h"
#include "SourceTree.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/JIT.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <sstream>

using namespace sparsetile;
using namespace sparsetile::rt;
using sparsetile::test::floatToHalf;
using sparsetile::test::halfToFloat;

namespace {

struct AttnCase {
  int64_t d, bn, n;
  bool causal;
};

std::string name(const AttnCase &c) {
  return "D" + std::to_string(c.d) + "_BN" + std::to_string(c.bn) + "_N" +
         std::to_string(c.n) + (c.causal ? "_causal" : "_full");
}

using AttentionSm80Test = sparsetile::testing::GpuParamTest<AttnCase>;

TEST_P(AttentionSm80Test, MatchesFloat64) {
  const AttnCase &c = GetParam();
  const int64_t H = 2, BM = 128;
  std::string path = sparsetile::testing::sourcePath(
      "bench/triton_parity/kernels/attention.tile");
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  CompileOptions co;
  co.arch = "sm_80";
  co.numWarps = 8;
  co.constants = {{"D", std::to_string(c.d)},
                  {"BM", std::to_string(BM)},
                  {"BN", std::to_string(c.bn)},
                  {"CAUSAL", c.causal ? "1" : "0"}};
  if (c.n % 16 == 0)
    co.divisibleBy16 = {"N_CTX"};
  CompileResult r = compile(text.str(), path, "attn_fwd", co);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  // The chained ring on mma.sync, not the staged fallback.
  ASSERT_NE(r.kernel.ptx.find("cp.async.mbarrier.arrive.noinc"),
            std::string::npos);
  ASSERT_NE(r.kernel.ptx.find("ldmatrix"), std::string::npos);
  Kernel k(r.kernel, Module::fromPtx(r.kernel.ptx));

  std::mt19937_64 rng(sparsetile::testing::testSeed() ^
                      std::hash<std::string>()(name(c)));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t elems = H * c.n * c.d;
  std::vector<uint16_t> q(elems), kk(elems), v(elems);
  for (auto *t : {&q, &kk, &v})
    for (auto &x : *t)
      x = floatToHalf(dist(rng));
  auto qBuf = DeviceBuffer::fromHost(q), kBuf = DeviceBuffer::fromHost(kk),
       vBuf = DeviceBuffer::fromHost(v);
  DeviceBuffer oBuf(elems * 2), lseBuf(H * c.n * 4);
  oBuf.fill(0xff);
  lseBuf.fill(0xff);
  const float scale = 1.0f / std::sqrt(float(c.d));
  k.launch(Dim3(unsigned((c.n + BM - 1) / BM), unsigned(H)),
           {Arg::ptr(qBuf.ptr(), DType::F16), Arg::ptr(kBuf.ptr(), DType::F16),
            Arg::ptr(vBuf.ptr(), DType::F16), Arg::ptr(oBuf.ptr(), DType::F16),
            Arg::ptr(lseBuf.ptr(), DType::F32), Arg::f32(scale),
            Arg::i32(int32_t(c.n))});
  Device::get().synchronize();
  auto o = oBuf.toHost<uint16_t>();
  auto lse = lseBuf.toHost<float>();

  int bad = 0;
  std::vector<double> s(c.n);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < c.n; ++i) {
      const int64_t base = h * c.n * c.d;
      int64_t keys = c.causal ? i + 1 : c.n;
      double mx = -INFINITY;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t x = 0; x < c.d; ++x)
          dot += double(halfToFloat(q[base + i * c.d + x])) *
                 halfToFloat(kk[base + j * c.d + x]);
        s[j] = dot * scale;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < keys; ++j)
        sum += std::exp(s[j] - mx);
      // The port's lse is log2-based: m + log2(l) in units of log2(e) x.
      double lseRef = (mx + std::log(sum)) / std::log(2.0);
      double gotLse = lse[h * c.n + i];
      if (!(std::fabs(gotLse - lseRef) <= 1e-3 * std::fabs(lseRef) + 1e-3) &&
          bad++ < 5)
        ADD_FAILURE() << "lse[" << h << ", " << i << "] = " << gotLse
                      << ", expected " << lseRef;
      for (int64_t x = 0; x < c.d; ++x) {
        double ref = 0;
        for (int64_t j = 0; j < keys; ++j)
          ref += std::exp(s[j] - mx) / sum * halfToFloat(v[base + j * c.d + x]);
        double got = halfToFloat(o[base + i * c.d + x]);
        // f16 output, P rounded to f16 before P V: 1e-2 absolute on values
        // of magnitude up to 1.
        if (!(std::fabs(got - ref) <= 1e-2) && bad++ < 5)
          ADD_FAILURE() << "O[" << h << ", " << i << ", " << x << "] = " << got
                        << ", expected " << ref;
      }
    }
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(AttentionRing, AttentionSm80Test,
                         ::testing::Values(AttnCase{64, 64, 300, false},
                                           AttnCase{64, 64, 400, true},
                                           AttnCase{128, 32, 384, false},
                                           AttnCase{128, 64, 272, true}),
                         [](const auto &info) { return name(info.param); });

} // namespace
