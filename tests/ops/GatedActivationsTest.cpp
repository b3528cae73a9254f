//===- GatedActivationsTest.cpp - SwiGLU/GEGLU against an f64 reference ---===//
//
// Runs the fused gated-activation kernels on the GPU for both dtypes, both
// layouts and all three activations, on ragged shapes and strided views, and
// compares with a float64 CPU reference. Outputs (and the padding between
// rows) are poisoned first: every element must be written, and nothing
// outside the rows may be.
//
//===----------------------------------------------------------------------===//

#include "HostFloat.h"
#include "sparsetile/ops/GatedActivations.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace sparsetile;
using namespace sparsetile::ops;
using sparsetile::test::bf16ToFloat;
using sparsetile::test::floatToBf16;
using sparsetile::test::floatToHalf;
using sparsetile::test::halfToFloat;

namespace {

constexpr uint16_t kPoison = 0xffff; // NaN in both bf16 and f16.

double act(Activation a, double g) {
  switch (a) {
  case Activation::SiLU:
    return g / (1 + std::exp(-g));
  case Activation::GELU:
    return 0.5 * g * (1 + std::erf(g / std::sqrt(2.0)));
  case Activation::GELUTanh:
    return 0.5 * g *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)));
  }
  return 0;
}

/// act'(g), by the closed forms (checked against central differences below).
double dact(Activation a, double g) {
  switch (a) {
  case Activation::SiLU: {
    double s = 1 / (1 + std::exp(-g));
    return s * (1 + g * (1 - s));
  }
  case Activation::GELU:
    return 0.5 * (1 + std::erf(g / std::sqrt(2.0))) +
           g * std::exp(-0.5 * g * g) / std::sqrt(2 * M_PI);
  case Activation::GELUTanh: {
    double k = std::sqrt(2 / M_PI);
    double t = std::tanh(k * (g + 0.044715 * g * g * g));
    return 0.5 * (1 + t) + 0.5 * g * (1 - t * t) * k * (1 + 3 * 0.044715 * g * g);
  }
  }
  return 0;
}

struct Case {
  DType dtype;
  Activation act;
  GluLayout layout;
  int64_t M, F, W, pad;
  int64_t block = 0; ///< GluProblem::blockColumns (0: automatic).
  int warps = 0;
};

std::string name(const Case &c) {
  const char *acts[] = {"silu", "gelu", "gelu_tanh"};
  return std::string(dtypeName(c.dtype)) + "_" + acts[int(c.act)] + "_" +
         (c.layout == GluLayout::Halves ? "halves" : "interleaved" + std::to_string(c.W)) +
         "_M" + std::to_string(c.M) + "_F" + std::to_string(c.F) + "_pad" +
         std::to_string(c.pad) +
         (c.block ? "_block" + std::to_string(c.block) + "w" +
                        std::to_string(c.warps)
                  : "");
}

class GluTest : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    std::string why;
    if (!rt::gpuAvailable(&why))
      GTEST_SKIP() << "no GPU: " << why;
  }
  float toF(uint16_t v) const {
    return GetParam().dtype == DType::BF16 ? bf16ToFloat(v) : halfToFloat(v);
  }
  uint16_t fromF(float v) const {
    return GetParam().dtype == DType::BF16 ? floatToBf16(v) : floatToHalf(v);
  }
  /// Column of g / u for output column c in h's layout.
  int64_t gcol(int64_t c) const {
    const Case &k = GetParam();
    return k.layout == GluLayout::Halves ? c : c + (c / k.W) * k.W;
  }
  int64_t ucol(int64_t c) const {
    const Case &k = GetParam();
    return k.layout == GluLayout::Halves ? c + k.F : gcol(c) + k.W;
  }
};

/// Relative error bound for a value rounded to the storage type, with a
/// little room for f32 math.
double tolerance(DType t) { return t == DType::BF16 ? 1.6e-2 : 2e-3; }

