//===- SourceTree.h - Where the tests' data is, given at run time -*- C++ -*-===//
//
// Tests read files of the source tree (dsl_examples/, bench kernels). Its
// path is given at run time, never baked in at build time: a build carried
// to another path or machine (scripts/gpu_run.sh runs one from a copy of the
// repository) must not read the build machine's tree, which is not there or
// is another revision.
//
// The tree is $SPARSETILE_SOURCE_DIR (ctest sets it for every test; so does
// gpu_run.sh), else the working directory when it is a source tree (holds
// dsl_examples/), as when a test executable is run by hand from the
// repository root. Header-only and standard C++ only, so that any test can
// include it.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TESTS_COMMON_SOURCETREE_H
#define SPARSETILE_TESTS_COMMON_SOURCETREE_H

#include <cstdlib>
#include <string>
#include <sys/stat.h>

namespace sparsetile {
namespace testing {

/// The source tree's root, or "" when none was given (relative paths then
/// resolve against the working directory, and fail there with a message
/// that names the variable: sourceTreeHint()).
inline std::string sourceDir() {
  if (const char *env = std::getenv("SPARSETILE_SOURCE_DIR"))
    if (*env)
      return env;
  return "";
}

/// `relative` (e.g. "dsl_examples/sparse24.tile") in the source tree.
inline std::string sourcePath(const std::string &relative) {
  std::string root = sourceDir();
  return root.empty() ? relative : root + "/" + relative;
}

/// What to say when a file of the tree cannot be read.
inline std::string sourceTreeHint() {
  std::string root = sourceDir();
  return root.empty() ? "SPARSETILE_SOURCE_DIR is not set and the working "
                        "directory is not a source tree; set it to the "
                        "repository root"
                      : "SPARSETILE_SOURCE_DIR is " + root;
}

} // namespace testing
} // namespace sparsetile

#endif // SPARSETILE_TESTS_COMMON_SOURCETREE_H
