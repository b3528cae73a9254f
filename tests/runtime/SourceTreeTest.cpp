//===- SourceTreeTest.cpp - Test data comes from the tree given at run time ===//
//
// Tests read dsl_examples/ and other files of the source tree from
// $SPARSETILE_SOURCE_DIR (or $SPARSETILE_EXAMPLES_DIR for the kernels), never
// from the build machine's path: a build carried elsewhere, as
// scripts/gpu_run.sh runs one, read the wrong tree or none (issue 46).
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "SourceTree.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace st = sparsetile::testing;

namespace {

/// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old, had_ = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::string old_;
  bool had_ = false;
};

} // namespace

TEST(SourceTree, GivenAtRunTime) {
  ScopedEnv examples("SPARSETILE_EXAMPLES_DIR", nullptr);
  {
    ScopedEnv tree("SPARSETILE_SOURCE_DIR", "/carried/copy");
    EXPECT_EQ(st::sourceDir(), "/carried/copy");
    EXPECT_EQ(st::sourcePath("bench/autotune/gemm_leaky_relu.tile"),
              "/carried/copy/bench/autotune/gemm_leaky_relu.tile");
    EXPECT_EQ(st::examplesDir(), "/carried/copy/dsl_examples");
    EXPECT_NE(st::sourceTreeHint().find("/carried/copy"), std::string::npos);
  }
  // Unset: relative to the working directory (a test run by hand from the
  // repository root), and a failure to read says what to set.
  ScopedEnv tree("SPARSETILE_SOURCE_DIR", nullptr);
  EXPECT_EQ(st::examplesDir(), "dsl_examples");
  EXPECT_NE(st::sourceTreeHint().find("SPARSETILE_SOURCE_DIR is not set"),
            std::string::npos);
}

TEST(SourceTree, ExamplesDirOverridesTheTree) {
  ScopedEnv tree("SPARSETILE_SOURCE_DIR", "/carried/copy");
  ScopedEnv examples("SPARSETILE_EXAMPLES_DIR", "/edited/kernels");
  EXPECT_EQ(st::examplesDir(), "/edited/kernels");
}

// ctest (and gpu_run.sh) give every test the tree it was configured from, or
// the test runs in one: it must hold the examples the tests read.
TEST(SourceTree, IsThere) {
  std::string probe = st::examplesDir() + "/vector_add.tile";
  EXPECT_EQ(access(probe.c_str(), R_OK), 0)
      << probe << " (" << st::sourceTreeHint() << ")";
}
