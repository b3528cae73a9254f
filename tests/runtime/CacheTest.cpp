//===- CacheTest.cpp - Kernel cache tests (no GPU, no compiler) -----------===//
//
// Exercises KernelCache with a fake build function: hits and misses at both
// levels, every key component, corrupt and truncated entries, the disable
// switch, environment configuration, several processes sharing one
// directory at once, and the directory as a trust boundary (ownership, mode,
// symlinks, FIFOs, sizes).
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/Cache.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;
namespace fs = std::filesystem;

namespace {

/// A fresh cache directory per test, removed afterwards.
class CacheTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("sparsetile-cache-test-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  CacheConfig config() const {
    CacheConfig c;
    c.directory = dir.string();
    return c;
  }
  fs::path dir;
};

CacheKey keyOf(const std::string &s) {
  return CacheKey{KeyHasher().add("test", s).finish()};
}

/// A deterministic entry for a name, with a binary "cubin".
CacheEntry fakeEntry(const std::string &name) {
  CacheEntry e;
  e.kernel.name = name;
  e.kernel.arch = "sm_90";
  e.kernel.ptx = "// ptx of " + name + "\n.entry " + name + "() { ret; }\n";
  e.kernel.numThreads = 128;
  e.kernel.sharedBytes = 4096;
  e.kernel.dynamicSharedBytes = 65536;
  e.kernel.persistent = true;
  e.kernel.clusterSize = 2;
  // Performance remarks travel with the kernel (JIT::inspect on a hit).
  Remark r;
  r.kind = "scalar-access";
  r.message = "load issued as 4-byte accesses ...";
  r.file = name + ".tile";
  r.line = 3;
  r.col = 11;
  r.text = r.file + ":3:11: remark: [scalar-access] ...\n";
  e.kernel.remarks = {r};
  KernelParam x;
  x.name = "x";
  x.isPointer = true;
  x.dtype = DType::BF16;
  KernelParam n;
  n.name = "n";
  n.dtype = DType::I64;
  n.divisibleBy16 = true;
  // A TMA operand: its copy box and swizzle travel with the kernel.
  KernelParam d;
  d.name = "vals";
  d.isDescriptor = true;
  d.dtype = DType::BF16;
  d.boxRows = 256;
  d.boxCols = 32;
  d.boxSwizzle = 64;
  d.tmaStore = true;
  e.kernel.params = {x, n, d};
  for (int i = 0; i < 300; ++i)
    e.cubin.push_back(char((i * 31 + name.size()) & 0xFF));
  e.cubin[0] = '\0'; // Binary-safe.
  return e;
}

/// Flips bits of one byte (bounds-checked, so the optimizer sees no overflow).
std::string flipByte(std::string s, size_t at, int mask) {
  if (at < s.size())
    s[at] = char(s[at] ^ mask);
  return s;
}

void expectSameEntry(const CacheEntry &a, const CacheEntry &b) {
  EXPECT_EQ(a.kernel.name, b.kernel.name);
  EXPECT_EQ(a.kernel.arch, b.kernel.arch);
  EXPECT_EQ(a.kernel.ptx, b.kernel.ptx);
  EXPECT_EQ(a.kernel.numThreads, b.kernel.numThreads);
  EXPECT_EQ(a.kernel.sharedBytes, b.kernel.sharedBytes);
  EXPECT_EQ(a.kernel.dynamicSharedBytes, b.kernel.dynamicSharedBytes);
  EXPECT_EQ(a.kernel.persistent, b.kernel.persistent);
  EXPECT_EQ(a.kernel.clusterSize, b.kernel.clusterSize);
  ASSERT_EQ(a.kernel.remarks.size(), b.kernel.remarks.size());
  for (size_t i = 0; i < a.kernel.remarks.size(); ++i) {
    const Remark &x = a.kernel.remarks[i], &y = b.kernel.remarks[i];
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.message, y.message);
    EXPECT_EQ(x.file, y.file);
    EXPECT_EQ(x.line, y.line);
    EXPECT_EQ(x.col, y.col);
    EXPECT_EQ(x.text, y.text);
  }
  ASSERT_EQ(a.kernel.params.size(), b.kernel.params.size());
  for (size_t i = 0; i < a.kernel.params.size(); ++i) {
    EXPECT_EQ(a.kernel.params[i].name, b.kernel.params[i].name);
    EXPECT_EQ(a.kernel.params[i].isPointer, b.kernel.params[i].isPointer);
    EXPECT_EQ(a.kernel.params[i].dtype, b.kernel.params[i].dtype);
    EXPECT_EQ(a.kernel.params[i].divisibleBy16,
              b.kernel.params[i].divisibleBy16);
    EXPECT_EQ(a.kernel.params[i].isDescriptor, b.kernel.params[i].isDescriptor);
    EXPECT_EQ(a.kernel.params[i].boxRows, b.kernel.params[i].boxRows);
    EXPECT_EQ(a.kernel.params[i].boxCols, b.kernel.params[i].boxCols);
    EXPECT_EQ(a.kernel.params[i].boxSwizzle, b.kernel.params[i].boxSwizzle);
    EXPECT_EQ(a.kernel.params[i].tmaStore, b.kernel.params[i].tmaStore);
  }
  EXPECT_EQ(a.cubin, b.cubin);
}

