//===- OpsCommon.cpp - What every launcher in runtime/ops checks ----------===//

#include "OpsCommon.h"
#include "EmbeddedKernels.h"

#include "sparsetile/runtime/Error.h"

#include <map>
#include <mutex>

namespace sparsetile::ops::detail {

const rt::KernelSource &embeddedSource(const std::string &name) {
  static std::mutex mutex;
  static std::map<std::string, rt::KernelSource> sources;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = sources.find(name);
  if (it == sources.end())
    it = sources
             .emplace(name, rt::KernelSource::fromText(embeddedKernel(name), name))
             .first;
  return it->second;
}

void fail(const std::string &op, const std::string &what) {
  throw rt::Error("sparsetile " + op + ": " + what);
}

void checkPointer(const std::string &op, const char *name, rt::DevicePtr p) {
  if (!p)
    fail(op, std::string(name) + " is null");
  if (p % 16)
    fail(op, std::string(name) +
                 " is not 16-byte aligned (the kernels use 16-byte accesses)");
}

} // namespace sparsetile::ops::detail
