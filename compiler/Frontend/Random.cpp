//===- Random.cpp - randint, rand and randn: Philox in the DSL ------------===//
//
// Emits the DSL's counter-based random numbers as a composition of the
// front end's own integer operators (no dialect op, no lowering): for every
// offset, Philox-4x32-10 (Salmon et al., SC'11) with
//   key     = (seed lo 32 bits, seed hi 32 bits)
//   counter = (offset lo 32 bits, offset hi 32 bits or 0, 0, 0)
// as Triton's tl.randint4x defines them, then Triton's maps from words to
// floats. The host's rt::randint4x (runtime/lib/Random.cpp) computes the
// same stream operation for operation; Language.md ("Random numbers") is
// the definition both follow.
//
// Going through MLIRGen::binary keeps the operand rules in one place (u32
// words, logical shifts, broadcasting of the scalar key against the offset
// tile) and folds what is known at compile time: the zero counter words of
// the first round and a constant seed's key schedule.
//
//===----------------------------------------------------------------------===//

#include "Frontend/MLIRGenImpl.h"

using namespace mlir;
using namespace sparsetile;
using namespace sparsetile::mlirgen;

namespace {

// Philox-4x32's round multipliers and Weyl key increments.
constexpr int64_t kRoundA = 0xD2511F53, kRoundB = 0xCD9E8D57;
constexpr int64_t kKeyA = 0x9E3779B9, kKeyB = 0xBB67AE85;

/// The arithmetic of one expansion, on u32 and u64 values.
struct Philox {
  MLIRGen &g;
  Loc loc;

  Type u32() { return g.b.getI32Type(); }
  Type u64() { return g.b.getI64Type(); }
  TV k32(int64_t v) { return g.constInt(v, u32(), loc, true); }
  TV op(const char *o, TV a, TV c) { return g.binary(o, a, c, loc); }
  TV to32(TV x) { return g.castTo(x, u32(), loc, true); }
  TV to64(TV x) { return g.castTo(x, u64(), loc, true); }

  /// The high word of the 64-bit product of two u32 values (the product of
  /// their zero-extensions, shifted: the backend selects mul.hi.u32).
  TV mulhi(TV a, TV c) {
    return to32(
        op(">>", op("*", to64(a), to64(c)), g.constInt(32, u64(), loc, true)));
  }

  /// Ten rounds; returns the four output words.
  std::array<TV, 4> rounds(std::array<TV, 4> c, TV k0, TV k1) {
    for (int r = 0; r < 10 && !g.failed(); ++r) {
      TV c0 = c[0], c2 = c[2];
      c[0] = op("^", op("^", mulhi(k32(kRoundB), c2), c[1]), k0);
      c[2] = op("^", op("^", mulhi(k32(kRoundA), c0), c[3]), k1);
      c[1] = op("*", k32(kRoundB), c2);
      c[3] = op("*", k32(kRoundA), c0);
      if (r < 9) { // The last round's key is not used.
        k0 = op("+", k0, k32(kKeyA));
        k1 = op("+", k1, k32(kKeyB));
      }
    }
    return c;
  }

  /// Triton's uint_to_uniform_float for u32 words: the bits as i32 x,
  /// x < 0 ? -x - 1 : x (written x ^ (x >> 31): the same), times
  /// 4.6566127342e-10 in f32. In [0, 1).
  TV uniform(TV w) {
    TV x = g.castTo(w, u32(), loc, false); // The same bits, read as i32.
    x = op("^", x, op(">>", x, g.constInt(31, u32(), loc)));
    TV f = g.castTo(x, g.b.getF32Type(), loc);
    return op("*", f, g.constFloat(4.6566127342e-10, g.b.getF32Type(), loc));
  }
};

/// A scalar or tile of integers of 32 or 64 bits, else a located error.
bool checkInteger(MLIRGen &g, const TV &x, Loc at, const char *what,
                  bool scalar) {
  Type e = g.elt(x.v);
  bool ok = g.isInt(e) && (e.isInteger(32) || e.isInteger(64));
  if (ok && !(scalar && isa<RankedTensorType>(x.v.getType())))
    return true;
  g.fail(at, std::string(what) + " must be " +
                 (scalar ? "a scalar" : "a scalar or tile of") +
                 " i32, u32, i64 or u64, got " + g.typeOf(x));
  return false;
}

} // namespace

TV MLIRGen::random(const std::string &fn, TV seed, Loc seedLoc, TV offsets,
                   Loc offsetsLoc, Loc loc, int64_t word) {
  if (!checkInteger(*this, seed, seedLoc, (fn + "'s seed").c_str(), true) ||
      !checkInteger(*this, offsets, offsetsLoc, (fn + "'s offsets").c_str(),
                    false))
    return TV{};
  Philox p{*this, loc};
  // 1. The key: the seed widened to 64 bits by its own signedness (a
  // literal seed is i32 or i64, as literals are), then split.
  TV s64 = p.to64(seed);
  TV k0 = p.to32(s64);
  TV k1 = p.to32(p.op(">>", s64, constInt(32, b.getI64Type(), loc, true)));
  // 2. The counter: the offsets' low word, their high word when they have
  // 64 bits (else 0), then two zero words.
  bool wide = elt(offsets.v).isInteger(64);
  TV lo = p.to32(offsets);
  TV hi = wide ? p.to32(p.op(">>", p.to64(offsets),
                             constInt(32, b.getI64Type(), loc, true)))
               : p.k32(0);
  std::array<TV, 4> w = p.rounds({lo, hi, p.k32(0), p.k32(0)}, k0, k1);
  if (failed())
    return TV{};
  // A constant offset still draws a value of the offsets' shape.
  auto fit = [&](TV x) { return broadcastTo(x, shape(offsets.v), loc); };
  // Calls at the same (seed, offsets) emit the same operations, which CSE
  // merges: the four words of one offset cost one expansion.
  if (fn == "randint")
    return fit(w[word]);
  if (fn == "rand")
    return fit(p.uniform(w[0]));
  // 3. randn: Box-Muller on words 0 and 1, the cosine branch (Triton's
  // pair_uniform_to_normal, first result).
  Type f32 = b.getF32Type();
  Location l = mloc(loc);
  auto k = [&](double v, const TV &like) {
    return broadcastTo(constFloat(v, f32, loc), shape(like.v), loc);
  };
  TV u1 = p.uniform(w[0]), u2 = p.uniform(w[1]);
  u1 = fit(u1);
  u2 = fit(u2);
  TV lower = k(1.0e-7, u1);
  u1.v = b.create<arith::MaximumFOp>(l, lower.v, u1.v);
  TV th = p.op("*", k(6.283185307179586, u2), u2);
  TV lg{b.create<math::LogOp>(l, u1.v)};
  TV r{b.create<math::SqrtOp>(l, p.op("*", k(-2.0, lg), lg).v)};
  TV cs{b.create<math::CosOp>(l, th.v)};
  return p.op("*", r, cs);
}