std::string readFile(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void writeFile(const fs::path &p, const std::string &s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

} // namespace

TEST_F(CacheTest, SerializationRoundTrip) {
  CacheEntry e = fakeEntry("k"), back;
  std::string why;
  ASSERT_TRUE(
      deserializeEntry(serializeEntry(keyOf("a"), e), keyOf("a"), back, &why))
      << why;
  expectSameEntry(e, back);
  EXPECT_FALSE(
      deserializeEntry(serializeEntry(keyOf("a"), e), keyOf("b"), back, &why));
  EXPECT_EQ(why, "key mismatch");
}

TEST_F(CacheTest, MissThenMemoryHitThenDiskHit) {
  int builds = 0;
  auto build = [&] {
    ++builds;
    return fakeEntry("k");
  };
  {
    KernelCache cache(config());
    auto e1 = cache.getOrBuild(keyOf("a"), build);
    auto e2 = cache.getOrBuild(keyOf("a"), build);
    EXPECT_EQ(e1.get(), e2.get());
    CacheStats s = cache.stats();
    EXPECT_EQ(s.misses, 1u);
    EXPECT_EQ(s.memoryHits, 1u);
    EXPECT_EQ(s.diskHits, 0u);
    EXPECT_TRUE(fs::exists(cache.entryPath(keyOf("a"))));
  }
  // A new cache object (a new process, as far as memory goes).
  KernelCache cache(config());
  auto e3 = cache.getOrBuild(keyOf("a"), build);
  EXPECT_EQ(builds, 1);
  EXPECT_EQ(cache.stats().diskHits, 1u);
  EXPECT_EQ(cache.stats().misses, 0u);
  expectSameEntry(*e3, fakeEntry("k"));
  cache.getOrBuild(keyOf("a"), build);
  EXPECT_EQ(cache.stats().memoryHits, 1u);
  // A different key misses.
  cache.getOrBuild(keyOf("b"), build);
  EXPECT_EQ(builds, 2);
  // No temporary files are left behind.
  for (const auto &f : fs::directory_iterator(dir))
    EXPECT_EQ(f.path().extension(), ".stk") << f.path();
}

TEST_F(CacheTest, BuildErrorsPropagateAndCacheNothing) {
  KernelCache cache(config());
  EXPECT_THROW(
      cache.getOrBuild(keyOf("a"), []() -> CacheEntry { throw Error("boom"); }),
      Error);
  EXPECT_FALSE(fs::exists(cache.entryPath(keyOf("a"))));
  EXPECT_EQ(cache.lookup(keyOf("a")), nullptr);
}

TEST_F(CacheTest, EveryKeyComponentChangesTheKey) {
  KernelKeyInputs base;
  base.source = "kernel add(x: *f32) {}";
  base.kernelName = "add";
  base.options.arch = "sm_90";
  base.options.constants = {{"BLOCK", "128"}, {"ALPHA", "0.5"}};
  base.options.divisibleBy16 = {"n", "m"};
  base.options.importedSources = {{"a.tile", "const N = 1;"}};
  base.targetArch = "sm_90";
  base.compilerVersion = "0.1.0";
  base.toolchainVersion = "LLVM 22.1";
  base.cudaVersion = "13.0";
  CacheKey k0 = makeKernelKey(base);
  EXPECT_EQ(makeKernelKey(base), k0);

  std::vector<std::pair<const char *, std::function<void(KernelKeyInputs &)>>>
      mutations = {
          {"source", [](auto &i) { i.source += " "; }},
          {"kernelName", [](auto &i) { i.kernelName = "add2"; }},
          {"constant value",
           [](auto &i) { i.options.constants["BLOCK"] = "256"; }},
          {"constant added", [](auto &i) { i.options.constants["C"] = "1"; }},
          {"constant removed",
           [](auto &i) { i.options.constants.erase("ALPHA"); }},
          {"divisibleBy16", [](auto &i) { i.options.divisibleBy16 = {"n"}; }},
          {"import text",
           [](auto &i) { i.options.importedSources["a.tile"] += " "; }},
          {"import added",
           [](auto &i) { i.options.importedSources["c.tile"] = "fn f() {}"; }},
          {"options.arch", [](auto &i) { i.options.arch = "sm_80"; }},
          {"ptxVersion", [](auto &i) { i.options.ptxVersion = 85; }},
          {"numWarps", [](auto &i) { i.options.numWarps = 8; }},
          {"targetArch", [](auto &i) { i.targetArch = "sm_90a"; }},
          {"compilerVersion", [](auto &i) { i.compilerVersion = "0.1.1"; }},
          {"toolchainVersion",
           [](auto &i) { i.toolchainVersion = "LLVM 22.2"; }},
          {"cudaVersion", [](auto &i) { i.cudaVersion = "13.1"; }},
      };
  std::set<std::string> seen = {k0.hex()};
  for (auto &m : mutations) {
    KernelKeyInputs in = base;
    m.second(in);
    CacheKey k = makeKernelKey(in);
    EXPECT_NE(k, k0) << m.first << " does not change the key";
    EXPECT_TRUE(seen.insert(k.hex()).second) << m.first;
  }
  // Every code-generation option, including ones added after this test was
  // written, reaches the key through CodegenOptions::forEachField.
  struct Bump {
    void operator()(std::string &s) const { s += "x"; }
    void operator()(int &v) const { v += 1; }
  };
  int fields = 0;
  CodegenOptions::forEachField([&](const char *name, auto field) {
    KernelKeyInputs in = base;
    Bump()(in.options.*field);
    EXPECT_NE(makeKernelKey(in), k0) << name << " does not change the key";
    EXPECT_FALSE(in.options.sameCodegen(base.options)) << name;
    ++fields;
  });
  EXPECT_GE(fields, 4);

  // Order does not matter where it carries no meaning.
  KernelKeyInputs reordered = base;
  reordered.options.divisibleBy16 = {"m", "n", "n"};
  EXPECT_EQ(makeKernelKey(reordered), k0);

  CudaKeyInputs c;
  c.source = base.source;
  c.entryName = "add";
  c.targetArch = "sm_90";
  CacheKey ck = makeCudaKey(c);
  EXPECT_NE(ck, k0);
  CudaKeyInputs c2 = c;
  c2.nvrtcOptions = {"-DX=1"};
  EXPECT_NE(makeCudaKey(c2), ck);
  c2 = c;
  c2.params.push_back(KernelParam{"x", true, DType::F32, false});
  EXPECT_NE(makeCudaKey(c2), ck);
  c2 = c;
  c2.numThreads = 256;
  EXPECT_NE(makeCudaKey(c2), ck);
}

TEST_F(CacheTest, CorruptEntriesAreDetectedAndRebuilt) {
  const CacheKey key = keyOf("a");
  std::string good;
  {
    KernelCache cache(config());
    cache.getOrBuild(key, [] { return fakeEntry("k"); });
    good = readFile(cache.entryPath(key));
  }
  struct Corruption {
    const char *what;
    std::function<std::string(std::string)> apply;
  };
  std::vector<Corruption> corruptions = {
      {"flipped payload byte",
       [](std::string s) { return flipByte(s, s.size() - 10, 0x40); }},
      {"flipped metadata byte",
       [](std::string s) { return flipByte(s, 110, 0x01); }},
      {"flipped magic", [](std::string s) { return flipByte(s, 0, 0x20); }},
      {"flipped length", [](std::string s) { return flipByte(s, 56, 0x01); }},
      {"truncated", [](std::string s) { return s.substr(0, s.size() / 2); }},
      {"truncated header", [](std::string s) { return s.substr(0, 20); }},
      {"empty", [](std::string) { return std::string(); }},
      {"garbage", [](std::string s) { return std::string(s.size(), 'z'); }},
      {"extra byte", [](std::string s) { return s + "!"; }},
      {"other key's entry",
       [](std::string) {
         return serializeEntry(keyOf("other"), fakeEntry("k"));
       }},
  };
  for (const Corruption &c : corruptions) {
    SCOPED_TRACE(c.what);
    KernelCache cache(config());
    writeFile(cache.entryPath(key), c.apply(good));
    CacheEntry dummy;
    EXPECT_FALSE(deserializeEntry(readFile(cache.entryPath(key)), key, dummy));
    int builds = 0;
    auto e = cache.getOrBuild(key, [&] {
      ++builds;
      return fakeEntry("k");
    });
    EXPECT_EQ(builds, 1);
    EXPECT_EQ(cache.stats().corruptEntries, 1u);
    EXPECT_EQ(cache.stats().diskHits, 0u);
    expectSameEntry(*e, fakeEntry("k"));
    // The rebuilt entry replaced the corrupt file.
    EXPECT_EQ(readFile(cache.entryPath(key)), good);
  }
}

TEST_F(CacheTest, MetadataIsValidated) {
  // A well-formed file (valid checksum) with a bad dtype is still rejected.
  CacheEntry e = fakeEntry("k");
  e.kernel.params[0].dtype = DType(200);
  std::string bytes = serializeEntry(keyOf("a"), e);
  CacheEntry back;
  std::string why;
  EXPECT_FALSE(deserializeEntry(bytes, keyOf("a"), back, &why));
  EXPECT_EQ(why, "unparsable metadata");
  // So is a cluster size the launch could not use.
  e = fakeEntry("k");
  e.kernel.clusterSize = 0;
  EXPECT_FALSE(
      deserializeEntry(serializeEntry(keyOf("a"), e), keyOf("a"), back, &why));
  EXPECT_EQ(why, "unparsable metadata");
  // And a TMA swizzle the descriptor encoding has no mode for.
  e = fakeEntry("k");
  e.kernel.params[2].boxSwizzle = 32;
  EXPECT_FALSE(
      deserializeEntry(serializeEntry(keyOf("a"), e), keyOf("a"), back, &why));
  EXPECT_EQ(why, "unparsable metadata");
}

TEST_F(CacheTest, DisabledCacheAlwaysBuilds) {
  CacheConfig c = config();
  c.enabled = false;
  KernelCache cache(c);
  int builds = 0;
  for (int i = 0; i < 3; ++i)
    cache.getOrBuild(keyOf("a"), [&] {
      ++builds;
      return fakeEntry("k");
    });
  EXPECT_EQ(builds, 3);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(cache.stats().memoryHits + cache.stats().diskHits, 0u);
}

TEST_F(CacheTest, EnvironmentConfiguration) {
  const char *vars[] = {"SPARSETILE_CACHE_DIR", "SPARSETILE_CACHE_DISABLE",
                        "XDG_CACHE_HOME", "HOME"};
  std::map<std::string, std::string> saved;
  for (const char *v : vars)
    if (const char *s = getenv(v))
      saved[v] = s;
  for (const char *v : vars)
    unsetenv(v);

  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(CacheConfig::fromEnvironment().directory,
            "/home/u/.cache/sparsetile");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(CacheConfig::fromEnvironment().directory, "/xdg/sparsetile");
  setenv("SPARSETILE_CACHE_DIR", dir.c_str(), 1);
  EXPECT_EQ(CacheConfig::fromEnvironment().directory, dir.string());
  EXPECT_TRUE(CacheConfig::fromEnvironment().enabled);
  setenv("SPARSETILE_CACHE_DISABLE", "1", 1);
  EXPECT_FALSE(CacheConfig::fromEnvironment().enabled);
  {
    KernelCache cache; // From the environment: disabled.
    int builds = 0;
    for (int i = 0; i < 2; ++i)
      cache.getOrBuild(keyOf("a"), [&] {
        ++builds;
        return fakeEntry("k");
      });
    EXPECT_EQ(builds, 2);
    EXPECT_FALSE(fs::exists(dir));
  }
  setenv("SPARSETILE_CACHE_DISABLE", "0", 1);
  EXPECT_TRUE(CacheConfig::fromEnvironment().enabled);

  for (const char *v : vars)
    unsetenv(v);
  for (auto &kv : saved)
    setenv(kv.first.c_str(), kv.second.c_str(), 1);
}

TEST_F(CacheTest, UnwritableDirectoryIsNotFatal) {
  CacheConfig c;
  c.directory = "/proc/sparsetile-cannot-write-here";
  KernelCache cache(c);
  auto e = cache.getOrBuild(keyOf("a"), [] { return fakeEntry("k"); });
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(cache.stats().diskWriteFailures, 1u);
  // The memory level still works.
  cache.getOrBuild(keyOf("a"), [] { return fakeEntry("k"); });
  EXPECT_EQ(cache.stats().memoryHits, 1u);
}

TEST_F(CacheTest, ThreadsShareOneCache) {
  KernelCache cache(config());
  std::atomic<int> builds{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        std::string name = "k" + std::to_string((i + t) % 5);
        auto e = cache.getOrBuild(keyOf(name), [&] {
          ++builds;
          return fakeEntry(name);
        });
        EXPECT_EQ(e->kernel.name, name);
      }
    });
  for (auto &t : threads)
    t.join();
  EXPECT_GE(builds.load(), 5);
}

