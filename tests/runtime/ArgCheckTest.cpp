//===- ArgCheckTest.cpp - Launch argument checks (no GPU) -----------------===//
//
// The argument checker runs before every launch; these tests call it
// directly, so they need no GPU: count, pointer vs scalar, scalar type,
// pointee type, 16-byte alignment and compiled-in divisibility, each with a
// message that names the parameter.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Kernel.h"

#include <gtest/gtest.h>

using namespace sparsetile;
using namespace sparsetile::rt;

namespace {

CompiledKernel addKernel() {
  CompiledKernel k;
  k.name = "add";
  k.params = {{"x", true, DType::F32, false},
              {"out", true, DType::BF16, false},
              {"n", false, DType::I32, false},
              {"stride", false, DType::I64, true},
              {"alpha", false, DType::F32, false}};
  return k;
}

/// The Error message of checkArguments, or "" when it accepts.
std::string check(std::initializer_list<Arg> args) {
  try {
    checkArguments(addKernel(), args.begin(), args.size());
    return "";
  } catch (const Error &e) {
    return e.what();
  }
}

const DevicePtr kAligned = 0x7f0000001000ull;

} // namespace

TEST(ArgCheck, AcceptsMatchingArguments) {
  float *x = reinterpret_cast<float *>(kAligned);
  EXPECT_EQ(
      check({x, Arg::ptr(kAligned + 256, DType::BF16), 100, int64_t(32), 0.5f}),
      "");
  // Untyped pointers are accepted for any pointee.
  EXPECT_EQ(check({Arg::untypedPtr(kAligned), Arg::untypedPtr(kAligned),
                   Arg::i32(7), Arg::i64(64), Arg::f32(1)}),
            "");
}

TEST(ArgCheck, WrongCount) {
  std::string m = check({Arg::untypedPtr(kAligned)});
  EXPECT_NE(m.find("takes 5 arguments"), std::string::npos) << m;
  EXPECT_NE(m.find("but 1 were given"), std::string::npos) << m;
  EXPECT_NE(m.find("n: i32"), std::string::npos) << m;
}

TEST(ArgCheck, WrongScalarType) {
  std::string m = check({Arg::untypedPtr(kAligned), Arg::untypedPtr(kAligned),
                         int64_t(100), Arg::i64(16), 0.5f});
  EXPECT_NE(m.find("parameter 2 'n' expects i32 but got i64 scalar 100"),
            std::string::npos)
      << m;
  m = check({Arg::untypedPtr(kAligned), Arg::untypedPtr(kAligned), 1,
             Arg::i64(16), 0.5});
  EXPECT_NE(m.find("'alpha' expects f32 but got f64"), std::string::npos) << m;
}

TEST(ArgCheck, PointerVersusScalar) {
  std::string m =
      check({kAligned, Arg::untypedPtr(kAligned), 1, Arg::i64(16), 0.5f});
  EXPECT_NE(m.find("'x' expects *f32 but got i64 scalar"), std::string::npos)
      << m;
  EXPECT_NE(m.find("Arg::ptr"), std::string::npos) << m; // The hint.
  m = check({Arg::untypedPtr(kAligned), Arg::untypedPtr(kAligned),
             Arg::untypedPtr(kAligned), Arg::i64(16), 0.5f});
  EXPECT_NE(m.find("'n' expects i32 but got untyped pointer"),
            std::string::npos)
      << m;
}

TEST(ArgCheck, WrongPointeeType) {
  double *x = reinterpret_cast<double *>(kAligned);
  std::string m = check({x, Arg::untypedPtr(kAligned), 1, Arg::i64(16), 0.5f});
  EXPECT_NE(m.find("'x' expects *f32 but got pointer to f64"),
            std::string::npos)
      << m;
  m = check({Arg::untypedPtr(kAligned), Arg::ptr(kAligned, DType::F16), 1,
             Arg::i64(16), 0.5f});
  EXPECT_NE(m.find("'out' expects *bf16 but got pointer to f16"),
            std::string::npos)
      << m;
}

TEST(ArgCheck, UnsignedAndSignedOfOneWidthMatch) {
  CompiledKernel k;
  k.name = "u";
  k.params = {{"p", true, DType::U32, false}, {"s", false, DType::U64, false}};
  auto run = [&](std::initializer_list<Arg> args) -> std::string {
    try {
      checkArguments(k, args.begin(), args.size());
      return "";
    } catch (const Error &e) {
      return e.what();
    }
  };
  uint32_t *pu = reinterpret_cast<uint32_t *>(kAligned);
  EXPECT_EQ(run({pu, Arg::u64(~uint64_t(0))}), "");
  EXPECT_EQ(run({Arg::ptr(kAligned, DType::I32), Arg::i64(-1)}), "");
  EXPECT_EQ(Arg::u64(~uint64_t(0)).bits(), ~uint64_t(0));
  EXPECT_EQ(Arg::u32(0xffffffffu).bits(), 0xffffffffull); // Not sign-extended.
  std::string m = run({Arg::ptr(kAligned, DType::U64), Arg::u64(1)});
  EXPECT_NE(m.find("'p' expects *u32 but got pointer to u64"),
            std::string::npos)
      << m;
  m = run({pu, Arg::u32(1)});
  EXPECT_NE(m.find("'s' expects u64 but got u32 scalar 1"), std::string::npos)
      << m;
  m = run({Arg::ptr(kAligned, DType::F32), Arg::u64(1)});
  EXPECT_NE(m.find("'p' expects *u32 but got pointer to f32"),
            std::string::npos)
      << m;
}

