//===- CompileApiTest.cpp - sparsetile::compile() and listKernels() -------===//
//
// Tests the compiler through its one public header, as the runtime uses it:
//  1. every stage returns text carrying that stage's marker;
//  2. CompiledKernel is filled as the runtime needs it (entry name, run-time
//     parameters in order without constants, divisibility, block size,
//     shared memory);
//  3. errors come back as ok=false with located diagnostics, never an abort;
//  4. a fixed-seed fuzz compiles mutated examples to PTX: none may crash,
//     and each either compiles or explains why, starting with the filename.
//
//===----------------------------------------------------------------------===//

#include "SourceTree.h"
#include "sparsetile/Compiler.h"
#include "sparsetile/KernelConstants.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace sparsetile;

namespace {

std::string readExample(const std::string &name) {
  std::string path = sparsetile::testing::sourcePath("dsl_examples/" + name);
  std::ifstream in(path);
  if (!in)
    ADD_FAILURE() << "cannot read " << path << " ("
                  << sparsetile::testing::sourceTreeHint() << ")";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool contains(const std::string &text, const std::string &needle) {
  return text.find(needle) != std::string::npos;
}

const char *kVectorAdd = "vector_add.tile";
const char *kSoftmax = "softmax.tile";
const char *kSwiglu = "swiglu_fwd.tile";

struct StageCase {
  Stage stage;
  const char *marker;
};

// Readable test parameters in gtest and ctest output.
void PrintTo(const StageCase &c, std::ostream *os) { *os << c.marker; }

std::string stageName(const ::testing::TestParamInfo<StageCase> &info) {
  const char *names[] = {"Ast",  "Tile", "Pipelined", "Layouts",
                         "Mlir", "Llvm", "Ptx"};
  return names[int(info.param.stage)];
}

class StageTest : public ::testing::TestWithParam<StageCase> {};

TEST_P(StageTest, EveryStageHasItsMarker) {
  const StageCase &c = GetParam();
  std::string src = readExample(kVectorAdd);
  ASSERT_FALSE(src.empty());
  CompileResult r = compile(src, kVectorAdd, "", CompileOptions(), c.stage);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  EXPECT_TRUE(r.diagnostics.empty());
  EXPECT_FALSE(r.text.empty());
  EXPECT_TRUE(contains(r.text, c.marker)) << r.text.substr(0, 2000);
}

INSTANTIATE_TEST_SUITE_P(
    Stages, StageTest,
    ::testing::Values(StageCase{Stage::Ast, "kernel vector_add"},
                      StageCase{Stage::Tile, "tile.load"},
                      StageCase{Stage::Pipelined, "tile.load"},
                      StageCase{Stage::Layouts, "#tile.blocked<vec = 4, threads = 128>"},
                      StageCase{Stage::Mlir, "gpu.func @vector_add"},
                      StageCase{Stage::Llvm, "define ptx_kernel void @vector_add"},
                      StageCase{Stage::Ptx, ".visible .entry vector_add("}),
    stageName);

TEST(CompileApi, ParseStage) {
  Stage s;
  EXPECT_TRUE(parseStage("ast", s));
  EXPECT_EQ(s, Stage::Ast);
  EXPECT_TRUE(parseStage("ptx", s));
  EXPECT_EQ(s, Stage::Ptx);
  EXPECT_FALSE(parseStage("PTX", s));
  EXPECT_FALSE(parseStage("", s));
}

TEST(CompileApi, OnlyPtxFillsTheKernel) {
  CompileResult r = compile(readExample(kVectorAdd), kVectorAdd, "",
                            CompileOptions(), Stage::Tile);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  EXPECT_TRUE(r.kernel.ptx.empty());
  EXPECT_TRUE(r.kernel.name.empty());
}

TEST(CompiledKernel, VectorAddFields) {
  CompileOptions opts;
  opts.divisibleBy16 = {"n"};
  CompileResult r = compile(readExample(kVectorAdd), kVectorAdd, "", opts);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  const CompiledKernel &k = r.kernel;
  EXPECT_EQ(k.name, "vector_add");
  // The default arch, sm_90, compiles to sm_90a (TMA and wgmma).
  EXPECT_EQ(k.arch, "sm_90a");
  EXPECT_EQ(k.ptx, r.text);
  EXPECT_TRUE(contains(k.ptx, ".target sm_90"));
  EXPECT_EQ(k.numThreads, 4 * 32);
  // The constant BLOCK is compiled in and not a parameter.
  ASSERT_EQ(k.params.size(), 4u);
  const char *names[] = {"x", "y", "out", "n"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(k.params[i].name, names[i]);
    EXPECT_EQ(k.params[i].isPointer, i < 3);
    EXPECT_EQ(k.params[i].dtype, i < 3 ? DType::F32 : DType::I32);
    // Pointers are always assumed 16-byte aligned; n because we said so.
    EXPECT_TRUE(k.params[i].divisibleBy16) << names[i];
  }
}

TEST(CompiledKernel, IntsAreNotDivisibleUnlessAsked) {
  CompileOptions opts;
  opts.divisibleBy16 = {"stride_h"};
  CompileResult r = compile(readExample(kSwiglu), kSwiglu, "", opts);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  std::map<std::string, bool> div;
  for (const KernelParam &p : r.kernel.params)
    div[p.name] = p.divisibleBy16;
  EXPECT_TRUE(div.at("h"));
  EXPECT_TRUE(div.at("y"));
  EXPECT_FALSE(div.at("F"));
  EXPECT_TRUE(div.at("stride_h"));
  EXPECT_FALSE(div.at("stride_y"));
  EXPECT_EQ(r.kernel.params.front().dtype, DType::BF16);
}

TEST(CompiledKernel, NumThreadsFollowsNumWarps) {
  CompileOptions opts;
  opts.numWarps = 8;
  CompileResult r = compile(readExample(kVectorAdd), kVectorAdd, "", opts);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  EXPECT_EQ(r.kernel.numThreads, 256);
  EXPECT_TRUE(contains(r.kernel.ptx, ".maxntid 256, 1, 1"));
}

TEST(CompiledKernel, SoftmaxUsesSharedMemory) {
  CompileResult r = compile(readExample(kSoftmax), kSoftmax, "",
                            CompileOptions());
  ASSERT_TRUE(r.ok) << r.diagnostics;
  EXPECT_GT(r.kernel.sharedBytes, 0);
  EXPECT_TRUE(contains(r.kernel.ptx, ".shared"));
  // An element-wise kernel exchanges nothing.
  CompileResult v = compile(readExample(kVectorAdd), kVectorAdd, "",
                            CompileOptions());
  ASSERT_TRUE(v.ok) << v.diagnostics;
  EXPECT_EQ(v.kernel.sharedBytes, 0);
}

TEST(CompiledKernel, ArchAndConstants) {
  CompileOptions opts;
  opts.arch = "sm_80";
  opts.constants["BLOCK"] = "256";
  CompileResult r = compile(readExample(kVectorAdd), kVectorAdd, "", opts);
  ASSERT_TRUE(r.ok) << r.diagnostics;
  EXPECT_EQ(r.kernel.arch, "sm_80");
  EXPECT_TRUE(contains(r.kernel.ptx, ".target sm_80"));
  CompileResult t = compile(readExample(kVectorAdd), kVectorAdd, "", opts,
                            Stage::Tile);
  ASSERT_TRUE(t.ok);
  EXPECT_TRUE(contains(t.text, "tile.arange 0, 256"));
}

// An autotuning configuration's persistent / warp_specialize options
// override the kernel's attributes, and only 0 or 1 is accepted.
TEST(CompiledKernel, FlagOptionsOverrideAttributes) {
  std::string src = "@persistent(1)\n"
                    "kernel k(x: *f32) { store(x + arange(0, 128), "
                    "zeros([128], f32)); }\n";
  CompileOptions opts;
  CompileResult keep = compile(src, "k.tile", "", opts, Stage::Tile);
  ASSERT_TRUE(keep.ok) << keep.diagnostics;
  EXPECT_TRUE(contains(keep.text, "tile.persistent = 1"));
  opts.persistent = 0;
  opts.warpSpecialize = 0;
  CompileResult off = compile(src, "k.tile", "", opts, Stage::Tile);
  ASSERT_TRUE(off.ok) << off.diagnostics;
  EXPECT_TRUE(contains(off.text, "tile.persistent = 0")) << off.text;
  EXPECT_TRUE(contains(off.text, "tile.warp_specialize = 0")) << off.text;
  opts.persistent = 2;
  CompileResult bad = compile(src, "k.tile", "", opts, Stage::Tile);
  EXPECT_FALSE(bad.ok);
  EXPECT_TRUE(contains(bad.diagnostics, "takes 0 or 1, got 2"))
      << bad.diagnostics;
}

TEST(ListKernels, Signatures) {
  std::vector<KernelSignature> ks;
  std::string diags;
  ASSERT_TRUE(listKernels(readExample(kSoftmax), kSoftmax, ks, diags)) << diags;
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].name, "softmax");
  ASSERT_EQ(ks[0].params.size(), 4u);
  EXPECT_EQ(ks[0].params[2].name, "n_cols");
  ASSERT_EQ(ks[0].constants.size(), 1u);
  EXPECT_EQ(ks[0].constants[0].name, "BLOCK");
  EXPECT_EQ(ks[0].constants[0].defaultValue, "1024");

