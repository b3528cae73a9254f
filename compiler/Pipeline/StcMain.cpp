//===- StcMain.cpp - stc's entry point ------------------------------------===//
//
//   stc FILE.tile [--kernel NAME] [-D NAME=VALUE ...] [--arch sm_90]
//       [--ptx-version 80] [--num-warps N] [--num-stages N] [--div16
//       ARG,...|all] [--equal-to-1 ARG,...]
//       [--emit=ast|tile|pipelined|mlir|llvm|ptx] [-o OUT]
//       [--remarks] [--Werror=perf] [--debug]
//   stc FILE.tile --list
//
// A syntax error stops only the kernels it touches (Language.md, "Syntax
// errors"): --list prints the others' signatures and, for each stopped
// kernel, its name and first error, then exits 1 after printing every error
// to stderr.
//
// Prints any stage of the pipeline (see Pipeline.cpp: compile). The command
// line is LLVM's, like every MLIR tool's, so `--help` lists every option and
// both `--opt=value` and `--opt value` work. Like tile-opt's, this main lives
// in the compiler library: LLVM is linked (hidden) only there.
//
// --remarks prints the performance remarks (Language.md, "Performance
// remarks") to stderr; for PTX it also runs ptxas -v (PtxasSpills.cpp) to
// report spills. --Werror=perf makes them errors.
//
// Exit status: 0 on success, 1 on a compile error, 2 on a usage error: a bad
// option value names the option and lists the valid values, and a missing
// or unknown --kernel lists the file's kernels.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/Compiler.h"
#include "Target/PTXEmitter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace sparsetile;
namespace cl = llvm::cl;

