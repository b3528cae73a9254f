//===- Examples.h - The DSL examples, for runtime and GPU tests -*- C++ -*-===//
//
// Where dsl_examples/ is, which kernel each file holds, and the divisibility
// variants the tests compile. Shared by RuntimeJITTests, the cache probe (a
// second process that must load every example from the disk cache) and the
// GPU tests, so they all ask for exactly the same cache keys.
//
// The directory is $SPARSETILE_EXAMPLES_DIR (an edited copy of the kernels),
// else dsl_examples/ of the source tree given at run time (SourceTree.h):
// nothing is read from the build machine's path.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TESTS_COMMON_EXAMPLES_H
#define SPARSETILE_TESTS_COMMON_EXAMPLES_H

#include "SourceTree.h"
#include "sparsetile/runtime/JIT.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace sparsetile {
namespace testing {

inline std::string examplesDir() {
  if (const char *env = std::getenv("SPARSETILE_EXAMPLES_DIR"))
    if (*env)
      return env;
  return sourcePath("dsl_examples");
}

struct Example {
  const char *file;   ///< Under examplesDir().
  const char *kernel; ///< The kernel it declares.
  /// Its integer run-time parameters (the ones divisibility specializes on).
  std::vector<std::string> intParams;
};

inline const std::vector<Example> &examples() {
  static const std::vector<Example> list = {
      {"vector_add.tile", "vector_add", {"n"}},
      {"softmax.tile", "softmax", {"n_cols", "stride"}},
      {"swiglu_fwd.tile", "swiglu_fwd", {"F", "stride_h", "stride_y"}},
  };
  return list;
}

inline std::string examplePath(const Example &e) {
  return examplesDir() + "/" + e.file;
}

/// The divisibility variants tests build per example: none, and all integer
/// parameters divisible by 16 (what a launch with aligned shapes uses).
inline std::vector<std::vector<std::string>> variantsOf(const Example &e) {
  return {{}, e.intParams};
}

/// The seed of this test run: $SPARSETILE_TEST_SEED, else random. Printed
/// once so a failure can be reproduced.
inline uint64_t testSeed() {
  static const uint64_t seed = [] {
    uint64_t s;
    if (const char *env = std::getenv("SPARSETILE_TEST_SEED"))
      s = std::strtoull(env, nullptr, 0);
    else
      s = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
    std::printf("[ seed     ] SPARSETILE_TEST_SEED=%llu (set it to reproduce)\n",
                static_cast<unsigned long long>(s));
    std::fflush(stdout);
    return s;
  }();
  return seed;
}

/// A test's own empty folder under the temp directory (for a disk cache),
/// named after `prefix` and the process; removed again when it goes out of
/// scope.
class ScratchDir {
public:
  explicit ScratchDir(const std::string &prefix)
      : path_(std::filesystem::temp_directory_path() /
              (prefix + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
    // The cache refuses a directory others can write, as a umask of 002
    // would make this one.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path &path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace testing
} // namespace sparsetile

#endif // SPARSETILE_TESTS_COMMON_EXAMPLES_H
