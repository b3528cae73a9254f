//===- CacheProbe.cpp - A second process that must hit the disk cache -----===//
//
// Usage: runtime_cache_probe CACHE_DIR ARCH...
//
// Asks a fresh JIT over CACHE_DIR for every DSL example, in every variant the
// tests build (Examples.h), for each ARCH. Its compile hook refuses to
// compile, so everything must come from the disk cache. Prints one line per
// artifact ("key HEX FILE ARCH VARIANT") and a last line
// "stats memory_hits=M disk_hits=D misses=N compiles=C". Exits 0 when every
// artifact came from disk with a cubin, else 2. RealCompilerTest runs it.
//
//===----------------------------------------------------------------------===//

#include "Examples.h"

#include <cstdio>

using namespace sparsetile;
using namespace sparsetile::rt;

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s CACHE_DIR ARCH...\n", argv[0]);
    return 1;
  }
  int compiles = 0;
  JITConfig config;
  config.cache.directory = argv[1];
  config.cache.enabled = true;
  // The versions stay the real compiler's (they are part of the key); only
  // compiling is forbidden.
  config.hooks.compile = [&](const std::string &, const std::string &,
                             const std::string &name,
                             const CompileOptions &) -> CompileResult {
    ++compiles;
    CompileResult r;
    r.diagnostics = "cache probe: asked to compile '" + name + "'";
    return r;
  };
  JIT jit(config);
  bool ok = true;
  for (int a = 2; a < argc; ++a) {
    JITOptions o;
    o.arch = argv[a];
    for (const auto &ex : testing::examples()) {
      KernelSource src = KernelSource::fromFile(testing::examplePath(ex));
      for (const auto &div : testing::variantsOf(ex)) {
        std::string label = div.empty() ? "plain" : "div16";
        try {
          Artifacts art = jit.inspect(src, ex.kernel, {}, o, div);
          std::printf("key %s %s %s %s\n", art.key.hex().c_str(), ex.file,
                      o.arch.c_str(), label.c_str());
          bool wantCubin = !needsWholeProgram(art.kernel.ptx);
          if (art.kernel.ptx.empty() ||
              (wantCubin && (art.cubin.size() < 4 ||
                             art.cubin.compare(1, 3, "ELF") != 0)) ||
              (!wantCubin && !art.cubin.empty()))
            ok = false;
        } catch (const std::exception &e) {
          std::printf("error %s %s %s: %s\n", ex.file, o.arch.c_str(),
                      label.c_str(), e.what());
          ok = false;
        }
      }
    }
  }
  CacheStats s = jit.cache().stats();
  std::printf("stats memory_hits=%llu disk_hits=%llu misses=%llu compiles=%d\n",
              (unsigned long long)s.memoryHits, (unsigned long long)s.diskHits,
              (unsigned long long)s.misses, compiles);
  return ok && compiles == 0 && s.misses == 0 ? 0 : 2;
}
