//===- HostFloat.h - bf16/f16 conversions on the host -----------*- C++ -*-===//
//
// Round-to-nearest-even conversions between float and the 16-bit formats,
// for building test inputs and reading results on the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TESTS_HOSTFLOAT_H
#define SPARSETILE_TESTS_HOSTFLOAT_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace sparsetile::test {

inline uint16_t floatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f))
    return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

inline float bf16ToFloat(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(float(man), -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(float(man | 0x400), int(exp) - 25);
  return sign ? -v : v;
}

inline uint16_t floatToHalf(float f) {
  // Exhaustive search-free RNE via double rounding through the exponent.
  if (std::isnan(f))
    return 0x7e00;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (a >= 65520.0f)
    return sign | 0x7c00;
  if (a < std::ldexp(1.0f, -24) * 0.5f)
    return sign;
  int e;
  std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  int exp = e - 1;   // a = 1.x * 2^exp
  if (exp < -14) {   // subnormal: quantum 2^-24
    float q = std::nearbyint(std::ldexp(a, 24));
    return sign | uint16_t(q);
  }
  float q = std::nearbyint(std::ldexp(a, 10 - exp)); // 1024..2048
  if (q >= 2048.0f) {
    q /= 2;
    ++exp;
  }
  if (exp > 15)
    return sign | 0x7c00;
  return sign | uint16_t((exp + 15) << 10) | (uint16_t(q) & 0x3ff);
}

} // namespace sparsetile::test

#endif // SPARSETILE_TESTS_HOSTFLOAT_H
