//===- PTXEmitter.h - LLVM IR and PTX from the lowered module ---*- C++ -*-===//
//
// The back half of the pipeline: a gpu.module already lowered to the LLVM
// and NVVM dialects becomes LLVM IR (with libdevice linked for math), is
// optimized at O3 and printed as PTX by LLVM's NVPTX backend, in process.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TARGET_PTXEMITTER_H
#define SPARSETILE_TARGET_PTXEMITTER_H

#include "mlir/IR/Operation.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <memory>
#include <string>

namespace sparsetile {

/// A validated NVPTX target.
struct TargetSpec {
  std::string arch; ///< LLVM CPU name: "sm_80", "sm_90", "sm_90a", ...
  int ptxVersion = 0; ///< e.g. 80 for PTX ISA 8.0.
  /// Contract a float multiply and add into fma (CodegenOptions::fpFusion).
  bool fpFusion = true;
  /// libdevice's flush-to-zero forms (CodegenOptions::ftz).
  bool ftz = true;
};

/// Checks `arch` and `ptxVersion` (0 = default) against what sparsetile and
/// LLVM support. LLVM aborts the process on a bad combination, so this runs
/// before any LLVM target code. Returns false with a message.
bool resolveTarget(const std::string &arch, int ptxVersion, TargetSpec &spec,
                   std::string &error);

/// Makes `context` append its error diagnostics to `errors` instead of
/// printing them and exiting the process (LLVM's default for errors such as
/// an unsupported instruction on the target). `errors` must outlive it.
void collectBackendErrors(llvm::LLVMContext &context, std::string &errors);

/// Translates a lowered gpu.module to LLVM IR, links the libdevice functions
/// it calls and runs the O3 pipeline. Returns null with a message.
std::unique_ptr<llvm::Module> emitLLVMIR(mlir::Operation *gpuModule,
                                         llvm::LLVMContext &context,
                                         const TargetSpec &target,
                                         std::string &error);

/// Prints `module` as PTX. Returns false with a message.
bool emitPTX(llvm::Module &module, const TargetSpec &target, std::string &ptx,
             std::string &error);

/// "LLVM 22.1.8; libdevice <size>": what the cache key needs to know.
std::string backendVersion();

} // namespace sparsetile

#endif // SPARSETILE_TARGET_PTXEMITTER_H