  std::string two = "kernel a(x: *f32) { return; }\n"
                    "kernel b(y: *f16, const N: i32) { return; }\n";
  ks.clear();
  ASSERT_TRUE(listKernels(two, "two.tile", ks, diags)) << diags;
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[1].name, "b");
  EXPECT_EQ(ks[1].params[0].dtype, DType::F16);
  EXPECT_TRUE(ks[1].constants[0].defaultValue.empty());
}

TEST(ListKernels, SyntaxError) {
  std::vector<KernelSignature> ks;
  std::string diags;
  // The kernel is listed, stopped by its error.
  EXPECT_TRUE(listKernels("kernel k(x: *f32 {", "bad.tile", ks, diags));
  EXPECT_EQ(diags.rfind("bad.tile:1:", 0), 0u) << diags;
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].name, "k");
  EXPECT_EQ(ks[0].error, diags);
  // An error outside any kernel stops the file.
  ks.clear();
  diags.clear();
  EXPECT_FALSE(listKernels("const N = ;\nkernel k(x: *f32) { return; }\n",
                           "bad.tile", ks, diags));
  EXPECT_EQ(diags.rfind("bad.tile:1:11: error: expected an expression", 0), 0u)
      << diags;
}

// Issue 47: one bad kernel (or fn) does not hide the others in its file.
const char *kOneBadKernel = "fn twice(x) { return x + x; }\n"
                            "fn broken(x) { return x +; }\n"
                            "kernel bad(x: *f32) {\n"
                            "  let y = load(x) * ;\n"
                            "  store(x, y);\n"
                            "}\n"
                            "kernel good(x: *f32) { store(x, twice(load(x))); }\n"
                            "kernel caller(x: *f32) { store(x, broken(1.0)); }\n";