TEST_P(GluTest, ForwardAndBackwardMatchFloat64) {
  const Case &c = GetParam();
  std::mt19937 rng(std::random_device{}());
  unsigned seed = rng();
  SCOPED_TRACE("seed " + std::to_string(seed));
  rng.seed(seed);
  std::normal_distribution<float> dist(0.0f, 2.0f);

  int64_t strideH = 2 * c.F + c.pad, strideY = c.F + c.pad;
  std::vector<uint16_t> h(c.M * strideH), dy(c.M * strideY);
  for (auto &v : h)
    v = fromF(dist(rng));
  for (auto &v : dy)
    v = fromF(dist(rng));

  auto hBuf = rt::DeviceBuffer::fromHost(h);
  auto dyBuf = rt::DeviceBuffer::fromHost(dy);
  rt::DeviceBuffer yBuf(c.M * strideY * 2), dhBuf(c.M * strideH * 2);
  yBuf.fill(0xff);
  dhBuf.fill(0xff);

  GluProblem p{c.dtype, c.M, c.F, c.act, c.layout, c.W, c.block, c.warps};
  gluForward(p, hBuf.ptr(), strideH, yBuf.ptr(), strideY);
  gluBackward(p, hBuf.ptr(), strideH, dyBuf.ptr(), strideY, dhBuf.ptr(),
              strideH);
  rt::Device::get().synchronize();
  auto y = yBuf.toHost<uint16_t>();
  auto dh = dhBuf.toHost<uint16_t>();

  double tol = tolerance(c.dtype);
  int64_t bad = 0;
  auto check = [&](const char *what, int64_t r, int64_t col, uint16_t got,
                   double ref) {
    double g = toF(got);
    double err = std::fabs(g - ref);
    if (!(err <= tol * std::fabs(ref) + 1e-3) && bad++ < 5)
      ADD_FAILURE() << what << "[" << r << ", " << col << "] = " << g
                    << ", expected " << ref;
  };
  for (int64_t r = 0; r < c.M; ++r) {
    for (int64_t j = 0; j < c.F; ++j) {
      double g = toF(h[r * strideH + gcol(j)]), u = toF(h[r * strideH + ucol(j)]);
      double d = toF(dy[r * strideY + j]);
      check("y", r, j, y[r * strideY + j], act(c.act, g) * u);
      check("dg", r, gcol(j), dh[r * strideH + gcol(j)], d * u * dact(c.act, g));
      check("du", r, ucol(j), dh[r * strideH + ucol(j)], d * act(c.act, g));
    }
    // Padding past each row stays untouched.
    for (int64_t j = c.F; j < strideY; ++j)
      if (y[r * strideY + j] != kPoison && bad++ < 5)
        ADD_FAILURE() << "y padding written at [" << r << ", " << j << "]";
    for (int64_t j = 2 * c.F; j < strideH; ++j)
      if (dh[r * strideH + j] != kPoison && bad++ < 5)
        ADD_FAILURE() << "dh padding written at [" << r << ", " << j << "]";
  }
  EXPECT_EQ(bad, 0);
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType t : {DType::BF16, DType::F16})
    for (Activation a : {Activation::SiLU, Activation::GELU, Activation::GELUTanh}) {
      out.push_back({t, a, GluLayout::Halves, 1, 11, 64, 0});
      out.push_back({t, a, GluLayout::Halves, 3, 1000, 64, 8});
      out.push_back({t, a, GluLayout::Halves, 17, 4096, 64, 0});
      out.push_back({t, a, GluLayout::Halves, 5, 1025, 64, 3});
      out.push_back({t, a, GluLayout::Interleaved, 7, 2112, 64, 0});
      out.push_back({t, a, GluLayout::Interleaved, 2, 24, 8, 5});
      // The tiling large problems get (4096 columns, 8 warps), on a small one.
      out.push_back({t, a, GluLayout::Halves, 9, 5000, 64, 16, 4096, 8});
      out.push_back({t, a, GluLayout::Interleaved, 3, 8192, 64, 0, 4096, 8});
    }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Gated, GluTest, ::testing::ValuesIn(cases()),
                         [](const auto &info) { return name(info.param); });

// The closed-form derivatives used above agree with central differences.
TEST(GluReference, DerivativesMatchFiniteDifferences) {
  for (Activation a : {Activation::SiLU, Activation::GELU, Activation::GELUTanh})
    for (double g = -6; g <= 6; g += 0.37) {
      double h = 1e-5;
      double fd = (act(a, g + h) - act(a, g - h)) / (2 * h);
      EXPECT_NEAR(dact(a, g), fd, 1e-6) << "act " << int(a) << " at " << g;
    }
}

// Bad launches are errors, never launches: these need no GPU.
TEST(GluErrors, RejectsBadProblems) {
  GluProblem p{DType::F32, 4, 64, Activation::SiLU, GluLayout::Halves, 64};
  EXPECT_THROW(gluForward(p, 256, 128, 512, 64), rt::Error); // dtype
  p.dtype = DType::BF16;
  EXPECT_THROW(gluForward(p, 256, 100, 512, 64), rt::Error); // strideH < 2F
  EXPECT_THROW(gluForward(p, 256, 128, 512, 63), rt::Error); // strideY < F
  EXPECT_THROW(gluForward(p, 0, 128, 512, 64), rt::Error);   // null
  EXPECT_THROW(gluForward(p, 258, 128, 512, 64), rt::Error); // misaligned
  p.layout = GluLayout::Interleaved;
  p.interleaveWidth = 48;
  EXPECT_THROW(gluForward(p, 256, 128, 512, 64), rt::Error); // W not 2^k
  p.interleaveWidth = 128;
  EXPECT_THROW(gluBackward(p, 256, 128, 512, 64, 768, 128), rt::Error); // F % W
  p.layout = GluLayout::Halves;
  p.blockColumns = 3000;
  EXPECT_THROW(gluForward(p, 256, 128, 512, 64), rt::Error); // not 2^k
  p.blockColumns = 0;
  p.warps = 3;
  EXPECT_THROW(gluForward(p, 256, 128, 512, 64), rt::Error);
  p.warps = 0;
  try {
    p.interleaveWidth = 64;
    p.F = -1;
    gluForward(p, 256, 128, 512, 64);
    FAIL() << "expected an error";
  } catch (const rt::Error &e) {
    EXPECT_NE(std::string(e.what()).find("F = -1"), std::string::npos) << e.what();
  }
}

} // namespace
