//===- RemarksTest.cpp - Performance remarks in CompileResult -------------===//
//
// Performance remarks (Language.md, "Performance remarks") reach the caller
// of compile() as structured values; --Werror=perf (CodegenOptions::
// werrorPerf) turns them into a failed compile. The last test holds the set
// of remarks the shipped kernels in dsl_examples/ give, compiled as the JIT
// compiles them on sm_90 (every integer parameter a multiple of 16): a new
// slow path in an example, or a remark that goes away, shows up in review.
//
//===----------------------------------------------------------------------===//

#include "SourceTree.h"
#include "sparsetile/Compiler.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

using namespace sparsetile;

namespace {

const char *kWrapped = R"(kernel wrapped(x: *f32, y: *f32, n: i32) {
  let pid = program_id(0);
  let v = load(x + (pid * 512 + arange(0, 512)) % n);
  store(y + pid * 512 + arange(0, 512), v);
}
)";

CompileOptions jitLike(std::vector<std::string> div16) {
  CompileOptions o;
  o.arch = "sm_90";
  o.divisibleBy16 = std::move(div16);
  return o;
}

TEST(Remarks, ReachTheCompileResult) {
  CompileResult r =
      compile(kWrapped, "wrapped.tile", "", jitLike({"n"}), Stage::Ptx);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  ASSERT_EQ(r.remarks.size(), 1u);
  const Remark &m = r.remarks[0];
  EXPECT_EQ(m.kind, "scalar-access");
  EXPECT_EQ(m.file, "wrapped.tile");
  EXPECT_EQ(m.line, 3);
  EXPECT_EQ(m.col, 11);
  EXPECT_NE(m.message.find("`%`"), std::string::npos) << m.message;
  EXPECT_EQ(m.text.rfind("wrapped.tile:3:11: remark: [scalar-access] ", 0), 0u)
      << m.text;
  EXPECT_NE(m.text.find("\n    let v = load("), std::string::npos) << m.text;
}

TEST(Remarks, WerrorPerfFailsTheCompile) {
  CompileOptions o = jitLike({"n"});
  o.werrorPerf = 1;
  CompileResult r = compile(kWrapped, "wrapped.tile", "", o, Stage::Ptx);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.remarks.size(), 1u);
  EXPECT_EQ(r.diagnostics.rfind("wrapped.tile:3:11: error: [scalar-access] ",
                                0),
            0u)
      << r.diagnostics;
  EXPECT_NE(r.diagnostics.find("[-Werror=perf]"), std::string::npos);
}

TEST(Remarks, SpillRemarkFromAPtxasLog) {
  const char *log = "ptxas info    : Compiling entry function 'wrapped' for "
                    "'sm_90a'\n"
                    "ptxas info    : Function properties for wrapped\n"
                    "    0 bytes stack frame, 48 bytes spill stores, 40 "
                    "bytes spill loads\n"
                    "ptxas info    : Used 255 registers\n";
  Remark m;
  ASSERT_TRUE(spillRemark(log, kWrapped, "wrapped.tile", "wrapped", m));
  EXPECT_EQ(m.kind, "spills");
  EXPECT_EQ(m.line, 1);
  EXPECT_NE(m.message.find("48 bytes of spill stores"), std::string::npos);
  EXPECT_NE(m.message.find("255 registers"), std::string::npos);
  std::string clean = "ptxas info    : Function properties for wrapped\n"
                      "    0 bytes stack frame, 0 bytes spill stores, 0 "
                      "bytes spill loads\n";
  EXPECT_FALSE(spillRemark(clean, kWrapped, "wrapped.tile", "wrapped", m));
}