TEST(Isolation, AGoodKernelCompilesBesideABadOne) {
  CompileOptions opts;
  CompileResult r = compile(kOneBadKernel, "iso.tile", "good", opts, Stage::Ptx);
  EXPECT_TRUE(r.ok) << r.diagnostics;
  EXPECT_TRUE(contains(r.kernel.ptx, ".entry good")) << r.kernel.ptx;
}

// kernelConstants (what the C ABI's st_kernel_constant and Python's
// Kernel.meta read) follows the same rule as compile(): the H200 run of
// 81a1a61 caught it failing a good kernel on its neighbour's syntax error.
TEST(Isolation, KernelConstantsOfAGoodKernelBesideABadOne) {
  std::string src = std::string(kOneBadKernel) +
                    "kernel tiled(x: *f32, const B: i32 = 64) { store(x, 1.0); }\n";
  std::vector<ConstantValue> values;
  std::string diags;
  ASSERT_TRUE(kernelConstants(src, "iso.tile", "tiled", {}, values, diags))
      << diags;
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].value, "64");
  EXPECT_FALSE(kernelConstants(src, "iso.tile", "bad", {}, values, diags));
  EXPECT_TRUE(contains(diags, "iso.tile:4:")) << diags;
}

TEST(Isolation, ABadKernelAndTheCallersOfABadFnFailLocated) {
  CompileOptions opts;
  CompileResult bad = compile(kOneBadKernel, "iso.tile", "bad", opts, Stage::Ast);
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.diagnostics, "iso.tile:4:21: error: expected an expression, "
                             "found ';'\n"
                             "    let y = load(x) * ;\n"
                             "                      ^\n");
  CompileResult caller =
      compile(kOneBadKernel, "iso.tile", "caller", opts, Stage::Ast);
  EXPECT_FALSE(caller.ok);
  EXPECT_EQ(caller.diagnostics.rfind("iso.tile:2:26: error: expected an "
                                     "expression, found ';'",
                                     0),
            0u)
      << caller.diagnostics;
  EXPECT_FALSE(contains(caller.diagnostics, "iso.tile:4:")) << caller.diagnostics;
  // Without a kernel name, the file's every error counts.
  CompileResult any = compile(kOneBadKernel, "iso.tile", "", opts, Stage::Ast);
  EXPECT_FALSE(any.ok);
  EXPECT_TRUE(contains(any.diagnostics, "iso.tile:2:") &&
              contains(any.diagnostics, "iso.tile:4:"))
      << any.diagnostics;
}

