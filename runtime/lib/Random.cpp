//===- Random.cpp - The DSL's random stream, on the host ------------------===//
//
// Implements Random.h: Philox-4x32-10 and the maps from its words to the
// DSL's randint/rand/randn, operation for operation as the front end's
// Random.cpp emits them, so that the integer and `rand` results are equal to
// the device's bit for bit.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Random.h"

#include <algorithm>
#include <cmath>

using namespace sparsetile;

namespace {
// Philox-4x32's multipliers and Weyl key increments (Salmon et al., Table 2).
constexpr uint32_t kRoundA = 0xD2511F53u, kRoundB = 0xCD9E8D57u;
constexpr uint32_t kKeyA = 0x9E3779B9u, kKeyB = 0xBB67AE85u;

// The device multiplies by the f32 nearest to the decimal, by way of a
// double (MLIR's FloatAttr): the same f32 as the literal here.
static_assert(float(4.6566127342e-10) == 4.6566127342e-10f);

uint32_t mulhi(uint32_t a, uint32_t b) {
  return uint32_t((uint64_t(a) * uint64_t(b)) >> 32);
}
} // namespace

std::array<uint32_t, 4> rt::philox4x32(std::array<uint32_t, 4> c,
                                       std::array<uint32_t, 2> k, int rounds) {
  for (int r = 0; r < rounds; ++r) {
    uint32_t c0 = c[0], c2 = c[2];
    c[0] = mulhi(kRoundB, c2) ^ c[1] ^ k[0];
    c[2] = mulhi(kRoundA, c0) ^ c[3] ^ k[1];
    c[1] = kRoundB * c2;
    c[3] = kRoundA * c0;
    k[0] += kKeyA;
    k[1] += kKeyB;
  }
  return c;
}

std::array<uint32_t, 4> rt::randint4x(uint64_t seed, uint64_t offset) {
  return philox4x32({uint32_t(offset), uint32_t(offset >> 32), 0, 0},
                    {uint32_t(seed), uint32_t(seed >> 32)});
}

uint32_t rt::randint(uint64_t seed, uint64_t offset) {
  return randint4x(seed, offset)[0];
}

float rt::uintToUniformFloat(uint32_t bits) {
  int32_t x = int32_t(bits);
  // -x - 1 == ~x, without the overflow of -INT32_MIN.
  int32_t folded = x < 0 ? ~x : x;
  return float(folded) * 4.6566127342e-10f;
}

float rt::rand(uint64_t seed, uint64_t offset) {
  return uintToUniformFloat(randint(seed, offset));
}

float rt::randn(uint64_t seed, uint64_t offset) {
  std::array<uint32_t, 4> w = randint4x(seed, offset);
  float u1 = std::max(1.0e-7f, uintToUniformFloat(w[0]));
  float u2 = uintToUniformFloat(w[1]);
  float th = 6.283185307179586f * u2;
  float r = std::sqrt(-2.0f * std::log(u1));
  return r * std::cos(th);
}
