//===- AutotuneTest.cpp - The autotuner's key, records, pruning, fallback -===//
//
// Runs without a GPU: a measure hook stands in for the GPU timing (the GPU
// path is tested in tests/gpu/DslGpuTest.cpp), and the real compiler checks
// the signature. Records live in a fresh cache directory per test.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Autotune.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

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
    for (auto &c : calls)
      EXPECT_EQ(c.load(), 1);
    EXPECT_EQ(k->choose(args(1000)), 2u); // memory: no second tuning
    for (auto &c : calls)
      EXPECT_EQ(c.load(), 1);
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
    return fresh[0].load() == 1;
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
  for (auto &c : calls)
    EXPECT_EQ(c.load(), 2); // once per key
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
