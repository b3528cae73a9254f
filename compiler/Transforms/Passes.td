//===- Passes.td - sparsetile's tile-to-tile passes ---------*- tablegen -*-===//
//
// Rewrites within the tile dialect that the pipeline (compiler/Pipeline/
// Pipeline.cpp) runs before distribution, in this order: tile-persistent,
// tile-induction-pointers, tile-pipeline-tma, tile-cluster-multicast, tile-expand-desc-load,
// tile-warp-specialize, tile-pingpong; then tile-assign-layouts, which
// prepares the kernel for distribution. One entry per pass; each has one
// .cpp in this folder and one lit test under tests/lit/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TRANSFORMS_PASSES
#define SPARSETILE_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def Persistent : Pass<"tile-persistent", "mlir::ModuleOp"> {
  let summary = "Persistent programs: about one per SM loops over the grid";
  let description = [{
    For kernels marked `@persistent(1)` (`tile.persistent`): appends three
    hidden parameters, the grid the launch asked for (X and Y, i32) and the
    tile queue (a pointer to two i32 the runtime keeps per stream, zero
    between launches), and wraps the body in

    ```
    i = 0
    while (v = next_tile(i, X * Y, queue)) < X * Y:
        <body with program_id(0) = v % X, program_id(1) = v / X,
                   num_programs(0) = X, num_programs(1) = Y>
        i += 1
    ```

    The runtime launches min(X * Y, SMs * programs per SM) programs and
    passes X, Y and the queue. tile.next_tile hands out the virtual programs
    in increasing order: dynamically in warp-specialized kernels (an atomic
    counter: a program that finishes early takes the next tile, so uneven
    tiles do not unbalance the SMs), else statically (program_id(0) +
    i * num_programs(0)). Either way consecutive virtual programs run at the
    same time on different SMs, so a kernel's own grouped tile order (for L2
    reuse) carries over. With a TMA ring the next tile's copies are issued
    while this tile's epilogue runs (the ring continues across tiles: see
    tile.ring_base).
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def InductionPointers : Pass<"tile-induction-pointers", "mlir::ModuleOp"> {
  let summary = "Pointers a K loop carries and advances become functions of its index";
  let description = [{
    The Triton tutorial's GEMM carries its operand pointers through the K
    loop and advances them each iteration (`a_ptrs += BK`). In a loop with
    a dot, an iter_arg `p` (a tile of pointers, or one pointer) that the
    loop yields as `tile.addptr %p, %inc`, with `%inc` computed from values
    defined outside the loop, is rewritten as a function of the iteration
    number t = (iv - lo) / step:

    ```mlir
    %r:2 = scf.for %k = %lo to %hi step %s iter_args(%acc = %z, %p = %p0) {
      %v = tile.load %p ...            ...
      %q = tile.addptr %p, %inc        scf.yield %d, %q
    }
    // becomes
    %r = scf.for %k = %lo to %hi step %s iter_args(%acc = %z) {
      %t = (k - lo) / s
      %p = tile.addptr %p0, %inc * splat(%t)
      %v = tile.load %p ...            scf.yield %d
    }
    // and a use of the loop's final pointer: addptr(%p0, %inc * trips)
    ```

    The loop then carries only the accumulator and its loads are
    functions of the index, which tile-pipeline-tma can compute ahead
    (the ring for pointer operands). Loops without a dot are left as they
    are.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def PipelineTMA : Pass<"tile-pipeline-tma", "mlir::ModuleOp"> {
  let summary = "Software-pipeline desc_load + dot K loops (TMA + wgmma ring)";
  let description = [{
    With `tma` (sm_90a), rewrites the first loop of the form
    `acc = dot(desc_load | trans(desc_load), ..., acc)` into a multi-stage
    ring: TMA copies into 128-byte-swizzled shared memory run S iterations
    ahead of asynchronous warpgroup MMAs, one mbarrier per stage
    (tile.ring_* ops, lowered by convert-tile-to-gpu). The other
    desc_loads are left to tile-expand-desc-load. In a persistent
    warp-specialized kernel with one consumer group it also marks the
    tile.desc_stores a TMA store can take (`tma`: 16-bit, at most 256 rows,
    64-column panels) and leaves their staging area out of the ring.
    The dot operands may also be loads through pointers: every thread's
    cp.async fills the stages, or, where that ring would leave no room for
    a second block an SM (or the kernel says @warp_specialize(1)), a
    producer warpgroup's, in the warp-specialized form. Where no loop has that form, loops of
    chained dots over pointer loads whose bodies compute with the dots'
    results (attention; PipelineChain.cpp) share one ring instead: their
    dots become synchronous ring_dots, A from registers where the loop does
    not load it.

    With `cp-async` instead (sm_80, sm_86, sm_89), a loop of that form whose
    operands are both loads through pointers gets the same ring, filled by
    every thread's cp.async, and its dot becomes a synchronous
    `tile.ring_dot {mma_sync}`: ldmatrix from the swizzled stage and
    mma.sync, releasing the stage it read. `shared-per-block` is the
    target's limit the ring's stages are sized by.
  }];
  let options = [
    Option<"tma", "tma", "bool", /*default=*/"false",
           "Target has TMA and wgmma (sm_90a)">,
    Option<"cpAsync", "cp-async", "bool", /*default=*/"false",
           "Target has cp.async and mbarriers but not wgmma (sm_80 .. sm_89)">,
    Option<"sharedPerBlock", "shared-per-block", "int", /*default=*/"0",
           "Shared memory a block may use (0: sm_90's 227 KB)">,
    Option<"stages", "stages", "int", /*default=*/"0",
           "Ring stages (0: as many as fit in shared memory, up to 4)">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::ub::UBDialect"];
}

def ClusterMulticast : Pass<"tile-cluster-multicast", "mlir::ModuleOp"> {
  let summary = "Copy a ring operand once for all programs of a cluster";
  let description = [{
    For kernels marked `@cluster(C)` with C > 1 (`tile.cluster`) whose ring
    tile-pipeline-tma built in warp-specialized form: proves that one dot
    operand's blocks (their positions and the ring's trip count) are the
    same in all programs of a cluster, computed from tile.cluster_id but
    never from program_id or tile.cluster_rank, and marks that operand's
    tile.ring_copy ops `multicast` (B when it qualifies, else A and, if it
    qualifies, sparse A's metadata). A ring that is not warp-specialized, a
    persistent kernel, or no provably shared operand is an error.
  }];
}

def ExpandDescLoad : Pass<"tile-expand-desc-load", "mlir::ModuleOp"> {
  let summary = "Turn the remaining desc_loads and desc_stores into masked pointer accesses";
  let description = [{
    Every tile.desc_load that tile-pipeline-tma did not put into a ring
    (targets without TMA, loops that do not match) becomes
    tile.desc_fields plus a masked tile.load of the [R, C] block that reads
    zeros outside the tensor, like TMA. Every tile.desc_store without `tma`
    becomes the same fields and a masked tile.store that drops what falls
    outside.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def WarpSpecialize : Pass<"tile-warp-specialize", "mlir::ModuleOp"> {
  let summary = "Split a kernel with a pipelined ring into producer and consumer warpgroups";
  let description = [{
    For kernels whose ring tile-pipeline-tma built in warp-specialized form
    (they hold tile.producer ops), rewrites the body B into

    ```
    tile.ring_init
    tile.warp_specialize producer { B' } consumer { B less its tile.producer ops }
    ```

    B' is a copy of B that keeps only what the producer needs: the contents
    of the tile.producer ops, the ring's running count and every op they
    depend on (block positions, kept-block list loads, the loops and ifs
    around them). MMAs and stores are dropped from it, so a TMA ring's
    producer warpgroup runs a small scalar loop and can give its registers
    to the consumers (setmaxnreg). A pointer ring's producer (tile.ring_copy_ptrs)
    also keeps the tile math of its addresses and masks, spread over its own
    128 threads, and keeps more registers (112); it is always a warpgroup,
    one block an SM.
  }];
  let options = [
    Option<"producerRegs", "producer-regs", "int", /*default=*/"40",
           "Registers per producer thread after setmaxnreg (a TMA ring's; a "
           "pointer ring's producer computes addresses and keeps 112)">
  ];
}

def PingPong : Pass<"tile-pingpong", "mlir::ModuleOp"> {
  let summary = "Give two consumer groups alternate tiles of the persistent loop";
  let description = [{
    For a tile.warp_specialize with `consumer_groups` = 2 (`@pingpong(1)`
    kernels), wraps the body B of the consumers' persistent loop as

    ```
    scf.if (step % 2 == tile.consumer_group) { B }
    else { B sliced to its tile.ring_advance }
    ```

    so that each group runs every other tile and still counts the ring
    iterations of the other group's tiles (the ring's stages and phases
    follow the running count). The tiles' main loops take turns in step
    order (tile.turn_wait before the tile, tile.turn_pass after the last
    loop that waits on the ring): the ring's waits tell phases apart by
    parity only. One group's epilogue then overlaps the other's main loop.
  }];
}

def AssignLayouts : Pass<"tile-assign-layouts", "mlir::ModuleOp"> {
  let summary = "Put a thread layout on every tile's type";
  let description = [{
    Runs last before convert-tile-to-gpu. Gives every tile of a kernel a
    layout as its tensor encoding (`#tile.blocked`, `#tile.mma`,
    `#tile.wgmma`, `#tile.slice`; TileOps.td says what each means) and
    inserts `tile.convert_layout` where an element-wise op, a loop's carried
    value or a dot's accumulator needs an operand in another layout:

    ```mlir
    %acc = tile.dot %a, %b, %z : ... -> tensor<64x64xf32, #tile.mma<warps_m = 4, warps_n = 1>>
    %m = tile.reduce max %acc {axis = 1} : ... -> tensor<64xf32, #tile.slice<axis = 1, size = 64, parent = #tile.mma<...>>>
    ```

    The rules (AssignLayouts.cpp) are the ones the distribution pass lowers
    by; it checks each value against its type. `stc --emit=layouts` prints
    the result.
  }];
}

#endif // SPARSETILE_TRANSFORMS_PASSES