// Several processes compile, store and load the same and different keys in
// one directory at once. Every process must succeed and every file left in
// the directory must be a valid entry for the key it is named after.
TEST_F(CacheTest, ManyProcessesShareOneDirectory) {
  const int kProcesses = 8, kShared = 6, kRounds = 20;
  fs::create_directories(dir);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // Child: no gtest assertions (they would not reach the parent).
      int status = 0;
      try {
        for (int round = 0; round < kRounds; ++round) {
          KernelCache cache(config()); // Empty memory: go to disk each round.
          for (int k = 0; k < kShared + 1; ++k) {
            std::string name = k < kShared ? "shared" + std::to_string(k)
                                           : "own" + std::to_string(getpid()) +
                                                 "-" + std::to_string(round);
            auto e = cache.getOrBuild(keyOf(name), [&] {
              std::this_thread::sleep_for(std::chrono::microseconds(200));
              return fakeEntry(name);
            });
            CacheEntry expect = fakeEntry(name);
            if (e->kernel.name != name || e->kernel.ptx != expect.kernel.ptx ||
                e->cubin != expect.cubin)
              status = 2;
          }
          if (cache.stats().corruptEntries != 0)
            status = 3;
        }
      } catch (...) {
        status = 4;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child " << pid << " failed";
  }
  int entries = 0;
  for (const auto &f : fs::directory_iterator(dir)) {
    std::string fname = f.path().filename().string();
    ASSERT_EQ(f.path().extension(), ".stk") << "leftover file " << fname;
    ++entries;
  }
  EXPECT_EQ(entries, kShared + kProcesses * kRounds);
  // Every entry is valid for the key in its name.
  KernelCache check(config());
  for (int k = 0; k < kShared; ++k) {
    std::string name = "shared" + std::to_string(k);
    CacheEntry e;
    std::string why;
    ASSERT_TRUE(deserializeEntry(readFile(check.entryPath(keyOf(name))),
                                 keyOf(name), e, &why))
        << why;
    expectSameEntry(e, fakeEntry(name));
  }
  for (pid_t pid : children)
    for (int round = 0; round < kRounds; ++round) {
      std::string name =
          "own" + std::to_string(pid) + "-" + std::to_string(round);
      CacheEntry e;
      ASSERT_TRUE(deserializeEntry(readFile(check.entryPath(keyOf(name))),
                                   keyOf(name), e));
      expectSameEntry(e, fakeEntry(name));
    }
}

