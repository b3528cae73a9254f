//===- AutotuneTest.cpp - The autotuner's key, records, pruning, fallback -===//
//
// Runs without a GPU: a measure hook stands in for the GPU timing (the GPU
// path is tested in tests/gpu/DslExamplesGpuTest.cpp and AutotuneGpuTest.cpp),
// and the real compiler checks the signature. Records live in a fresh cache
// directory per test. Covered: the key, records (corrupt, concurrent threads
// and processes), pruning, failures, SPARSETILE_AUTOTUNE=0, a launcher's
// LaunchContext, and configurations declared with @autotune in the source.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Autotune.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;
namespace fs = std::filesystem;

namespace {

const char *kAdd =
    "kernel add(x: *f32, out: *f32, n: i32, m: i32, const BLOCK: i32 = 128) {\n"
    "  let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "  store(out + offs, load(x + offs, mask=offs < n) * 2.0, mask=offs < n);\n"
    "}\n";

class AutotuneTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("sparsetile-autotune-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    unsetenv("SPARSETILE_AUTOTUNE");
  }
  void TearDown() override {
    fs::remove_all(dir);
    unsetenv("SPARSETILE_AUTOTUNE");
  }

  JITConfig config() {
    JITConfig c;
    c.cache.directory = dir.string();
    return c;
  }
  AutotuneSpec spec() {
    AutotuneSpec s;
    for (const char *b : {"64", "128", "256", "512"})
      s.configs.push_back(TuneConfig{{{"BLOCK", b}}});
    s.configs.push_back(TuneConfig{{{"BLOCK", "128"}}, 8});
    s.key = {"n"};
    s.outputs = {"out"};
    s.grid = [](const Constants &c, const LaunchArgs &a) {
      int64_t block = std::stoll(c.at("BLOCK"));
      return Dim3(unsigned((a["n"].intValue() + block - 1) / block));
    };
    return s;
  }
  /// Fake times: BLOCK=256 is fastest; counts calls per candidate.
  TuneMeasure timer(std::atomic<int> *calls) {
    return [calls](size_t i, const LaunchArgs &) {
      ++calls[i];
      static const double ms[] = {3.0, 2.0, 1.0, 4.0, 2.5};
      return ms[i];
    };
  }
  std::unique_ptr<AutotunedKernel> make(JIT &jit, AutotuneSpec s,
                                        std::atomic<int> *calls,
                                        const std::string &gpu = "H100") {
    JITOptions o;
    o.arch = "sm_90";
    auto k = std::make_unique<AutotunedKernel>(
        jit, KernelSource::fromText(kAdd, "add.tile"), "add", Constants{}, o,
        std::move(s));
    k->setMeasure(timer(calls));
    k->setDeviceName(gpu);
    return k;
  }
  std::vector<Arg> args(int n, int m = 7) {
    return {Arg::ptr(DevicePtr(0x1000), DType::F32),
            Arg::ptr(DevicePtr(0x2000), DType::F32), Arg::i32(n), Arg::i32(m)};
  }

  fs::path dir;
};

} // namespace

TEST_F(AutotuneTest, KeyIsTheKeyArgumentsOnly) {
  JIT jit(config());
  std::atomic<int> calls[5] = {};
  auto k = make(jit, spec(), calls);
  EXPECT_EQ(k->keyOf(args(1000, 1)), "n=1000");
  EXPECT_EQ(k->keyOf(args(1000, 2)), "n=1000");
  EXPECT_NE(k->keyOf(args(1001)), k->keyOf(args(1000)));
  EXPECT_NE(k->recordPath("n=1000"), k->recordPath("n=1001"));
}

TEST_F(AutotuneTest, FastestWinsAndIsRememberedAcrossProcesses) {
  std::atomic<int> calls[5] = {};
  {
    JIT jit(config());
    auto k = make(jit, spec(), calls);
    EXPECT_EQ(k->choose(args(1000)), 2u); // BLOCK=256
    // Every candidate timed once; the default (0) and the winner (2) once
    // more, against each other.
    const int timed[5] = {2, 1, 2, 1, 1};
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(calls[i].load(), timed[i]) << i;
    EXPECT_EQ(k->choose(args(1000)), 2u); // memory: no second tuning
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(calls[i].load(), timed[i]) << i;
    EXPECT_TRUE(fs::exists(k->recordPath("n=1000")));
  }
  // A new JIT (a second process) reads the record and times nothing.
  std::atomic<int> again[5] = {};
  JIT jit(config());
  auto k = make(jit, spec(), again);
  EXPECT_EQ(k->choose(args(1000)), 2u);
  for (auto &c : again)
    EXPECT_EQ(c.load(), 0);
  // Another GPU, or another candidate list, is another record.
  auto other = make(jit, spec(), again, "H200");
  EXPECT_NE(other->recordPath("n=1000"), k->recordPath("n=1000"));
  AutotuneSpec fewer = spec();
  fewer.configs.pop_back();
  auto k2 = make(jit, fewer, again);
  EXPECT_NE(k2->recordPath("n=1000"), k->recordPath("n=1000"));
}

