//===- TileOptMain.cpp - tile-opt's entry point ---------------------------===//
//
// tile-opt is mlir-opt with the tile dialect and sparsetile's passes
// registered. Its main lives in the compiler library so the executable links
// the one copy of MLIR that library already carries.
//
//===----------------------------------------------------------------------===//

#include "Conversion/Passes.h"
#include "Transforms/Passes.h"
#include "Pipeline/Pipeline.h"
#include "sparsetile/Compiler.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

namespace sparsetile {

SPARSETILE_API int tileOptMain(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registerAll(registry);
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  registerSparsetilePasses();
  registerSparsetileTransformsPasses();
  registerSparsetilePipeline();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "sparsetile tile-opt\n", registry));
}

} // namespace sparsetile
