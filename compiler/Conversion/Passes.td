//===- Passes.td - sparsetile's passes ---------------------*- tablegen -*-===//
//
// Every pass the pipeline (compiler/Pipeline/Pipeline.cpp) runs that is not
// upstream MLIR. One entry per pass; each has one .cpp and one lit test.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_CONVERSION_PASSES
#define SPARSETILE_CONVERSION_PASSES

include "mlir/Pass/PassBase.td"

def TileToGPU : Pass<"convert-tile-to-gpu", "mlir::ModuleOp"> {
  let summary = "Distribute tile kernels over the threads of a block";
  let description = [{
    Turns every `tile.kernel` func.func into a `gpu.func` kernel inside a
    `gpu.module`, with each tile replaced by the scalars one thread owns.

    Layout: a tile of shape S is flattened row-major; each thread owns chunks
    of `vec` consecutive elements (16 bytes of the kernel's narrowest loaded
    type), thread t owning chunk t, t + T, t + 2T, ... Because all shapes are
    powers of two, the flat index splits into disjoint bit fields
    (element-in-chunk | thread | repetition) and coordinates are shifts and
    masks.

    - Element-wise ops are cloned once per owned element.
    - Loads and stores become 16-byte vector accesses where AxisInfo proves
      contiguity, alignment and a uniform mask across the vector.
    - Shape changes (expand_dims, broadcast) recompute pure index values at
      the new coordinates and move other values through shared memory.
    - Reductions combine within a thread, then across lanes with shuffles,
      then across warps through shared memory.
    - scf.for / scf.if carry the flattened per-thread values.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

def PipelineTMA : Pass<"tile-pipeline-tma", "mlir::ModuleOp"> {
  let summary = "Software-pipeline desc_load + dot K loops (TMA + wgmma ring)";
  let description = [{
    With `tma` (sm_90a), rewrites the first loop of the form
    `acc = dot(desc_load | trans(desc_load), ..., acc)` into a multi-stage
    ring: TMA copies into 128-byte-swizzled shared memory run S iterations
    ahead of asynchronous warpgroup MMAs, one mbarrier per stage
    (tile.ring_* ops, lowered by convert-tile-to-gpu). Every other
    desc_load becomes tile.desc_fields plus a masked pointer load.
  }];
  let options = [
    Option<"tma", "tma", "bool", /*default=*/"false",
           "Target has TMA and wgmma (sm_90a)">,
    Option<"stages", "stages", "int", /*default=*/"0",
           "Ring stages (0: as many as fit in shared memory, up to 4)">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

#endif // SPARSETILE_CONVERSION_PASSES
