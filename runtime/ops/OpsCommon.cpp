//===- OpsCommon.cpp - What every launcher in runtime/ops checks ----------===//

#include "OpsCommon.h"
#include "EmbeddedKernels.h"

#include "sparsetile/runtime/Error.h"

#include "sparsetile/runtime/Hash.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

namespace sparsetile::ops::detail {

/// The embedded files that embedded kernel `name` imports, by the path the
/// compiler resolves (`import "x.tile";` in "name" is "x.tile"): they are
/// embedded beside it, so an op never reads its imports from disk.
static std::map<std::string, std::string>
embeddedImports(const std::string &name) {
  static const std::string kImport = "import \"";
  std::map<std::string, std::string> out;
  const std::string &text = embeddedKernel(name);
  for (size_t at = text.find(kImport); at != std::string::npos;
       at = text.find(kImport, at + 1)) {
    size_t from = at + kImport.size(), to = text.find('"', from);
    if (to == std::string::npos)
      break;
    std::string path = text.substr(from, to - from);
    if (!out.count(path))
      out.emplace(path, embeddedKernel(path)); // throws if not embedded
  }
  return out;
}

const rt::KernelSource &embeddedSource(const std::string &name) {
  static std::mutex mutex;
  static std::map<std::string, rt::KernelSource> sources;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = sources.find(name);
  if (it != sources.end())
    return it->second;
  // $SPARSETILE_OPS_SOURCE_DIR/<name>, when set, replaces the embedded
  // text: an edited kernel can be timed through the ops (their launchers,
  // tuners and benches) without a rebuild. Read once, at the op's first
  // launch; its digest keys the caches, so its kernels never mix with the
  // embedded ones'.
  const char *dir = std::getenv("SPARSETILE_OPS_SOURCE_DIR");
  if (!dir || !*dir)
    return sources
        .emplace(name, rt::KernelSource::fromText(embeddedKernel(name), name,
                                                  embeddedImports(name)))
        .first->second;
  std::string path = std::string(dir) + "/" + name;
  try {
    return sources.emplace(name, rt::KernelSource::fromFile(path))
        .first->second;
  } catch (const rt::Error &e) {
    throw rt::Error(std::string(e.what()) +
                    " (SPARSETILE_OPS_SOURCE_DIR replaces the ops' "
                    "embedded kernels; unset it to use them)");
  }
}

void fail(const std::string &op, const std::string &what) {
  throw rt::Error("sparsetile " + op + ": " + what);
}

void launchTiling(const std::string &op, const std::string &tiling,
                  rt::Kernel &kernel, const rt::LaunchConfig &config,
                  const std::vector<rt::Arg> &args) {
  try {
    kernel.launch(config, args); // Compiles the variant before launching.
  } catch (const rt::CompileError &e) {
    throw rt::CompileError("sparsetile " + op + ": the tiling " + tiling +
                           " does not compile: " + e.what());
  }
}

void checkPointer(const std::string &op, const char *name, rt::DevicePtr p) {
  if (!p)
    fail(op, std::string(name) + " is null");
  if (p % 16)
    fail(op, std::string(name) +
                 " is not 16-byte aligned (the kernels use 16-byte accesses)");
}

rt::AutotunedKernel &tunedKernel(const rt::KernelSource &source,
                                 const std::string &kernel,
                                 const rt::Constants &base,
                                 const rt::JITOptions &options,
                                 const std::vector<rt::TuneConfig> &configs,
                                 const std::vector<std::string> &outputs) {
  // Everything that makes two tuners differ, as text: the grid and prune
  // come with each launch, so they are not part of it.
  std::string id = rt::toHex(source.digest()) + "\n" + kernel;
  for (const auto &kv : base)
    id += "\n" + kv.first + "=" + kv.second;
  CodegenOptions::forEachField([&](const char *name, auto field) {
    std::ostringstream v;
    v << options.*field;
    id += std::string("\n") + name + "=" + v.str();
  });
  id += options.specialize ? "\nspecialize" : "";
  for (const rt::TuneConfig &c : configs)
    id += "\nconfig " + c.describe();
  for (const std::string &o : outputs)
    id += "\noutput " + o;

  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<rt::AutotunedKernel>> tuners;
  std::lock_guard<std::mutex> lock(mutex);
  auto &slot = tuners[id];
  if (!slot) {
    rt::AutotuneSpec spec;
    spec.configs = configs;
    spec.outputs = outputs;
    spec.grid = [kernel](const rt::Constants &, const rt::LaunchArgs &) {
      throw rt::Error("sparsetile ops: " + kernel +
                      " is launched without its grid (a LaunchContext)");
      return rt::Dim3();
    };
    slot = std::make_unique<rt::AutotunedKernel>(
        rt::JIT::global(), source, kernel, base, options, std::move(spec));
  }
  return *slot;
}

std::vector<rt::TuneConfig>
uniqueConfigs(const std::vector<rt::TuneConfig> &configs) {
  std::vector<rt::TuneConfig> out;
  std::set<std::string> seen;
  for (const rt::TuneConfig &c : configs)
    if (seen.insert(c.describe()).second)
      out.push_back(c);
  return out;
}

int64_t constantOf(const rt::Constants &c, const std::string &name) {
  auto it = c.find(name);
  if (it == c.end())
    throw rt::Error("sparsetile ops: no constant '" + name + "'");
  return std::stoll(it->second);
}

} // namespace sparsetile::ops::detail
