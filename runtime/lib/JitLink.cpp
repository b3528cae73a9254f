//===- JitLink.cpp - PTX to cubin with nvJitLink --------------------------===//
//
// dlopens libnvJitLink.so.13 and resolves the versioned entry points that
// nvJitLink.h's inline wrappers call (__nvJitLinkCreate_13_0, ...), so the
// ABI matches the header we compiled against. Needs no GPU.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/runtime/JitLink.h"
#include "DynamicLibrary.h"

#include <nvJitLink.h>

using namespace sparsetile::rt;
using namespace sparsetile::rt::detail;

namespace {

struct JitLinkApi {
  decltype(&__nvJitLinkCreate_13_0) create = nullptr;
  decltype(&__nvJitLinkDestroy_13_0) destroy = nullptr;
  decltype(&__nvJitLinkAddData_13_0) addData = nullptr;
  decltype(&__nvJitLinkComplete_13_0) complete = nullptr;
  decltype(&__nvJitLinkGetLinkedCubinSize_13_0) cubinSize = nullptr;
  decltype(&__nvJitLinkGetLinkedCubin_13_0) cubin = nullptr;
  decltype(&__nvJitLinkGetErrorLogSize_13_0) errorLogSize = nullptr;
  decltype(&__nvJitLinkGetErrorLog_13_0) errorLog = nullptr;
  decltype(&__nvJitLinkGetInfoLogSize_13_0) infoLogSize = nullptr;
  decltype(&__nvJitLinkGetInfoLog_13_0) infoLog = nullptr;
  decltype(&::nvJitLinkVersion) version = nullptr;
  bool ok = false;
  std::string error;
};

JitLinkApi loadJitLink() {
  JitLinkApi api;
  std::string errors;
  void *h = openFirstLibrary(
      {"libnvJitLink.so.13", cudaToolkitLibDir() + "libnvJitLink.so.13"},
      errors);
  if (!h) {
    api.error = "cannot load nvJitLink:" + errors;
    return api;
  }
  auto get = [&](auto &fn, const char *name) {
    fn =
        reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
    if (!fn && api.error.empty())
      api.error = std::string("nvJitLink has no symbol ") + name;
  };
  get(api.create, "__nvJitLinkCreate_13_0");
  get(api.destroy, "__nvJitLinkDestroy_13_0");
  get(api.addData, "__nvJitLinkAddData_13_0");
  get(api.complete, "__nvJitLinkComplete_13_0");
  get(api.cubinSize, "__nvJitLinkGetLinkedCubinSize_13_0");
  get(api.cubin, "__nvJitLinkGetLinkedCubin_13_0");
  get(api.errorLogSize, "__nvJitLinkGetErrorLogSize_13_0");
  get(api.errorLog, "__nvJitLinkGetErrorLog_13_0");
  get(api.infoLogSize, "__nvJitLinkGetInfoLogSize_13_0");
  get(api.infoLog, "__nvJitLinkGetInfoLog_13_0");
  get(api.version, "nvJitLinkVersion");
  api.ok = api.error.empty();
  return api;
}

const JitLinkApi &jitLink() {
  static const JitLinkApi api = loadJitLink();
  if (!api.ok)
    throw Error(api.error);
  return api;
}

struct HandleGuard {
  nvJitLinkHandle h = nullptr;
  ~HandleGuard() {
    if (h)
      jitLink().destroy(&h);
  }
};

} // namespace

bool sparsetile::rt::jitLinkAvailable(std::string *whyNot) {
  return detail::loads([] { jitLink(); }, whyNot);
}

std::string sparsetile::rt::jitLinkVersionString() {
  unsigned major = 0, minor = 0;
  jitLink().version(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string
sparsetile::rt::linkPtxToCubin(const std::string &ptx, const std::string &arch,
                               const std::vector<std::string> &options,
                               std::string *infoLog) {
  const JitLinkApi &api = jitLink();
  if (arch.rfind("sm_", 0) != 0)
    throw Error("nvJitLink: bad arch '" + arch + "' (expected sm_XY)");
  std::vector<std::string> opts = {"-arch=" + arch};
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char *> argv;
  for (const std::string &o : opts)
    argv.push_back(o.c_str());
  HandleGuard g;
  nvJitLinkResult r = api.create(&g.h, uint32_t(argv.size()), argv.data());
  if (r != NVJITLINK_SUCCESS)
    throw Error("nvJitLinkCreate failed for " + arch + " (error " +
                std::to_string(int(r)) + ")");
  auto fail = [&](const char *what, nvJitLinkResult res) {
    std::string log;
    size_t size = 0;
    if (api.errorLogSize(g.h, &size) == NVJITLINK_SUCCESS && size) {
      log.resize(size);
      api.errorLog(g.h, log.data());
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
        log.pop_back();
    }
    throw Error(std::string("nvJitLink ") + what + " failed for " + arch +
                " (error " + std::to_string(int(res)) + ")" +
                (log.empty() ? "" : ":\n" + log));
  };
  // nvJitLink reads PTX as a NUL-terminated string; pass the terminator.
  r = api.addData(g.h, NVJITLINK_INPUT_PTX, ptx.c_str(), ptx.size() + 1,
                  "kernel.ptx");
  if (r != NVJITLINK_SUCCESS)
    fail("adding PTX", r);
  if ((r = api.complete(g.h)) != NVJITLINK_SUCCESS)
    fail("assembling PTX", r);
  size_t size = 0;
  if ((r = api.cubinSize(g.h, &size)) != NVJITLINK_SUCCESS)
    fail("getting the cubin size", r);
  std::string cubin(size, '\0');
  if ((r = api.cubin(g.h, cubin.data())) != NVJITLINK_SUCCESS)
    fail("getting the cubin", r);
  if (infoLog) {
    infoLog->clear();
    size_t n = 0;
    if (api.infoLogSize(g.h, &n) == NVJITLINK_SUCCESS && n) {
      infoLog->resize(n);
      api.infoLog(g.h, infoLog->data());
      while (!infoLog->empty() && infoLog->back() == '\0')
        infoLog->pop_back();
    }
  }
  return cubin;
}
