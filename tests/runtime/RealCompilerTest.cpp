//===- RealCompilerTest.cpp - The JIT over the real tile compiler ---------===//
//
// The JIT with its default hooks (sparsetile::compile) on the DSL examples,
// for explicit archs, so no GPU is needed: PTX comes out, nvJitLink turns it
// into a cubin, a second JIT object over the same directory loads everything
// from disk without compiling, and so does a second *process*
// (runtime_cache_probe, next to this executable) -- counted by cache stats.
//
//===----------------------------------------------------------------------===//

#include "Examples.h"
#include "ScopedEnv.h"
#include "sparsetile/runtime/JitLink.h"
#include "sparsetile/runtime/Log.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <unistd.h>

using namespace sparsetile;
using namespace sparsetile::rt;
namespace fs = std::filesystem;
namespace st = sparsetile::testing;

namespace {

const std::vector<std::string> kArchs = {"sm_80", "sm_90"};

class RealCompilerTest : public ::testing::Test {
protected:
  /// These tests expect nvJitLink's cubins, whatever the environment says
  /// (SPARSETILE_ASSEMBLER=driver leaves kernels to the driver).
  sparsetile::test::ScopedUnsetEnv assembler{"SPARSETILE_ASSEMBLER"};
  void SetUp() override {
    std::string why;
    if (!jitLinkAvailable(&why))
      GTEST_SKIP() << why;
    dir = fs::temp_directory_path() /
          ("sparsetile-real-jit-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
  }
  void TearDown() override {
    if (!dir.empty())
      fs::remove_all(dir);
  }

  /// A JIT with the real compiler, counting its compiles.
  /// A JIT with the default configuration (as a second process has), or
  /// with the occupancy assembly set as asked.
  std::unique_ptr<JIT> makeJit(int *compiles,
                               std::optional<bool> raiseOccupancy = {},
                               std::optional<bool> wholeProgram = {}) {
    JITConfig c;
    if (raiseOccupancy)
      c.raiseOccupancy = *raiseOccupancy;
    if (wholeProgram)
      c.wholeProgramForOneBlock = *wholeProgram;
    c.cache.directory = dir.string();
    c.cache.enabled = true;
    CompilerHooks real = CompilerHooks::sparsetileCompiler();
    c.hooks = real;
    c.hooks.compile = [real, compiles](const std::string &s,
                                       const std::string &f,
                                       const std::string &k,
                                       const CompileOptions &o) {
      ++*compiles;
      return real.compile(s, f, k, o);
    };
    return std::make_unique<JIT>(c);
  }

  fs::path dir;
};

JITOptions forArch(const std::string &arch) {
  JITOptions o;
  o.arch = arch;
  return o;
}

std::string variantLabel(const std::vector<std::string> &div) {
  return div.empty() ? "plain" : "div16";
}

/// The cubin is an ELF object for the CUDA machine (EM_CUDA = 190).
void expectCudaElf(const std::string &cubin, const std::string &what) {
  ASSERT_GE(cubin.size(), 20u) << what;
  EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF")) << what;
  unsigned machine = uint8_t(cubin[18]) | uint8_t(cubin[19]) << 8;
  EXPECT_EQ(machine, 190u) << what;
}

std::string self() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, size_t(n)) : std::string();
}

} // namespace

TEST_F(RealCompilerTest, ExamplesAreFound) {
  for (const auto &ex : st::examples())
    EXPECT_TRUE(fs::exists(st::examplePath(ex)))
        << st::examplePath(ex) << " (set SPARSETILE_EXAMPLES_DIR)";
}

