//===- RandomTest.cpp - The host Philox stream ----------------------------===//
//
// Checks rt::philox4x32 against Random123's published known-answer vectors
// for philox4x32 with 10 rounds (kat_vectors), and the maps the DSL's
// randint/rand/randn put on it: which words of the counter the offset fills,
// the range of rand, and randn's first two moments. The device side is
// compared with this stream bit for bit in tests/gpu/RandomGpuTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Random.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace sparsetile::rt;
using Words = std::array<uint32_t, 4>;

TEST(Philox4x32, Random123KnownAnswers) {
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (Words{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}),
            (Words{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (Words{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox4x32, SeedAndOffsetFillKeyAndCounter) {
  uint64_t seed = 0xa4093822299f31d0ull, offset = 0x0123456789abcdefull;
  EXPECT_EQ(randint4x(seed, offset), philox4x32({0x89abcdef, 0x01234567, 0, 0},
                                                {0x299f31d0, 0xa4093822}));
  EXPECT_EQ(randint(seed, offset), randint4x(seed, offset)[0]);
  // A 32-bit offset is its zero-extended value: the high counter word is 0.
  EXPECT_EQ(randint4x(7, uint32_t(-5)),
            philox4x32({0xfffffffb, 0, 0, 0}, {7, 0}));
  EXPECT_NE(randint(7, uint32_t(-5)), randint(7, uint64_t(-5)));
}

TEST(Philox4x32, UniformFloatRange) {
  // The fold x < 0 ? -x - 1 : x maps both halves of the words onto [0, 2^31).
  EXPECT_EQ(uintToUniformFloat(0), 0.0f);
  EXPECT_EQ(uintToUniformFloat(0xffffffffu), 0.0f);
  EXPECT_LT(uintToUniformFloat(0x7fffffffu), 1.0f);
  EXPECT_LT(uintToUniformFloat(0x80000000u), 1.0f);
  // 2^30 scaled by a little less than 2^-31: just below 0.5.
  EXPECT_EQ(uintToUniformFloat(0x40000000u), 0.5f * (1 - 0x1p-24f));
  for (uint64_t o = 0; o < 4096; ++o) {
    float u = rand(42, o);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ASSERT_EQ(u, uintToUniformFloat(randint(42, o)));
  }
}

TEST(Philox4x32, RandnMoments) {
  const int n = 200000;
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    double x = randn(0x5eed, uint64_t(i));
    s += x;
    s2 += x * x;
  }
  double mean = s / n, var = s2 / n - mean * mean;
  // Standard errors: 1/sqrt(n) = 0.0022 for the mean, sqrt(2/n) = 0.0032
  // for the variance; 6 sigma.
  EXPECT_NEAR(mean, 0.0, 0.014);
  EXPECT_NEAR(var, 1.0, 0.02);
}