//===----------------------------------------------------------------------===//
// The directory as a trust boundary (issue 46): a cubin found there is run as
// the user, so only a directory of the user's that no one else can write is
// used, and its files are opened as files, never as links, FIFOs or devices.
//===----------------------------------------------------------------------===//

namespace {

/// Sets the umask for one scope.
struct ScopedUmask {
  explicit ScopedUmask(mode_t m) : old(::umask(m)) {}
  ~ScopedUmask() { ::umask(old); }
  mode_t old;
};

mode_t modeOf(const fs::path &p) {
  struct stat st;
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

/// Plants a valid entry for `key` (as an attacker could) and checks that a
/// cache over `dir` builds instead of loading it, writes nothing there, and
/// says why on stderr.
void expectRefused(const fs::path &dir, const CacheKey &key,
                   const std::string &reasonPart) {
  CacheConfig c;
  c.directory = dir.string();
  KernelCache cache(c);
  CacheEntry planted = fakeEntry("planted");
  writeFile(cache.entryPath(key), serializeEntry(key, planted));
  size_t before = std::distance(fs::directory_iterator(dir), {});
  ::testing::internal::CaptureStderr();
  int builds = 0;
  auto e = cache.getOrBuild(key, [&] {
    ++builds;
    return fakeEntry("k");
  });
  cache.getOrBuild(key, [&] {
    ++builds;
    return fakeEntry("k");
  });
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(builds, 1); // The memory level still works.
  EXPECT_EQ(e->kernel.name, "k");
  EXPECT_EQ(cache.stats().diskHits, 0u);
  EXPECT_EQ(cache.stats().memoryHits, 1u);
  EXPECT_EQ(cache.stats().diskWriteFailures, 0u);
  EXPECT_NE(cache.refusal().find(reasonPart), std::string::npos)
      << cache.refusal();
  EXPECT_EQ(cache.trustedDirectory(), "");
  // One warning naming the directory and the reason.
  EXPECT_NE(err.find("warning: not using the kernel cache directory '" +
                     dir.string() + "'"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(reasonPart), std::string::npos) << err;
  EXPECT_EQ(err.find("warning", err.find("warning") + 1), std::string::npos)
      << "warned more than once: " << err;
  EXPECT_EQ(size_t(std::distance(fs::directory_iterator(dir), {})), before)
      << "wrote into a refused directory";
}

/// Runs `f`, which reads the FIFO `fifo`. Without O_NONBLOCK its open waits
/// for a writer forever: after 20 s this becomes the writer, so that the
/// test fails instead of hanging.
template <typename F> auto withoutBlockingOn(const std::string &fifo, F f) {
  auto done = std::async(std::launch::async, f);
  if (done.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    ADD_FAILURE() << "opening the FIFO " << fifo << " blocked";
    // Opening the write end wakes the reader's open (Linux counts writers,
    // so closing it at once still does); its read then sees end of file.
    int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0)
      ::close(fd);
    return done.get();
  }
  return done.get();
}

} // namespace

TEST_F(CacheTest, DirectoryAndEntriesArePrivateWhateverTheUmask) {
  ScopedUmask open(0); // Would make 0777 directories and 0666 files.
  fs::path nested = dir / "a" / "b";
  CacheConfig c;
  c.directory = nested.string();
  KernelCache cache(c);
  cache.getOrBuild(keyOf("a"), [] { return fakeEntry("k"); });
  ASSERT_TRUE(fs::exists(cache.entryPath(keyOf("a"))));
  EXPECT_EQ(modeOf(nested), 0700u);
  EXPECT_EQ(modeOf(dir / "a"), 0700u); // Missing parents too.
  EXPECT_EQ(modeOf(cache.entryPath(keyOf("a"))), 0600u);
  // The helper autotune records go through as well.
  ASSERT_TRUE(writeFileAtomically((nested / "autotune").string(), "r.txt", "x"));
  EXPECT_EQ(modeOf(nested / "autotune"), 0700u);
  EXPECT_EQ(modeOf(nested / "autotune" / "r.txt"), 0600u);
  EXPECT_EQ(cache.refusal(), "");
  EXPECT_EQ(cache.trustedDirectory(), nested.string());
}

TEST_F(CacheTest, DirectoryWritableByOthersIsRefused) {
  for (mode_t mode : {0777, 0775, 0757}) {
    SCOPED_TRACE(mode);
    fs::remove_all(dir);
    fs::create_directories(dir);
    ASSERT_EQ(::chmod(dir.c_str(), mode), 0);
    expectRefused(dir, keyOf("a"), "other users can write to it");
  }
  // The owner's own 0755 (an older sparsetile under umask 022) is fine.
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  KernelCache cache(config());
  cache.getOrBuild(keyOf("a"), [] { return fakeEntry("k"); });
  EXPECT_EQ(cache.refusal(), "");
  EXPECT_TRUE(fs::exists(cache.entryPath(keyOf("a"))));
}

TEST_F(CacheTest, DirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) {
    // Only root can give a directory away; "/" is root's, mode 0755.
    CacheConfig c;
    c.directory = "/";
    KernelCache cache(c);
    cache.getOrBuild(keyOf("a"), [] { return fakeEntry("k"); });
    EXPECT_NE(cache.refusal().find("not by this user"), std::string::npos)
        << cache.refusal();
    return;
  }
  // What a second local user does: pre-create the victim's directory, their
  // own and mode 0755, with a cubin in it.
  fs::create_directories(dir);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  expectRefused(dir, keyOf("a"), "is owned by uid 65534, not by this user");
}

