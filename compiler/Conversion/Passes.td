//===- Passes.td - sparsetile's passes ---------------------*- tablegen -*-===//
//
// Every pass the pipeline (compiler/Pipeline/Pipeline.cpp) runs that is not
// upstream MLIR and lowers out of the tile dialect, or cleans up what that
// lowering left (the tile-to-tile rewrites are in Transforms/Passes.td). One
// entry per pass; each has one .cpp and one lit test.
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

    Layout: each tile is held where its type's layout says (tile-assign-layouts
    puts them there; this pass runs it first on a kernel without them, and
    checks every value it lowers against its type). A `#tile.blocked` tile of
    shape S is flattened row-major; each thread owns chunks of `vec`
    consecutive elements, thread t owning chunk t, t + T, t + 2T, ... Because
    all shapes are powers of two, the flat index splits into disjoint bit
    fields (element-in-chunk | thread | repetition) and coordinates are
    shifts and masks. `tile.convert_layout` recomputes index arithmetic at
    the new coordinates and moves other values through shared memory.

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
    - An atomic add whose old values are unused is a `red`, on sm_90
      (`vector-atomics`) of 2 or 4 f32 at once where AxisInfo proves the run.
  }];
  let options = [
    Option<"vectorAtomics", "vector-atomics", "bool", /*default=*/"false",
           "Target has red.global.add.v2/v4.f32 (sm_90)">,
    Option<"sm90", "sm90", "bool", /*default=*/"true",
           "Target is sm_90a: the ring waits with mbarrier.try_wait and "
           "fences the async proxy; false for sm_80 .. sm_89">,
    Option<"sharedPerBlock", "shared-per-block", "int", /*default=*/"0",
           "Shared memory a block may use (0: sm_90's 227 KB)">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

def PackByteStores : Pass<"sparsetile-pack-byte-stores", "mlir::ModuleOp"> {
  let summary = "Store a vector of one integer's pieces as that integer";
  let description = [{
    Runs after convert-tile-to-gpu (with the canonicalizer and CSE between,
    so equal pieces are one value and shift amounts are constants). An
    `llvm.store` of a `vector<N x iK>` built by `llvm.insertelement`, whose
    lane i is `arith.trunci(W >> i*K)` (lane 0 `arith.trunci(W)`) for one
    integer W of at least N*K bits, stores W's low N*K bits instead: the
    same bytes, little-endian. A kernel that builds a row of flags as the
    bytes of one word (the 2:4 masks) then stores the word it computed,
    where LLVM would simplify each byte apart and pack them again.

    ```mlir
    %0 = arith.trunci %w : i32 to i8
    %s = arith.shrsi %w, %c8 : i32
    %1 = arith.trunci %s : i32 to i8
    %v = llvm.insertelement %0, %poison[%c0 : i32] : vector<2xi8>
    %u = llvm.insertelement %1, %v[%c1 : i32] : vector<2xi8>
    llvm.store %u, %p : vector<2xi8>, !llvm.ptr<1>
    // becomes: %t = arith.trunci %w : i32 to i16; llvm.store %t, %p
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // SPARSETILE_CONVERSION_PASSES
