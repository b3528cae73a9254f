//===- DynamicLibrary.h - dlopen with fallbacks -----------------*- C++ -*-===//
//
// Internal to the runtime. Opens the first loadable library of a candidate
// list (soname first, then absolute toolkit paths) and collects the dlerror
// of every attempt so a failure message says where we looked.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_RUNTIME_LIB_DYNAMICLIBRARY_H
#define SPARSETILE_RUNTIME_LIB_DYNAMICLIBRARY_H

#include <dlfcn.h>

#include <exception>
#include <string>
#include <vector>

namespace sparsetile {
namespace rt {
namespace detail {

/// Returns the handle of the first candidate that dlopens, or nullptr with
/// every attempt's error in `error`.
inline void *openFirstLibrary(const std::vector<std::string> &candidates,
                              std::string &error) {
  for (const std::string &c : candidates) {
    if (void *h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL))
      return h;
    const char *e = dlerror();
    error += "\n  " + c + ": " + (e ? e : "dlopen failed");
  }
  return nullptr;
}

/// The toolkit root the runtime was built against (for library fallbacks).
inline std::string cudaToolkitLibDir() {
#ifdef SPARSETILE_CUDA_ROOT
  return std::string(SPARSETILE_CUDA_ROOT) + "/lib64/";
#else
  return "/usr/local/cuda/lib64/";
#endif
}

/// Whether `load()` (which throws with the reason when a library cannot be
/// loaded) succeeds; the reason goes to *whyNot otherwise.
template <typename Load> bool loads(Load &&load, std::string *whyNot) {
  try {
    load();
    return true;
  } catch (const std::exception &e) {
    if (whyNot)
      *whyNot = e.what();
    return false;
  }
}

} // namespace detail
} // namespace rt
} // namespace sparsetile

#endif // SPARSETILE_RUNTIME_LIB_DYNAMICLIBRARY_H
