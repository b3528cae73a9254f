//===- TileOptMain.cpp - tile-opt's entry point ---------------------------===//
//
// tile-opt is mlir-opt with the tile dialect, sparsetile's passes and the
// `--sparsetile-pipeline` registered. Its main lives in the compiler library
// so the executable links the one copy of MLIR that library already carries.
// It parses the command line itself (mlir-opt's parse exits with 1) so that a
// bad option value is a usage error, exit 2, as in stc.
//
//===----------------------------------------------------------------------===//

#include "Conversion/Passes.h"
#include "Pipeline/Pipeline.h"
#include "Transforms/Passes.h"
#include "sparsetile/Compiler.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <iostream>

namespace sparsetile {

SPARSETILE_API int tileOptMain(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registerAll(registry);
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  registerSparsetilePasses();
  registerSparsetileTransformsPasses();
  registerSparsetilePipeline();
  std::string header =
      mlir::registerCLIOptions("sparsetile tile-opt", registry);
  static llvm::cl::opt<std::string> input(llvm::cl::Positional,
                                          llvm::cl::desc("<input file>"),
                                          llvm::cl::init("-"));
  static llvm::cl::opt<std::string> output(
      "o", llvm::cl::desc("Output filename"), llvm::cl::value_desc("filename"),
      llvm::cl::init("-"));
  std::string errors;
  llvm::raw_string_ostream errs(errors);
  if (!llvm::cl::ParseCommandLineOptions(argc, argv, header, &errs)) {
    errs.flush();
    std::cerr << errors;
    return 2;
  }
  // Pass-pipeline options (`--sparsetile-pipeline="arch=sm_99"`) are only
  // checked when the pipeline is built: build it once here, so that a bad
  // value is a usage error too.
  {
    mlir::MLIRContext ctx(registry);
    mlir::PassManager pm(&ctx);
    if (mlir::failed(
            mlir::MlirOptMainConfig::createFromCLOptions().setupPassPipeline(
                pm)))
      return 2;
  }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}

} // namespace sparsetile