TEST_F(AutotuneTest, CorruptOrTruncatedRecordsAreRetuned) {
  std::atomic<int> calls[5] = {};
  JIT jit(config());
  auto k = make(jit, spec(), calls);
  k->choose(args(1000));
  std::string path = k->recordPath("n=1000");
  std::string good;
  ASSERT_TRUE(readWholeFile(path, good));

  auto retunes = [&](const std::string &bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    std::atomic<int> fresh[5] = {};
    JIT j(config());
    auto t = make(j, spec(), fresh);
    size_t chosen = t->choose(args(1000));
    EXPECT_EQ(chosen, 2u);
    return fresh[0].load() > 0;
  };
  std::string flipped = good;
  flipped[flipped.find('\n') + 3] ^= 1; // the key digest
  EXPECT_TRUE(retunes(flipped));
  std::string otherIndex = good;
  size_t idx = otherIndex.find("\n2\n");
  ASSERT_NE(idx, std::string::npos);
  otherIndex[idx + 1] = '1'; // index changed, checksum not
  EXPECT_TRUE(retunes(otherIndex));
  EXPECT_TRUE(retunes(good.substr(0, good.size() / 2)));
  EXPECT_TRUE(retunes(""));
  // The retune rewrote a good record.
  std::string now;
  ASSERT_TRUE(readWholeFile(path, now));
  EXPECT_EQ(now, good);
}

TEST_F(AutotuneTest, PrunedCandidatesAreNeverMeasured) {
  std::atomic<int> calls[5] = {};
  JIT jit(config());
  AutotuneSpec s = spec();
  // Blocks larger than the problem are dropped.
  s.prune = [](const TuneConfig &c, const LaunchArgs &a) {
    return std::stoll(c.constants.at("BLOCK")) <= a["n"].intValue();
  };
  auto k = make(jit, s, calls);
  EXPECT_EQ(k->choose(args(100)), 0u); // only BLOCK=64 fits
  EXPECT_EQ(calls[0].load(), 1);
  EXPECT_EQ(
      calls[1].load() + calls[2].load() + calls[3].load() + calls[4].load(), 0);
  std::vector<double> t = k->lastTimings();
  EXPECT_LT(t[2], 0);

  s.prune = [](const TuneConfig &, const LaunchArgs &) { return false; };
  auto none = make(jit, s, calls);
  try {
    none->choose(args(100));
    FAIL() << "every candidate pruned, yet one was chosen";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("every configuration was pruned"),
              std::string::npos);
  }
}

TEST_F(AutotuneTest, FailingCandidatesAreSkipped) {
  JIT jit(config());
  std::atomic<int> calls[5] = {};
  auto k = make(jit, spec(), calls);
  k->setMeasure([](size_t i, const LaunchArgs &) -> double {
    if (i == 2)
      throw Error("too much shared memory");
    return i == 1 ? -1.0 : double(10 - i);
  });
  EXPECT_EQ(k->choose(args(1000)), 4u); // 6.0 ms; 2 threw, 1 could not run
}

TEST_F(AutotuneTest, DisabledTakesTheFirstSurvivorWithoutTiming) {
  {
    // A record from an earlier, tuned run must not be taken either.
    std::atomic<int> calls[5] = {};
    JIT jit(config());
    EXPECT_EQ(make(jit, spec(), calls)->choose(args(1000)), 2u);
  }
  setenv("SPARSETILE_AUTOTUNE", "0", 1);
  std::atomic<int> calls[5] = {};
  JIT jit(config());
  AutotuneSpec s = spec();
  s.prune = [](const TuneConfig &c, const LaunchArgs &) {
    return c.constants.at("BLOCK") != "64";
  };
  auto k = make(jit, s, calls);
  EXPECT_EQ(k->choose(args(1000)), 1u);
  for (auto &c : calls)
    EXPECT_EQ(c.load(), 0);
}

