//===- Random.h - The DSL's random stream, on the host ----------*- C++ -*-===//
//
// The counter-based random numbers of the DSL's `randint`, `rand` and
// `randn` builtins (Language.md, "Random numbers"), computed on the CPU, so
// that a test or a user can rebuild any mask a kernel drew from its
// (seed, offset). Header-light: no CUDA, no MLIR.
//
// The stream is Philox-4x32-10 (Salmon et al., SC'11; Random123's
// philox4x32 with 10 rounds), used as Triton's tl.randint4x uses it:
//   key     = (seed & 0xffffffff, seed >> 32)
//   counter = (offset & 0xffffffff, offset >> 32, 0, 0)
// where a 32-bit DSL seed is first widened to 64 bits by its own signedness
// (an i32 seed sign-extends, a u32 zero-extends) and a 32-bit DSL offset o
// is the 64-bit offset uint32_t(o) (its high counter word is 0).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_RANDOM_H
#define SPARSETILE_RUNTIME_RANDOM_H

#include <array>
#include <cstdint>

namespace sparsetile::rt {

/// Philox-4x32 with `rounds` rounds of `counter` under `key`.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key,
                                   int rounds = 10);

/// The DSL's randint4x(seed, offset): the four words of Philox-4x32-10 for
/// key (seed lo, seed hi) and counter (offset lo, offset hi, 0, 0).
std::array<uint32_t, 4> randint4x(uint64_t seed, uint64_t offset);

/// The DSL's randint(seed, offset): word 0 of randint4x.
uint32_t randint(uint64_t seed, uint64_t offset);

/// Triton's uint_to_uniform_float for 32-bit words: the bits read as an
/// i32 x, x = x < 0 ? -x - 1 : x (so 0 <= x < 2^31), then
/// f32(x) * f32(4.6566127342e-10), all in f32 round-to-nearest. The result
/// lies in [0, 1) (the largest x maps below 1.0).
float uintToUniformFloat(uint32_t bits);

/// The DSL's rand(seed, offset) = uintToUniformFloat(randint(seed, offset)),
/// bit for bit the device's value.
float rand(uint64_t seed, uint64_t offset);

/// The DSL's randn(seed, offset): Box-Muller on words 0 and 1 of randint4x,
/// u1 = max(1e-7, uniform(w0)), u2 = uniform(w1),
/// n = sqrt(-2 log u1) * cos(2 pi u2). Computed in f32 like the device, but
/// the device's log/cos/sqrt may differ from the host's by a few ulp: compare
/// with a tolerance (1e-5 relative is ample).
float randn(uint64_t seed, uint64_t offset);

} // namespace sparsetile::rt

#endif // SPARSETILE_RUNTIME_RANDOM_H
