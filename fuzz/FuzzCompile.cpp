//===- FuzzCompile.cpp - libFuzzer target for the whole compile -----------===//
//
// Feeds arbitrary bytes to sparsetile::compile() as a .tile file and compiles
// its first kernel (at most two) to PTX, for sm_90 (TMA, wgmma) or sm_80
// (mma.sync), picked by the input's length so that a saved input replays the
// same way. A crash, a hang, an LLVM/MLIR fatal error (the process would
// exit) or a sanitizer report is a finding; a failed compile must come back
// with diagnostics.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/Compiler.h"

#include <cstdint>
#include <string>
#include <vector>

/// Only sparsetile's code is instrumented. LLVM's headers poison the unused
/// tail of BumpPtrAllocator slabs when the including code is built with
/// ASan, but the (uninstrumented) LLVM/MLIR archives allocate from the same
/// slabs without unpoisoning: every MLIRContext would be a false
/// use-after-poison. Manual poisoning is therefore off; ASan's own redzones
/// around our allocations stay.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string source(reinterpret_cast<const char *>(data), size);
  std::vector<sparsetile::KernelSignature> kernels;
  std::string diagnostics;
  if (!sparsetile::listKernels(source, "fuzz.tile", kernels, diagnostics))
    return 0;
  sparsetile::CompileOptions options;
  options.arch = size % 2 ? "sm_80" : "sm_90";
  for (size_t i = 0; i < kernels.size() && i < 2; ++i) {
    sparsetile::CompileResult r =
        sparsetile::compile(source, "fuzz.tile", kernels[i].name, options);
    if (!r.ok && r.diagnostics.empty())
      __builtin_trap();
    if (r.ok && r.kernel.ptx.empty())
      __builtin_trap();
  }
  return 0;
}