TEST_F(RealCompilerTest, ExamplesCompileToPtxAndCubinThenHitDiskCache) {
  int compiles = 0;
  auto jit = makeJit(&compiles);
  std::map<std::string, Artifacts> built; // label -> artifacts
  for (const std::string &arch : kArchs)
    for (const auto &ex : st::examples()) {
      KernelSource src = KernelSource::fromFile(st::examplePath(ex));
      for (const auto &div : st::variantsOf(ex)) {
        std::string label =
            std::string(ex.file) + " " + arch + " " + variantLabel(div);
        Artifacts a;
        ASSERT_NO_THROW(a = jit->inspect(src, ex.kernel, {}, forArch(arch), div))
            << label;
        EXPECT_EQ(a.kernel.name, ex.kernel) << label;
        // sm_90 compiles to sm_90a (TMA, wgmma).
        std::string target = arch == "sm_90" ? "sm_90a" : arch;
        EXPECT_EQ(a.kernel.arch, target) << label;
        ASSERT_FALSE(a.kernel.ptx.empty()) << label;
        EXPECT_NE(a.kernel.ptx.find(".entry " + std::string(ex.kernel)),
                  std::string::npos)
            << label;
        EXPECT_NE(a.kernel.ptx.find(".target " + target), std::string::npos)
            << label;
        EXPECT_EQ(a.kernel.numThreads, 128) << label << " (@num_warps(4))";
        // The run-time parameters, with the divisibility the variant assumed.
        std::vector<std::string> ints;
        for (const KernelParam &p : a.kernel.params) {
          if (p.isPointer)
            continue; // Pointers are always assumed 16-byte aligned.
          ints.push_back(p.name);
          bool want = std::count(div.begin(), div.end(), p.name) > 0;
          EXPECT_EQ(p.divisibleBy16, want) << label << " param " << p.name;
        }
        EXPECT_EQ(ints, ex.intParams) << label;
        // Warp-specialized kernels (setmaxnreg) are left to the driver's
        // whole-program JIT: no cubin. Everything else has one.
        if (needsWholeProgram(a.kernel.ptx))
          EXPECT_TRUE(a.cubin.empty()) << label;
        else
          expectCudaElf(a.cubin, label);
        built[label] = a;
      }
      // Report whether the divisibility hint changed the code (it should
      // enable vector accesses); informational.
      Artifacts p = built[std::string(ex.file) + " " + arch + " plain"];
      Artifacts d = built[std::string(ex.file) + " " + arch + " div16"];
      EXPECT_NE(p.key, d.key);
      std::printf("%-16s %s: PTX %5zu B plain, %5zu B div16 (%s), cubin %zu B\n",
                  ex.file, arch.c_str(), p.kernel.ptx.size(),
                  d.kernel.ptx.size(),
                  p.kernel.ptx == d.kernel.ptx ? "same code" : "differs",
                  p.cubin.size());
    }
  const size_t n = built.size();
  EXPECT_EQ(n, kArchs.size() * 6);
  EXPECT_EQ(compiles, int(n));
  EXPECT_EQ(jit->cache().stats().misses, n);
  EXPECT_EQ(jit->cache().stats().diskWriteFailures, 0u);

  // Memory hits in the same JIT.
  for (const std::string &arch : kArchs)
    for (const auto &ex : st::examples())
      for (const auto &div : st::variantsOf(ex))
        jit->inspect(KernelSource::fromFile(st::examplePath(ex)), ex.kernel, {},
                     forArch(arch), div);
  EXPECT_EQ(compiles, int(n));
  EXPECT_EQ(jit->cache().stats().memoryHits, n);

  // A second JIT object over the same directory: disk hits, no compiles,
  // byte-identical artifacts.
  int compiles2 = 0;
  auto jit2 = makeJit(&compiles2);
  for (const std::string &arch : kArchs)
    for (const auto &ex : st::examples())
      for (const auto &div : st::variantsOf(ex)) {
        std::string label =
            std::string(ex.file) + " " + arch + " " + variantLabel(div);
        Artifacts a = jit2->inspect(KernelSource::fromFile(st::examplePath(ex)),
                                    ex.kernel, {}, forArch(arch), div);
        EXPECT_EQ(a.key, built[label].key) << label;
        EXPECT_EQ(a.cubin, built[label].cubin) << label;
        EXPECT_EQ(a.kernel.ptx, built[label].kernel.ptx) << label;
      }
  EXPECT_EQ(compiles2, 0);
  EXPECT_EQ(jit2->cache().stats().diskHits, n);
  EXPECT_EQ(jit2->cache().stats().misses, 0u);
  EXPECT_EQ(jit2->cache().stats().corruptEntries, 0u);

  // A second process: every example from disk, nothing compiled, same keys.
  std::string probe = (fs::path(self()).parent_path() / "runtime_cache_probe")
                          .string();
  ASSERT_TRUE(fs::exists(probe)) << probe;
  std::string cmd = "'" + probe + "' '" + dir.string() + "'";
  for (const std::string &arch : kArchs)
    cmd += " " + arch;
  cmd += " 2>&1";
  FILE *pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof(buf), pipe)) > 0)
    out.append(buf, got);
  int status = pclose(pipe);
  EXPECT_EQ(status, 0) << out;
  std::istringstream lines(out);
  std::string line;
  size_t keys = 0;
  bool sawStats = false;
  while (std::getline(lines, line)) {
    std::istringstream w(line);
    std::string tag;
    w >> tag;
    if (tag == "key") {
      std::string hex, file, arch, variant;
      w >> hex >> file >> arch >> variant;
      auto it = built.find(file + " " + arch + " " + variant);
      ASSERT_NE(it, built.end()) << line;
      EXPECT_EQ(hex, it->second.key.hex()) << line;
      ++keys;
    } else if (tag == "stats") {
      sawStats = true;
      EXPECT_NE(line.find("disk_hits=" + std::to_string(n) + " "),
                std::string::npos)
          << line;
      EXPECT_NE(line.find("misses=0 "), std::string::npos) << line;
      EXPECT_NE(line.find("compiles=0"), std::string::npos) << line;
    } else {
      ADD_FAILURE() << "probe: " << line;
    }
  }
  EXPECT_EQ(keys, n) << out;
  EXPECT_TRUE(sawStats) << out;
}