// device_assert is compiled out unless CodegenOptions::debug: the PTX is
// that of the kernel without it (its condition, a load here, is not even
// evaluated); with debug, a false element calls __assertfail.
TEST(DeviceAssert, CompiledOutUnlessDebug) {
  std::string with = "kernel k(x: *i32, n: i32) {\n"
                     "  let o = arange(0, 128);\n"
                     "  device_assert(load(x + o) < n, \"below n\");\n"
                     "  store(x + o, o);\n"
                     "}\n";
  std::string without = "kernel k(x: *i32, n: i32) {\n"
                        "  let o = arange(0, 128);\n"
                        "\n"
                        "  store(x + o, o);\n"
                        "}\n";
  CompileOptions opts;
  CompileResult off = compile(with, "a.tile", "k", opts);
  CompileResult plain = compile(without, "a.tile", "k", opts);
  ASSERT_TRUE(off.ok && plain.ok) << off.diagnostics << plain.diagnostics;
  EXPECT_EQ(off.kernel.ptx, plain.kernel.ptx);
  opts.debug = 1;
  CompileResult on = compile(with, "a.tile", "k", opts);
  ASSERT_TRUE(on.ok) << on.diagnostics;
  EXPECT_TRUE(contains(on.kernel.ptx, "call.uni __assertfail"))
      << on.kernel.ptx;
  EXPECT_FALSE(contains(off.kernel.ptx, "__assertfail"));
}

TEST(Isolation, ListKernelsNamesTheBadOnes) {
  std::vector<KernelSignature> ks;
  std::string diags;
  ASSERT_TRUE(listKernels(kOneBadKernel, "iso.tile", ks, diags)) << diags;
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].name, "bad");
  EXPECT_EQ(ks[0].error.rfind("iso.tile:4:21: error:", 0), 0u) << ks[0].error;
  EXPECT_EQ(ks[1].name, "good");
  EXPECT_EQ(ks[1].error, "");
  ASSERT_EQ(ks[1].params.size(), 1u);
  EXPECT_EQ(ks[2].name, "caller");
  EXPECT_EQ(ks[2].error.rfind("iso.tile:2:26: error:", 0), 0u) << ks[2].error;
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

struct ErrorCase {
  const char *name;
  const char *source;
  const char *kernel;
  const char *message;
  const char *arch;
  int ptxVersion;
};

void PrintTo(const ErrorCase &c, std::ostream *os) { *os << c.name; }

class ErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ErrorTest, IsADiagnostic) {
  const ErrorCase &c = GetParam();
  CompileOptions opts;
  if (c.arch)
    opts.arch = c.arch;
  opts.ptxVersion = c.ptxVersion;
  for (Stage s : {Stage::Tile, Stage::Ptx}) {
    CompileResult r = compile(c.source, "err.tile", c.kernel, opts, s);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.diagnostics.rfind("err.tile", 0), 0u) << r.diagnostics;
    EXPECT_TRUE(contains(r.diagnostics, "error: ")) << r.diagnostics;
    EXPECT_TRUE(contains(r.diagnostics, c.message)) << r.diagnostics;
    EXPECT_TRUE(r.kernel.ptx.empty());
  }
}