// nvJitLink 13.0.88 (the H200's /usr/local/cuda) reports in another format:
// the name quoted, lower-case "used", and local memory instead of spill
// stores and loads. Both must give the registers and the spills, and one
// kernel's report must not be read for another's.
TEST(Remarks, SpillRemarkFromAnNvJitLinkLog) {
  const char *log = "info    : 0 bytes gmem\n"
                    "info    : Function properties for 'wrapped':\n"
                    "info    : used 168 registers, used 1 barriers, 0 stack, "
                    "0 bytes smem, 564 bytes cmem[0], 64 bytes lmem\n"
                    "info    : Function properties for 'wrapped2':\n"
                    "info    : used 35 registers, used 0 barriers, 0 stack, "
                    "0 bytes smem, 564 bytes cmem[0], 0 bytes lmem\n";
  Remark m;
  ASSERT_TRUE(spillRemark(log, kWrapped, "wrapped.tile", "wrapped", m));
  EXPECT_NE(m.message.find("64 bytes of local memory at 168 registers"),
            std::string::npos)
      << m.message;
  PtxasUsage u;
  ASSERT_TRUE(ptxasUsage(log, "wrapped", u));
  EXPECT_EQ(u.registers, 168);
  EXPECT_EQ(u.spillBytes, 64);
  ASSERT_TRUE(ptxasUsage(log, "wrapped2", u));
  EXPECT_EQ(u.registers, 35);
  EXPECT_EQ(u.spillBytes, 0);
  EXPECT_FALSE(ptxasUsage(log, "wrapp", u));
  EXPECT_FALSE(spillRemark(log, kWrapped, "wrapped.tile", "wrapped2", m));
}

std::string read(const std::string &path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// "file:line kind" for each remark on every kernel of dsl_examples/.
std::set<std::string> exampleRemarks() {
  std::set<std::string> out;
  for (const char *file :
       {"gated_activations.tile", "matmul.tile", "softmax.tile",
        "sparse24.tile", "sparsedrop.tile", "swiglu_fwd.tile",
        "vector_add.tile"}) {
    std::string path = sparsetile::testing::sourcePath(std::string("dsl_examples/") + file);
    std::string source = read(path);
    EXPECT_FALSE(source.empty()) << path << " (" << sparsetile::testing::sourceTreeHint()
                                 << ")";
    std::vector<KernelSignature> kernels;
    std::string diags;
    // By its path, so that its imports (tile_order.tile) resolve beside it.
    EXPECT_TRUE(listKernels(source, path, kernels, diags)) << diags;
    for (const KernelSignature &k : kernels) {
      std::vector<std::string> ints;
      for (const KernelParam &p : k.params)
        if (!p.isPointer && !p.isDescriptor && dtypeIsInteger(p.dtype))
          ints.push_back(p.name);
      CompileResult r = compile(source, path, k.name, jitLike(ints),
                                Stage::Mlir);
      EXPECT_TRUE(r.ok) << k.name << ": " << r.diagnostics;
      for (const Remark &m : r.remarks)
        out.insert(std::string(file) + ":" + std::to_string(m.line) + " " +
                   m.kind + " (" + k.name + ")");
    }
  }
  return out;
}

TEST(Remarks, ShippedExamples) {
  // Each is a real slow path on sm_90 (the plain pointer kernels matmul,
  // sdd_dx, dsd_fwd and dsd_dw take the pointer ring: it copies 32-column
  // blocks, and takes a dot inside the block-skip `if` of its loop):
  //  - sparse_linear (and sparse_linear_ep, its epilogue twin): its
  //    prefetching loop carries the next tiles;
  //    sparse_grad_w: metadata loaded through a pointer;
  //  - their metadata loads: meta_at's `j % 8` of a loop-derived j that
  //    AxisInfo cannot prove >= 0, so 2-byte loads where 8 would do.
  std::set<std::string> expected = {
      "sparse24.tile:1038 scalar-access (sparse_linear)",
      "sparse24.tile:1038 scalar-access (sparse_linear_ep)",
      "sparse24.tile:1045 mma-sync (sparse_linear)",
      "sparse24.tile:1045 mma-sync (sparse_linear_ep)",
      "sparse24.tile:1435 scalar-access (sparse_grad_w)",
      "sparse24.tile:1438 mma-sync (sparse_grad_w)",
  };
  std::set<std::string> got = exampleRemarks();
  std::string list;
  for (const std::string &s : got)
    list += "    \"" + s + "\",\n";
  EXPECT_EQ(got, expected) << "the remarks now:\n" << list;
}

} // namespace
