//===- JITTest.cpp - JIT layer tests with injected compiler hooks ---------===//
//
// Drives the JIT with a fake compiler (CompilerHooks) that emits tiny valid
// PTX, so kernel lookup, cache keys per variant, divisibility
// specialization, cubin building, the disk-warm path and the handle-table
// hot path are tested without the tile compiler and without a GPU.
//
//===----------------------------------------------------------------------===//

#include "ScopedEnv.h"
#include "sparsetile/runtime/JIT.h"
#include "sparsetile/runtime/JitLink.h"
#include "sparsetile/runtime/Log.h"
#include "sparsetile/runtime/NVRTC.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>
#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;
namespace fs = std::filesystem;

namespace {

/// Records what the fake compiler was asked to do.
struct FakeCompiler {
  int compiles = 0;
  std::vector<CompileOptions> seen;

  static std::vector<KernelParam> addParams() {
    return {{"x", true, DType::F32, false},
            {"n", false, DType::I32, false},
            {"m", false, DType::I64, false}};
  }

  CompilerHooks hooks() {
    CompilerHooks h;
    h.compile = [this](const std::string &source, const std::string &,
                       const std::string &kernelName,
                       const CompileOptions &options) {
      ++compiles;
      seen.push_back(options);
      CompileResult r;
      if (source.find("syntax error") != std::string::npos) {
        r.diagnostics = "f.tile:1:1: error: syntax error";
        return r;
      }
      r.ok = true;
      if (source.find("slow") != std::string::npos)
        r.remarks.push_back({"scalar-access", "load issued narrow",
                             "slow.tile", 2, 11,
                             "slow.tile:2:11: remark: [scalar-access] load "
                             "issued narrow\n"});
      r.kernel.name = kernelName;
      r.kernel.arch = options.arch;
      r.kernel.numThreads = 128;
      r.kernel.params = addParams();
      for (KernelParam &p : r.kernel.params) {
        p.divisibleBy16 = std::count(options.divisibleBy16.begin(),
                                     options.divisibleBy16.end(), p.name) > 0;
        p.equalToOne = std::count(options.equalToOne.begin(),
                                  options.equalToOne.end(), p.name) > 0;
      }
      // Valid PTX so nvJitLink can assemble it.
      r.kernel.ptx = ".version 8.0\n.target " + options.arch +
                     "\n.address_size 64\n.visible .entry " + kernelName +
                     "(.param .u64 x, .param .u32 n, .param .u64 m) { ret; }\n";
      return r;
    };
    h.listKernels = [](const std::string &source, const std::string &,
                       std::vector<KernelSignature> &kernels,
                       std::string &diagnostics, const Constants &) {
      if (source.find("syntax error") != std::string::npos) {
        diagnostics = "f.tile:1:1: error: syntax error";
        return false;
      }
      kernels = {{"add", addParams(), {}}, {"other", {}, {}}};
      return true;
    };
    h.compilerVersion = "test-compiler";
    h.toolchainVersion = "test-toolchain";
    return h;
  }
};

class JITTest : public ::testing::Test {
protected:
  /// These tests are about nvJitLink's cubins, whatever the environment
  /// says (SPARSETILE_ASSEMBLER=driver leaves kernels to the driver).
  sparsetile::test::ScopedUnsetEnv assembler{"SPARSETILE_ASSEMBLER"};
  void SetUp() override {
    std::string why;
    if (!jitLinkAvailable(&why))
      GTEST_SKIP() << why;
    dir = fs::temp_directory_path() /
          ("sparsetile-jit-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  JITConfig config(FakeCompiler &fake) {
    JITConfig c;
    c.cache.directory = dir.string();
    c.cache.enabled = true;
    c.hooks = fake.hooks();
    return c;
  }

  fs::path dir;
  KernelSource src = KernelSource::fromText("kernel add(...) {}", "add.tile");
  JITOptions sm90 = [] {
    JITOptions o;
    o.arch = "sm_90";
    return o;
  }();
};

} // namespace

TEST_F(JITTest, InspectBuildsPtxAndCubinAndCaches) {
  FakeCompiler fake;
  JIT jit(config(fake));
  Artifacts a = jit.inspect(src, "add", {{"BLOCK", "128"}}, sm90);
  EXPECT_EQ(a.kernel.name, "add");
  EXPECT_EQ(a.kernel.arch, "sm_90");
  EXPECT_NE(a.kernel.ptx.find(".entry add"), std::string::npos);
  ASSERT_GE(a.cubin.size(), 4u);
  EXPECT_EQ(a.cubin.substr(1, 3), "ELF");
  EXPECT_EQ(fake.compiles, 1);
  EXPECT_EQ(fake.seen[0].constants.at("BLOCK"), "128");

  // Memory hit.
  Artifacts b = jit.inspect(src, "add", {{"BLOCK", "128"}}, sm90);
  EXPECT_EQ(fake.compiles, 1);
  EXPECT_EQ(b.key, a.key);
  EXPECT_EQ(jit.cache().stats().memoryHits, 1u);

  // Disk hit from a new JIT (a warm process).
  FakeCompiler fake2;
  JIT jit2(config(fake2));
  Artifacts c = jit2.inspect(src, "add", {{"BLOCK", "128"}}, sm90);
  EXPECT_EQ(fake2.compiles, 0);
  EXPECT_EQ(jit2.cache().stats().diskHits, 1u);
  EXPECT_EQ(c.cubin, a.cubin);
  EXPECT_EQ(c.kernel.ptx, a.kernel.ptx);

  // Each key input makes a new compile.
  jit.inspect(src, "add", {{"BLOCK", "256"}}, sm90);
  JITOptions o = sm90;
  o.arch = "sm_80";
  jit.inspect(src, "add", {{"BLOCK", "128"}}, o);
  o = sm90;
  o.numWarps = 8;
  jit.inspect(src, "add", {{"BLOCK", "128"}}, o);
  jit.inspect(src, "add", {{"BLOCK", "128"}}, sm90, {"n"});
  jit.inspect(KernelSource::fromText("kernel add(...) { }"), "add",
              {{"BLOCK", "128"}}, sm90);
  EXPECT_EQ(fake.compiles, 6);
  EXPECT_EQ(fake.seen.back().arch, "sm_90");
  EXPECT_EQ(fake.seen[4].divisibleBy16, std::vector<std::string>{"n"});
}

// SPARSETILE_ASSEMBLER=driver leaves every kernel's PTX to the driver (a
// whole-program assembly at load): no cubin, and a cache key of its own, so
// that a process with it never loads a cubin nvJitLink assembled.
TEST_F(JITTest, DriverAssemblerStoresPtxOnlyUnderItsOwnKey) {
  EXPECT_TRUE(JITConfig::buildCubinFromEnvironment());
  setenv("SPARSETILE_ASSEMBLER", "driver", 1);
  bool driver = !JITConfig::buildCubinFromEnvironment();
  FakeCompiler fake;
  JIT jit(config(fake));
  unsetenv("SPARSETILE_ASSEMBLER");
  EXPECT_TRUE(driver);
  EXPECT_FALSE(jit.config().buildCubin);
  Artifacts a = jit.inspect(src, "add", {{"BLOCK", "128"}}, sm90);
  EXPECT_TRUE(a.cubin.empty());

  FakeCompiler fake2;
  JIT linked(config(fake2));
  EXPECT_TRUE(linked.config().buildCubin);
  Artifacts b = linked.inspect(src, "add", {{"BLOCK", "128"}}, sm90);
  EXPECT_FALSE(b.cubin.empty());
  EXPECT_NE(a.key, b.key);
  EXPECT_EQ(fake2.compiles, 1); // Not the driver entry from the disk.
}

// SPARSETILE_ASSEMBLER picks how the JIT assembles PTX, and each mode has
// cache keys of its own (a process never loads another mode's entry):
// - unset: nvJitLink, and the driver's whole-program assembly for a kernel
//   nvJitLink's registers hold to one block an SM;
// - nvjitlink: every kernel through nvJitLink;
// - occupancy: nvJitLink, reassembled with `.minnctapersm` where registers
//   cost a block (opt-in: it halves one 2:4 helper);
// - driver: the driver for every kernel (DriverAssemblerStoresPtxOnly...).
TEST_F(JITTest, AssemblerModesFollowTheEnvironment) {
  struct Mode {
    const char *value;
    bool cubin, raise, oneBlock;
  };
  const Mode modes[] = {{nullptr, true, false, true},
                        {"nvjitlink", true, false, false},
                        {"occupancy", true, true, false},
                        {"driver", false, false, true}};
  std::set<std::string> keys;
  for (const Mode &m : modes) {
    if (m.value)
      setenv("SPARSETILE_ASSEMBLER", m.value, 1);
    bool cubin = JITConfig::buildCubinFromEnvironment();
    bool raise = JITConfig::raiseOccupancyFromEnvironment();
    bool oneBlock = JITConfig::wholeProgramForOneBlockFromEnvironment();
    FakeCompiler fake;
    JIT jit(config(fake));
    unsetenv("SPARSETILE_ASSEMBLER");
    std::string label = m.value ? m.value : "(unset)";
    EXPECT_EQ(cubin, m.cubin) << label;
    EXPECT_EQ(raise, m.raise) << label;
    EXPECT_EQ(oneBlock, m.oneBlock) << label;
    EXPECT_EQ(jit.config().raiseOccupancy, m.raise) << label;
    EXPECT_EQ(jit.config().wholeProgramForOneBlock, m.oneBlock) << label;
    keys.insert(jit.inspect(src, "add", {{"BLOCK", "128"}}, sm90).key.hex());
  }
  EXPECT_EQ(keys.size(), std::size(modes));
}

// The A/B switches of the environment, each off only at "0":
// SPARSETILE_VECTOR_ATOMICS=0 asks every JIT compile for scalar reds (the
// layer norm backward's switch), SPARSETILE_FP_FUSION=0 for each float
// multiply and add rounded as written (nvcc's --fmad=false, Triton's
// enable_fp_fusion=False).
TEST_F(JITTest, SwitchesFollowTheEnvironment) {
  const std::pair<const char *, int CodegenOptions::*> switches[] = {
      {"SPARSETILE_VECTOR_ATOMICS", &CodegenOptions::vectorAtomics},
      {"SPARSETILE_FP_FUSION", &CodegenOptions::fpFusion},
      {"SPARSETILE_FTZ", &CodegenOptions::ftz}};
  for (auto [name, field] : switches) {
    CodegenOptions o;
    applyEnvironmentOptions(o);
    EXPECT_EQ(o.*field, 1) << name;
    setenv(name, "0", 1);
    CodegenOptions off;
    applyEnvironmentOptions(off);
    setenv(name, "1", 1);
    CodegenOptions on;
    applyEnvironmentOptions(on);
    unsetenv(name);
    EXPECT_EQ(off.*field, 0) << name;
    EXPECT_EQ(on.*field, 1) << name;
    EXPECT_FALSE(off.sameCodegen(on)) << name;
  }
}

TEST_F(JITTest, CompileErrorsCarryDiagnostics) {
  FakeCompiler fake;
  JIT jit(config(fake));
  KernelSource bad = KernelSource::fromText("syntax error", "bad.tile");
  try {
    jit.inspect(bad, "add", {}, sm90);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("error: syntax error"),
              std::string::npos);
  }
  EXPECT_THROW(jit.get(bad, "add", {}, sm90), Error);
  try {
    jit.get(src, "nope", {}, sm90);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("declares: add, other"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(JITTest, RemarksComeWithTheKernelAndWerrorPerfFails) {
  FakeCompiler fake;
  JIT jit(config(fake));
  KernelSource slow = KernelSource::fromText("slow kernel", "slow.tile");
  Artifacts a = jit.inspect(slow, "add", {}, sm90);
  ASSERT_EQ(a.kernel.remarks.size(), 1u);
  EXPECT_EQ(a.kernel.remarks[0].kind, "scalar-access");
  // A warm process gets them from the disk cache.
  FakeCompiler fake2;
  JIT jit2(config(fake2));
  Artifacts b = jit2.inspect(slow, "add", {}, sm90);
  EXPECT_EQ(fake2.compiles, 0);
  ASSERT_EQ(b.kernel.remarks.size(), 1u);
  EXPECT_EQ(b.kernel.remarks[0].text, a.kernel.remarks[0].text);
  // --Werror=perf is part of the key: the lenient entry does not pass it.
  JITOptions strict = sm90;
  strict.werrorPerf = 1;
  try {
    jit2.inspect(slow, "add", {}, strict);
    FAIL() << "a remark under werrorPerf must fail the compile";
  } catch (const CompileError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "slow.tile:2:11: error: [scalar-access] load issued narrow "
                  "[-Werror=perf]"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(jit2.inspect(src, "add", {}, strict));
}

TEST_F(JITTest, NoArchAndNoGpuIsAClearError) {
  if (gpuAvailable())
    GTEST_SKIP() << "a GPU is present";
  FakeCompiler fake;
  JIT jit(config(fake));
  try {
    jit.inspect(src, "add");
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("JITOptions::arch"),
              std::string::npos);
  }
}

TEST_F(JITTest, GetReturnsOneHandleAndSpecializesPerLaunch) {
  FakeCompiler fake;
  JIT jit(config(fake));
  Kernel &k = jit.get(src, "add", {{"BLOCK", "128"}}, sm90);
  EXPECT_EQ(&jit.get(src, "add", {{"BLOCK", "128"}}, sm90), &k);
  // A copy of the source with the same text is the same kernel.
  KernelSource copy = KernelSource::fromText(src.text(), src.filename());
  EXPECT_EQ(&jit.get(copy, "add", {{"BLOCK", "128"}}, sm90), &k);
  EXPECT_NE(&jit.get(src, "add", {{"BLOCK", "64"}}, sm90), &k);
  EXPECT_TRUE(k.isSpecializing());
  EXPECT_EQ(fake.compiles, 0); // Variants are compiled lazily.

  std::vector<Arg> args = {Arg::untypedPtr(0x1000), 32, Arg::i64(48)};
  EXPECT_EQ(k.divisibilityMask(args.data(), args.size()), 3u);
  args[1] = 33;
  EXPECT_EQ(k.divisibilityMask(args.data(), args.size()), 2u);

  // Building variant 2 compiles with divisibleBy16 = {m}; needs no GPU when
  // only artifacts are inspected, but loading a module needs one.
  if (!gpuAvailable()) {
    EXPECT_THROW(k.variant(2), Error);
    EXPECT_EQ(fake.compiles, 1);
    EXPECT_EQ(fake.seen.back().divisibleBy16, std::vector<std::string>{"m"});
    Artifacts a = jit.inspect(src, "add", {{"BLOCK", "128"}}, sm90, {"m"});
    EXPECT_EQ(fake.compiles, 1); // Cached by the failed load's compile.
    EXPECT_TRUE(a.kernel.params[2].divisibleBy16);
    EXPECT_FALSE(a.kernel.params[1].divisibleBy16);
  }
  JITOptions noSpec = sm90;
  noSpec.specialize = false;
  Kernel &plain = jit.get(src, "add", {{"BLOCK", "128"}}, noSpec);
  EXPECT_EQ(plain.divisibilityMask(args.data(), args.size()), 0u);
}

// Each integer argument is judged on its own: a multiple of 16 (bit j), 1
// (bit 32 + j, a unit stride), or neither; each combination is its own
// variant and cache key, and a variant compiled for 1 refuses other values.
TEST_F(JITTest, SpecializesEachIntegerArgumentOnSixteenAndOne) {
  FakeCompiler fake;
  JIT jit(config(fake));
  Kernel &k = jit.get(src, "add", {{"BLOCK", "128"}}, sm90);
  std::vector<Arg> args = {Arg::untypedPtr(0x1000), 1, Arg::i64(48)};
  EXPECT_EQ(k.divisibilityMask(args.data(), args.size()),
            (uint64_t(1) << 32) | 2u);
  args[1] = 3;
  args[2] = Arg::i64(1);
  EXPECT_EQ(k.divisibilityMask(args.data(), args.size()), uint64_t(1) << 33);
  args[1] = 0; // A multiple of 16.
  EXPECT_EQ(k.divisibilityMask(args.data(), args.size()),
            (uint64_t(1) << 33) | 1u);

  Constants c = {{"BLOCK", "128"}};
  Artifacts plain = jit.inspect(src, "add", c, sm90);
  Artifacts one = jit.inspect(src, "add", c, sm90, {}, {"n"});
  Artifacts div = jit.inspect(src, "add", c, sm90, {"n"}, {});
  Artifacts both = jit.inspect(src, "add", c, sm90, {"m"}, {"n"});
  EXPECT_EQ(fake.compiles, 4);
  EXPECT_NE(plain.key, one.key);
  EXPECT_NE(one.key, div.key);
  EXPECT_NE(one.key, both.key);
  EXPECT_EQ(fake.seen[1].equalToOne, std::vector<std::string>{"n"});
  EXPECT_TRUE(one.kernel.params[1].equalToOne);
  EXPECT_FALSE(one.kernel.params[2].equalToOne);
  EXPECT_EQ(jit.inspect(src, "add", c, sm90, {}, {"n"}).key, one.key);
  EXPECT_EQ(fake.compiles, 4);

  std::vector<Arg> unit = {Arg::untypedPtr(0x1000), 1, Arg::i64(5)};
  EXPECT_NO_THROW(checkArguments(one.kernel, unit.data(), unit.size()));
  unit[1] = 2;
  EXPECT_THROW(checkArguments(one.kernel, unit.data(), unit.size()), Error);

  // The factory turns bit 32 + j into equalToOne; loading needs a GPU.
  if (!gpuAvailable()) {
    EXPECT_THROW(k.variant((uint64_t(1) << 33) | 1u), Error);
    EXPECT_EQ(fake.compiles, 5);
    EXPECT_EQ(fake.seen.back().equalToOne, std::vector<std::string>{"m"});
    EXPECT_EQ(fake.seen.back().divisibleBy16, std::vector<std::string>{"n"});
  }
}

// The in-memory hot path: the handle table must answer in well under 1 us.
TEST_F(JITTest, GetHotPathIsFast) {
  FakeCompiler fake;
  JIT jit(config(fake));
  static const KernelSource source =
      KernelSource::fromText(std::string(20000, '#') + "\nkernel add() {}");
  Constants consts = {{"BLOCK", "128"}, {"ALPHA", "0.5"}};
  Kernel *first = &jit.get(source, "add", consts, sm90);
  const int n = 200000;
  std::vector<double> ns;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i)
      if (&jit.get(source, "add", consts, sm90) != first)
        FAIL();
    auto t1 = std::chrono::steady_clock::now();
    ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  std::sort(ns.begin(), ns.end());
  std::printf("JIT::get in-memory hit: %.1f ns (median of 5 x %d)\n", ns[2], n);
  EXPECT_LT(ns[2], 1000.0);
}

TEST_F(JITTest, CudaKernelsGoThroughTheSameCache) {
  std::string why;
  if (!nvrtcAvailable(&why))
    GTEST_SKIP() << why;
  FakeCompiler fake;
  JIT jit(config(fake));
  const char *src = "extern \"C\" __global__ void fill(float *p, int n) {"
                    " int i = threadIdx.x; if (i < n) p[i] = 1.0f; }";
  std::vector<KernelParam> params = {{"p", true, DType::F32, false},
                                     {"n", false, DType::I32, false}};
  CudaOptions o;
  o.arch = "sm_90";
  o.numThreads = 256;
  Artifacts a = jit.inspectCuda(src, "fill", params, o);
  EXPECT_EQ(a.kernel.name, "fill");
  EXPECT_EQ(a.kernel.numThreads, 256);
  EXPECT_FALSE(a.cubin.empty());
  EXPECT_EQ(jit.cache().stats().misses, 1u);
  jit.inspectCuda(src, "fill", params, o);
  EXPECT_EQ(jit.cache().stats().memoryHits, 1u);
  FakeCompiler fake2;
  JIT jit2(config(fake2));
  Artifacts b = jit2.inspectCuda(src, "fill", params, o);
  EXPECT_EQ(jit2.cache().stats().diskHits, 1u);
  EXPECT_EQ(b.cubin, a.cubin);
  EXPECT_EQ(b.kernel.params.size(), 2u);
}

// The log (Log.h): a compile with its time at info, a cache hit from memory
// and then from disk at debug, nothing once the level is off.
TEST_F(JITTest, LogsCompilesAndCacheHits) {
  static std::vector<std::pair<int, std::string>> got;
  got.clear();
  setLogSink([](int level, const char *m, void *) { got.emplace_back(level, m); },
             nullptr, LogLevel::Debug);
  FakeCompiler fake;
  {
    JIT jit(config(fake));
    jit.inspect(src, "add", {}, sm90, {"n"});
    jit.inspect(src, "add", {}, sm90, {"n"});
  }
  JIT fresh(config(fake)); // the same disk cache, an empty memory
  fresh.inspect(src, "add", {}, sm90, {"n"});
  setLogSink(nullptr, nullptr, LogLevel::Off);
  fresh.inspect(src, "add", {}, sm90, {"n"});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].first, 1);
  EXPECT_EQ(got[0].second.rfind("compiled add of add.tile for sm_90 (n%16) in ",
                                0),
            0u)
      << got[0].second;
  EXPECT_EQ(got[1], (std::pair<int, std::string>{
                        2, "cache hit (memory) add of add.tile for sm_90 (n%16)"}));
  EXPECT_EQ(got[2], (std::pair<int, std::string>{
                        2, "cache hit (disk) add of add.tile for sm_90 (n%16)"}));
}