const char *kOk = "kernel k(x: *f32) { store(x + arange(0, 128), 1.0); }\n";

INSTANTIATE_TEST_SUITE_P(
    Errors, ErrorTest,
    ::testing::Values(
        ErrorCase{"Syntax", "kernel k(x: *f32) { let = 1; }", "",
                  "err.tile:1:25: error: expected", nullptr, 0},
        ErrorCase{"UnknownName", "kernel k(x: *f32) { let a = b; }", "",
                  "err.tile:1:29: error: unknown name 'b'", nullptr, 0},
        ErrorCase{"Dot", "kernel k(x: *f32) { let a = dot(1, 2, 3); }", "",
                  "dot needs 2-D tiles", nullptr, 0},
        ErrorCase{"NoKernel", "# nothing\n", "", "no kernel in file", nullptr,
                  0},
        ErrorCase{"NoSuchKernel", kOk, "other", "no kernel named 'other'",
                  nullptr, 0},
        ErrorCase{"BadArch", kOk, "", "unsupported GPU architecture 'sm_70'",
                  "sm_70", 0},
        ErrorCase{"EmptyArch", kOk, "", "unsupported GPU architecture", "",
                  0},
        ErrorCase{"BadPtxVersion", kOk, "", "unsupported PTX ISA version 6.0",
                  nullptr, 60},
        ErrorCase{"PtxTooOldForArch", kOk, "", "sm_90 needs PTX ISA", "sm_90",
                  70}),
    [](const ::testing::TestParamInfo<ErrorCase> &info) {
      return std::string(info.param.name);
    });

TEST(Errors, SeveralKernelsNeedAName) {
  std::string two = "kernel a(x: *f32) { return; }\n"
                    "kernel b(x: *f32) { return; }\n";
  CompileResult r = compile(two, "two.tile", "", CompileOptions());
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.diagnostics, "several kernels")) << r.diagnostics;
  CompileResult b = compile(two, "two.tile", "b", CompileOptions());
  EXPECT_TRUE(b.ok) << b.diagnostics;
  EXPECT_EQ(b.kernel.name, "b");
}

TEST(Errors, BadOptions) {
  std::string src = readExample(kVectorAdd);
  CompileOptions warps;
  warps.numWarps = 3;
  EXPECT_FALSE(compile(src, kVectorAdd, "", warps).ok);
  CompileOptions unknown;
  unknown.constants["NOPE"] = "1";
  CompileResult r = compile(src, kVectorAdd, "", unknown);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.diagnostics, "no constant named 'NOPE'"));
  CompileOptions bad;
  bad.constants["BLOCK"] = "12x";
  r = compile(src, kVectorAdd, "", bad);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.diagnostics, "not a valid i32")) << r.diagnostics;
  CompileOptions npot;
  npot.constants["BLOCK"] = "100";
  r = compile(src, kVectorAdd, "", npot);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.diagnostics, "power of two")) << r.diagnostics;
  CompileOptions div;
  div.divisibleBy16 = {"x"}; // A pointer, not an integer parameter.
  r = compile(src, kVectorAdd, "", div);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.diagnostics, "no integer parameter named 'x'"));
}

// Every arch × PTX-version pair, valid or not, either compiles or is a
// sparsetile error; LLVM aborts on a pair it does not support, so an
// unvalidated one would end this test binary.
TEST(FatalErrors, EveryArchAndPtxVersionPair) {
  std::string src = readExample(kVectorAdd);
  int compiled = 0, refused = 0;
  for (const char *arch :
       {"sm_70", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a",
        "sm_100", "sm_120"})
    for (int ptx : {0, 1, 60, 63, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79,
                    80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 100, -80}) {
      CompileOptions o;
      o.arch = arch;
      o.ptxVersion = ptx;
      CompileResult r = compile(src, kVectorAdd, "", o);
      if (r.ok) {
        ++compiled;
        EXPECT_TRUE(contains(r.kernel.ptx, ".target sm_")) << arch << " " << ptx;
      } else {
        ++refused;
        EXPECT_EQ(r.diagnostics.rfind(kVectorAdd, 0), 0u) << r.diagnostics;
        EXPECT_FALSE(contains(r.diagnostics, "internal compiler error"))
            << arch << " " << ptx << ": validation missed it: "
            << r.diagnostics;
      }
    }
  EXPECT_GT(compiled, 30);
  EXPECT_GT(refused, 100);
}