namespace {

/// The `--emit` values, each with the line `--help` prints for it.
auto stageValues() {
  return cl::values(
      clEnumValN(Stage::Ast, "ast", "the parsed kernel, as an indented tree"),
      clEnumValN(Stage::Tile, "tile", "the tile dialect from the front end"),
      clEnumValN(Stage::Pipelined, "pipelined",
                 "the tile dialect after the persistent loop, the TMA ring, "
                 "cluster multicast, the producer/consumer split and the "
                 "ping-pong split"),
      clEnumValN(Stage::Layouts, "layouts",
                 "the pipelined tile dialect with every tile's thread "
                 "layout in its type"),
      clEnumValN(Stage::Mlir, "mlir", "upstream MLIR after distribution"),
      clEnumValN(Stage::Llvm, "llvm", "LLVM IR after libdevice and O3"),
      clEnumValN(Stage::Ptx, "ptx", "PTX (the default)"));
}

/// stc's options. They are built per call (not as globals) so that loading
/// the compiler library into a JIT registers nothing on LLVM's command line.
struct StcOptions {
  cl::OptionCategory category{"stc options"};
  cl::opt<std::string> input{cl::Positional, cl::desc("<FILE.tile>"),
                             cl::cat(category)};
  cl::opt<std::string> kernel{"kernel", cl::value_desc("NAME"),
                              cl::desc("The kernel to compile (default: the "
                                       "file's only kernel)"),
                              cl::cat(category)};
  cl::list<std::string> defines{
      "D", cl::Prefix, cl::value_desc("NAME=VALUE"),
      cl::desc("Value of a `const` parameter (repeatable)"), cl::cat(category)};
  cl::opt<std::string> arch{
      "arch", cl::init("sm_90"), cl::value_desc("sm_XX"),
      cl::desc("Target GPU: sm_80, sm_86, sm_87, sm_89, sm_90 (= sm_90a)"),
      cl::cat(category)};
  cl::opt<int> ptxVersion{
      "ptx-version", cl::init(0), cl::value_desc("N"),
      cl::desc("PTX ISA version as major*10+minor, e.g. 85 (0: the arch's "
               "default)"),
      cl::cat(category)};
  cl::opt<int> numWarps{"num-warps", cl::init(0), cl::value_desc("N"),
                        cl::desc("Warps per program (0: the kernel's "
                                 "@num_warps)"),
                        cl::cat(category)};
  cl::opt<int> numStages{
      "num-stages", cl::init(0), cl::value_desc("N"),
      cl::desc("Ring depth of a pipelined K loop, 1 to 8; 0 (the default): as "
               "many as fit, three for a ring filled through pointers"),
      cl::cat(category)};
  cl::list<std::string> div16{
      "div16", cl::CommaSeparated, cl::value_desc("ARG,...|all"),
      cl::desc("Integer parameters promised to be multiples of 16 ('all': "
               "every integer parameter, as the runtime specializes)"),
      cl::cat(category)};
  cl::list<std::string> equalToOne{
      "equal-to-1", cl::CommaSeparated, cl::value_desc("ARG,..."),
      cl::desc("Integer parameters promised to be 1 (a unit stride), as the "
               "runtime specializes an argument of 1"),
      cl::cat(category)};
  cl::opt<Stage> emit{"emit", cl::init(Stage::Ptx),
                      cl::desc("The pipeline stage to print"), stageValues(),
                      cl::cat(category)};
  cl::opt<std::string> output{"o", cl::value_desc("OUT"),
                              cl::desc("Write to OUT instead of stdout"),
                              cl::cat(category)};
  cl::opt<bool> list{"list",
                     cl::desc("List the file's kernels and their signatures"),
                     cl::cat(category)};
  cl::opt<bool> remarks{
      "remarks",
      cl::desc("Print performance remarks (slow paths: scalar accesses, "
               "mma.sync on sm_90, K loops left unpipelined elsewhere, "
               "spills as ptxas -v reports them)"),
      cl::cat(category)};
  cl::opt<bool> debug{
      "debug",
      cl::desc("Compile device_assert checks in (Triton's debug=True; "
               "SPARSETILE_DEBUG=1 for the runtime)"),
      cl::cat(category)};
  cl::opt<bool> vectorAtomics{
      "vector-atomics", cl::init(true),
      cl::desc("sm_90: unused f32 atomic adds as 16-byte vector reds where "
               "the run allows (default); =0 one scalar red an element"),
      cl::cat(category)};
  cl::opt<bool> fpFusion{
      "fp-fusion", cl::init(true),
      cl::desc("Contract a float multiply and add into fma (default, as "
               "nvcc and Triton); =0 rounds each as written"),
      cl::cat(category)};
  cl::opt<bool> ftz{
      "ftz", cl::init(true),
      cl::desc("libdevice's f32 functions flush subnormals to zero (default, "
               "as Triton); =0 keeps them, as nvcc"),
      cl::cat(category)};
  cl::opt<std::string> werror{
      "Werror", cl::value_desc("perf"),
      cl::desc("'perf': performance remarks are errors (exit status 1)"),
      cl::cat(category)};
};

const char *kStages = "ast, tile, pipelined, mlir, llvm, ptx";

/// `stc --version`: sparsetile's version first, then the LLVM it carries.
void printVersion(llvm::raw_ostream &os) {
  os << "stc (sparsetile) " << version() << "\n  LLVM " << LLVM_VERSION_STRING
     << " (NVPTX), PTX ISA 7.0-7.8 and 8.0-8.8\n";
}

/// The options whose valid values the compiler knows (the target, the
/// warps): a bad one is a usage error, reported before the source is read.
std::string badTargetOption(const std::string &arch, int ptxVersion,
                            int numWarps) {
  TargetSpec spec;
  std::string why;
  if (!resolveTarget(arch, ptxVersion, spec, why))
    return (why.find("architecture") != std::string::npos ? "--arch: "
                                                          : "--ptx-version: ") +
           why;
  if (numWarps != 0 && (numWarps > 32 || (numWarps & (numWarps - 1))))
    return "--num-warps takes 0 (the kernel's @num_warps) or a power of two "
           "from 1 to 32: 1, 2, 4, 8, 16, 32; got '" +
           std::to_string(numWarps) + "'";
  return "";
}

/// The file's kernels, for the message of a missing or unknown --kernel
/// (empty when the file does not parse: compile() then reports why).
std::string kernelChoiceError(const std::string &source,
                              const std::string &file,
                              const std::string &kernel,
                              const CompileOptions &options) {
  std::vector<KernelSignature> kernels;
  std::string diags;
  if (!listKernels(source, file, kernels, diags, options.constants) ||
      kernels.empty())
    return "";
  std::string names;
  bool found = false;
  for (const KernelSignature &k : kernels) {
    names += (names.empty() ? "" : ", ") + k.name;
    found |= k.name == kernel;
  }
  if (kernel.empty() && kernels.size() > 1)
    return file + " has several kernels; choose one with --kernel: " + names;
  if (!kernel.empty() && !found)
    return file + " has no kernel named '" + kernel + "'; its kernels: " +
           names;
  return "";
}

int usageError(const std::string &msg) {
  std::cerr << "stc: error: " << msg << "\n"
            << "run 'stc --help' for the options\n";
  return 2;
}

void printSignatures(const std::vector<KernelSignature> &kernels) {
  for (const KernelSignature &k : kernels) {
    if (!k.error.empty()) {
      // A kernel a syntax error stops: its name and first error's line.
      std::cout << k.name << ": " << k.error.substr(0, k.error.find('\n'))
                << "\n";
      continue;
    }
    std::cout << k.name << "(";
    const char *sep = "";
    for (const KernelParam &p : k.params) {
      std::cout << sep << p.name << ": " << (p.isPointer ? "*" : "")
                << (p.isDescriptor ? "desc<" : "") << dtypeName(p.dtype)
                << (p.isDescriptor ? ">" : "");
      sep = ", ";
    }
    for (const ConstParam &c : k.constants) {
      std::cout << sep << "const " << c.name << ": "
                << (c.isType ? "dtype" : dtypeName(c.dtype));
      if (!c.defaultValue.empty())
        std::cout << " = " << c.defaultValue;
      sep = ", ";
    }
    std::cout << ")\n";
    if (!k.hasAutotune)
      continue;
    const AutotuneDecl &t = k.autotune;
    auto join = [](const std::vector<std::string> &v) {
      std::string s;
      for (const std::string &x : v)
        s += (s.empty() ? "" : ", ") + x;
      return s;
    };
    std::cout << "  autotune key=[" << join(t.key) << "] grid=[" << join(t.grid)
              << "] outputs=[" << join(t.outputs) << "]\n";
    for (const auto &config : t.configs) {
      std::string text;
      for (const auto &[name, value] : config)
        text += (text.empty() ? "" : ", ") + name + ": " + value;
      std::cout << "    config {" << text << "}\n";
    }
  }
}

/// `--div16 all`: every integer parameter of the kernel, the variant the
/// runtime builds for a launch whose integer arguments are all multiples of
/// 16 (it specializes each argument on its own).
std::vector<std::string> allIntegerParams(const std::string &source,
                                          const std::string &file,
                                          const std::string &kernel,
                                          const CompileOptions &options) {
  std::vector<std::string> names;
  std::vector<KernelSignature> kernels;
  std::string diags;
  if (!listKernels(source, file, kernels, diags, options.constants))
    return names; // compile() reports the error
  for (const KernelSignature &k : kernels) {
    if (k.name != kernel && !(kernel.empty() && kernels.size() == 1))
      continue;
    for (const KernelParam &p : k.params) {
      bool integer = dtypeIsInteger(p.dtype);
      if (!p.isPointer && !p.isDescriptor && integer)
        names.push_back(p.name);
    }
  }
  return names;
}

/// Writes `text` to stdout or `path`, ending with a newline like tile-opt.
bool writeOutput(const std::string &text, const std::string &path) {
  bool newline = !text.empty() && text.back() != '\n';
  if (path.empty()) {
    std::cout << text << (newline ? "\n" : "");
    return true;
  }
  std::ofstream os(path, std::ios::binary);
  os << text << (newline ? "\n" : "");
  return bool(os);
}

} // namespace