TEST_F(AutotuneTest, ConcurrentCallersTuneOnce) {
  std::atomic<int> calls[5] = {};
  JIT jit(config());
  auto k = make(jit, spec(), calls);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      for (int r = 0; r < 20; ++r)
        if (k->choose(args(1000 + r % 2)) != 2u)
          ++wrong;
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(wrong.load(), 0);
  // Once per key: each candidate timed once, the default (0) and the
  // winner (2) once more.
  const int timed[5] = {2, 1, 2, 1, 1};
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(calls[i].load(), 2 * timed[i]) << i;
}

TEST_F(AutotuneTest, BadSpecsAreRejectedUpFront) {
  JIT jit(config());
  JITOptions o;
  o.arch = "sm_90";
  auto src = KernelSource::fromText(kAdd, "add.tile");
  AutotuneSpec s = spec();
  s.key = {"x"}; // a pointer, not a scalar
  EXPECT_THROW(AutotunedKernel(jit, src, "add", {}, o, s), Error);
  s = spec();
  s.outputs = {"nope"};
  EXPECT_THROW(AutotunedKernel(jit, src, "add", {}, o, s), Error);
  s = spec();
  s.configs.clear();
  EXPECT_THROW(AutotunedKernel(jit, src, "add", {}, o, s), Error);
}

// A block store's descriptor is an output (its tensor is redirected to a
// scratch copy while candidates run), never a key.
TEST_F(AutotuneTest, DescriptorOutputsAreOutputs) {
  JIT jit(config());
  JITOptions o;
  o.arch = "sm_90";
  auto src = KernelSource::fromText(
      "kernel fill(d: desc<bf16>, n: i32, const BLOCK: i32 = 128) {\n"
      "  store_block(d, [program_id(0) * 64, 0], zeros([64, BLOCK], f32));\n"
      "}\n",
      "fill.tile");
  AutotuneSpec s = spec();
  s.outputs = {"d"};
  EXPECT_NO_THROW(AutotunedKernel(jit, src, "fill", {}, o, s));
  s.key = {"d"};
  EXPECT_THROW(AutotunedKernel(jit, src, "fill", {}, o, s), Error);
}

// --- A launcher's own key, grid and prune (rt::LaunchContext). ---

TEST_F(AutotuneTest, LaunchContextJoinsTheKeyAndReplacesGridAndPrune) {
  std::atomic<int> calls[5] = {};
  JIT jit(config());
  auto k = make(jit, spec(), calls);
  LaunchContext only3;
  only3.key = "rows=5";
  only3.prune = [](const TuneConfig &c, const LaunchArgs &) {
    return c.numWarps == 8; // configuration 4 only
  };
  EXPECT_EQ(k->choose(args(1000), nullptr, &only3), 4u);
  EXPECT_TRUE(fs::exists(k->recordPath("n=1000|rows=5")));
  // Another context key is another choice, tuned with its own prune...
  LaunchContext notFastest = only3;
  notFastest.key = "rows=6";
  notFastest.prune = [](const TuneConfig &c, const LaunchArgs &) {
    return c.constants.at("BLOCK") != "256";
  };
  EXPECT_EQ(k->choose(args(1000), nullptr, &notFastest), 1u);
  // ...and no context is the plain key, with the spec's (no) prune.
  EXPECT_EQ(k->choose(args(1000)), 2u);
}

// --- Process-level concurrency on one cache directory. ---

// Several processes tune the same key at once and may disagree (their
// timings differ); the record is then one of their winners, whole, and a
// later process reads it without timing.
TEST_F(AutotuneTest, ConcurrentProcessesLeaveOneWholeRecord) {
  std::vector<pid_t> children;
  for (int c = 0; c < 6; ++c) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 1;
      try {
        JIT jit(config());
        std::atomic<int> calls[5] = {};
        auto k = make(jit, spec(), calls);
        size_t want = c % 2 ? 1 : 2;
        k->setMeasure([want](size_t i, const LaunchArgs &) {
          return i == want ? 1.0 : 5.0;
        });
        // Its own winner, or another's read from a record already written.
        size_t chosen = k->choose(args(1000));
        code = chosen == 1 || chosen == 2 ? 0 : 2;
      } catch (...) {
        code = 3;
      }
      ::_exit(code);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "2: a wrong choice, 3: an error";
  }
  JIT jit(config());
  std::atomic<int> calls[5] = {};
  auto k = make(jit, spec(), calls);
  size_t chosen = k->choose(args(1000));
  EXPECT_TRUE(chosen == 1 || chosen == 2) << chosen;
  for (auto &c : calls)
    EXPECT_EQ(c.load(), 0) << "a whole record was expected";
  for (const auto &e : fs::directory_iterator(dir / "autotune"))
    EXPECT_EQ(e.path().extension(), ".txt") << "left behind: " << e.path();
}