/// Sets SPARSETILE_INJECT_FAULT for one scope.
struct InjectFault {
  explicit InjectFault(const char *point) {
    setenv("SPARSETILE_INJECT_FAULT", point, 1);
  }
  ~InjectFault() { unsetenv("SPARSETILE_INJECT_FAULT"); }
};

// An LLVM fatal error (report_fatal_error would print and exit the process)
// comes back as a compile error, as often as it happens, and the compiler
// keeps working afterwards in the same process.
TEST(FatalErrors, LLVMFatalErrorIsACompileError) {
  std::string src = readExample(kVectorAdd);
  for (int i = 0; i < 3; ++i) {
    InjectFault fault("llvm-fatal");
    CompileResult r = compile(src, kVectorAdd, "", CompileOptions());
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(contains(r.diagnostics,
                         "internal compiler error: LLVM fatal error: "
                         "injected fault"))
        << r.diagnostics;
  }
  CompileResult ok = compile(src, kVectorAdd, "", CompileOptions());
  EXPECT_TRUE(ok.ok) << ok.diagnostics;
  EXPECT_TRUE(contains(ok.kernel.ptx, ".entry vector_add"));
}

// An LLVM error diagnostic (the default handler exits) and a verifier
// failure after a pass are compile errors too, the latter located.
TEST(FatalErrors, LLVMErrorAndVerifierFailureAreCompileErrors) {
  std::string src = readExample(kVectorAdd);
  {
    InjectFault fault("llvm-error");
    CompileResult r = compile(src, kVectorAdd, "", CompileOptions());
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(contains(r.diagnostics, "error: LLVM: injected fault"))
        << r.diagnostics;
  }
  {
    InjectFault fault("verifier");
    CompileResult r = compile(src, kVectorAdd, "", CompileOptions());
    EXPECT_FALSE(r.ok);
    EXPECT_TRUE(contains(r.diagnostics, "'arith.addi' op requires the same "
                                        "type"))
        << r.diagnostics;
    EXPECT_EQ(r.diagnostics.rfind(std::string(kVectorAdd) + ":", 0), 0u)
        << r.diagnostics;
  }
  EXPECT_TRUE(compile(src, kVectorAdd, "", CompileOptions()).ok);
}

// Out of memory inside a compile (LLVM's report_bad_alloc_error printed
// "LLVM ERROR: out of memory" and aborted the host; a std::bad_alloc from
// `new` was not caught) is a compile error, and the compiler keeps working.
TEST(FatalErrors, OutOfMemoryIsACompileError) {
  std::string src = readExample(kVectorAdd);
  for (const char *point : {"llvm-bad-alloc", "bad-alloc"})
    for (int i = 0; i < 2; ++i) {
      InjectFault fault(point);
      CompileResult r = compile(src, kVectorAdd, "", CompileOptions());
      EXPECT_FALSE(r.ok) << point;
      EXPECT_TRUE(contains(r.diagnostics, "error: out of memory: compiling "
                                          "this kernel needs more memory"))
          << point << ": " << r.diagnostics;
    }
  CompileResult ok = compile(src, kVectorAdd, "", CompileOptions());
  EXPECT_TRUE(ok.ok) << ok.diagnostics;
}

TEST(Errors, EmptyAndBinarySources) {
  EXPECT_FALSE(compile("", "e.tile", "", CompileOptions()).ok);
  std::string junk("\0\xff\x01kernel\0", 10);
  CompileResult r = compile(junk, "j.tile", "", CompileOptions());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.diagnostics.rfind("j.tile", 0), 0u) << r.diagnostics;
}

//===----------------------------------------------------------------------===//
// Fuzz
//===----------------------------------------------------------------------===//

