//===- Sparse24.h - 2:4 sparsity training helpers ---------------*- C++ -*-===//
//
// Launchers for the kernels in dsl_examples/sparse24.tile, the helpers of
// 2:4 sparse training (arXiv 2404.01847): transposable and row-wise 2:4
// masks, the flip rate between two masks, masked decay, the MVUE 2:4
// gradient sparsifier, compression to the sparse tensor-core operand format
// (also fused: the mask update in one pass, the MVUE sparsifier of dY^T
// straight to its operand) and the 2:4 sparse linear layer's three GEMMs
// (Y = X W^T, dX = dY W, dW = S(dY^T) X). Kernels are JIT-compiled on first
// use and cached.
//
// Conventions:
//  - Matrices are row-major with an element stride per row (>= C; views
//    allowed). Masks are int8, 0 = pruned, 1 = kept (readers treat any
//    nonzero as kept).
//  - Value dtypes: bf16, f16 or f32; all math is f32.
//  - Every pointer must be 16-byte aligned (the compiler assumes it for
//    vector accesses). Bad arguments throw rt::Error and launch nothing.
//  - Launches are asynchronous on `stream` unless said otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_OPS_SPARSE24_H
#define SPARSETILE_OPS_SPARSE24_H

#include "sparsetile/Compiler.h"
#include "sparsetile/runtime/Driver.h"

#include <array>
#include <cstdint>

struct CUstream_st;

