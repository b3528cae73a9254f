//===- stc.cpp - The sparsetile compiler driver ---------------------------===//
//
//   stc FILE.tile [--kernel NAME] [-D NAME=VALUE ...] [--arch sm_90]
//       [--ptx-version 80] [--num-warps N] [--num-stages N] [--div16 ARG,...|all]
//       [--emit=ast|tile|pipelined|mlir|llvm|ptx] [-o OUT]
//   stc FILE.tile --list
//
// Prints any stage of the pipeline (see compiler/Pipeline/Pipeline.cpp).
// Exit status: 0 on success, 1 on a compile error, 2 on a usage error.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/Compiler.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace sparsetile;

static void usage(std::ostream &os) {
  os << "usage: stc FILE.tile [--kernel NAME] [-D NAME=VALUE ...] "
        "[--arch sm_90]\n"
        "           [--ptx-version 80] [--num-warps N] [--num-stages N] [--div16 ARG,...|all]\n"
        "           [--emit=ast|tile|pipelined|mlir|llvm|ptx] [-o OUT]\n"
        "       stc FILE.tile --list\n";
}

static int usageError(const std::string &msg) {
  std::cerr << "stc: error: " << msg << "\n";
  usage(std::cerr);
  return 2;
}

/// The whole of `text` as a base-10 int in [lo, hi]; false otherwise (so
/// `--num-stages x` is an error, not 0).
static bool parseInt(const std::string &text, int lo, int hi, int &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno || *end || v < lo || v > hi)
    return false;
  out = int(v);
  return true;
}

int main(int argc, char **argv) {
  std::string file, kernel, out;
  CompileOptions options;
  Stage emit = Stage::Ptx;
  bool list = false;

  // Accepts "--flag=value" and "--flag value".
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *flag, std::string &v) -> bool {
      size_t n = std::strlen(flag);
      if (a.compare(0, n, flag) != 0)
        return false;
      if (a.size() > n && a[n] == '=') {
        v = a.substr(n + 1);
        return true;
      }
      if (a.size() == n && i + 1 < argc) {
        v = argv[++i];
        return true;
      }
      return false;
    };
    std::string v;
    if (a == "-h" || a == "--help") {
      usage(std::cout);
      return 0;
    } else if (a == "--list") {
      list = true;
    } else if (value("--kernel", v)) {
      kernel = v;
    } else if (value("--arch", v)) {
      options.arch = v;
    } else if (value("--emit", v)) {
      if (!parseStage(v, emit))
        return usageError("unknown stage '" + v +
                          "'; use ast, tile, pipelined, mlir, llvm or ptx");
    } else if (value("--ptx-version", v)) {
      if (!parseInt(v, 0, 999, options.ptxVersion))
        return usageError("--ptx-version takes major*10+minor, e.g. 85; got '" +
                          v + "'");
    } else if (value("--num-warps", v)) {
      if (!parseInt(v, 0, 1024, options.numWarps))
        return usageError("--num-warps takes a number of warps; "
                          "got '" + v + "'");
    } else if (value("--num-stages", v)) {
      if (!parseInt(v, 0, 8, options.numStages))
        return usageError("--num-stages takes a ring depth from 0 (automatic) "
                          "to 8; got '" + v + "'");
    } else if (value("--div16", v)) {
      std::stringstream ss(v);
      for (std::string name; std::getline(ss, name, ',');)
        if (!name.empty())
          options.divisibleBy16.push_back(name);
    } else if (a == "-o" && i + 1 < argc) {
      out = argv[++i];
    } else if (a.rfind("-D", 0) == 0) {
      std::string def = a.size() > 2 ? a.substr(2) : (i + 1 < argc ? argv[++i] : "");
      size_t eq = def.find('=');
      if (eq == std::string::npos || eq == 0)
        return usageError("-D needs NAME=VALUE, got '" + def + "'");
      options.constants[def.substr(0, eq)] = def.substr(eq + 1);
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option '" + a + "'");
    } else if (file.empty()) {
      file = a;
    } else {
      return usageError("more than one input file");
    }
  }
  if (file.empty())
    return usageError("no input file");

  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::cerr << "stc: error: cannot read '" << file << "'\n";
    return 1;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string source = buffer.str();

  if (list) {
    std::vector<KernelSignature> kernels;
    std::string diags;
    if (!listKernels(source, file, kernels, diags)) {
      std::cerr << diags;
      return 1;
    }
    for (const KernelSignature &k : kernels) {
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
    }
    return 0;
  }

  // --div16 all: every integer parameter, as the runtime specializes a
  // launch whose integer arguments are all multiples of 16.
  if (std::find(options.divisibleBy16.begin(), options.divisibleBy16.end(),
                "all") != options.divisibleBy16.end()) {
    std::vector<KernelSignature> kernels;
    std::string diags;
    options.divisibleBy16.clear();
    if (listKernels(source, file, kernels, diags, options.constants))
      for (const KernelSignature &k : kernels)
        if (k.name == kernel || (kernel.empty() && kernels.size() == 1))
          for (const KernelParam &p : k.params)
            if (!p.isPointer && !p.isDescriptor && p.dtype != DType::I1 && p.dtype != DType::F16 &&
                p.dtype != DType::BF16 && p.dtype != DType::F32 &&
                p.dtype != DType::F64)
              options.divisibleBy16.push_back(p.name);
  }
  CompileResult r = compile(source, file, kernel, options, emit);
  if (!r.ok) {
    std::cerr << r.diagnostics;
    return 1;
  }
  if (out.empty()) {
    std::cout << r.text;
    if (!r.text.empty() && r.text.back() != '\n')
      std::cout << "\n";
    return 0;
  }
  std::ofstream os(out, std::ios::binary);
  os << r.text;
  // Files end with a newline, like standard output and like tile-opt's.
  if (!r.text.empty() && r.text.back() != '\n')
    os << "\n";
  if (!os) {
    std::cerr << "stc: error: cannot write '" << out << "'\n";
    return 1;
  }
  return 0;
}
