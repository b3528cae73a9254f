//===- Passes.td - sparsetile's passes ---------------------*- tablegen -*-===//
//
// Every pass the pipeline (compiler/Pipeline/Pipeline.cpp) runs that is not
// upstream MLIR and lowers out of the tile dialect (the tile-to-tile rewrites
// are in Transforms/Passes.td). One entry per pass; each has one .cpp and one
// lit test.
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
    - Shape changes (expand_dims, broadcast, reshape) recompute pure index
      values at the new coordinates and move other values through shared
      memory, as they do a pure chain of more than 64 operations that is
      already computed (a Philox expansion is not worth repeating).
    - Reductions combine within a thread, then across lanes with shuffles,
      then across warps through shared memory.
    - scf.for / scf.if carry the flattened per-thread values.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

#endif // SPARSETILE_CONVERSION_PASSES
