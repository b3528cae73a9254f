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

namespace {
/// What ptxas reported for one kernel.
struct SpillCounts {
  long stores = 0, loads = 0; // First format below.
  long local = 0;             // Second format: local memory in bytes.
  long registers = 0;
  long bytes() const { return stores + loads + local; }
};
} // namespace

/// The spill counts ptxas gave for `kernel` in `log`: false if the log does
/// not mention the kernel's properties. Two report formats exist, and which
/// one a process sees depends on the nvJitLink it loaded (the H200's
/// /usr/local/cuda 13.0.88 writes the second, torch's wheel and the build
/// machine's the first):
///   ptxas info    : Function properties for k
///       0 bytes stack frame, 48 bytes spill stores, 40 bytes spill loads
///   ptxas info    : Used 255 registers, ...
/// and
///   info    : Function properties for 'k':
///   info    : used 35 registers, used 0 barriers, 0 stack, ... 0 bytes lmem
/// where only the local memory (lmem) is given: the spills, and any local
/// array (the DSL makes none).
static bool spillCounts(const std::string &log, const std::string &kernel,
                        SpillCounts &c) {
  const std::string head = "Function properties for ";
  size_t at = std::string::npos;
  for (const std::string &name :
       {kernel + "\n", kernel + "\r", "'" + kernel + "'"})
    if ((at = log.find(head + name)) != std::string::npos)
      break;
  if (at == std::string::npos)
    return false;
  size_t end = log.find(head, at + head.size());
  std::string rest = log.substr(at, end == std::string::npos ? end : end - at);
  std::smatch m;
  static const std::regex spills(
      R"(([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads)");
  static const std::regex lmem(R"(([0-9]+) bytes lmem)");
  if (std::regex_search(rest, m, spills)) {
    c.stores = std::stol(m[1]);
    c.loads = std::stol(m[2]);
  } else if (std::regex_search(rest, m, lmem)) {
    c.local = std::stol(m[1]);
  } else {
    return false;
  }
  // The registers follow the properties (first format) or sit in them.
  std::string from = log.substr(at);
  static const std::regex used(R"([Uu]sed ([0-9]+) registers)");
  c.registers = std::regex_search(from, m, used) ? std::stol(m[1]) : 0;
  return true;
}

bool ptxasUsage(const std::string &ptxasLog, const std::string &kernelName,
                PtxasUsage &out) {
  SpillCounts c;
  if (!spillCounts(ptxasLog, kernelName, c))
    return false;
  out.registers = c.registers;
  out.spillBytes = c.bytes();
  return true;
}

bool spillRemark(const std::string &ptxasLog, const std::string &source,
                 const std::string &filename, const std::string &kernelName,
                 Remark &out) {
  SpillCounts c;
  if (!spillCounts(ptxasLog, kernelName, c) || c.bytes() == 0)
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
      "ptxas spills registers to local memory: " +
      (c.local ? std::to_string(c.local) + " bytes of local memory"
               : std::to_string(c.stores) + " bytes of spill stores, " +
                     std::to_string(c.loads) + " bytes of spill loads") +
      (c.registers ? " at " + std::to_string(c.registers) + " registers" : "") +
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