TEST_F(CacheTest, EntryThatIsASymlinkIsNotFollowed) {
  // A valid entry elsewhere, linked in under the key's name.
  fs::create_directories(dir);
  fs::path outside = dir.string() + "-outside.stk";
  writeFile(outside, serializeEntry(keyOf("a"), fakeEntry("planted")));
  KernelCache cache(config());
  fs::create_symlink(outside, cache.entryPath(keyOf("a")));
  CacheEntry e;
  std::string why;
  EXPECT_FALSE(readEntryFile(AT_FDCWD, cache.entryPath(keyOf("a")),
                             keyOf("a"), e, &why));
  EXPECT_EQ(why, "is a symbolic link");
  auto got = cache.getOrBuild(keyOf("a"), [] { return fakeEntry("k"); });
  EXPECT_EQ(got->kernel.name, "k");
  EXPECT_EQ(cache.stats().corruptEntries, 1u);
  // The rebuilt entry replaced the link, not what it pointed to.
  EXPECT_FALSE(fs::is_symlink(cache.entryPath(keyOf("a"))));
  CacheEntry back;
  ASSERT_TRUE(deserializeEntry(readFile(outside), keyOf("a"), back));
  EXPECT_EQ(back.kernel.name, "planted");
  fs::remove(outside);
}

