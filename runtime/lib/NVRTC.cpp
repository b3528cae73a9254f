//===- NVRTC.cpp - CUDA C++ to PTX with NVRTC, loaded at run time ---------===//
//
// dlopens libnvrtc.so.13 (falling back to the toolkit's lib64) and drives one
// nvrtcProgram per call. The entry's name expression is registered so
// templates and C++ linkage work: the caller gets the lowered (mangled) name
// to look the function up in the module.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/NVRTC.h"
#include "DynamicLibrary.h"

#include <nvrtc.h>

using namespace sparsetile::rt;
using namespace sparsetile::rt::detail;

namespace {

#define SPARSETILE_NVRTC_FUNCTIONS(X)                                          \
  X(nvrtcVersion)                                                              \
  X(nvrtcGetErrorString)                                                       \
  X(nvrtcCreateProgram)                                                        \
  X(nvrtcDestroyProgram)                                                       \
  X(nvrtcCompileProgram)                                                       \
  X(nvrtcGetPTXSize)                                                           \
  X(nvrtcGetPTX)                                                               \
  X(nvrtcGetProgramLogSize)                                                    \
  X(nvrtcGetProgramLog)                                                        \
  X(nvrtcAddNameExpression)                                                    \
  X(nvrtcGetLoweredName)

struct NvrtcApi {
#define SPARSETILE_DECLARE(name) decltype(&::name) name = nullptr;
  SPARSETILE_NVRTC_FUNCTIONS(SPARSETILE_DECLARE)
#undef SPARSETILE_DECLARE
  bool ok = false;
  std::string error;
};

NvrtcApi loadNvrtc() {
  NvrtcApi api;
  std::string errors;
  void *h = openFirstLibrary(
      {"libnvrtc.so.13", cudaToolkitLibDir() + "libnvrtc.so.13"}, errors);
  if (!h) {
    api.error = "cannot load NVRTC:" + errors;
    return api;
  }
#define SPARSETILE_RESOLVE(name)                                               \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(h, #name));            \
  if (!api.name) {                                                             \
    api.error = "NVRTC has no symbol " #name;                                  \
    return api;                                                                \
  }
  SPARSETILE_NVRTC_FUNCTIONS(SPARSETILE_RESOLVE)
#undef SPARSETILE_RESOLVE
  api.ok = true;
  return api;
}

const NvrtcApi &nvrtc() {
  static const NvrtcApi api = loadNvrtc();
  if (!api.ok)
    throw Error(api.error);
  return api;
}

/// "sm_90a" -> "compute_90a": PTX is generated for the virtual arch.
std::string virtualArch(const std::string &arch) {
  if (arch.rfind("sm_", 0) == 0)
    return "compute_" + arch.substr(3);
  if (arch.rfind("compute_", 0) == 0)
    return arch;
  throw Error("NVRTC: bad arch '" + arch + "' (expected sm_XY)");
}

/// Destroys the program on every path out of compileCudaToPtx.
struct ProgramGuard {
  nvrtcProgram prog = nullptr;
  ~ProgramGuard() {
    if (prog)
      nvrtc().nvrtcDestroyProgram(&prog);
  }
};

} // namespace

bool sparsetile::rt::nvrtcAvailable(std::string *whyNot) {
  return detail::loads([] { nvrtc(); }, whyNot);
}

std::string sparsetile::rt::nvrtcVersionString() {
  int major = 0, minor = 0;
  nvrtc().nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcOutput sparsetile::rt::compileCudaToPtx(
    const std::string &source, const std::string &entryName,
    const std::string &arch, const std::vector<std::string> &options,
    const std::string &filename) {
  const NvrtcApi &api = nvrtc();
  auto check = [&](nvrtcResult r, const char *what) {
    if (r != NVRTC_SUCCESS)
      throw Error(std::string("NVRTC ") + what + " failed for '" + filename +
                  "': " + api.nvrtcGetErrorString(r));
  };
  ProgramGuard g;
  check(api.nvrtcCreateProgram(&g.prog, source.c_str(), filename.c_str(), 0,
                               nullptr, nullptr),
        "nvrtcCreateProgram");
  check(api.nvrtcAddNameExpression(g.prog, entryName.c_str()),
        "nvrtcAddNameExpression");
  std::vector<std::string> opts = {"--gpu-architecture=" + virtualArch(arch),
                                   "-default-device", "-std=c++17"};
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char *> argv;
  for (const std::string &o : opts)
    argv.push_back(o.c_str());
  nvrtcResult compiled =
      api.nvrtcCompileProgram(g.prog, int(argv.size()), argv.data());
  NvrtcOutput out;
  size_t logSize = 0;
  check(api.nvrtcGetProgramLogSize(g.prog, &logSize), "nvrtcGetProgramLogSize");
  out.log.resize(logSize);
  if (logSize)
    check(api.nvrtcGetProgramLog(g.prog, out.log.data()), "nvrtcGetProgramLog");
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n'))
    out.log.pop_back();
  if (compiled != NVRTC_SUCCESS)
    throw Error("NVRTC failed to compile '" + filename + "' for " + arch +
                ": " + api.nvrtcGetErrorString(compiled) + "\n" + out.log);
  const char *lowered = nullptr;
  check(api.nvrtcGetLoweredName(g.prog, entryName.c_str(), &lowered),
        "looking up the entry name");
  out.loweredName = lowered ? lowered : entryName;
  size_t ptxSize = 0;
  check(api.nvrtcGetPTXSize(g.prog, &ptxSize), "nvrtcGetPTXSize");
  out.ptx.resize(ptxSize);
  check(api.nvrtcGetPTX(g.prog, out.ptx.data()), "nvrtcGetPTX");
  // The size includes the terminating NUL; keep the string clean.
  while (!out.ptx.empty() && out.ptx.back() == '\0')
    out.ptx.pop_back();
  return out;
}