TEST_F(RealCompilerTest, GetUsesTheDeclaredSignature) {
  int compiles = 0;
  auto jit = makeJit(&compiles);
  for (const auto &ex : st::examples()) {
    KernelSource src = KernelSource::fromFile(st::examplePath(ex));
    Kernel &k = jit->get(src, ex.kernel, {}, forArch("sm_90"));
    // An empty name selects the file's only kernel.
    EXPECT_EQ(jit->get(src, "", {}, forArch("sm_90")).name(), ex.kernel);
    EXPECT_EQ(k.name(), ex.kernel);
    EXPECT_TRUE(k.isSpecializing());
    std::vector<std::string> ints;
    for (int i : Kernel::specializableParams(k.params()))
      ints.push_back(k.params()[size_t(i)].name);
    EXPECT_EQ(ints, ex.intParams) << ex.file;
    // A wrong name lists what the file declares.
    try {
      jit->get(src, "nope", {}, forArch("sm_90"));
      ADD_FAILURE() << "no error for an unknown kernel";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find(ex.kernel), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(compiles, 0); // Variants compile at their first launch.
}

TEST_F(RealCompilerTest, ConstantsArePartOfTheKey) {
  int compiles = 0;
  auto jit = makeJit(&compiles);
  KernelSource src =
      KernelSource::fromFile(st::examplesDir() + "/vector_add.tile");
  Artifacts a = jit->inspect(src, "vector_add", {}, forArch("sm_90"));
  Artifacts b =
      jit->inspect(src, "vector_add", {{"BLOCK", "256"}}, forArch("sm_90"));
  EXPECT_NE(a.key, b.key);
  EXPECT_EQ(compiles, 2);
  EXPECT_FALSE(b.kernel.ptx.empty());
  expectCudaElf(b.cubin, "BLOCK=256");
}

TEST_F(RealCompilerTest, CompileErrorsAreLocated) {
  int compiles = 0;
  auto jit = makeJit(&compiles);
  KernelSource bad = KernelSource::fromText(
      "kernel k(x: *f32, n: i32) {\n  let y = undefined_name + 1;\n"
      "  store(x, y);\n}\n",
      "bad.tile");
  try {
    jit->inspect(bad, "k", {}, forArch("sm_90"));
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bad.tile:2:"), std::string::npos) << m;
    EXPECT_NE(m.find("error"), std::string::npos) << m;
  }
  KernelSource unparsable = KernelSource::fromText("kernel (", "worse.tile");
  EXPECT_THROW(jit->get(unparsable, "k", {}, forArch("sm_90")), Error);
  // Nothing bad was cached: asking again compiles again.
  EXPECT_EQ(compiles, 1);
  EXPECT_THROW(jit->inspect(bad, "k", {}, forArch("sm_90")), Error);
  EXPECT_EQ(compiles, 2);
}

// A warp-specialized kernel (setmaxnreg in its PTX) gets no nvJitLink cubin:
// nvJitLink's relocatable ptxas would drop setmaxnreg (C7504), so the
// driver's whole-program JIT builds it at load time. A plain kernel still
// gets its cubin.
// JITConfig::raiseOccupancy (SPARSETILE_ASSEMBLER=occupancy): the 2:4
// masked decay (128 threads; `n` a multiple of 16) takes 36 registers
// through nvJitLink (35 before its multiply-adds were fused), 12 blocks an
// SM; asked for a 13th (`.minnctapersm 13`)
// ptxas gives 30 and spills nothing, so that is what the JIT keeps, under a key
// of its own. A kernel at the thread limit already (16 blocks) is left alone.
TEST_F(RealCompilerTest, OccupancyAssemblyAsksForTheBlockRegistersCost) {
  int compiles = 0;
  auto plain = makeJit(&compiles, /*raiseOccupancy=*/false);
  auto raised = makeJit(&compiles, /*raiseOccupancy=*/true);
  KernelSource s24 =
      KernelSource::fromFile(st::examplesDir() + "/sparse24.tile");
  Artifacts a =
      plain->inspect(s24, "masked_decay", {}, forArch("sm_90"), {"n"});
  Artifacts b =
      raised->inspect(s24, "masked_decay", {}, forArch("sm_90"), {"n"});
  // The first assembly's report, and which nvJitLink made it, for a failure.
  std::string log;
  linkPtxToCubin(a.kernel.ptx, a.kernel.arch, {"-verbose"}, &log);
  PtxasUsage used;
  ASSERT_TRUE(ptxasUsage(log, "masked_decay", used)) << log;
  std::string libs;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find("nvJitLink") != std::string::npos &&
        libs.find(line.substr(line.rfind(' ') + 1)) == std::string::npos)
      libs += line.substr(line.rfind(' ') + 1) + " ";
  const std::string why = "nvJitLink: " + libs + "\n" + log;
  EXPECT_EQ(used.registers, 36) << why;
  EXPECT_EQ(a.kernel.ptx.find(".minnctapersm"), std::string::npos);
  EXPECT_NE(b.kernel.ptx.find(".minnctapersm 13"), std::string::npos) << why;
  EXPECT_NE(a.key, b.key);
  expectCudaElf(b.cubin, "masked_decay, raised");
  EXPECT_NE(a.cubin, b.cubin);
  Artifacts c = raised->inspect(s24, "mask_flip_count", {}, forArch("sm_90"), {});
  EXPECT_EQ(c.kernel.ptx.find(".minnctapersm"), std::string::npos);
}

// JITConfig::wholeProgramForOneBlock (the default): the parity layer norm
// forward at BLOCK 16384 (256 threads) takes 141-142 registers through
// nvJitLink, one block an SM where its threads would allow eight, so its
// entry has no cubin and the driver assembles the whole program at load
// (125 registers there: two blocks). At BLOCK 1024 it keeps nvJitLink's
// cubin, as every kernel does with the rule off (SPARSETILE_ASSEMBLER=
// nvjitlink), under a key of its own.
TEST_F(RealCompilerTest, OneBlockKernelsAreLeftToTheDriverJit) {
  std::string why;
  if (!jitLinkAvailable(&why))
    GTEST_SKIP() << why;
  int compiles = 0;
  auto jit = makeJit(&compiles);
  auto linked = makeJit(&compiles, {}, /*wholeProgram=*/false);
  EXPECT_TRUE(jit->config().wholeProgramForOneBlock);
  KernelSource ln = KernelSource::fromFile(
      st::sourceDir() + "/bench/triton_parity/kernels/layernorm.tile");
  JITOptions o = forArch("sm_90");
  o.numWarps = 8;
  static std::vector<std::string> logged;
  logged.clear();
  setLogSink([](int, const char *m, void *) { logged.emplace_back(m); },
             nullptr, LogLevel::Info);
  Artifacts wide = jit->inspect(ln, "layer_norm_fwd", {{"BLOCK", "16384"}}, o,
                                {"stride", "N"});
  setLogSink(nullptr, nullptr, LogLevel::Off);
  EXPECT_FALSE(needsWholeProgram(wide.kernel.ptx));
  EXPECT_TRUE(wide.cubin.empty());
  // SPARSETILE_LOG=info says why there is no cubin.
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_NE(logged[0].find("left to the driver's whole-program assembly "
                           "(nvJitLink: "),
            std::string::npos)
      << logged[0];
  Artifacts narrow = jit->inspect(ln, "layer_norm_fwd", {{"BLOCK", "1024"}}, o,
                                  {"stride", "N"});
  expectCudaElf(narrow.cubin, "layer_norm_fwd BLOCK 1024");
  Artifacts all = linked->inspect(ln, "layer_norm_fwd", {{"BLOCK", "16384"}}, o,
                                  {"stride", "N"});
  expectCudaElf(all.cubin, "layer_norm_fwd BLOCK 16384, nvJitLink");
  EXPECT_NE(all.key, wide.key);
}

TEST_F(RealCompilerTest, WarpSpecializedKernelsAreLeftToTheDriverJit) {
  int compiles = 0;
  auto jit = makeJit(&compiles);
  KernelSource mm = KernelSource::fromFile(st::examplesDir() + "/matmul.tile");
  Artifacts a = jit->inspect(mm, "matmul_blocks", {}, forArch("sm_90"), {});
  EXPECT_NE(a.kernel.ptx.find("setmaxnreg.inc"), std::string::npos);
  EXPECT_TRUE(needsWholeProgram(a.kernel.ptx));
  EXPECT_TRUE(a.cubin.empty());
  // (On sm_80 its registers hold it to one block an SM, which the default
  // leaves to the driver too: JITConfig::wholeProgramForOneBlock.)
  auto linked = makeJit(&compiles, {}, /*wholeProgram=*/false);
  Artifacts b = linked->inspect(mm, "matmul_blocks", {}, forArch("sm_80"), {});
  EXPECT_FALSE(needsWholeProgram(b.kernel.ptx));
  expectCudaElf(b.cubin, "matmul_blocks sm_80");
}

// ptxas's performance advisories on the runtime path: every example kernel
// that the runtime links with nvJitLink (for sm_90 and sm_80, all integer
// arguments multiples of 16, as the ops launch them) has an info log free
// of C75xx. The warp-specialized ones skip nvJitLink; linked anyway, they
// show C7504 (setmaxnreg dropped by relocatable linking), which proves the
// check would see an advisory, and no other: a serialized wgmma (C7514,
// C7515) shows there as well (nvJitLink's log has them without -v).
TEST_F(RealCompilerTest, NvJitLinkReportsNoPerformanceAdvisories) {
  std::string why;
  if (!jitLinkAvailable(&why))
    GTEST_SKIP() << why;
  int compiles = 0;
  auto jit = makeJit(&compiles);
  int linked = 0, wholeProgram = 0;
  for (const auto &entry : fs::directory_iterator(st::examplesDir())) {
    if (entry.path().extension() != ".tile")
      continue;
    KernelSource src = KernelSource::fromFile(entry.path().string());
    std::vector<KernelSignature> kernels;
    std::string diags;
    ASSERT_TRUE(listKernels(src.text(), src.filename(), kernels, diags))
        << diags;
    for (const KernelSignature &k : kernels)
      for (const std::string arch : {"sm_90", "sm_80"}) {
        std::vector<std::string> div16;
        for (const KernelParam &p : k.params)
          if (!p.isPointer && !p.isDescriptor &&
              (p.dtype == DType::I32 || p.dtype == DType::I64))
            div16.push_back(p.name);
        Artifacts a = jit->inspect(src, k.name, {}, forArch(arch), div16);
        std::string log;
        linkPtxToCubin(a.kernel.ptx, a.kernel.arch, {}, &log);
        std::string label = entry.path().filename().string() + " " + k.name +
                            " " + arch;
        if (needsWholeProgram(a.kernel.ptx)) {
          ++wholeProgram;
          EXPECT_NE(log.find("C7504"), std::string::npos) << label << "\n"
                                                           << log;
          for (size_t at = log.find("(C75"); at != std::string::npos;
               at = log.find("(C75", at + 1))
            EXPECT_EQ(log.compare(at, 7, "(C7504)"), 0) << label << "\n" << log;
          continue;
        }
        ++linked;
        EXPECT_EQ(log.find("C75"), std::string::npos) << label << "\n" << log;
        EXPECT_EQ(log.find("Performance"), std::string::npos) << label << "\n"
                                                               << log;
      }
  }
  EXPECT_GT(linked, 20);
  EXPECT_GT(wholeProgram, 3);
}

// Imported files are part of the program: the KernelSource reads them once,
// its digest and the cache key cover their text, and the compile uses the
// copies it read (a later edit on disk does not leak into that source).
TEST_F(RealCompilerTest, ImportedFilesArePartOfTheDigestAndKey) {
  fs::create_directories(dir / "src" / "lib");
  auto write = [&](const fs::path &p, const std::string &text) {
    std::ofstream(p) << text;
  };
  write(dir / "src" / "lib" / "common.tile",
        "fn scale(x) { return x * 3.0; }\n");
  write(dir / "src" / "main.tile",
        "import \"lib/common.tile\";\n"
        "kernel k(x: *f32, n: i32) {\n"
        "  let offs = arange(0, 128);\n"
        "  store(x + offs, scale(load(x + offs, mask=offs < n)), mask=offs < n);\n"
        "}\n");
  std::string mainPath = (dir / "src" / "main.tile").string();
  KernelSource a = KernelSource::fromFile(mainPath);
  ASSERT_EQ(a.imports().size(), 1u);
  EXPECT_EQ(a.imports().begin()->second, "fn scale(x) { return x * 3.0; }\n");

  int compiles = 0;
  auto jit = makeJit(&compiles);
  Artifacts first = jit->inspect(a, "k", {}, forArch("sm_90"), {});
  EXPECT_NE(first.kernel.ptx.find("0f40400000"), std::string::npos); // 3.0

  // Only the imported file changes: a new digest, key and compile.
  write(dir / "src" / "lib" / "common.tile",
        "fn scale(x) { return x * 5.0; }\n");
  KernelSource b = KernelSource::fromFile(mainPath);
  EXPECT_EQ(a.text(), b.text());
  EXPECT_NE(a.digest(), b.digest());
  Artifacts second = jit->inspect(b, "k", {}, forArch("sm_90"), {});
  EXPECT_NE(first.key, second.key);
  EXPECT_NE(second.kernel.ptx.find("0f40A00000"), std::string::npos); // 5.0
  EXPECT_EQ(compiles, 2);
  // The first source still compiles what it read: a cache hit, same PTX.
  Artifacts again = jit->inspect(a, "k", {}, forArch("sm_90"), {});
  EXPECT_EQ(again.key, first.key);
  EXPECT_EQ(again.kernel.ptx, first.kernel.ptx);
  EXPECT_EQ(compiles, 2);
}

// A missing import is reported, located, when the kernel compiles.
TEST_F(RealCompilerTest, MissingImportIsALocatedCompileError) {
  fs::create_directories(dir);
  std::string path = (dir / "main.tile").string();
  std::ofstream(path) << "import \"nope.tile\";\nkernel k(x: *f32) {}\n";
  KernelSource src = KernelSource::fromFile(path);
  int compiles = 0;
  auto jit = makeJit(&compiles);
  try {
    jit->inspect(src, "k", {}, forArch("sm_90"), {});
    ADD_FAILURE() << "no error for a missing import";
  } catch (const CompileError &e) {
    EXPECT_NE(std::string(e.what()).find("main.tile:1:1: error: cannot read "
                                         "imported file"),
              std::string::npos)
        << e.what();
  }
}