TEST_F(CacheTest, EntryThatIsAFifoDoesNotHang) {
  fs::create_directories(dir);
  KernelCache cache(config());
  std::string fifo = cache.entryPath(keyOf("a"));
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto got = withoutBlockingOn(fifo, [&] {
    return cache.getOrBuild(keyOf("a"), [] { return fakeEntry("k"); });
  });
  EXPECT_EQ(got->kernel.name, "k");
  EXPECT_EQ(cache.stats().corruptEntries, 1u);
  EXPECT_TRUE(fs::is_regular_file(fifo)); // Renamed over it.
  // A directory in its place is rejected as well (and cannot be replaced).
  KernelCache other(config());
  fs::create_directory(other.entryPath(keyOf("b")));
  EXPECT_EQ(other.getOrBuild(keyOf("b"), [] { return fakeEntry("k"); })
                ->kernel.name,
            "k");
  EXPECT_EQ(other.stats().corruptEntries, 1u);
  CacheEntry e;
  std::string why;
  EXPECT_FALSE(
      readEntryFile(AT_FDCWD, other.entryPath(keyOf("b")), keyOf("b"), e, &why));
  EXPECT_EQ(why, "is not a regular file");
}

TEST_F(CacheTest, HugeEntryIsRejectedByItsHeaderBeforeBeingRead) {
  fs::create_directories(dir);
  KernelCache cache(config());
  std::string path = cache.entryPath(keyOf("a"));
  // A valid entry followed by 1 GiB of hole: the header's lengths do not
  // cover the file, so nothing past the header may be read.
  writeFile(path, serializeEntry(keyOf("a"), fakeEntry("k")));
  ASSERT_EQ(::truncate(path.c_str(), off_t(1) << 30), 0);
  struct rusage before, after;
  ::getrusage(RUSAGE_SELF, &before);
  CacheEntry e;
  std::string why;
  EXPECT_FALSE(readEntryFile(AT_FDCWD, path, keyOf("a"), e, &why));
  EXPECT_EQ(why, "size mismatch");
  auto got = cache.getOrBuild(keyOf("a"), [] { return fakeEntry("k"); });
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_EQ(cache.stats().corruptEntries, 1u);
  EXPECT_EQ(cache.stats().misses, 1u);
  // Reading it whole would have taken 1 GiB (ru_maxrss is in KiB).
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024);

  // A header that matches the file but claims more than the cap is refused
  // too (the file is a hole of that size: nothing to write or read).
  std::string bytes = serializeEntry(keyOf("b"), fakeEntry("k"));
  uint64_t meta = 0, ptx = 0;
  for (int i = 0; i < 8; ++i) {
    meta |= uint64_t(uint8_t(bytes[48 + i])) << (8 * i);
    ptx |= uint64_t(uint8_t(bytes[56 + i])) << (8 * i);
    bytes[64 + i] = char(kMaxEntryBytes >> (8 * i));
  }
  std::string big = cache.entryPath(keyOf("b"));
  writeFile(big, bytes);
  ASSERT_EQ(::truncate(big.c_str(), off_t(104 + meta + ptx + kMaxEntryBytes)),
            0);
  EXPECT_FALSE(readEntryFile(AT_FDCWD, big, keyOf("b"), e, &why));
  EXPECT_EQ(why, "entry too large");
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024);
}