// --- Configurations declared in the source (@autotune). ---

const char *kDeclared =
    "@autotune(key=[n], grid=[cdiv(n, BLOCK), min(m, 4)],\n"
    "          configs=[{BLOCK: 64}, {BLOCK: 256, num_warps: 8},\n"
    "                   {persistent: 1, warp_specialize: 0}])\n"
    "kernel scale(x: *f32, out: *f32, n: i32, m: i32,\n"
    "             const BLOCK: i32 = 128) {\n"
    "  let offs = program_id(0) * BLOCK + arange(0, BLOCK);\n"
    "  let p = out + offs;\n"
    "  store(p, load(x + offs, mask=offs < n) * 2.0, mask=offs < n);\n"
    "}\n";

TEST_F(AutotuneTest, DeclaredConfigurationsNeedOnlyTheSource) {
  JIT jit(config());
  JITOptions o;
  o.arch = "sm_90";
  auto src = KernelSource::fromText(kDeclared, "scale.tile");
  AutotunedKernel *k = jit.getAutotuned(src, "scale", {}, o);
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(jit.getAutotuned(src, "scale", {}, o), k) << "made twice";
  const AutotuneSpec &s = k->spec();
  ASSERT_EQ(s.configs.size(), 3u);
  EXPECT_EQ(s.configs[0].describe(), "BLOCK=64");
  EXPECT_EQ(s.configs[1].describe(), "BLOCK=256 num_warps=8");
  EXPECT_EQ(s.configs[2].describe(), "persistent=1 warp_specialize=0");
  EXPECT_EQ(s.key, std::vector<std::string>{"n"});
  EXPECT_EQ(s.outputs, std::vector<std::string>{"out"}); // through `let p`
  // The grid per candidate; the third sets no BLOCK and takes its default.
  std::vector<Arg> a = args(1000, 9);
  LaunchArgs la{a.data(), a.size(), jit.get(src, "scale", {}, o).params()};
  Dim3 g = s.grid(s.configs[0].constants, la);
  EXPECT_EQ(g.x, 16u);
  EXPECT_EQ(g.y, 4u); // min(m, 4)
  EXPECT_EQ(s.grid(s.configs[2].constants, la).x, 8u);
  // The options a configuration sets reach the compiled kernel's options.
  k->setDeviceName("H100");
  k->setMeasure(
      [](size_t i, const LaunchArgs &) { return i == 1 ? 1.0 : 2.0; });
  EXPECT_EQ(k->choose(a), 1u);
  // n = 40: BLOCK 256 and the default 128 are twice the problem or more, and
  // a smaller tile exists, so they are pruned before anything is measured.
  EXPECT_EQ(k->choose(args(40, 9)), 0u);
  std::vector<double> t = k->lastTimings();
  EXPECT_GT(t[0], 0);
  EXPECT_LT(t[1], 0);
  EXPECT_LT(t[2], 0);

  // A kernel without @autotune has no autotuned form.
  auto plain = KernelSource::fromText(kAdd, "add.tile");
  EXPECT_EQ(jit.getAutotuned(plain, "add", {}, o), nullptr);
}

TEST_F(AutotuneTest, TheDeclarationIsPartOfTheRecordKey) {
  JIT jit(config());
  JITOptions o;
  o.arch = "sm_90";
  std::string text = kDeclared;
  std::string other = text;
  other.replace(other.find("{BLOCK: 64}"), 11, "{BLOCK: 32}");
  AutotunedKernel *a = jit.getAutotuned(
      KernelSource::fromText(text, "scale.tile"), "scale", {}, o);
  AutotunedKernel *b = jit.getAutotuned(
      KernelSource::fromText(other, "scale.tile"), "scale", {}, o);
  ASSERT_TRUE(a && b);
  a->setDeviceName("H100");
  b->setDeviceName("H100");
  EXPECT_NE(a->recordPath("n=1000"), b->recordPath("n=1000"));
}

