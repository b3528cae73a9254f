//===- PtxasSpills.cpp - Register spills as performance remarks -----------===//
//
// Spills are decided by ptxas, after the compiler is done: only its verbose
// log (`ptxas -v`, or nvJitLink's / the driver's info log with -v) says
// "N bytes spill stores, M bytes spill loads". spillRemark turns such a log
// into a `spills` remark on the kernel's declaration; addSpillRemarks runs
// ptxas itself (stc --remarks), when one is installed.
//
//===----------------------------------------------------------------------===//

#include "Frontend/Diagnostics.h"
#include "Frontend/Parser.h"
#include "sparsetile/Compiler.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <regex>

namespace sparsetile {

/// The spill counts ptxas gave for `kernel` in `log`: false if the log does
/// not mention the kernel's properties.
static bool spillCounts(const std::string &log, const std::string &kernel,
                        long &stores, long &loads, long &registers) {
  size_t at = log.find("Function properties for " + kernel);
  if (at == std::string::npos)
    return false;
  std::smatch m;
  std::string rest = log.substr(at);
  static const std::regex spills(
      R"(([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads)");
  if (!std::regex_search(rest, m, spills))
    return false;
  stores = std::stol(m[1]);
  loads = std::stol(m[2]);
  static const std::regex used(R"(Used ([0-9]+) registers)");
  registers = std::regex_search(rest, m, used) ? std::stol(m[1]) : 0;
  return true;
}

bool ptxasUsage(const std::string &ptxasLog, const std::string &kernelName,
                PtxasUsage &out) {
  long stores = 0, loads = 0, registers = 0;
  if (!spillCounts(ptxasLog, kernelName, stores, loads, registers))
    return false;
  out.registers = registers;
  out.spillBytes = stores + loads;
  return true;
}

bool spillRemark(const std::string &ptxasLog, const std::string &source,
                 const std::string &filename, const std::string &kernelName,
                 Remark &out) {
  long stores = 0, loads = 0, registers = 0;
  if (!spillCounts(ptxasLog, kernelName, stores, loads, registers) ||
      (stores == 0 && loads == 0))
    return false;
  Diagnostics diags(filename, source);
  ast::Module module;
  Loc loc;
  parseModule(source, diags, module); // Other kernels' errors do not matter.
  for (const ast::Kernel &k : module.kernels)
    if (k.name == kernelName)
      loc = k.loc;
  out.kind = "spills";
  out.message =
      "ptxas spills registers to local memory: " + std::to_string(stores) +
      " bytes of spill stores, " + std::to_string(loads) +
      " bytes of spill loads" +
      (registers ? " at " + std::to_string(registers) + " registers" : "") +
      "; fix: smaller tiles (BLOCK sizes), more warps (@num_warps) to share "
      "the accumulator, or fewer values live across the loop";
  out.file = filename;
  out.line = loc.line;
  out.col = loc.col;
  out.text = diags.format(loc, "remark", "[spills] " + out.message);
  return true;
}

/// ptxas from PATH, else from the usual CUDA install.
static std::string findPtxas() {
  if (auto p = llvm::sys::findProgramByName("ptxas"))
    return *p;
  for (const char *dir : {"/usr/local/cuda/bin"})
    if (auto p = llvm::sys::findProgramByName("ptxas", {dir}))
      return *p;
  return "";
}

void addSpillRemarks(CompileResult &result, const std::string &source,
                     const std::string &filename) {
  std::string ptxas = findPtxas();
  if (ptxas.empty() || result.kernel.ptx.empty())
    return;
  llvm::SmallString<128> ptxPath, logPath;
  if (llvm::sys::fs::createTemporaryFile("stc", "ptx", ptxPath) ||
      llvm::sys::fs::createTemporaryFile("stc", "log", logPath))
    return;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    os << result.kernel.ptx;
  }
  std::string arch = "-arch=" + result.kernel.arch;
  llvm::SmallVector<llvm::StringRef> args = {ptxas, "-v", arch, ptxPath,
                                             "-o", "/dev/null"};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, logPath.str(),
                                                logPath.str()};
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects);
  std::string log;
  if (auto buf = llvm::MemoryBuffer::getFile(logPath))
    log = (*buf)->getBuffer().str();
  llvm::sys::fs::remove(ptxPath);
  llvm::sys::fs::remove(logPath);
  Remark r;
  if (rc == 0 &&
      spillRemark(log, source, filename, result.kernel.name, r))
    result.remarks.push_back(std::move(r));
}

} // namespace sparsetile