TEST_F(CacheTest, EntryOfAnotherUserIsRejected) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "only root can give a file to another user";
  fs::create_directories(dir);
  KernelCache cache(config());
  writeFile(cache.entryPath(keyOf("a")),
            serializeEntry(keyOf("a"), fakeEntry("planted")));
  ASSERT_EQ(::chown(cache.entryPath(keyOf("a")).c_str(), 65534, 65534), 0);
  auto got = cache.getOrBuild(keyOf("a"), [] { return fakeEntry("k"); });
  EXPECT_EQ(got->kernel.name, "k");
  EXPECT_EQ(cache.stats().corruptEntries, 1u);
}

TEST_F(CacheTest, SmallFilesAreReadBoundedAndOnlyIfRegular) {
  fs::create_directories(dir);
  std::string bytes;
  writeFile(dir / "r.txt", "record");
  ASSERT_TRUE(readWholeFile((dir / "r.txt").string(), bytes));
  EXPECT_EQ(bytes, "record");
  EXPECT_FALSE(readWholeFile((dir / "r.txt").string(), bytes, 5)); // Too big.
  fs::create_symlink(dir / "r.txt", dir / "link.txt");
  EXPECT_FALSE(readWholeFile((dir / "link.txt").string(), bytes));
  ASSERT_EQ(::mkfifo((dir / "fifo.txt").c_str(), 0600), 0);
  EXPECT_FALSE(withoutBlockingOn((dir / "fifo.txt").string(), [&] {
    return readWholeFile((dir / "fifo.txt").string(), bytes);
  }));
  EXPECT_FALSE(readWholeFile("/dev/zero", bytes));
  EXPECT_FALSE(readWholeFile(dir.string(), bytes));
}