TEST_F(AutotuneTest, DeclarationErrorsAreLocatedAtGet) {
  JIT jit(config());
  std::string bad = kDeclared;
  bad.replace(bad.find("key=[n]"), 7, "key=[x]");
  try {
    jit.getAutotuned(KernelSource::fromText(bad, "scale.tile"), "scale");
    FAIL() << "a pointer key was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "scale.tile:1:16: error: autotune key 'x' is not an integer "
                  "run-time parameter of 'scale'"),
              std::string::npos)
        << e.what();
  }
}

// --- Pruning what cannot fit the GPU, before anything is compiled. ---

/// A K loop carrying a [BM, BN] f32 accumulator: with 4 warps, 64 x 64 is
/// 32 registers a thread, 256 x 256 is 512 (more than any thread may hold).
const char *kAccumulate =
    "kernel acc(a: *bf16, b: *bf16, c: *f32, K: i32,\n"
    "           const BM: i32 = 64, const BN: i32 = 64) {\n"
    "  let rm = arange(0, BM);\n"
    "  let rn = arange(0, BN);\n"
    "  let rk = arange(0, 16);\n"
    "  let acc = zeros([BM, BN], f32);\n"
    "  for k in range(0, K, 16) {\n"
    "    let x = load(a + rm[:, None] * K + k + rk[None, :]);\n"
    "    let y = load(b + (k + rk[:, None]) * BN + rn[None, :]);\n"
    "    acc = dot(x, y, acc);\n"
    "  }\n"
    "  store(c + rm[:, None] * BN + rn[None, :], acc);\n"
    "}\n";

TEST_F(AutotuneTest, EstimatesComeFromACompileThatStopsBeforeLLVM) {
  JIT jit(config());
  JITOptions o;
  o.arch = "sm_90";
  auto src = KernelSource::fromText(kAccumulate, "acc.tile");
  ResourceEstimate small = jit.estimate(src, "acc", {}, o);
  EXPECT_EQ(small.numThreads, 128);
  // 64 * 64 / 128 accumulator values a thread, plus the loop counter.
  EXPECT_GE(small.carriedRegisters, 32);
  EXPECT_LT(small.carriedRegisters, 64);
  ResourceEstimate big =
      jit.estimate(src, "acc", {{"BM", "256"}, {"BN", "256"}}, o);
  EXPECT_GE(big.carriedRegisters, 512);
  JITOptions eight = o;
  eight.numWarps = 8;
  EXPECT_EQ(jit.estimate(src, "acc", {}, eight).numThreads, 256);
  EXPECT_THROW(jit.estimate(src, "acc", {{"BM", "3"}}, o), CompileError);
}

TEST_F(AutotuneTest, CandidatesThatCannotFitArePrunedBeforeCompiling) {
  JIT jit(config());
  JITOptions o;
  o.arch = "sm_90";
  AutotuneSpec s;
  s.configs.push_back(TuneConfig{{{"BM", "256"}, {"BN", "256"}}}); // registers
  s.configs.push_back(TuneConfig{{{"BM", "64"}}, 8}); // 256 threads
  s.configs.push_back(TuneConfig{{{"BM", "64"}}});
  s.configs.push_back(TuneConfig{{{"BM", "128"}}});
  s.key = {"K"};
  s.outputs = {"c"};
  s.grid = [](const Constants &, const LaunchArgs &) { return Dim3(1); };
  AutotunedKernel k(jit, KernelSource::fromText(kAccumulate, "acc.tile"),
                    "acc", Constants{}, o, s);
  std::atomic<int> calls[4] = {};
  k.setMeasure([&calls](size_t i, const LaunchArgs &) {
    ++calls[i];
    return i == 3 ? 1.0 : 2.0;
  });
  k.setDeviceName("H100");
  DeviceLimits limits;
  limits.maxThreadsPerBlock = 128; // So the 8-warp candidate cannot run.
  limits.maxSharedPerBlock = 227 * 1024;
  k.setDeviceLimits(limits);
  std::vector<Arg> a = {Arg::ptr(DevicePtr(0x1000), DType::BF16),
                        Arg::ptr(DevicePtr(0x2000), DType::BF16),
                        Arg::ptr(DevicePtr(0x3000), DType::F32), Arg::i32(64)};
  EXPECT_EQ(k.choose(a), 3u);
  EXPECT_EQ(calls[0].load(), 0) << "512 registers a thread was measured";
  EXPECT_EQ(calls[1].load(), 0) << "256 threads was measured";
  EXPECT_EQ(calls[2].load(), 2); // the default, and again against the winner
  std::vector<double> t = k.lastTimings();
  EXPECT_LT(t[0], 0);
  EXPECT_LT(t[1], 0);

  // Shared memory: a limit below what the survivors need prunes them all,
  // and the error says so.
  ResourceEstimate e = jit.estimate(
      KernelSource::fromText(kAccumulate, "acc.tile"), "acc", {}, o);
  // The dot stages its operands through shared memory.
  ASSERT_GT(e.sharedBytes + e.dynamicSharedBytes, 0);
  {
    AutotunedKernel tight(jit, KernelSource::fromText(kAccumulate, "acc.tile"),
                          "acc", Constants{}, o, s);
    tight.setMeasure([](size_t, const LaunchArgs &) { return 1.0; });
    tight.setDeviceName("small GPU"); // Not H100's record.
    limits.maxSharedPerBlock = e.sharedBytes + e.dynamicSharedBytes - 1;
    tight.setDeviceLimits(limits);
    try {
      tight.choose(a);
      FAIL() << "a candidate over the shared-memory limit was chosen";
    } catch (const Error &err) {
      EXPECT_NE(std::string(err.what()).find("no configuration fits"),
                std::string::npos)
          << err.what();
    }
  }
}