/// Splits source text into tokens: identifiers/numbers, single punctuation
/// characters and whitespace runs, so mutations stay close to real code.
std::vector<std::string> tokenize(const std::string &s) {
  std::vector<std::string> out;
  size_t i = 0;
  auto cls = [](char c) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')
      return 0;
    if (std::isspace(static_cast<unsigned char>(c)))
      return 1;
    return 2;
  };
  while (i < s.size()) {
    size_t j = i + 1;
    if (cls(s[i]) != 2)
      while (j < s.size() && cls(s[j]) == cls(s[i]))
        ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string mutate(const std::string &src, std::mt19937 &rng) {
  static const char *kTokens[] = {"(", ")", "[", "]", "{", "}", ",", ";",
                                  ":", "None", "0", "-1", "1024", "3",
                                  "x", "axis=", "mask=", "let", "for",
                                  "if", "else", "range(", "+", "*", "/",
                                  "f16", "bf16", "i64", "1e40", "0x",
                                  "[:, None]", "sum(", "max(", "return;",
                                  "const", "@num_warps(64)", "\"", "\t"};
  std::vector<std::string> toks = tokenize(src);
  int edits = 1 + rng() % 3;
  for (int e = 0; e < edits && !toks.empty(); ++e) {
    size_t i = rng() % toks.size();
    switch (rng() % 5) {
    case 0: // Delete a token.
      toks.erase(toks.begin() + i);
      break;
    case 1: // Duplicate a token.
      toks.insert(toks.begin() + i, toks[i]);
      break;
    case 2: // Replace a token with a plausible one.
      toks[i] = kTokens[rng() % (sizeof(kTokens) / sizeof(*kTokens))];
      break;
    case 3: { // Edit one byte, anywhere in the token.
      std::string &t = toks[i];
      t[rng() % t.size()] = static_cast<char>(rng() % 256);
      break;
    }
    default: // Swap with a random other token.
      std::swap(toks[i], toks[rng() % toks.size()]);
      break;
    }
  }
  std::string out;
  for (auto &t : toks)
    out += t;
  return out;
}

TEST(Fuzz, MutatedExamplesNeverCrash) {
  const char *files[] = {kVectorAdd, kSoftmax, kSwiglu};
  std::vector<std::string> sources;
  for (const char *f : files) {
    sources.push_back(readExample(f));
    ASSERT_FALSE(sources.back().empty()) << f;
  }
  std::mt19937 rng(20240611);
  int ok = 0, failed = 0;
  for (int n = 0; n < 500; ++n) {
    size_t which = rng() % sources.size();
    std::string src = mutate(sources[which], rng);
    std::string name = std::string("fuzz_") + files[which];
    CompileOptions opts; // Default arch: sm_90.
    if (rng() % 4 == 0)
      opts.divisibleBy16 = {"n"};
    SCOPED_TRACE("variant " + std::to_string(n) + ":\n" + src);
    CompileResult r = compile(src, name, "", opts, Stage::Ptx);
    if (r.ok) {
      ++ok;
      EXPECT_TRUE(contains(r.text, ".target sm_90"));
      EXPECT_FALSE(r.kernel.name.empty());
    } else {
      ++failed;
      ASSERT_FALSE(r.diagnostics.empty());
      EXPECT_EQ(r.diagnostics.rfind(name, 0), 0u) << r.diagnostics;
    }
  }
  // Both outcomes must occur, or the mutations are not testing anything.
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
  std::printf("[ fuzz     ] %d compiled, %d rejected with diagnostics\n", ok,
              failed);
}

// The examples are read from the source tree given at run time (issue 46: a
// build carried to another path read the build machine's tree, or nothing).
TEST(SourceTree, ExamplesComeFromTheTreeGivenAtRunTime) {
  std::string root = ::testing::TempDir() + "carried-tree-" +
                     std::to_string(::getpid());
  std::string dir = root + "/dsl_examples";
  ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
  std::ofstream(dir + "/vector_add.tile") << "// the carried copy\n";
  const char *old = std::getenv("SPARSETILE_SOURCE_DIR");
  std::string saved = old ? old : "";
  setenv("SPARSETILE_SOURCE_DIR", root.c_str(), 1);
  EXPECT_EQ(readExample("vector_add.tile"), "// the carried copy\n");
  if (old)
    setenv("SPARSETILE_SOURCE_DIR", saved.c_str(), 1);
  else
    unsetenv("SPARSETILE_SOURCE_DIR");
  std::system(("rm -rf '" + root + "'").c_str());
}

} // namespace
