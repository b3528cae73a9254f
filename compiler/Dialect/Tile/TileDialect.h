//===- TileDialect.h - The tile dialect -------------------------*- C++ -*-===//
//
// Declares the tile dialect's types, attributes and ops (generated from
// TileOps.td). See that file for what each op means.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_DIALECT_TILE_TILEDIALECT_H
#define SPARSETILE_DIALECT_TILE_TILEDIALECT_H

#include "sparsetile/Compiler.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "Dialect/Tile/TileAttrs.h.inc"
#include "Dialect/Tile/TileDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "Dialect/Tile/TileTypes.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Dialect/Tile/TileAttrDefs.h.inc"

#define GET_OP_CLASSES
#include "Dialect/Tile/TileOps.h.inc"

namespace sparsetile::tile {

/// Attribute names the front end puts on kernels (func.func) and their
/// arguments; the distribution pass reads them.
constexpr const char *kKernelAttr = "tile.kernel";
constexpr const char *kNumWarpsAttr = "tile.num_warps";
constexpr const char *kDivisibilityAttr = "tile.divisibility";
/// `@warp_specialize(0|1)` (default 1): a pipelined ring gets a producer
/// warpgroup (tile-pipeline-tma, tile-warp-specialize).
constexpr const char *kWarpSpecializeAttr = "tile.warp_specialize";
/// `@persistent(1)`: about one program per SM loops over the grid's
/// programs (tile-persistent); the runtime passes the grid it was asked for.
constexpr const char *kPersistentAttr = "tile.persistent";
/// `@cluster(C)` (1 or 2, default 1): programs C c .. C c + C - 1 along
/// axis 0 run as one thread block cluster; tile-cluster-multicast shares the
/// dot operand whose block positions depend only on tile.cluster_id.
constexpr const char *kClusterAttr = "tile.cluster";
/// `@pingpong(1)`: two consumer groups of `num_warps` warps take alternate
/// tiles of the persistent loop (tile-warp-specialize, tile-pingpong).
constexpr const char *kPingPongAttr = "tile.pingpong";
/// `@maxnreg(N)` (0: no cap): at most N registers a thread (PTX .maxnreg,
/// Triton's `maxnreg`), so that more programs share an SM; convert-tile-to-gpu
/// puts it on the gpu.func.
constexpr const char *kMaxnregAttr = "tile.maxnreg";
/// `@thread_run(N)` (0: the default): a thread holds runs of N consecutive
/// elements of a tile's last dimension instead of 16 bytes of the kernel's
/// narrowest global type; convert-tile-to-gpu lays every tile out so.
constexpr const char *kThreadRunAttr = "tile.thread_run";
/// A RingAttr on a pipelined kernel (tile-pipeline-tma -> convert-tile-to-gpu).
constexpr const char *kRingAttr = "tile.ring";
/// A LaunchAttr on a distributed gpu.func (convert-tile-to-gpu -> pipeline).
constexpr const char *kLaunchAttr = "tile.launch";

/// Whether `t` is an fp8 element type (f8E4M3FN, f8E5M2).
inline bool isFP8(mlir::Type t) {
  return mlir::isa<mlir::Float8E4M3FNType, mlir::Float8E5M2Type>(t);
}

/// The element type of a scalar or tile type.
mlir::Type elementType(mlir::Type type);
/// The shape of a tile type; empty for scalars.
llvm::ArrayRef<int64_t> shapeOf(mlir::Type type);

/// The shared memory a kernel's TMA stores stage through (tile.desc_store
/// with `tma`): one area, as large as the largest block, in 1024-byte units
/// (the 128-byte swizzle repeats every 1024 bytes). tile-pipeline-tma
/// leaves it beside the ring, and convert-tile-to-gpu places it there.
int64_t tmaStoreStagingBytes(mlir::Operation *kernel);

} // namespace sparsetile::tile

#endif // SPARSETILE_DIALECT_TILE_TILEDIALECT_H
