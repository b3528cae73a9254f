//===- SparseDrop.h - Block-structured dropout fused into a linear -*- C++ -*-===//
//
// Launchers for the SparseDrop kernels (arXiv 2411.01238) in
// dsl_examples/sparsedrop.tile. X [M, K] is cut into mask blocks of
// blockM x blockK; each block is kept with probability 1 - p and kept values
// are scaled by s = 1/(1-p). For a linear layer with weight W [N, K]:
//   forward    Y  = s * (X . mask) @ W^T      [M, N]  dense = sparse x dense
//   backwardX  dX = s * (dY @ W) . mask       [M, K]  sparse output; dropped
//                                                      blocks are written as
//                                                      exact (+0) zeros
//   backwardW  dW = s * dY^T @ (X . mask)     [N, K]
// Dropped blocks cost nothing: the kernels read one mask bit per mask block
// and skip the block's loads and tensor-core work. On sm_90 the forward and
// dW run TMA + wgmma kernels whose K loops visit a list of the kept blocks,
// which each call derives from the mask on the GPU first (kernel
// mask_lists, a few microseconds, into a per-stream scratch buffer).
//
// The mask is bit-packed: int64 words, row-major over the
// [ceil(M/blockM), ceil(K/blockK)] block grid, maskWordsPerRow(K, blockK) =
// ceil(ceil(K/blockK)/64) words per mask row; block (mb, kb) is bit kb % 64
// of word mb * wordsPerRow + kb / 64 (1 = kept). Bits past the last block of
// a row are 0. generateMask draws it on the GPU from (seed, offset) with the
// DSL's Philox stream, so it is reproducible and independent of the launch;
// any other 0/1 mask in this layout can be passed too.
//
// Matrices are row-major with element strides (>= the row width, < 2^31);
// every pointer must be 16-byte aligned; all element offsets must fit in
// int32. Strides that are multiples of 8 elements let the JIT use 16-byte
// vector loads (it specializes on its own); others work, slower.
// Inputs and outputs are bf16 or f16 (one dtype); accumulation is f32 and
// the scale is applied in f32 before rounding to the output dtype.
// Kernels are JIT-compiled on first use and cached (sparsetile::rt::JIT).
// Every function throws rt::Error on a bad argument; nothing is launched then.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_OPS_SPARSEDROP_H
#define SPARSETILE_OPS_SPARSEDROP_H

#include "sparsetile/Compiler.h"
#include "sparsetile/runtime/Driver.h"

#include <cstdint>
#include <string>

struct CUstream_st;