namespace sparsetile {

SPARSETILE_API int stcMain(int argc, char **argv) {
  StcOptions o;
  cl::HideUnrelatedOptions(o.category);
  cl::SetVersionPrinter(printVersion);
  std::string errors;
  llvm::raw_string_ostream errs(errors);
  if (!cl::ParseCommandLineOptions(argc, argv, "sparsetile compiler\n", &errs,
                                   /*VFS=*/nullptr, /*EnvVar=*/nullptr,
                                   /*LongOptionsUseDoubleDash=*/true)) {
    errs.flush();
    std::cerr << errors;
    // LLVM names a bad --emit value but not the good ones.
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]).rfind("--emit", 0) == 0 ||
          std::string(argv[i]).rfind("-emit", 0) == 0) {
        std::cerr << "stc: --emit takes one of: " << kStages << "\n";
        break;
      }
    std::cerr << "run 'stc --help' for the options\n";
    return 2;
  }

  // Ranges LLVM's integer parser does not know.
  CompileOptions options;
  options.arch = o.arch;
  options.ptxVersion = o.ptxVersion;
  options.numWarps = o.numWarps;
  options.numStages = o.numStages;
  if (o.ptxVersion < 0 || o.ptxVersion > 999)
    return usageError("--ptx-version takes major*10+minor, e.g. 85; got '" +
                      std::to_string(o.ptxVersion) + "'");
  if (o.numWarps < 0 || o.numWarps > 1024)
    return usageError("--num-warps takes a number of warps; got '" +
                      std::to_string(o.numWarps) + "'");
  if (std::string bad = badTargetOption(o.arch, o.ptxVersion, o.numWarps);
      !bad.empty())
    return usageError(bad);
  if (o.numStages < 0 || o.numStages > 8)
    return usageError("--num-stages takes a ring depth from 0 (automatic) to "
                      "8; got '" +
                      std::to_string(o.numStages) + "'");
  for (const std::string &def : o.defines) {
    size_t eq = def.find('=');
    if (eq == std::string::npos || eq == 0)
      return usageError("-D needs NAME=VALUE, got '" + def + "'");
    options.constants[def.substr(0, eq)] = def.substr(eq + 1);
  }
  if (!o.werror.empty() && o.werror != "perf")
    return usageError("--Werror takes 'perf' (performance remarks are "
                      "errors); got '" +
                      o.werror + "'");
  options.werrorPerf = o.werror == "perf";
  options.debug = o.debug;
  options.vectorAtomics = o.vectorAtomics;
  options.fpFusion = o.fpFusion;
  options.ftz = o.ftz;
  for (const std::string &name : o.div16)
    if (!name.empty())
      options.divisibleBy16.push_back(name);
  for (const std::string &name : o.equalToOne)
    if (!name.empty())
      options.equalToOne.push_back(name);
  if (o.input.empty())
    return usageError("no input file");

  std::ifstream in(o.input, std::ios::binary);
  if (!in) {
    std::cerr << "stc: error: cannot read '" << o.input << "'\n";
    return 1;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string source = buffer.str();

  if (o.list) {
    std::vector<KernelSignature> kernels;
    std::string diags;
    if (!listKernels(source, o.input, kernels, diags, options.constants)) {
      std::cerr << diags;
      return 1;
    }
    printSignatures(kernels);
    // Kernels that a syntax error stops are listed, and fail the listing.
    std::cerr << diags;
    return diags.empty() ? 0 : 1;
  }

  if (std::string bad = kernelChoiceError(source, o.input, o.kernel, options);
      !bad.empty())
    return usageError(bad);

  std::vector<std::string> &div = options.divisibleBy16;
  if (std::find(div.begin(), div.end(), "all") != div.end())
    div = allIntegerParams(source, o.input, o.kernel, options);
  // 1 is not a multiple of 16: `--div16 all --equal-to-1 s` is the variant
  // the runtime builds for s == 1 and every other integer a multiple of 16.
  llvm::erase_if(div, [&](const std::string &name) {
    return llvm::is_contained(options.equalToOne, name);
  });
  CompileResult r = compile(source, o.input, o.kernel, options, o.emit);
  if (r.ok && o.emit == Stage::Ptx && (o.remarks || options.werrorPerf)) {
    addSpillRemarks(r, source, o.input);
    if (options.werrorPerf)
      failOnRemarks(r);
  }
  // On success, the diagnostics are notes (static_print's).
  std::cerr << r.diagnostics;
  if (!r.ok)
    return 1;
  if (o.remarks)
    for (const Remark &remark : r.remarks)
      std::cerr << remark.text;
  if (!writeOutput(r.text, o.output)) {
    std::cerr << "stc: error: cannot write '" << o.output << "'\n";
    return 1;
  }
  return 0;
}

} // namespace sparsetile
