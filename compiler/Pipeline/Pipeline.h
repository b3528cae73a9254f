//===- Pipeline.h - The MLIR context sparsetile compiles in -----*- C++ -*-===//
//
// The dialect registry shared by the pipeline and tile-opt, so both see the
// same dialects, ConvertToLLVM interfaces and translations.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_PIPELINE_PIPELINE_H
#define SPARSETILE_PIPELINE_PIPELINE_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

namespace sparsetile {

/// Registers every dialect, interface and translation the pipeline uses.
void registerAll(mlir::DialectRegistry &registry);

/// MLIR's canonicalizer, but an op a pattern builds keeps one location, not
/// the FusedLoc of everything matched (Canonicalize.cpp says why). Every
/// canonicalization in the pipeline uses it.
std::unique_ptr<mlir::Pass> createCanonicalizer();

struct TargetSpec;

/// Stage 3 of compile(): the tile-to-tile passes (persistent loop, the ring:
/// TMA and wgmma on sm_90a, cp.async and mma.sync on the other targets from
/// PTX ISA 7.8; desc_load expansion, warp split). `stages` as
/// CompileOptions::numStages.
void addTilePasses(mlir::OpPassManager &pm, const TargetSpec &target,
                   int stages);

/// Stage 5 of compile() (after stage 4, tile-assign-layouts): distribution
/// over threads into a gpu.module for `target`: sm_90a's instructions
/// (vector atomics unless `vectorAtomics` is false, mbarrier try_wait, the
/// async proxy's fences) and the shared memory a block has there.
void addDistributionPasses(mlir::OpPassManager &pm, const TargetSpec &target,
                           bool vectorAtomics = true);

/// Registers tile-opt's `--sparsetile-pipeline="arch=sm_90 num-stages=0"`:
/// stages 3 to 5 as stc runs them, so `stc --emit=tile` piped through it
/// prints what `stc --emit=mlir` prints.
void registerSparsetilePipeline();

} // namespace sparsetile

#endif // SPARSETILE_PIPELINE_PIPELINE_H