namespace sparsetile::ops::sparsedrop {

/// One SparseDrop linear layer: shapes, dtype, mask blocks and drop rate.
struct Problem {
  DType dtype = DType::BF16; ///< BF16 or F16.
  int64_t M = 0;             ///< Rows of X (tokens).
  int64_t N = 0;             ///< Output features (rows of W).
  int64_t K = 0;             ///< Input features.
  int64_t blockM = 128;      ///< Mask block rows: a multiple of 16.
  int64_t blockK = 128;      ///< Mask block columns: a multiple of 16.
  /// Drop probability in [0, 1]; the kernels scale by 1/(1-p), and by 0 when
  /// p == 1 (every block should then be dropped).
  double p = 0;
};

/// Tile sizes of one kernel, named by the layer's dims (tileM over M, tileN
/// over N, tileK over K) in every kernel. 0 = the default for that kernel.
/// With every field but `tma` at its default the tiling is autotuned per
/// problem over a few candidates, the default first (runtime/Autotune.h;
/// SPARSETILE_AUTOTUNE=0 keeps the default); setting any fixes it.
/// Powers of two >= 16; tileM must divide blockM and tileK divide blockK;
/// warps: 1, 2, 4 or 8. The kernel must fit the GPU's shared memory as the
/// compiler lays it out (a tiling it refuses is a CompileError naming the
/// tiling, raised before anything runs; 99 KB for the two operand tiles of
/// the mma.sync kernels).
struct Tiling {
  int tileM = 0, tileN = 0, tileK = 0, warps = 0;
  /// The TMA + wgmma kernels (sm_90 only): -1 uses them when the GPU is
  /// sm_90, no tile field above is set and the problem allows them
  /// (mask blocks and strides below); 0 never; 1 requires them (tile fields
  /// may then pick among their tilings) and throws when they cannot run.
  /// See resolveTmaTiling for what they need.
  int tma = -1;
  /// Ring stages of the TMA kernels (JITOptions::numStages); 0: as many as
  /// fit, up to 4. Three 128 x 128 stages let two programs share an SM (a
  /// one-warp producer each); measured slower than one program with four
  /// (bench/NOTES.md).
  int stages = 0;
  /// The TMA kernels' persistent tile loop (about one program per SM
  /// taking tiles from a queue): -1 the kernel's default (on for the
  /// forward, off for dX and dW; autotuning tries both), 0 off, 1 on.
  int persistent = -1;
  /// GROUP of the TMA kernels: how many output row blocks sweep the output
  /// columns together (the L2 window of the running tiles); 0: by kernel
  /// and p (resolveTmaTiling fills it in): the forward 8 / (1 - p), dW 8
  /// and 4 from p = 0.6, dX 8 and 1 from p = 0.8 (bench/NOTES.md, "The tile
  /// order follows p").
  int group = 0;
  /// Ping-pong consumers of the TMA kernels (@pingpong): 1 runs two
  /// consumer warpgroups that take alternate tiles of the persistent loop,
  /// so one stores its tile while the other runs the next one's MMAs. The
  /// tile is then one warpgroup's: warps = 4 (0 picks it), at most 128
  /// accumulators per thread (64 x 256 or 128 x 128), and the persistent
  /// loop (persistent -1 or 1). 0 (or -1): one tile at a time, shared by all
  /// consumer warps.
  int pingpong = -1;
  /// The order in which the forward and dW take their tiles: -1 or 1 the
  /// tiles of the longest kept-block lists first (mask rows for the
  /// forward, columns for dW), so that the short ones fill the end of the
  /// run; 0 grid order (for comparison: bench/NOTES.md, "Longest lists
  /// first").
  int ranked = -1;
  /// dX only: 1 takes the tiles from a list of the mask blocks, kept ones
  /// first, so that the zero tiles of dropped blocks fill the end of the
  /// run (needs tiles of one mask block and the persistent loop); 0 grid
  /// order; -1 on from p = 0.7 where the tile is a mask block.
  int listed = -1;
  /// dX only: 1 runs dX's tiles by kind, in two persistent launches:
  /// tiles of two mask blocks (tileM x 2 tileK, m64n256 wgmmas) where both
  /// are kept, in grid order, then single mask blocks from a device-side
  /// list, the kept ones whose pair is dropped first and the dropped ones
  /// (zeros) after, so that no MMA runs for a dropped block. The tiling
  /// then describes the single-block launch: tiles of one mask block, at
  /// most 128 wide; -1: on for 0.1 <= p < 0.6 where the tile is a mask
  /// block of at most 128 x 128 and nothing else is asked of the tiling
  /// (then nothing is autotuned); 0 off (bench/NOTES.md, "dX's tiles by
  /// kind": 3-7% faster than the autotuned single launch there).
  int kinds = -1;
};

/// ceil(K / blockK) / 64 rounded up: int64 words per mask row.
int64_t maskWordsPerRow(int64_t K, int64_t blockK);
/// Words of the whole mask: ceil(M / blockM) * maskWordsPerRow(K, blockK).
int64_t maskWords(int64_t M, int64_t K, int64_t blockM, int64_t blockK);

/// Block (mb, kb) is dropped iff rt::randint(seed, offset + mb * nkb + kb)
/// < round(p * 2^32) (sparsetile/runtime/Random.h: Philox-4x32-10 at that
/// 64-bit counter; word 0); nkb = ceil(K / blockK). Use a fresh offset (e.g.
/// offset += nmb * nkb) for every mask drawn with one seed. (Before issue 14
/// the words came from a splitmix64 hash: the same (seed, offset) now gives
/// another mask with the same keep rate.)
/// maskOut: maskWords(M, K, blockM, blockK) int64 words, 16-byte aligned.
void generateMask(uint64_t seed, int64_t offset, double p, int64_t M,
                  int64_t K, int64_t blockM, int64_t blockK,
                  rt::DevicePtr maskOut, CUstream_st *stream = nullptr);

/// generateMask at the offset *offsetAt + base, read on the device when the
/// kernel runs (offsetAt: one int64, 16-byte aligned), so that a CUDA graph
/// capturing it draws the mask at whatever offset the step has reached.
void generateMaskAt(uint64_t seed, rt::DevicePtr offsetAt, int64_t base,
                    double p, int64_t M, int64_t K, int64_t blockM,
                    int64_t blockK, rt::DevicePtr maskOut,
                    CUstream_st *stream = nullptr);

/// The drop threshold the generator compares against: round(p * 2^32).
int64_t dropThreshold(double p);

/// Y [M, N] = s * (X . mask) @ W^T. X [M, K], W [N, K], Y may not alias them.
void forward(const Problem &p, rt::DevicePtr X, int64_t strideX,
             rt::DevicePtr W, int64_t strideW, rt::DevicePtr mask,
             rt::DevicePtr Y, int64_t strideY, CUstream_st *stream = nullptr,
             const Tiling &tiling = {});

/// dX [M, K] = s * (dY @ W) . mask. dY [M, N], W [N, K].
void backwardX(const Problem &p, rt::DevicePtr dY, int64_t strideDY,
               rt::DevicePtr W, int64_t strideW, rt::DevicePtr mask,
               rt::DevicePtr dX, int64_t strideDX,
               CUstream_st *stream = nullptr, const Tiling &tiling = {});

/// dW [N, K] = s * dY^T @ (X . mask). dY [M, N], X [M, K].
void backwardW(const Problem &p, rt::DevicePtr dY, int64_t strideDY,
               rt::DevicePtr X, int64_t strideX, rt::DevicePtr mask,
               rt::DevicePtr dW, int64_t strideDW,
               CUstream_st *stream = nullptr, const Tiling &tiling = {});

/// The tiling of the TMA + wgmma kernel for `kernel` (fields left at 0 take
/// the defaults: forward 128 x 256 x 64, dX 128 x 64 x 128, dW
/// 64 x 256 x 128 as tileM x tileN x tileK, 8 warps), or a message in `why`
/// and false when it cannot run: it needs an sm_90 GPU (not checked here),
/// 16 * warps output rows per tile, a 64-deep reduction step, mask blocks
/// that are multiples of the tiles, and row strides that are multiples of
/// 8 elements (TMA's 16-byte row pitch).
bool resolveTmaTiling(const Problem &p, const char *kernel,
                      const Tiling &requested, int64_t strideA,
                      int64_t strideB, Tiling &out, std::string &why);

/// The tiling a kernel runs with for `p` when `requested` leaves fields at 0
/// (validated; throws rt::Error). kernel: "dsd_fwd", "sdd_dx" or "dsd_dw".
Tiling resolveTiling(const Problem &p, const char *kernel,
                     const Tiling &requested = {});

} // namespace sparsetile::ops::sparsedrop

#endif // SPARSETILE_OPS_SPARSEDROP_H