// A challenger that wins the round on an outlier (the default measured
// slow once) is timed again against the default alone and loses: the default
// stays. One that wins again is kept.
TEST_F(AutotuneTest, AWinnerMustWinAgainAgainstTheDefault) {
  JIT jit(config());
  std::atomic<int> calls[5] = {};
  auto k = make(jit, spec(), calls);
  auto seen = std::make_shared<std::array<int, 5>>();
  k->setMeasure([seen](size_t i, const LaunchArgs &) {
    int n = (*seen)[i]++;
    if (i == 0)
      return n == 0 ? 5.0 : 1.0; // one slow sample in the round
    return i == 3 ? 2.0 : 3.0;   // 3 is second best; never better than 1.0
  });
  EXPECT_EQ(k->choose(args(1000)), 0u);
  EXPECT_EQ((*seen)[0], 2);
  EXPECT_EQ((*seen)[3], 2) << "the round's winner was not timed again";
  // A real win survives the second timing.
  auto r = make(jit, spec(), calls, "H100 real win");
  r->setMeasure(
      [](size_t i, const LaunchArgs &) { return i == 3 ? 0.5 : 1.0; });
  EXPECT_EQ(r->choose(args(1000)), 3u);
  // A winner that fails to launch the second time is not kept either.
  auto f = make(jit, spec(), calls, "H100 flaky");
  auto n = std::make_shared<int>(0);
  f->setMeasure([n](size_t i, const LaunchArgs &) -> double {
    if (i != 4)
      return 1.0;
    if ((*n)++ == 0)
      return 0.5;
    throw Error("lost the device");
  });
  EXPECT_EQ(f->choose(args(1000)), 0u);
}

TEST_F(AutotuneTest, TheFirstConfigurationWinsTiesWithinTheMargin) {
  JIT jit(config());
  std::atomic<int> calls[5] = {};
  AutotuneSpec s = spec();
  ASSERT_DOUBLE_EQ(s.firstWithin, 0.015);
  auto k = make(jit, s, calls);
  // 1% faster than the first: noise, the first stays.
  k->setMeasure([](size_t i, const LaunchArgs &) { return i == 2 ? 0.99 : 1.0; });
  EXPECT_EQ(k->choose(args(1000)), 0u);
  // 3% faster: a real win.
  k->setMeasure([](size_t i, const LaunchArgs &) { return i == 2 ? 0.97 : 1.0; });
  EXPECT_EQ(k->choose(args(2000)), 2u);
  // The margin is the first survivor's: with BLOCK=64 pruned, BLOCK=128 is
  // the default the others must beat.
  AutotuneSpec pruned = spec();
  pruned.prune = [](const TuneConfig &c, const LaunchArgs &) {
    return c.constants.at("BLOCK") != "64";
  };
  auto p = make(jit, pruned, calls, "H100 pruned");
  p->setMeasure([](size_t i, const LaunchArgs &) {
    return i == 1 ? 1.0 : i == 2 ? 0.99 : 2.0;
  });
  EXPECT_EQ(p->choose(args(1000)), 1u);
}