namespace sparsetile::ops {

/// The 90 transposable 2:4 patterns of a 4x4 block; bit 4*i + j is entry
/// (i, j). Order: each row picks a column pair, pairs numbered (0,1) (0,2)
/// (0,3) (1,2) (1,3) (2,3); patterns run in lexicographic order of the pairs
/// of rows 0, 1, 2 (row 3's pair is forced by the column counts).
const std::array<uint16_t, 90> &transposable24Patterns();

/// Transposable 2:4 mask of W [R, C] (R and C multiples of 4): in each 4x4
/// block, the pattern of transposable24Patterns() maximizing the sum of |w|
/// over kept entries. The search meets in the middle: for each of the 19
/// column-count states of rows 0-1, the best pair of pairs of rows 0-1 and
/// the best of rows 2-3 under the complementary counts, then the best state.
/// Scores are f32 sums (r0 + r1) + (r2 + r3) of the rows' pair sums
/// |w_a| + |w_b|; ties and NaN scores keep the earlier half and the earlier
/// state (strict '>'; dsl_examples/sparse24.tile, best_pattern, gives the
/// order), so an all-equal block keeps transposable24Patterns()[0].
/// Writes mask [R, C] (int8 0/1) when `mask` is nonzero and out = W * mask
/// (W's dtype) when `out` is nonzero; at least one must be. `out` may be `w`
/// (in-place pruning).
void mask24Transposable(DType dtype, int64_t R, int64_t C, rt::DevicePtr w,
                        int64_t strideW, rt::DevicePtr mask, int64_t strideMask,
                        rt::DevicePtr out, int64_t strideOut,
                        CUstream_st *stream = nullptr);

/// Row-wise 2:4 mask of W [R, C] (C a multiple of 4): in each group of 4
/// consecutive entries of a row, the two largest |w| are kept; ties go to the
/// lower index; NaN ranks as the largest finite value. Outputs as above.
void mask24Rowwise(DType dtype, int64_t R, int64_t C, rt::DevicePtr w,
                   int64_t strideW, rt::DevicePtr mask, int64_t strideMask,
                   rt::DevicePtr out, int64_t strideOut,
                   CUstream_st *stream = nullptr);

/// Entries per program of the flip-count kernel, and so the number of
/// partial counts for n entries: ceil(n / kFlipBlock).
constexpr int64_t kFlipBlock = 4096;
inline int64_t maskFlipPartials(int64_t n) {
  return (n + kFlipBlock - 1) / kFlipBlock;
}

/// Asynchronous: writes maskFlipPartials(n) int32 counts to `partials`,
/// partial[p] = number of differing entries (kept vs pruned) among entries
/// [p * kFlipBlock, (p + 1) * kFlipBlock) of the contiguous int8 masks a, b.
void maskFlipCountPartials(rt::DevicePtr a, rt::DevicePtr b, int64_t n,
                           rt::DevicePtr partials, CUstream_st *stream = nullptr);

/// Synchronous: the number of entries where masks a and b (n contiguous
/// int8 each) differ. Every program of the count kernel adds its count to
/// one zeroed i64 counter with atomic_add; waits for `stream` and reads it.
int64_t maskFlipCount(rt::DevicePtr a, rt::DevicePtr b, int64_t n,
                      CUstream_st *stream = nullptr);
/// maskFlipCount / n (0 for n == 0).
double maskFlipRate(rt::DevicePtr a, rt::DevicePtr b, int64_t n,
                    CUstream_st *stream = nullptr);

/// In place on g (n contiguous entries of `dtype`, as are w):
///   g <- g + lambda * w * (1 - mask),  mask int8, nonzero = kept.
void maskedDecay(DType dtype, rt::DevicePtr g, rt::DevicePtr w,
                 rt::DevicePtr mask, int64_t n, float lambda,
                 CUstream_st *stream = nullptr);

/// MVUE 2:4 sparsifier: y = S(x) over n contiguous entries (n a multiple of
/// 4); in every group of 4, exactly two entries are kept (fewer only when the
/// group has fewer than two nonzeros), entry j with probability p_j and
/// scaled to x_j / p_j, so E[y] = x. p_j = 2|x_j| / sum|x| unless that
/// exceeds 1, in which case the largest gets p = 1 and the others
/// |x_j| / (sum|x| - max|x|). Group g draws one uniform
/// u = (rt::randint4x(seed, offset + g / 4)[g % 4] >> 9) * 2^-23
/// (sparsetile/runtime/Random.h: word g % 4 of Philox-4x32-10 at the 64-bit
/// counter offset + g / 4, so four consecutive groups share one expansion;
/// the word's top 23 bits) and keeps the entries whose cumulative-probability
/// intervals hold u and u + 1: reproducible, independent of launch shape. A
/// tensor of n entries uses counters offset .. offset + ceil(n / 16) - 1;
/// use a fresh range (e.g. offset += ceil(n / 16), or more) for each tensor
/// of a step. (Until 2026-11 group g used word 0 at counter offset + g, and
/// before issue 14 a splitmix64 hash: the same (seed, offset) now gives
/// other, equally distributed, draws.) y may equal x.
void mvue24(DType dtype, rt::DevicePtr x, rt::DevicePtr y, int64_t n,
            uint64_t seed, int64_t offset, CUstream_st *stream = nullptr);

/// Compressed 2:4 operand of a matrix A [I, K] (2:4 along K), the format
/// the 2:4 GEMMs consume (dsl_examples/sparse24.tile): `vals` [I, K/2] of
/// A's dtype holds the two kept values of every group of four of a row, in
/// column order; `meta`, compressedMeta(I, K) int16, holds their positions:
/// word (i, j) has bits 4g..4g+3 = group g of columns 16j..16j+15, first
/// index in the low two bits, the second (larger) in the high two. The
/// words are blocked by K steps of 128: word (i, j) is at metaIndex(i, j, I,
/// K), block j / 8 holding 8 words of every row, so that a sparse GEMM's K
/// step reads one contiguous run. A K that is not a multiple of 128 (e.g.
/// 1600 = 12 * 128 + 64) has its last block padded to 8 words a row: words
/// K/16 .. metaCols(K) - 1 of every row hold kMetaPadWord (the word of four
/// groups with nothing kept), written by compress24 and mask24Update, so
/// that the sm_90 TMA kernels copy whole 16-byte rows of every block (the
/// values and the dense operand past K read as zeros there). (Until
/// 2026-11-28 a last block of 64 held 4 words a row, unpadded, and the TMA
/// kernels needed K % 128 == 0; until 2026-11-27 meta was row-major
/// [I, K/16]; the blocked layout cut the forward GEMM's L2 requests by a
/// third: bench/NOTES.md.) Both contiguous. Groups with fewer than two kept
/// entries are padded with distinct increasing indices whose values are 0.
inline int64_t compressedValues(int64_t rows, int64_t cols) {
  return rows * (cols / 2);
}
/// Metadata words of a row of a [rows, cols] operand: cols / 16 rounded up
/// to whole blocks of 8 (the one definition of the metadata's size; the C
/// ABI's st_compressed24_meta and Python's ops.compressed24_meta_cols read
/// it).
inline int64_t metaCols(int64_t cols) { return (cols + 127) / 128 * 8; }
inline int64_t compressedMeta(int64_t rows, int64_t cols) {
  return rows * metaCols(cols);
}
/// The padding words of a last, partial block: indices (0, 1) in each of
/// the four groups (kept_nibble of no kept entry), whose values are 0.
constexpr int16_t kMetaPadWord = 0x4444;
/// Where word j of row i of the metadata of a [rows, cols] operand sits.
inline int64_t metaIndex(int64_t i, int64_t j, int64_t rows, int64_t cols) {
  (void)cols;
  return j / 8 * 8 * rows + i * 8 + j % 8;
}

/// How compress24 and mask24Update read the units of W^T (a block's second
/// pass; the first reads W's rows with 16-byte loads): a column per thread
/// (16 two-byte loads a row apart), a column pair per thread (4-byte loads),
/// W's rows read again whole and transposed through shared memory, or (Once)
/// the first pass's registers transposed through shared memory, with no
/// second read. Every form gives the same bits; the defaults are the forms
/// each kernel measured fastest with on the H100 (bench/NOTES.md).
enum class CompressPass1 {
  Default = -1,
  Columns = 0,
  Pairs = 1,
  Transposed = 2,
  Once = 3
};

/// Compresses W [R, C] (bf16 or f16; R and C multiples of 16) under its
/// transposable 2:4 mask (int8, nonzero = kept; e.g. mask24Transposable's)
/// into W's operand (vals [R, C/2], meta compressedMeta(R, C) words) and
/// W^T's (valsT [C, R/2], metaT compressedMeta(C, R) words), in one launch
/// (and, where C or R is not a multiple of 128, one more that writes the
/// padding words of meta's or metaT's last block). Values are W * mask; a
/// group of the mask with more than two kept entries keeps its first two.
void compress24(DType dtype, int64_t R, int64_t C, rt::DevicePtr w,
                int64_t strideW, rt::DevicePtr mask, int64_t strideMask,
                rt::DevicePtr vals, rt::DevicePtr meta, rt::DevicePtr valsT,
                rt::DevicePtr metaT, CUstream_st *stream = nullptr,
                CompressPass1 pass1 = CompressPass1::Default);

/// One mask-update step in one pass, for the steps where the mask is
/// recomputed: the transposable mask of W (mask24Transposable's), out =
/// W * mask, and W's and W^T's compressed operands (compress24's, same
/// sizes), bit for bit the separate kernels' results. bf16 or f16; R and C
/// multiples of 16; every output is required. out may be w (pruning W in
/// place, with strideOut = strideW), but must not overlap it otherwise.
void mask24Update(DType dtype, int64_t R, int64_t C, rt::DevicePtr w,
                  int64_t strideW, rt::DevicePtr mask, int64_t strideMask,
                  rt::DevicePtr out, int64_t strideOut, rt::DevicePtr vals,
                  rt::DevicePtr meta, rt::DevicePtr valsT, rt::DevicePtr metaT,
                  CUstream_st *stream = nullptr,
                  CompressPass1 pass1 = CompressPass1::Default);

/// How sparse_linear is tiled: each program computes a tileI x tileM block
/// of out^T with `warps` warps, K in steps of kSparseLinearK; `prefetch`
/// loads the next step's tiles before the current step's tensor-core work.
/// tileI and tileM are powers of two in [16, 256] whose block splits over
/// the warps (16-row by 8-column instruction tiles) and whose kernel fits
/// the GPU's shared memory as the compiler lays it out (a tiling it refuses
/// is a CompileError naming the tiling, raised before anything runs).
/// The defaults were the fastest of the tilings measured on an H100
/// (bench/sparse24/RESULTS.md).
struct SparseLinearTiles {
  int tileI = 256, tileM = 128, warps = 8;
  bool prefetch = true;
  /// The sm_90 kernel (TMA ring + sparse wgmma): -1 uses it on an sm_90
  /// GPU when the problem allows (ldx % 8 == 0, 8 warps, tileI 128 or
  /// 256, tileM 64, 128 or 256; any K, a multiple of 64, and any I and M:
  /// the boxes past them read as zeros, a last K step of 64 meeting the
  /// padding words of the metadata's last block); 0 never; 1 requires it
  /// (throws when it cannot run). `prefetch` does not apply to it.
  int tma = -1;
  /// Ring stages of the TMA kernel (JITOptions::numStages; 0: as many as
  /// fit, up to 4).
  int stages = 0;
  /// The TMA kernel's producer warpgroup and persistent tile loop
  /// (sparse24.tile's WS and PERSISTENT): 0 off, 1 on; -1 the defaults: a
  /// producer warpgroup, and the persistent loop as kSparseTmaPersistent /
  /// kSparseGradWPersistent say unless cluster > 1 or warpSpecialize = 0.
  int warpSpecialize = -1, persistent = -1;
  /// The TMA kernel's programs per thread block cluster (sparse24.tile's
  /// CLUSTER): 2 pairs tiles along I and multicasts their shared block of
  /// x; 1 runs them alone; -1 takes kSparseTmaCluster. Ignored (1) with
  /// warpSpecialize = 0 or persistent = 1.
  int cluster = -1;
  /// K step of the TMA kernel (sparse24.tile's BK): 64 or 128; 0 takes the
  /// default, 128. At 64 a stage holds half the bytes, so twice as many
  /// fit in shared memory. K itself may be any multiple of 64 at either
  /// step (a last step of 64 reads the metadata's padded last block).
  int tileK = 0;
  /// Ping-pong consumers (sparse24.tile's PINGPONG): 1 runs two consumer
  /// warpgroups that take alternate tiles of the persistent loop, so one
  /// stores its tile while the other runs the next tile's MMAs. The tile is
  /// then one warpgroup's: warps = 4, tileI 64 or 128, at most 128 x 128
  /// accumulators (128 per thread); it needs the persistent loop
  /// (persistent -1 or 1, cluster <= 1, warpSpecialize -1 or 1). 0: the
  /// consumer warps share each tile.
  int pingpong = 0;
};

/// Whether the TMA kernels run persistent by default (one program per SM
/// over a tile queue, each warp staging its part of the epilogue's stores
/// while the producer loads the next tile). Measured on the H100 at 16384
/// tokens after the persistent loop's cluster_id() fix (bench/NOTES.md, "The
/// persistent 2:4 GEMMs computed the wrong tiles"): sparseLinear's (Y and
/// dX) tie with one program per tile at 256 x 128 (2.470 against 2.464 ms);
/// sparse24LinearBackwardW's (dW) read 2% slower persistent in that run and
/// 1-9% faster in a later one (bench/sparse24/RESULTS.md, "Run at
/// 99bb7ec"): within the spread of the sequential step table, so all three
/// stay persistent.
constexpr bool kSparseTmaPersistent = true, kSparseGradWPersistent = true;

/// The TMA kernels' default cluster size (SparseLinearTiles::cluster): 1,
/// since pairs with multicast measured 6-13% slower at 256 x 128 and
/// 128 x 256 on the H100 (bench/NOTES.md).
constexpr int kSparseTmaCluster = 1;

/// out [M, I] = x [M, K] . A^T on sparse tensor cores (mma.sp), A [I, K]
/// compressed (vals, meta as above), f32 accumulation, rounded to `dtype`
/// (bf16 or f16, as x, vals and out). K must be a multiple of
/// kSparseLinearK; M and I are arbitrary. ldx >= K and ldo >= I are row
/// strides in elements.
constexpr int64_t kSparseLinearK = 64;
void sparseLinear(DType dtype, int64_t M, int64_t I, int64_t K,
                  rt::DevicePtr vals, rt::DevicePtr meta, rt::DevicePtr x,
                  int64_t ldx, rt::DevicePtr out, int64_t ldo,
                  CUstream_st *stream = nullptr,
                  const SparseLinearTiles &tiles = {});

/// The forward GEMM of a 2:4 linear layer with weight W [R, C]:
/// Y [M, R] = X [M, C] . W^T, with W's operand from compress24 (vals, meta).
/// C must be a multiple of kSparseLinearK.
void sparse24LinearForward(DType dtype, int64_t M, int64_t R, int64_t C,
                           rt::DevicePtr vals, rt::DevicePtr meta,
                           rt::DevicePtr x, int64_t ldx, rt::DevicePtr y,
                           int64_t ldy, CUstream_st *stream = nullptr);

/// Its input gradient: dX [M, C] = dY [M, R] . W, with W^T's operand from
/// compress24 (valsT, metaT). R must be a multiple of kSparseLinearK.
void sparse24LinearBackwardX(DType dtype, int64_t M, int64_t R, int64_t C,
                             rt::DevicePtr valsT, rt::DevicePtr metaT,
                             rt::DevicePtr dy, int64_t lddy, rt::DevicePtr dx,
                             int64_t lddx, CUstream_st *stream = nullptr);

/// The activations the 2:4 layer GEMMs fuse into their epilogue
/// (dsl_examples/sparse24.tile, linear_epilogue): none, or GELU in its tanh
/// form (torch's F.gelu(approximate="tanh")).
enum class LinearActivation { None = 0, GeluTanh = 1 };

/// sparse24LinearForward with its epilogue fused (the fc GEMM of an MLP):
/// H [M, R] = X . W^T + bias, with `bias` [R] (dtype, contiguous; 0: none)
/// added per output feature, then
///   act = None:     Y = H (h must be 0);
///   act = GeluTanh: H, rounded to dtype, is stored to `h` (row stride ldy,
///                   the same as y's; needed by the backward) and
///                   Y = gelu_tanh(H) from that rounded H, as F.gelu
///                   computes it from a 16-bit tensor.
/// One kernel; the unfused layer runs the GEMM, a bias pass and the GELU.
void sparse24LinearForwardAct(DType dtype, int64_t M, int64_t R, int64_t C,
                              rt::DevicePtr vals, rt::DevicePtr meta,
                              rt::DevicePtr x, int64_t ldx, rt::DevicePtr bias,
                              LinearActivation act, rt::DevicePtr h,
                              rt::DevicePtr y, int64_t ldy,
                              CUstream_st *stream = nullptr);

/// sparse24LinearBackwardX with the activation's backward fused (the proj
/// layer of an MLP, whose input was act(H)): dX [M, C] = (dY . W) *
/// act'(H), with H [M, C] at `h` (dtype, row stride lddx), the f32 product
/// multiplied before it is rounded. act must be GeluTanh.
void sparse24LinearBackwardXAct(DType dtype, int64_t M, int64_t R, int64_t C,
                                rt::DevicePtr valsT, rt::DevicePtr metaT,
                                rt::DevicePtr dy, int64_t lddy,
                                LinearActivation act, rt::DevicePtr h,
                                rt::DevicePtr dx, int64_t lddx,
                                CUstream_st *stream = nullptr);

/// The weight gradient of the 2:4 linear layer on sparse tensor cores,
/// dW = S(dY^T) . X with S the MVUE 2:4 sparsifier applied to dY^T in groups
/// of four consecutive tokens (arXiv 2404.01847). Its compressed operand
/// A = S(dY^T) [R, Kp] has Kp = sparse24GradTokens(M) tokens: M rounded up
/// to a multiple of 128 (the padding tokens are zeros), so that the sm_90
/// TMA kernel takes every M.
inline int64_t sparse24GradTokens(int64_t M) { return (M + 127) / 128 * 128; }

/// Fused MVUE sparsification and compression, no dense intermediate:
/// dY [M, R] (bf16 or f16, row stride lddy) -> vals [R, Kp/2] (dY's dtype)
/// and meta (compressedMeta(R, Kp) int16: Kp is a multiple of 128, so no
/// padding words), contiguous, in the format of compress24
/// (sizes: compressedValues(R, Kp), compressedMeta(R, Kp)). For M a multiple
/// of 4, bit for bit mvue24(dY^T as a contiguous [R, M], seed, offset)
/// followed by compress24 under the mask (result != 0), so its randomness is
/// mvue24's: group g of row r has index i = r * ceil(M/4) + g and takes
/// word i % 4 at counter offset + i / 4.
/// Reproducible for a given (seed, offset).
void mvue24CompressT(DType dtype, int64_t M, int64_t R, rt::DevicePtr dy,
                     int64_t lddy, rt::DevicePtr vals, rt::DevicePtr meta,
                     uint64_t seed, int64_t offset,
                     CUstream_st *stream = nullptr);

/// dW [R, C] (row stride lddw >= C) = S(dY^T) . X [M, C] (dtype of vals,
/// row stride ldx) from mvue24CompressT's (vals, meta), accumulated in f32
/// and stored as dwType: f32 (the default, an optimizer's master
/// precision) or `dtype` itself (what torch gives a bf16/f16 parameter's
/// gradient; half the bytes of the f32 store, and no cast after). On sm_90
/// the TMA + sparse wgmma kernel (ldx % 8 == 0; any M, R, C), else mma.sp.
/// `tiles` as for sparseLinear (tileM is the C tile).
void sparse24LinearBackwardW(DType dtype, int64_t M, int64_t R, int64_t C,
                             rt::DevicePtr vals, rt::DevicePtr meta,
                             rt::DevicePtr x, int64_t ldx, rt::DevicePtr dw,
                             int64_t lddw, CUstream_st *stream = nullptr,
                             const SparseLinearTiles &tiles = {},
                             DType dwType = DType::F32);

} // namespace sparsetile::ops

#endif // SPARSETILE_OPS_SPARSE24_H