TEST(ArgCheck, MisalignedPointer) {
  std::string m = check({Arg::ptr(kAligned + 4, DType::F32),
                         Arg::untypedPtr(kAligned), 1, Arg::i64(16), 0.5f});
  EXPECT_NE(m.find("'x': pointer"), std::string::npos) << m;
  EXPECT_NE(m.find("not 16-byte aligned"), std::string::npos) << m;
}

TEST(ArgCheck, CompiledDivisibilityIsEnforced) {
  std::string m = check({Arg::untypedPtr(kAligned), Arg::untypedPtr(kAligned),
                         1, Arg::i64(17), 0.5f});
  EXPECT_NE(m.find("'stride' was compiled assuming a multiple of 16"),
            std::string::npos)
      << m;
}

TEST(ArgCheck, ArgValuesAndStorage) {
  Arg a = Arg::i32(-5);
  EXPECT_EQ(a.dtype(), DType::I32);
  EXPECT_EQ(a.intValue(), -5);
  EXPECT_EQ(*static_cast<int32_t *>(a.storage()), -5);
  Arg f = 2.5f;
  EXPECT_EQ(*static_cast<float *>(f.storage()), 2.5f);
  Arg h = Arg::bf16Bits(0x3f80);
  EXPECT_EQ(h.dtype(), DType::BF16);
  EXPECT_EQ(*static_cast<uint16_t *>(h.storage()), 0x3f80);
  Arg s = size_t(12);
  EXPECT_EQ(s.dtype(), DType::I64);
  Arg c = static_cast<const int32_t *>(nullptr);
  EXPECT_TRUE(c.isPointer());
  EXPECT_EQ(c.dtype(), DType::I32);
}

TEST(ArgCheck, SpecializationMask) {
  Kernel k("add", addKernel().params,
           [](uint32_t) -> std::unique_ptr<Kernel> { return nullptr; });
  // Integer params are n (bit 0) and stride (bit 1).
  std::vector<Arg> args = {Arg::untypedPtr(kAligned), Arg::untypedPtr(kAligned),
                           32, Arg::i64(48), 16.0f};
  EXPECT_EQ(k.divisibilityMask(args.data(), args.size()), 3u);
  args[2] = 33;
  EXPECT_EQ(k.divisibilityMask(args.data(), args.size()), 2u);
  args[3] = Arg::i64(0);
  EXPECT_EQ(k.divisibilityMask(args.data(), args.size()), 2u);
  args[3] = Arg::i64(-8);
  EXPECT_EQ(k.divisibilityMask(args.data(), args.size()), 0u);
  // A bad argument is reported before any variant is built.
  args[0] = Arg::ptr(kAligned + 8, DType::F32);
  EXPECT_THROW(k.launch(LaunchConfig(1), args), Error);
}

namespace {
/// A kernel `k(a: desc<bf16>, out: *f32)`, as the compiler declares it.
std::string checkDesc(std::initializer_list<Arg> args, bool tmaStore = false) {
  CompiledKernel k;
  k.name = "blocks";
  KernelParam a{"a", false, DType::BF16, false};
  a.isDescriptor = true;
  a.boxRows = 128;
  a.boxCols = 64;
  a.boxSwizzle = 128;
  a.tmaStore = tmaStore;
  k.params = {a, {"out", true, DType::F32, false}};
  try {
    checkArguments(k, args.begin(), args.size());
    return "";
  } catch (const Error &e) {
    return e.what();
  }
}
} // namespace

TEST(ArgCheck, TensorDescriptors) {
  Arg out = Arg::ptr(kAligned, DType::F32);
  EXPECT_EQ(checkDesc({Arg::tensor2d(kAligned, DType::BF16, 100, 60, 64), out}),
            "");
  auto has = [](const std::string &m, const char *what) {
    EXPECT_NE(m.find(what), std::string::npos) << m;
  };
  // A plain pointer where a tensor is declared, and the other way round.
  has(checkDesc({Arg::ptr(kAligned, DType::BF16), out}),
      "expects a desc<bf16> tensor (Arg::tensor2d)");
  has(checkDesc({Arg::tensor2d(kAligned, DType::BF16, 8, 8, 8),
                 Arg::tensor2d(kAligned, DType::F32, 8, 8, 8)}),
      "expects *f32");
  has(checkDesc({Arg::tensor2d(kAligned, DType::F16, 8, 8, 8), out}),
      "expects desc<bf16>");
  // TMA's alignment rules: a 16-byte aligned base, 16-byte row pitch.
  has(checkDesc({Arg::tensor2d(kAligned + 2, DType::BF16, 8, 8, 8), out}),
      "16-byte aligned");
  has(checkDesc({Arg::tensor2d(kAligned, DType::BF16, 8, 8, 12), out}),
      "multiple of 16 bytes");
  has(checkDesc({Arg::tensor2d(kAligned, DType::BF16, 8, 16, 8), out}),
      "cols <= ld");
  has(checkDesc({Arg::tensor2d(kAligned, DType::BF16, 0, 8, 8), out}),
      "1 to 2^31-1 rows");
  // A tensor written by a TMA store needs a width of whole 16-byte units:
  // 60 bf16 columns are read fine (above), but not stored.
  has(checkDesc({Arg::tensor2d(kAligned, DType::BF16, 100, 60, 64), out},
                /*tmaStore=*/true),
      "written by a TMA store (store_block), which needs a width of whole "
      "16-byte units (a multiple of 8 elements)");
  EXPECT_EQ(checkDesc({Arg::tensor2d(kAligned, DType::BF16, 100, 64, 64), out},
                      /*tmaStore=*/true),
            "");
}
