//===- OpsSourceTest.cpp - Where the ops read their kernels from ----------===//
//
// The ops compile the dsl_examples/ files embedded in the library, unless
// $SPARSETILE_OPS_SOURCE_DIR names a directory to read them from (to time
// an edited kernel through its op without a rebuild). Host only.
//
//===----------------------------------------------------------------------===//

#include "OpsCommon.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/JIT.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace sparsetile;
namespace fs = std::filesystem;

namespace {

/// Sets $SPARSETILE_OPS_SOURCE_DIR for one scope.
struct SourceDirEnv {
  explicit SourceDirEnv(const std::string &dir) {
    setenv("SPARSETILE_OPS_SOURCE_DIR", dir.c_str(), 1);
  }
  ~SourceDirEnv() { unsetenv("SPARSETILE_OPS_SOURCE_DIR"); }
};

} // namespace

// Names no op uses, so that no earlier lookup in this process has cached
// them: the override applies at a name's first lookup.
TEST(OpsSource, DirectoryReplacesTheEmbeddedText) {
  fs::path dir = fs::temp_directory_path() /
                 ("sparsetile-ops-source-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string text = "kernel probe(x: *f32) { store(x, 1.0); }\n";
  std::ofstream(dir / "override_probe.tile") << text;
  {
    SourceDirEnv env(dir.string());
    const rt::KernelSource &s =
        ops::detail::embeddedSource("override_probe.tile");
    EXPECT_EQ(s.text(), text);
    EXPECT_EQ(s.filename(), (dir / "override_probe.tile").string());
    // Kept for the process: a second lookup returns the same source.
    EXPECT_EQ(&ops::detail::embeddedSource("override_probe.tile"), &s);
    try {
      ops::detail::embeddedSource("override_missing.tile");
      ADD_FAILURE() << "a missing file must throw";
    } catch (const rt::Error &e) {
      std::string what = e.what();
      EXPECT_NE(what.find("override_missing.tile"), std::string::npos) << what;
      EXPECT_NE(what.find("SPARSETILE_OPS_SOURCE_DIR"), std::string::npos)
          << what;
    }
  }
  fs::remove_all(dir);
}

// Without the variable, a name is the library's embedded file.
TEST(OpsSource, EmbeddedTextByDefault) {
  unsetenv("SPARSETILE_OPS_SOURCE_DIR");
  const rt::KernelSource &s =
      ops::detail::embeddedSource("gated_activations.tile");
  EXPECT_NE(s.text().find("kernel"), std::string::npos);
  EXPECT_EQ(s.filename(), "gated_activations.tile");
}

// The embedded kernels that import tile_order.tile get it from the library,
// not from the disk, and compile with it (no GPU: PTX only, no cache).
TEST(OpsSource, EmbeddedImportsComeFromTheLibrary) {
  unsetenv("SPARSETILE_OPS_SOURCE_DIR");
  rt::JITConfig config;
  config.cache.enabled = false;
  config.buildCubin = false;
  rt::JIT jit(config);
  rt::JITOptions sm90;
  sm90.arch = "sm_90";
  for (auto [file, kernel] : {std::pair{"sparse24.tile", "sparse_linear_tma"},
                              {"sparsedrop.tile", "dsd_fwd"}}) {
    const rt::KernelSource &s = ops::detail::embeddedSource(file);
    ASSERT_EQ(s.imports().count("tile_order.tile"), 1u) << file;
    EXPECT_NE(s.imports().at("tile_order.tile").find("fn grouped_tile"),
              std::string::npos);
    rt::Artifacts a = jit.inspect(s, kernel, {}, sm90);
    EXPECT_NE(a.kernel.ptx.find(".entry"), std::string::npos) << kernel;
  }
}
