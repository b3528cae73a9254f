//===- JITThreadsTest.cpp - 16 threads on one JIT and one disk cache ------===//
//
// sparsetile runs inside multi-threaded training processes. Here 16 threads
// call JIT::get, JIT::inspect and (with a GPU) launch, on the same and on
// different kernels, through two JIT objects over one disk cache directory:
//  1. every thread gets the same Kernel& for the same handle from one JIT;
//  2. every thread gets the same PTX for the same key, from either JIT;
//     different kernels get different PTX;
//  3. the disk holds one entry per key and no temporary files;
//  4. with a GPU, each thread launches vector_add on its own stream with its
//     own random inputs and checks the result against the CPU.
// Built with -fsanitize=thread by scripts/tsan.sh, where any data race in
// sparsetile's code fails the run; in the normal build it is a stress test.
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "sparsetile/runtime/JitLink.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

using namespace sparsetile;
using namespace sparsetile::rt;
namespace fs = std::filesystem;
namespace st = sparsetile::testing;

namespace {

constexpr int kThreads = 16;
constexpr int kRounds = 3;

/// The kernels the threads share: one file at two constants (two cache
/// keys, two handles) and a second file.
struct Job {
  const char *file;
  const char *kernel;
  Constants constants;
};
const std::vector<Job> &jobs() {
  static const std::vector<Job> list = {
      {"vector_add.tile", "vector_add", {{"BLOCK", "1024"}}},
      {"vector_add.tile", "vector_add", {{"BLOCK", "256"}}},
      {"softmax.tile", "softmax", {}},
  };
  return list;
}

/// Runs vector_add (BLOCK elements per program) on n random floats on a
/// stream of its own; returns the largest error against the CPU.
float launchVectorAdd(Kernel &k, int block, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-2.f, 2.f);
  std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    x[size_t(i)] = d(rng);
    y[size_t(i)] = d(rng);
  }
  DeviceBuffer dx = DeviceBuffer::fromHost(x), dy = DeviceBuffer::fromHost(y);
  DeviceBuffer dout(size_t(n) * 4);
  dout.fill(0xFF);
  Stream s;
  k.launch(LaunchConfig(unsigned((n + block - 1) / block), Dim3(0), 0,
                        s.handle()),
           {Arg::ptr(dx, DType::F32), Arg::ptr(dy, DType::F32),
            Arg::ptr(dout, DType::F32), n});
  s.synchronize();
  std::vector<float> out = dout.toHost<float>();
  float err = 0;
  for (int i = 0; i < n; ++i) {
    float e = std::abs(out[size_t(i)] - (x[size_t(i)] + y[size_t(i)]));
    if (std::isnan(e))
      return INFINITY; // The poison survived: the element was not written.
    err = std::max(err, e);
  }
  return err;
}

} // namespace

TEST(JITThreads, SixteenThreadsGetInspectAndLaunch) {
  std::string whyNoGpu;
  if (!jitLinkAvailable(&whyNoGpu))
    GTEST_SKIP() << whyNoGpu;
  st::ScratchDir scratch("sparsetile-jit-threads");
  const fs::path &dir = scratch.path();
  const bool gpu = gpuAvailable(&whyNoGpu);
  JITConfig config;
  config.cache.directory = dir.string();
  config.cache.enabled = true;
  JIT first(config), second(config); // One disk cache, two JITs.
  JIT *jits[2] = {&first, &second};

  std::vector<KernelSource> sources;
  for (const Job &j : jobs())
    sources.push_back(
        KernelSource::fromFile(st::examplesDir() + "/" + j.file));

  std::mutex m;
  std::map<std::pair<int, size_t>, std::set<Kernel *>> handles; // (jit, job)
  std::map<size_t, std::set<std::string>> ptx;                  // job
  std::vector<std::string> errors;
  std::atomic<int> launches{0};
  uint64_t seed = st::testSeed();

  auto work = [&](int t) {
    try {
      for (int r = 0; r < kRounds; ++r) {
        // Threads start on different jobs and all visit every job.
        for (size_t i = 0; i < jobs().size(); ++i) {
          size_t job = (size_t(t) + size_t(r) + i) % jobs().size();
          const Job &j = jobs()[job];
          int which = (t + r) % 2;
          JIT &jit = *jits[which];
          Kernel &k = jit.get(sources[job], j.kernel, j.constants);
          JITOptions o;
          o.arch = "sm_90";
          Artifacts a = jit.inspect(sources[job], j.kernel, j.constants, o);
          {
            std::lock_guard<std::mutex> lock(m);
            handles[{which, job}].insert(&k);
            ptx[job].insert(a.kernel.ptx);
          }
          if (gpu && std::string(j.kernel) == "vector_add") {
            int block = std::stoi(j.constants.at("BLOCK"));
            int n = 1000 + 37 * t + r;
            float err = launchVectorAdd(k, block, n,
                                        unsigned(seed) + unsigned(t * 100 + r));
            if (!(err <= 1e-6f)) {
              std::lock_guard<std::mutex> lock(m);
              errors.push_back("thread " + std::to_string(t) +
                               ": vector_add error " + std::to_string(err));
            }
            launches.fetch_add(1);
          }
        }
      }
    } catch (const std::exception &e) {
      std::lock_guard<std::mutex> lock(m);
      errors.push_back("thread " + std::to_string(t) + ": " + e.what());
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(work, t);
  for (std::thread &th : threads)
    th.join();

  for (const std::string &e : errors)
    ADD_FAILURE() << e;
  for (auto &[key, set] : handles)
    EXPECT_EQ(set.size(), 1u) << "JIT " << key.first << " job " << key.second
                              << " handed out " << set.size() << " kernels";
  EXPECT_EQ(handles.size(), 2 * jobs().size());
  std::set<std::string> distinct;
  for (auto &[job, set] : ptx) {
    EXPECT_EQ(set.size(), 1u) << "job " << job << ": threads saw "
                              << set.size() << " different PTX texts";
    distinct.insert(set.begin(), set.end());
    EXPECT_NE(set.begin()->find(".entry " + std::string(jobs()[job].kernel)),
              std::string::npos);
  }
  EXPECT_EQ(distinct.size(), jobs().size());

  // One entry per key on disk, no temporary files left behind.
  size_t entries = 0, others = 0;
  for (const auto &f : fs::directory_iterator(dir))
    (f.path().extension() == ".stk" ? entries : others) += 1;
  // With a GPU, each vector_add job is also launched, and its launches with
  // n % 16 == 0 and != 0 compile two divisibility variants (the n values
  // below cover both): one more entry per launched job.
  size_t launched = 0;
  for (const Job &j : jobs())
    launched += gpu && std::string(j.kernel) == "vector_add";
  EXPECT_EQ(entries, jobs().size() + launched);
  EXPECT_EQ(others, 0u);

  if (!gpu)
    GTEST_SKIP() << "compile half passed (" << kThreads
                 << " threads); launches skipped, no GPU: " << whyNoGpu;
  EXPECT_EQ(launches.load(), kThreads * kRounds * 2);
}
