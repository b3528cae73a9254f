//===- TileOps.td - The tile dialect -----------------------*- tablegen -*-===//
//
// The tile dialect is what the front end emits: a kernel is a func.func whose
// values are scalars and tiles. A tile is a builtin ranked tensor with a
// static, power-of-two shape (`tensor<128xf32>`); element-wise arithmetic on
// tiles uses upstream `arith` and `math` ops, which already accept tensors.
// This dialect adds only what those lack: global pointers, program ids,
// index ranges, shape changes, memory access and reductions.
//
// Nothing here says which thread owns which element; that is decided when the
// tiles are distributed over threads (TileToGPU).
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_TILE_OPS
#define SPARSETILE_TILE_OPS

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinTypeInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Tile_Dialect : Dialect {
  let name = "tile";
  let cppNamespace = "::sparsetile::tile";
  let summary = "Tile-level programs over global pointers";
  let description = [{
    Kernels written in the sparsetile DSL, one program instance per grid
    point, computing on whole tiles. See compiler/Frontend/Language.md for
    the surface language.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  // The discardable attributes passes hand each other (tile.ring,
  // tile.launch, the kernel flags) are checked by type here, so a pass that
  // writes the wrong thing fails verification instead of misleading the next.
  let hasOperationAttrVerify = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::func::FuncDialect"];
}

class Tile_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tile_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def Tile_PointerType : TypeDef<Tile_Dialect, "Pointer"> {
  let mnemonic = "ptr";
  let summary = "A pointer to global memory";
  let description = [{
    `!tile.ptr<f32>` points at f32 elements in global memory. Adding an
    integer offsets it by whole elements. A tile of pointers is a tensor of
    this type: `tensor<128x!tile.ptr<f32>>`.
  }];
  let parameters = (ins "::mlir::Type":$pointee);
  let assemblyFormat = "`<` $pointee `>`";
}

def Tile_DescType : TypeDef<Tile_Dialect, "Desc"> {
  let mnemonic = "desc";
  let summary =
      "A 2-D row-major tensor in global memory, for block loads and stores";
  let description = [{
    `!tile.desc<bf16>` describes a [rows, cols] tensor with a leading
    dimension (all set at launch by the runtime). At run time it is a pointer
    to a 256-byte block the runtime fills: a CUDA tensor map (bytes 0-127,
    used by TMA copies on sm_90) and the plain description {base, rows, cols,
    ld} as four i64 (bytes 128-159, used where TMA is not).
  }];
  let parameters = (ins "::mlir::Type":$element);
  let assemblyFormat = "`<` $element `>`";
}

//===----------------------------------------------------------------------===//
// Attributes: what one pass hands the next
//===----------------------------------------------------------------------===//

def Tile_RingAttr : AttrDef<Tile_Dialect, "Ring"> {
  let mnemonic = "ring";
  let summary = "The TMA ring of a pipelined kernel (tile-pipeline-tma)";
  let description = [{
    `tile.ring = #tile.ring<stages = 4, stage_bytes = 49152>` on a kernel:
    the ring has `stages` shared-memory stages of `stage_bytes` bytes, each
    with a `full` and an `empty` mbarrier. Written by tile-pipeline-tma,
    read by convert-tile-to-gpu to lay out shared memory.

    With `thread_copies = N` (N > 0) every thread fills the stages with
    cp.async, N tile.ring_copy_ptrs a stage (a dot's operands loaded through
    pointers), instead of one thread with TMA: a stage's `full` mbarrier
    then counts N arrivals per thread (one per copy op), and every thread
    waits for a stage to be released before refilling it.

    With `apart = true` the kernel's shared-memory exchanges (layout
    conversions, reductions across warps, staged stores) get room of their
    own after the ring instead of reusing its bytes: a loop whose body
    computes more than the dots (attention's softmax) may exchange while
    the ring holds later iterations' blocks.
  }];
  let parameters = (ins "int64_t":$stages, "int64_t":$stage_bytes,
                        DefaultValuedParameter<"int64_t", "0">:$thread_copies,
                        DefaultValuedParameter<"bool", "false">:$apart);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tile_LaunchAttr : AttrDef<Tile_Dialect, "Launch"> {
  let mnemonic = "launch";
  let summary = "What launching a distributed kernel needs (convert-tile-to-gpu)";
  let description = [{
    `tile.launch = #tile.launch<threads = 384, shared = 0,
    dynamic_shared = 197696, min_ptx = 0>` on a gpu.func: the block size,
    static and dynamic shared memory in bytes, and the oldest PTX ISA
    (major * 10 + minor, 0 for the target's default) its instructions need.
    The pipeline copies it into the CompiledKernel the runtime launches.
  }];
  let parameters = (ins "int64_t":$threads, "int64_t":$shared,
                        "int64_t":$dynamic_shared, "int64_t":$min_ptx);
  let assemblyFormat = "`<` struct(params) `>`";
}

//===----------------------------------------------------------------------===//
// Layouts: which thread holds which element of a tile
//===----------------------------------------------------------------------===//
// tile-assign-layouts puts one of these on the type of every tile of a
// kernel, as the tensor's encoding, and convert-tile-to-gpu lowers each
// value where its encoding says it is held. The rules and the per-thread
// coordinates they stand for are in TileLayouts.h.

def Tile_BlockedLayoutAttr : AttrDef<Tile_Dialect, "BlockedLayout"> {
  let mnemonic = "blocked";
  let summary = "Runs of `vec` consecutive elements, thread after thread";
  let description = [{
    `tensor<64x128xf16, #tile.blocked<vec = 8, threads = 128>>`: the tile is
    flattened row-major and split into runs of `vec` elements; thread t
    holds runs t, t + threads, t + 2 threads, ... (the repetitions). Threads
    at or past `threads` (a tile smaller than the block) hold copies of
    thread t mod `threads`. Every tile the tensor cores do not hold is laid
    out so; `vec` is 16 bytes of the kernel's narrowest global type (or
    `@thread_run`), and loads and stores move up to a run at once.
  }];
  let parameters = (ins "int64_t":$vec, "int64_t":$threads);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Tile_MmaLayoutAttr : AttrDef<Tile_Dialect, "MmaLayout"> {
  let mnemonic = "mma";
  let summary = "The accumulator layout of mma.sync m16n8k16";
  let description = [{
    `tensor<128x128xf32, #tile.mma<warps_m = 4, warps_n = 2>>`: a
    `warps_m` x `warps_n` grid of warps, warp w at (w mod warps_m,
    w / warps_m), each holding [M / warps_m, N / warps_n] as 16x8 fragments
    (lane l: rows l / 4 and l / 4 + 8, columns 2 (l mod 4) and the next).
    What a tile.dot or tile.sparse_dot produces, and what is computed from
    it element-wise.
  }];
  let parameters = (ins "int64_t":$warps_m, "int64_t":$warps_n);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Tile_WgmmaLayoutAttr : AttrDef<Tile_Dialect, "WgmmaLayout"> {
  let mnemonic = "wgmma";
  let summary = "The accumulator layout of wgmma (sm_90)";
  let description = [{
    `tensor<128x64xf32, #tile.wgmma<groups = 2>>`: `groups` warpgroups
    stacked along M, each holding M / groups rows as one or two m64
    accumulators; warp q of a group holds 16 of every 64 rows, in the
    mma.sync fragment order across all N columns. What tile.ring_dot,
    tile.ring_drain and tile.wgmma_operand produce.
  }];
  let parameters = (ins "int64_t":$groups);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Tile_SliceLayoutAttr : AttrDef<Tile_Dialect, "SliceLayout"> {
  let mnemonic = "slice";
  let summary = "A reduction's result, left where its source's threads hold it";
  let description = [{
    `tensor<128xf32, #tile.slice<axis = 1, size = 64, parent = #tile.wgmma<
    groups = 2>>>`: the result of reducing dimension `axis` (of `size`
    elements) of a tile laid out as `parent`, kept in the threads that
    combined it: a tensor-core accumulator's rows within their lane quads
    (attention's row max), or a blocked tile's runs within their threads.
    Several threads may hold one element.
  }];
  let parameters = (ins "int64_t":$axis, "int64_t":$size,
                        "::mlir::Attribute":$parent);
  let assemblyFormat = "`<` struct(params) `>`";
}

def Tile_SharedLayoutAttr : AttrDef<Tile_Dialect, "SharedLayout"> {
  let mnemonic = "shared";
  let summary = "How a block of 16-bit elements sits in a ring stage";
  let description = [{
    `#tile.shared<swizzle = 128>` on the ops that write a ring stage
    (tile.ring_copy, tile.ring_copy_ptrs) and on the operands of the
    tile.ring_dot that reads it: the [rows, cols] block is stored as
    cols / (swizzle / 2) panels of [rows, swizzle / 2] elements, one after
    the other, each row `swizzle` bytes with its 16-byte unit u at
    u ^ (r mod (swizzle / 16)) in row r: TMA's 128B (or 64B) swizzle, what
    wgmma's shared-memory descriptors read. `swizzle = 0`: plain rows of all
    `cols` (sparse metadata; no descriptor reads it). Writers and reader of
    one stage offset must agree (convert-tile-to-gpu checks it).
  }];
  let parameters = (ins "int64_t":$swizzle);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Columns of a panel (all of them, `cols`, when not swizzled).
    int64_t panelCols(int64_t cols) const {
      return getSwizzle() ? getSwizzle() / 2 : cols;
    }
  }];
}

def Tile_Int : AnyTypeOf<[AnySignlessInteger]>;
def Tile_IntLike : AnyTypeOf<[AnySignlessInteger, RankedTensorOf<[AnySignlessInteger]>]>;
def Tile_BoolLike : AnyTypeOf<[I1, RankedTensorOf<[I1]>]>;
def Tile_PtrLike : AnyTypeOf<[Tile_PointerType, RankedTensorOf<[Tile_PointerType]>]>;
def Tile_Tile : RankedTensorOf<[AnyType]>;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Tile_ReduceKind : I32EnumAttr<"ReduceKind", "reduction kind", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">,
    I32EnumAttrCase<"Argmax", 3, "argmax">,
    I32EnumAttrCase<"Or", 4, "or">,
    I32EnumAttrCase<"And", 5, "and">,
    I32EnumAttrCase<"Xor", 6, "xor">]> {
  let cppNamespace = "::sparsetile::tile";
}

def Tile_AtomicKind : I32EnumAttr<"AtomicKind", "atomic read-modify-write", [
    I32EnumAttrCase<"Add", 0, "add">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">,
    I32EnumAttrCase<"Xchg", 3, "xchg">,
    // Unsigned integer order (u32, u64: the IR's integers are signless).
    I32EnumAttrCase<"UMax", 4, "umax">,
    I32EnumAttrCase<"UMin", 5, "umin">]> {
  let cppNamespace = "::sparsetile::tile";
}

// PTX's memory-consistency qualifiers of `atom` (`.sem` and `.scope`).
def Tile_MemSemantic : I32EnumAttr<"MemSemantic", "atomic ordering", [
    I32EnumAttrCase<"Relaxed", 0, "relaxed">,
    I32EnumAttrCase<"Acquire", 1, "acquire">,
    I32EnumAttrCase<"Release", 2, "release">,
    I32EnumAttrCase<"AcqRel", 3, "acq_rel">]> {
  let cppNamespace = "::sparsetile::tile";
}

def Tile_MemScope : I32EnumAttr<"MemScope", "atomic scope", [
    I32EnumAttrCase<"Cta", 0, "cta">,
    I32EnumAttrCase<"Gpu", 1, "gpu">,
    I32EnumAttrCase<"Sys", 2, "sys">]> {
  let cppNamespace = "::sparsetile::tile";
}

//===----------------------------------------------------------------------===//
// Program position
//===----------------------------------------------------------------------===//

def Tile_ProgramIdOp : Tile_Op<"program_id", [Pure]> {
  let summary = "This program's index along a grid axis";
  let description = [{
    ```mlir
    %pid = tile.program_id 0 : i32
    ```
    The axis is 0, 1 or 2 (CUDA's blockIdx.x/y/z).
  }];
  let arguments = (ins I32Attr:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_ClusterIdOp : Tile_Op<"cluster_id", [Pure]> {
  let summary = "This program's cluster: program_id(0) / the cluster size";
  let description = [{
    ```mlir
    %c = tile.cluster_id : i32
    ```
    Under `@cluster(C)` the programs C c .. C c + C - 1 along axis 0 form
    cluster c (CUDA thread block clusters of C x 1 x 1); without it, C = 1.
    Block positions that depend only on the cluster (not on program_id or
    tile.cluster_rank) are the same for all its programs, which is what
    lets tile-cluster-multicast multicast a dot operand's block to all of them.
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tile_ClusterRankOp : Tile_Op<"cluster_rank", [Pure]> {
  let summary = "This program's rank in its cluster: program_id(0) % C";
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tile_NumProgramsOp : Tile_Op<"num_programs", [Pure]> {
  let summary = "The grid size along an axis";
  let description = [{
    ```mlir
    %n = tile.num_programs 1 : i32
    ```
  }];
  let arguments = (ins I32Attr:$axis);
  let results = (outs I32:$result);
  let assemblyFormat = "$axis attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_ProgramLimitOp : Tile_Op<"program_limit",
                                  [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Programs from %n on do nothing (the DSL's program_limit)";
  let description = [{
    ```mlir
    tile.program_limit %n : i32
    ```
    The programs numbered `%n` and up (program_id(0) + program_id(1) *
    num_programs(0)) skip the kernel; a `@persistent` kernel's tile loop
    ends at min(grid, `%n`) instead of handing out the rest. It lets a
    launch sized for the worst case run only the tiles an earlier kernel
    counted on the device (SparseDrop's dX tile list), without a host
    round trip. It stands at the kernel's top level, before any write,
    and `%n` must not depend on the program; tile-persistent checks this
    and replaces the op, so later passes never see it.
  }];
  let arguments = (ins I32:$n);
  let assemblyFormat = "$n attr-dict `:` type($n)";
}

//===----------------------------------------------------------------------===//
// Tile construction and shape changes
//===----------------------------------------------------------------------===//

def Tile_ArangeOp : Tile_Op<"arange", [Pure]> {
  let summary = "A 1-D tile of consecutive integers";
  let description = [{
    ```mlir
    %r = tile.arange 0, 128 : tensor<128xi32>
    ```
    Holds start, start+1, ..., end-1. The length must be a power of two and
    match the result type.
  }];
  let arguments = (ins I32Attr:$start, I32Attr:$end);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = "$start `,` $end attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_SplatOp : Tile_Op<"splat", [Pure]> {
  let summary = "A tile with every element equal to a scalar";
  let description = [{
    ```mlir
    %t = tile.splat %x : f32 -> tensor<64x64xf32>
    ```
  }];
  let arguments = (ins AnyType:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ExpandDimsOp : Tile_Op<"expand_dims", [Pure]> {
  let summary = "Inserts a size-1 dimension";
  let description = [{
    ```mlir
    %c = tile.expand_dims %r {axis = 1 : i32} : tensor<64xi32> -> tensor<64x1xi32>
    ```
    The DSL writes this as `r[:, None]`.
  }];
  let arguments = (ins Tile_Tile:$src, I32Attr:$axis);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_BroadcastOp : Tile_Op<"broadcast", [Pure]> {
  let summary = "Stretches size-1 dimensions";
  let description = [{
    ```mlir
    %b = tile.broadcast %c : tensor<64x1xi32> -> tensor<64x128xi32>
    ```
    Source and result have the same rank; each source dimension equals the
    result's or is 1.
  }];
  let arguments = (ins Tile_Tile:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_TransOp : Tile_Op<"trans", [Pure]> {
  let summary = "Transposes a 2-D tile";
  let description = [{
    ```mlir
    %t = tile.trans %x : tensor<64x128xbf16> -> tensor<128x64xbf16>
    ```
    Element (i, j) of the result is element (j, i) of the source. Feeding
    `dot` a transposed operand costs nothing extra: it is written to shared
    memory in the transposed order.
  }];
  let arguments = (ins Tile_Tile:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_AssumeOp : Tile_Op<"assume", [Pure, AllTypesMatch<["src", "result"]>]> {
  let summary = "Promises facts about a value's elements (multiple_of, max_contiguous)";
  let description = [{
    ```mlir
    %o = tile.assume %x {contiguity = 64, divisibility = 64} : tensor<64xi32>
    ```
    The result is `src`. Along the last dimension, in aligned groups of
    `contiguity` elements, the values are consecutive (pointers: consecutive
    elements), and the first of each group is a multiple of `divisibility`
    (pointers: in bytes); a scalar is a multiple of `divisibility`. Both are
    powers of two. Nothing checks the promise: AxisInfo believes it, and
    convert-tile-to-gpu drops the op.
  }];
  let arguments = (ins AnyTypeOf<[Tile_IntLike, Tile_PtrLike]>:$src,
                   OptionalAttr<I64Attr>:$divisibility,
                   OptionalAttr<I64Attr>:$contiguity);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$src attr-dict `:` type($src)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

def Tile_AddPtrOp : Tile_Op<"addptr", [Pure, AllTypesMatch<["ptr", "result"]>]> {
  let summary = "Offsets pointers by whole elements";
  let description = [{
    ```mlir
    %p = tile.addptr %base, %offs : tensor<128x!tile.ptr<f32>>, tensor<128xi32>
    ```
    Pointer and offset have the same shape (the front end splats scalars).
  }];
  let arguments = (ins Tile_PtrLike:$ptr, Tile_IntLike:$offset);
  let results = (outs Tile_PtrLike:$result);
  let assemblyFormat = "$ptr `,` $offset attr-dict `:` type($ptr) `,` type($offset)";
  let hasVerifier = 1;
}

def Tile_LoadOp : Tile_Op<"load", [AttrSizedOperandSegments,
                                    MemoryEffects<[MemRead]>]> {
  let summary = "Reads global memory, optionally under a mask";
  let description = [{
    ```mlir
    %v = tile.load %p, %m, %zero : tensor<128x!tile.ptr<f32>>, tensor<128xi1>, tensor<128xf32> -> tensor<128xf32>
    ```
    Where the mask is false nothing is read and the result holds `other`
    (zero when absent). Mask and other have the pointer's shape.
  }];
  let arguments = (ins Tile_PtrLike:$ptr, Optional<Tile_BoolLike>:$mask,
                       Optional<AnyType>:$other);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $ptr (`,` $mask^)? (`,` $other^)? attr-dict `:` type($ptr)
    (`,` type($mask)^)? (`,` type($other)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_StoreOp : Tile_Op<"store", [MemoryEffects<[MemWrite]>]> {
  let summary = "Writes global memory, optionally under a mask";
  let description = [{
    ```mlir
    tile.store %p, %v, %m : tensor<128x!tile.ptr<f32>>, tensor<128xf32>, tensor<128xi1>
    ```
    Elements whose mask is false are not written.
  }];
  let arguments = (ins Tile_PtrLike:$ptr, AnyType:$value,
                       Optional<Tile_BoolLike>:$mask);
  let assemblyFormat = [{
    $ptr `,` $value (`,` $mask^)? attr-dict `:` type($ptr) `,` type($value)
    (`,` type($mask)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Atomics
//===----------------------------------------------------------------------===//

def Tile_AtomicRMWOp : Tile_Op<"atomic_rmw", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Atomic read-modify-write of global memory, under a mask";
  let description = [{
    ```mlir
    %old = tile.atomic_rmw add acq_rel gpu %p, %v, %m : tensor<128x!tile.ptr<i32>>, tensor<128xi32>, tensor<128xi1> -> tensor<128xi32>
    ```
    Each element performs `*p = kind(*p, v)` atomically, once (threads that
    only replicate an element do not repeat it), and yields the value `*p`
    held before. `xchg` stores `v`. Where the mask is false nothing happens
    and the result is 0. Value, mask and result have the pointers' shape and
    the pointee type: add takes i32, i64, f32, f16 or bf16, max and min i32,
    i64 or f32, umax and umin (unsigned order) i32 or i64, xchg any 32- or
    64-bit type. `sem` and `scope` are PTX's
    (`atom.acq_rel.gpu`, the default the front end gives).
  }];
  let arguments = (ins Tile_AtomicKind:$kind, Tile_MemSemantic:$sem,
                       Tile_MemScope:$scope, Tile_PtrLike:$ptr, AnyType:$value,
                       Optional<Tile_BoolLike>:$mask);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $kind $sem $scope $ptr `,` $value (`,` $mask^)? attr-dict `:` type($ptr)
    `,` type($value) (`,` type($mask)^)? `->` type($result)
  }];
  let extraClassDeclaration = [{
    /// Whether this is a reduction into memory (PTX's `red`): an add whose
    /// old values nobody reads and that orders nothing before it. It
    /// returns nothing to wait for, and is laid out by its own accesses
    /// (tile-assign-layouts), not the kernel's runs.
    bool isReduction() {
      return getResult().use_empty() && getKind() == AtomicKind::Add &&
             (getSem() == MemSemantic::Relaxed ||
              getSem() == MemSemantic::Release);
    }
  }];
  let hasVerifier = 1;
}

def Tile_AtomicCASOp : Tile_Op<"atomic_cas", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Atomic compare-and-swap of global memory, under a mask";
  let description = [{
    ```mlir
    %old = tile.atomic_cas acq_rel gpu %p, %cmp, %v : !tile.ptr<i32>, i32, i32 -> i32
    ```
    Each element atomically stores `v` where `*p == cmp` (bitwise) and yields
    the value `*p` held before, once per element. Where the mask is false
    nothing happens and the result is 0. Compare value, new value and result
    have the pointers' shape and a 32- or 64-bit pointee type.
  }];
  let arguments = (ins Tile_MemSemantic:$sem, Tile_MemScope:$scope,
                       Tile_PtrLike:$ptr, AnyType:$cmp, AnyType:$value,
                       Optional<Tile_BoolLike>:$mask);
  let results = (outs AnyType:$result);
  let assemblyFormat = [{
    $sem $scope $ptr `,` $cmp `,` $value (`,` $mask^)? attr-dict `:`
    type($ptr) `,` type($cmp) `,` type($value) (`,` type($mask)^)? `->`
    type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Synchronization
//===----------------------------------------------------------------------===//

def Tile_BarrierOp : Tile_Op<"barrier", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "Waits for every thread of the program (the DSL's barrier())";
  let description = [{
    ```mlir
    tile.barrier
    ```
    A block-wide barrier (`bar.sync`): the global and shared memory writes
    a program made before it are visible to all of the program's threads
    after it, so a kernel can store a result in one layout and load it
    back in another (Triton's `debug_barrier`). Control flow is uniform
    over a program, so every thread reaches it.
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Debugging
//===----------------------------------------------------------------------===//

def Tile_PrintOp : Tile_Op<"print", [MemoryEffects<[MemWrite]>]> {
  let summary = "Prints values from the GPU (the DSL's device_print)";
  let description = [{
    ```mlir
    tile.print "x =" %x : tensor<64xf32>
    ```
    One line per element of each operand (a scalar prints once), written by
    the thread that owns the element:
    `pid (0, 1, 0) idx (3, 7) x = 0.500000`. Lowered to printf (vprintf).
  }];
  let arguments = (ins StrAttr:$prefix, Variadic<AnyType>:$values);
  let assemblyFormat = "$prefix $values attr-dict `:` type($values)";
  let hasVerifier = 1;
}

def Tile_AssertOp : Tile_Op<"assert", [MemoryEffects<[MemWrite]>]> {
  let summary = "Checks a condition on the GPU (the DSL's device_assert)";
  let description = [{
    ```mlir
    tile.assert %ok, "offsets in range" : tensor<128xi1>
    ```
    Where an element of the condition (a bool tile or scalar) is false, the
    thread that owns it calls CUDA's `__assertfail` with the message, the
    op's DSL file and line and the kernel's name: the GPU prints
    `file:line: kernel: block: [x,y,z], thread: [x,y,z] Assertion `message`
    failed.` and the kernel stops with an assertion error. Only built when
    the compile asks for debugging (CodegenOptions::debug).
  }];
  let arguments = (ins AnyType:$condition, StrAttr:$message);
  let assemblyFormat = "$condition `,` $message attr-dict `:` type($condition)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Tile_ReduceOp : Tile_Op<"reduce", [Pure]> {
  let summary = "Reduces a tile along one axis";
  let description = [{
    ```mlir
    %m = tile.reduce max %x {axis = 1 : i32} : tensor<64x128xf32> -> tensor<64xf32>
    %s = tile.reduce sum %v {axis = 0 : i32} : tensor<128xf32> -> f32
    ```
    The result drops `axis`; reducing a 1-D tile gives a scalar. `argmax`
    gives the i32 position of the first maximum. The operand's element type
    is f32, i32 or i64 (the front end widens narrower types); `or`, `and`
    and `xor` are bitwise and take integers only.
  }];
  let arguments = (ins Tile_ReduceKind:$kind, Tile_Tile:$src, I32Attr:$axis);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$kind $src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ScanOp : Tile_Op<"scan", [Pure]> {
  let summary = "Inclusive prefix combination along one axis";
  let description = [{
    ```mlir
    %c = tile.scan sum %x {axis = 1 : i32} : tensor<64x128xi32> -> tensor<64x128xi32>
    ```
    Element i along `axis` of the result combines elements 0..i of the
    source (`sum`: the DSL's `cumsum`). The kind is sum, max, min or a
    bitwise one (integers only); the element type f32, i32 or i64.
  }];
  let arguments = (ins Tile_ReduceKind:$kind, Tile_Tile:$src, I32Attr:$axis);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$kind $src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

def Tile_ReshapeOp : Tile_Op<"reshape", [Pure]> {
  let summary = "Views a tile in another shape, in row-major order";
  let description = [{
    ```mlir
    %r = tile.reshape %x : tensor<64x128xf32> -> tensor<8192xf32>
    ```
    The flat (row-major) index of every element is kept; both shapes have
    the same number of elements.
  }];
  let arguments = (ins Tile_Tile:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

def Tile_DotOp : Tile_Op<"dot", [Pure]> {
  let summary = "Tile matrix product on tensor cores, f32 accumulation";
  let description = [{
    ```mlir
    %c = tile.dot %a, %b, %acc : tensor<64x32xbf16>, tensor<32x128xbf16>, tensor<64x128xf32> -> tensor<64x128xf32>
    ```
    Computes acc + a * b with a: [M, K], b: [K, N] of f16 or bf16 (the same
    type), or of fp8 (f8E4M3FN / f8E5M2, either for each operand), and acc:
    [M, N] f32. M is a multiple of 16, N of 8 and K of 16 (the m16n8k16
    tensor-core instruction shape). fp8 operands are widened to f16 (exact)
    when they are staged, so they run at the f16 rate.
  }];
  let arguments = (ins Tile_Tile:$a, Tile_Tile:$b, Tile_Tile:$acc);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Block loads through descriptors, and their software-pipelined form
//===----------------------------------------------------------------------===//

def Tile_DescLoadOp : Tile_Op<"desc_load", [Pure]> {
  let summary = "Loads a [R, C] block of a descriptor's tensor";
  let description = [{
    ```mlir
    %t = tile.desc_load %d[%row, %col] : !tile.desc<bf16> -> tensor<128x64xbf16>
    ```
    Element (i, j) of the result is the tensor's element (row + i, col + j),
    or 0 where that lies outside [rows, cols]. Marked pure: kernels only read
    through descriptors, so the pipelining pass may issue it early.
  }];
  let arguments = (ins Tile_DescType:$desc, I32:$row, I32:$col);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $desc `[` $row `,` $col `]` attr-dict `:` type($desc) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_DescStoreOp : Tile_Op<"desc_store", [MemoryEffects<[MemWrite]>]> {
  let summary = "Writes a [R, C] block into a descriptor's tensor";
  let description = [{
    ```mlir
    tile.desc_store %d[%row, %col], %v : !tile.desc<bf16>, tensor<128x256xbf16>
    ```
    Element (i, j) of the value goes to the tensor's element (row + i,
    col + j); elements outside [rows, cols] are dropped. With `tma`
    (set by tile-pipeline-tma in a persistent warp-specialized kernel on
    sm_90a) the consumers write the block into a shared-memory staging area
    laid out as the descriptor's TMA box (panels of 64 columns, 128-byte
    swizzle) and one thread copies it out with a TMA store, so the
    consumers go on to the next tile while the copy drains; elsewhere
    tile-expand-desc-load turns it into a masked tile.store.
  }];
  let arguments = (ins Tile_DescType:$desc, I32:$row, I32:$col,
                       Tile_Tile:$value, UnitAttr:$tma);
  let assemblyFormat = [{
    $desc `[` $row `,` $col `]` `,` $value attr-dict `:` type($desc) `,`
    type($value)
  }];
  let hasVerifier = 1;
}

def Tile_DescFieldsOp : Tile_Op<"desc_fields", [Pure]> {
  let summary = "The plain description of a descriptor's tensor";
  let description = [{
    ```mlir
    %base, %rows, %cols, %ld = tile.desc_fields %d : !tile.desc<bf16> -> !tile.ptr<bf16>
    ```
    What `tile.desc_load` expands to where it is not a TMA copy.
  }];
  let arguments = (ins Tile_DescType:$desc);
  let results = (outs Tile_PointerType:$base, I32:$rows, I32:$cols, I32:$ld);
  let assemblyFormat = "$desc attr-dict `:` type($desc) `->` type($base)";
}

// The ops below are made by the tile-pipeline-tma pass and only by it. They
// work on a ring of `stages` shared-memory stages of `stage_bytes` bytes each
// (the kernel's `tile.ring` attribute), one mbarrier per stage.

def Tile_RingInitOp : Tile_Op<"ring_init"> {
  let summary = "Initializes the ring's mbarriers (before any ring op)";
  let description = [{
    Each stage has a `full` mbarrier (its copies landed) and an `empty` one
    (every thread's warpgroup finished the MMAs that read it).
  }];
  let assemblyFormat = "attr-dict";
}

def Tile_RingAcquireOp : Tile_Op<"ring_acquire"> {
  let summary = "Waits until a stage was released (before refilling it)";
  let description = [{
    Waits for phase `phase` of the stage's `empty` mbarrier: all threads
    released it with tile.ring_dot after their MMAs on it finished. The
    thread that issues TMA copies waits; in a ring with `thread_copies`
    every thread does, since every thread refills the stage.
  }];
  let arguments = (ins I32:$stage, I32:$phase);
  let assemblyFormat = "$stage `,` $phase attr-dict";
}

def Tile_RingExpectOp : Tile_Op<"ring_expect"> {
  let summary = "Arms stage `stage`'s mbarrier for `bytes` bytes of copies";
  let arguments = (ins I32:$stage, I64Attr:$bytes);
  let assemblyFormat = "$stage attr-dict";
}

def Tile_RingCopyOp : Tile_Op<"ring_copy"> {
  let summary = "TMA copy of a [rows, cols] block into a ring stage";
  let description = [{
    Copies the block at (row, col) of the descriptor's tensor into stage
    `stage` at byte `offset`, as cols / 64 column panels of [rows, 64]
    elements, each 128-byte row swizzled (TMA's 128B swizzle:
    `layout = #tile.shared<swizzle = 128>`), or a 32-column block as one
    panel of 64-byte rows (`swizzle = 64`: sparse A's compressed values at
    K = 64); with `swizzle = 0` as one plain [rows, cols] box (sparse
    metadata).
    Completion is signalled on the stage's mbarrier. With `multicast` (a
    kernel under @cluster(C), whose programs all load this block) rank 0
    of the cluster issues the copy for all C programs: the block lands at
    the same offset of each one's stage and signals each one's mbarrier.
  }];
  let arguments = (ins I32:$stage, Tile_DescType:$desc, I32:$row, I32:$col,
                   I64Attr:$offset, I64Attr:$rows, I64Attr:$cols,
                   Tile_SharedLayoutAttr:$layout, UnitAttr:$multicast);
  let assemblyFormat = [{
    $desc `[` $row `,` $col `]` `->` `stage` $stage attr-dict `:` type($desc)
  }];
  let hasVerifier = 1;
}

def Tile_RingCopyPtrsOp : Tile_Op<"ring_copy_ptrs"> {
  let summary = "Every thread's cp.async of a pointer block into a ring stage";
  let description = [{
    ```mlir
    tile.ring_copy_ptrs %p mask %m -> stage %s {layout = #tile.shared<swizzle = 128>,
        offset = 0 : i64, rows = 128 : i64, cols = 64 : i64}
        : tensor<128x64x!tile.ptr<bf16>>, tensor<128x64xi1>
    ```
    The [rows, cols] block of 16-bit elements at addresses `ptrs` (zeros
    where `mask` is false) lands in stage `stage` at byte `offset` in
    tile.ring_copy's layout: cols / 64 panels of [rows, 64] elements whose
    128-byte rows are swizzled as TMA's 128B swizzle, so tile.ring_dot reads
    it as it reads a TMA block. Each thread copies the runs of the block it
    owns with cp.async (16 bytes where AxisInfo proves 8 contiguous, 16-byte
    aligned elements under one mask value; 8 or 4 bytes otherwise), then
    arrives on the stage's `full` mbarrier once they landed
    (cp.async.mbarrier.arrive.noinc). Only in a ring with `thread_copies`,
    which counts these ops per stage. `layout` is always the 128-byte
    swizzle.
  }];
  let hasVerifier = 1;
  let arguments = (ins I32:$stage, Tile_Tile:$ptrs, Optional<Tile_Tile>:$mask,
                   I64Attr:$offset, I64Attr:$rows, I64Attr:$cols,
                   Tile_SharedLayoutAttr:$layout);
  let assemblyFormat = [{
    $ptrs (`mask` $mask^)? `->` `stage` $stage attr-dict `:` type($ptrs)
    (`,` type($mask)^)?
  }];
}

def Tile_RingArriveOp : Tile_Op<"ring_arrive"> {
  let summary = "Every thread's arrival for a ring_copy_ptrs it skips";
  let description = [{
    ```mlir
    scf.if %kept {
      tile.ring_copy_ptrs %p mask %m -> stage %s {...} : ...
    } else {
      tile.ring_arrive %s
    }
    ```
    Each thread arrives once on stage `stage`'s `full` mbarrier, as a
    tile.ring_copy_ptrs does once its copies landed, without copying: the
    fill of an iteration whose dot is skipped (a dot inside an `if` of its
    loop, tile-pipeline-tma), so that every stage completes its phase and
    the ring's stages and phases stay in step with the iterations. Only in
    a ring with `thread_copies`; the pass puts one in place of each
    ring_copy_ptrs of the stage.
  }];
  let arguments = (ins I32:$stage);
  let assemblyFormat = "$stage attr-dict";
}

def Tile_RingWaitOp : Tile_Op<"ring_wait"> {
  let summary = "Waits until a stage's copies of the given phase landed";
  let description = [{
    In a ring with `thread_copies` the copies were cp.async writes (the
    generic proxy), which wgmma reads through the async proxy: each thread
    then fences between the two (fence.proxy.async) before its MMAs.
  }];
  let arguments = (ins I32:$stage, I32:$phase);
  let assemblyFormat = "$stage `,` $phase attr-dict";
}

def Tile_RingDotOp : Tile_Op<"ring_dot", [AttrSizedOperandSegments]> {
  let summary = "Warpgroup MMA on operands in a ring stage";
  let description = [{
    acc + A * B with A [M, K] and B [K, N] read from stage `stage` at byte
    offsets `a_offset` / `b_offset`, stored as panels of 64 columns (see
    ring_copy). `a_kmajor` says A's panels hold rows of A (K contiguous)
    rather than rows of A^T; `b_kmajor` says B's hold rows of B^T. The
    result is in flight (asynchronous wgmma): it may only feed the next
    ring_dot or tile.ring_drain. The op also waits until the previous
    ring_dot finished and then releases stage `release` (the one that
    ring_dot read; -1 for none), so it may be refilled. With `meta_offset`,
    A is 2:4 sparse (tile.sparse_dot): the stage holds its compressed values
    [M, K/2] at `a_offset` and its i16 metadata [M, K/16], unswizzled, at
    `meta_offset` (sparse wgmma, k32 steps). With `accumulate` false the
    op ignores `acc` and starts from zero (wgmma's scale-d = 0): the first
    iteration of a zero-initialized loop, whose accumulators then need no
    instruction but a wgmma to define them (ptxas serializes wgmmas whose
    accumulator registers other instructions write, C7515).

    A sparse wgmma reads its metadata register asynchronously, like its
    accumulators, so a sparse ring_dot may only leave its own group in
    flight (wait for the previous one, as a dense one does) when the next
    ring_dot writes its metadata into other registers. `meta_alternates`
    says so: tile-pipeline-tma sets it on the ring_dots of a consumer loop
    it unrolled by two, where consecutive ring_dots are different ops (LLVM
    gives each op's values their own PTX registers, and ptxas keeps
    registers an in-flight wgmma reads). Without it a sparse ring_dot waits
    for its own group.

    `meta_pitch` is the metadata rows' stride in i16 elements when it is
    not K/16, and `meta_col` the column of the box where this step's K/16
    start. TMA copies boxes whose rows are whole 16-byte units starting at
    16-byte boundaries (a box starting 8 bytes into a row faults on the
    H100: illegal instruction), so the [M, 4] metadata of a K = 64 step
    arrives inside the aligned [M, 8] box of two steps: columns 0-3 for an
    even step, 4-7 for an odd one.

    With an `a` operand, A [M, K] is in registers instead (wgmma's
    register-A form; `a_offset` and `a_kmajor` are unused): each warp of a
    warpgroup holds 16 rows of it in the layout of the accumulator of an
    [M, K] wgmma, so a softmax over one dot's result feeds the next dot
    (attention's P V) without moving, and a loop-invariant A moves once
    (tile.wgmma_operand). `a_layout` and `b_layout` are the shared layouts
    the op reads its stage blocks in (#tile.shared; A's is absent for a
    register A): the wgmma descriptors' swizzle and panel widths follow
    them. With `sync` the op waits for its own wgmmas: the
    result is complete and any op may use it (a loop whose body computes
    with a dot's result), and `release` names a stage this op read.

    With `mma_sync` (targets without wgmma: sm_80, sm_86, sm_89) each warp
    reads its fragments of the stage with ldmatrix, at the swizzled places
    the layouts say, and multiplies them with mma.sync.m16n8k16; the result
    is in the mma.sync accumulator layout (#tile.mma). The op is
    synchronous: it needs `sync` and a dense dot. A register A (`a`) is
    held, as the result is then, with whole rows a warp
    (#tile.mma<warps_m = warps, warps_n = 1>): an [M, K] accumulator's
    registers, two n8 tiles of it, are the A fragment of a K step of 16.

    With `enabled` false the op multiplies nothing and its result is `acc`
    (a dot inside an `if` of its loop, whose condition failed in this
    iteration): it still commits its (empty) wgmma group, waits as it would
    and releases `release`, so that the ring's stages and wgmma groups stay
    in step with the iterations. A skipped step with `accumulate` false
    still leaves `acc` as it was: a loop of guarded steps from zero starts
    from poison, accumulates once a step ran, and takes zeros if none did.
  }];
  let arguments = (ins I32:$stage, I32:$release, Tile_Tile:$acc,
                   Optional<I1>:$accumulate, Optional<I32>:$meta_col,
                   Optional<I1>:$enabled,
                   Optional<Tile_Tile>:$a, UnitAttr:$sync,
                   I64Attr:$a_offset,
                   BoolAttr:$a_kmajor, I64Attr:$b_offset, BoolAttr:$b_kmajor,
                   I64Attr:$k, TypeAttr:$operand_type,
                   OptionalAttr<I64Attr>:$meta_offset,
                   UnitAttr:$meta_alternates,
                   OptionalAttr<I64Attr>:$meta_pitch,
                   OptionalAttr<Tile_SharedLayoutAttr>:$a_layout,
                   Tile_SharedLayoutAttr:$b_layout, UnitAttr:$mma_sync);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $stage `,` $release `,` $acc (`accumulate` $accumulate^)?
    (`meta_col` $meta_col^)? (`enabled` $enabled^)? (`a` $a^ `:` type($a))?
    attr-dict `:` type($acc)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tile_ConvertLayoutOp : Tile_Op<"convert_layout",
    [Pure, SameOperandsAndResultShape, SameOperandsAndResultElementType]> {
  let summary = "The same tile, held in another layout";
  let description = [{
    ```mlir
    %b = tile.convert_layout %a : tensor<128x64xf32, #tile.blocked<vec = 4, threads = 128>>
                               -> tensor<128x64xf32, #tile.wgmma<groups = 2>>
    ```
    Inserted by tile-assign-layouts where an op needs its operands in one
    layout (element-wise ops, a loop's carried values, a dot's
    accumulator). convert-tile-to-gpu recomputes index arithmetic at the
    new threads' coordinates and moves other values through shared memory.
  }];
  let arguments = (ins Tile_Tile:$src);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
}

def Tile_WgmmaOperandOp : Tile_Op<"wgmma_operand",
    [Pure, SameOperandsAndResultShape, SameOperandsAndResultElementType]> {
  let summary = "A tile moved into wgmma's register-A layout, here";
  let description = [{
    ```mlir
    %qa = tile.wgmma_operand %q : tensor<128x128xf16>
    ```
    The value of `src`, held from here on in the layout a tile.ring_dot
    takes its register A operand in (the accumulator layout of an [M, K]
    wgmma). tile-pipeline-tma puts it before a ring's prologue for an A
    that the loop does not change (attention's Q block), so that the move
    through shared memory happens once, before the ring's stages fill,
    rather than inside the loop. With `mma_sync` (the ring read by
    mma.sync) the layout is mma.sync's with whole rows a warp
    (#tile.mma<warps_m = warps, warps_n = 1>), whose accumulator registers
    are mma.sync's A fragments.
  }];
  let arguments = (ins Tile_Tile:$src, UnitAttr:$mma_sync);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$src attr-dict `:` type($src) `->` type($result)";
}

def Tile_RingDrainOp : Tile_Op<"ring_drain"> {
  let summary = "Waits for all ring_dots; returns their final result";
  let description = [{
    Waits until every wgmma of the loop finished, then releases stage
    `release` (the one the last ring_dot read; -1 for none). A ring shared
    by several loops (a persistent kernel's tiles) needs every stage
    released, or its producer would wait forever for the last one.

    With `in_loop` it waits inside the loop, for the previous iteration's
    asynchronous ring_dot whose result the loop carries (attention's P V,
    tile-pipeline-tma's chained form): no block barrier follows, since the
    ring is still in use.
  }];
  let arguments = (ins Tile_Tile:$acc, I32:$release, UnitAttr:$in_loop);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = "$acc `,` $release attr-dict `:` type($acc) `->` type($result)";
}

def Tile_RingBaseOp : Tile_Op<"ring_base"> {
  let summary = "How many iterations this role already ran through the ring";
  let description = [{
    A persistent program runs one ring loop per tile; the ring's stages and
    mbarrier phases continue from one loop to the next. Loop iteration i
    uses ring iteration `ring_base + i` (stage (base + i) % S, phase
    ((base + i) / S) & 1), and tile.ring_advance adds the loop's trip count
    afterwards. The count is private to each thread (the producer and the
    consumers keep their own).
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Tile_RingAdvanceOp : Tile_Op<"ring_advance"> {
  let summary = "Adds a finished loop's trip count to the ring's running count";
  let arguments = (ins I32:$count);
  let assemblyFormat = "$count attr-dict";
}

def Tile_ConsumerGroupOp : Tile_Op<"consumer_group", [Pure]> {
  let summary = "Which consumer group of a ping-pong kernel this thread is in";
  let description = [{
    0 or 1, uniform over a warpgroup. Only inside the consumer region of a
    tile.warp_specialize with `consumer_groups` = 2, where tile-pingpong
    uses it to pick the group's tiles (the persistent loop's even steps go
    to group 0, the odd ones to group 1).
  }];
  let results = (outs I32:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tile_TurnWaitOp : Tile_Op<"turn_wait"> {
  let summary = "A ping-pong group waits until the previous tile's main loop ended";
  let description = [{
    In a ping-pong kernel the two consumer groups run their tiles' main
    loops in the persistent loop's order: the main loop of step `step`
    starts once the other group's main loop of step `step` - 1 has ended
    (no wait at step 0). The ring's stage waits depend on it: they tell
    phases apart by parity only, so a group may not wait on a stage whose
    previous use, the other group's, has not landed yet (CUTLASS's ordered
    barrier between its ping-pong math warpgroups serves the same end).
  }];
  let arguments = (ins I32:$step);
  let assemblyFormat = "$step attr-dict";
  let hasVerifier = 1;
}

def Tile_TurnPassOp : Tile_Op<"turn_pass"> {
  let summary = "A ping-pong group's main loop of this step has ended";
  let description = [{
    Lets the other consumer group start the main loop of step `step` + 1
    (tile.turn_wait). The first turn_pass of a step counts, later ones of
    the same step do nothing, so tile-pingpong puts one right after the
    main loop and one at the end of the tile for the paths without a loop.
  }];
  let arguments = (ins I32:$step);
  let assemblyFormat = "$step attr-dict";
  let hasVerifier = 1;
}

def Tile_NextTileOp : Tile_Op<"next_tile"> {
  let summary = "The tile a persistent program runs in its i-th step";
  let description = [{
    ```mlir
    %v = tile.next_tile %i, %total, %queue : i32, !tile.ptr<i32>
    ```
    Made by tile-persistent: step `i` (0, 1, ...) of a persistent program
    runs virtual program `%v` of the `%total` the launch asked for; the
    program stops at the first `%v >= %total`. Every program calls it
    with i = 0, 1, ... until then, and each returned value below `%total`
    goes to exactly one program.

    How the values are handed out is the lowering's choice:
    - in a warp-specialized kernel, dynamically: the producer's leader takes
      the next value of a counter in global memory (`%queue[0]`, zero
      before the launch) and passes it to the consumers through a small
      ring of shared-memory slots with their own mbarriers, so a program
      that finishes early takes more tiles (uneven kept-block lists do not
      leave SMs idle, and the running tiles stay a contiguous window of the
      grid's order). The last program to finish resets the counter
      (`%queue[1]` counts finished programs), so the next launch on the
      stream finds zeros again;
    - elsewhere statically: program_id(0) + i * num_programs(0).
  }];
  let arguments = (ins I32:$step, I32:$total, Tile_PointerType:$queue);
  let results = (outs I32:$result);
  let assemblyFormat = [{
    $step `,` $total `,` $queue attr-dict `:` type($result) `,`
    qualified(type($queue))
  }];
}

def Tile_ProducerOp : Tile_Op<"producer", [SingleBlock, NoTerminator]> {
  let summary = "Work of the producer warpgroup (TMA copies into the ring)";
  let description = [{
    Made by tile-pipeline-tma in warp-specialized kernels, at the place of
    the loop it pipelined: the loop that acquires free stages and issues
    their copies. tile-warp-specialize moves it into the producer branch of
    tile.warp_specialize; it never reaches the lowering.
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword $body";
}

def Tile_WarpSpecializeOp : Tile_Op<"warp_specialize", [NoTerminator]> {
  let summary = "Splits the block into producer and consumer warps";
  let description = [{
    The `producer` region runs on `producer_warps` extra warps (after the
    kernel's `num_warps` warps); it only computes block positions and
    issues TMA copies. The `consumer` region runs on the kernel's own warps:
    it waits for stages, runs the wgmmas and the epilogue. The two roles
    share nothing but the ring (its mbarriers and stages), which
    tile.ring_init set up before this op.

    With a producer warpgroup (4 warps), registers move between the roles
    with setmaxnreg: the producer keeps `producer_regs` per thread, the
    consumers get `consumer_regs` (setmaxnreg needs whole warpgroups and
    the split to be this one if/else). `blocks_per_sm` blocks share an SM.
    When a small ring lets two blocks share one, the producer is one warp
    and no registers move: ptxas compiles all code under the block's entry
    cap, and a warpgroup producer would lower it below what a wgmma needs.

    `consumer_groups` is 1 (cooperative: the kernel's `num_warps` warps
    share every tile) or 2 (ping-pong, `@pingpong(1)`): two groups of
    `num_warps` warps each run the consumer region, tile layouts spread over
    one group, and tile-pingpong gives them alternate tiles of the
    persistent loop, so one group's epilogue overlaps the other's MMAs.
    Inside, tile.consumer_group says which group a thread is in.
  }];
  let arguments = (ins I32Attr:$producer_warps,
                   OptionalAttr<I32Attr>:$producer_regs,
                   OptionalAttr<I32Attr>:$consumer_regs,
                   I32Attr:$blocks_per_sm,
                   DefaultValuedAttr<I32Attr, "1">:$consumer_groups);
  let regions = (region SizedRegion<1>:$producer, SizedRegion<1>:$consumer);
  let assemblyFormat =
      "attr-dict `producer` $producer `consumer` $consumer";
  let hasVerifier = 1;
}

def Tile_SparseDotOp : Tile_Op<"sparse_dot", [Pure]> {
  let summary = "2:4 sparse tile matrix product on sparse tensor cores";
  let description = [{
    ```mlir
    %c = tile.sparse_dot %vals, %meta, %b, %acc : tensor<64x32xbf16>, tensor<64x4xi16>, tensor<64x128xbf16>, tensor<64x128xf32> -> tensor<64x128xf32>
    ```
    Computes acc + A * b where A [M, K] is 2:4 sparse along K and given
    compressed: vals [M, K/2] holds the two kept values of every group of
    four (in increasing column order) and meta [M, K/16] (i16) their
    positions: bits 4g..4g+3 of meta[m, j] describe group g of columns
    16j..16j+15, the first kept index in bits 4g..4g+1 and the second (larger)
    in bits 4g+2..4g+3. vals and b are both f16 or both bf16; acc and result
    [M, N] f32. M % 16 == 0, N % 8 == 0 and K % 32 == 0 (the m16n8k32
    mma.sp instruction shape). Lowered to mma.sp::ordered_metadata, which
    needs PTX ISA 8.5.
  }];
  let arguments = (ins Tile_Tile:$vals, Tile_Tile:$meta, Tile_Tile:$b,
                       Tile_Tile:$acc);
  let results = (outs Tile_Tile:$result);
  let assemblyFormat = [{
    $vals `,` $meta `,` $b `,` $acc attr-dict `:` type($vals) `,` type($meta) `,` type($b) `,` type($acc) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // SPARSETILE_TILE_OPS
