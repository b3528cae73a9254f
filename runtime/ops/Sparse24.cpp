//===- Sparse24.cpp - 2:4 sparsity helper launchers -----------------------===//
//
// Checks arguments and launches the kernels of dsl_examples/sparse24.tile
// (embedded at build time) through the JIT. The dtype and which outputs are
// written are compile-time constants of the kernels.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/ops/Sparse24.h"
#include "OpsCommon.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/JIT.h"

#include <map>
#include <string>
#include <vector>

namespace sparsetile::ops {
namespace {

// Groups (4x4 blocks for the transposable mask) per program: one per thread
// for the pattern search, four for the row-wise mask and MVUE.
constexpr int64_t kBlockBlock = 128, kGroupBlock = 512;
// A transposable mask written alone, from 2^20 4x4 blocks on (4096 x 4096
// entries), has each thread take L blocks in turn, loading the next one's
// rows while it searches the current one (L in sparse24.tile): L 2 up to
// 2^21 blocks, L 4 from there, so that the grid keeps about four waves of
// programs on an H100 (16384 x 4096: 5% faster at L 4; 4096 x 4096: 1.5%
// at L 2, where L 4 leaves two waves; bench/NOTES.md). With W * mask, and
// for smaller masks, one block a thread: L 4 measured 3-4% slower there.
int64_t transposableBlocksPerThread(int64_t blocks, bool writesOut) {
  if (writesOut || blocks < (int64_t(1) << 20))
    return 1;
  return blocks < (int64_t(1) << 21) ? 2 : 4;
}
constexpr int64_t kDecayBlock = 2048;
// mvue24_compress_t's program: kGradRows features x kGradTokens tokens at
// 16 warps (a unit a thread; 128 divides the padded M), for L token blocks
// in turn, the next one loaded while the current one is computed
// (gradBlocks picks L). Two programs fit an SM (56 registers a thread).
constexpr int64_t kGradRows = 64, kGradTokens = 128, kGradSlotsPerSM = 2;
// compress24's and mask24_update's programs (the update: one search per
// 4x4 block, then compress24's work on the same block). In the one-read form
// a program takes a kCompressRows x kCompressCols block with 8 warps, so each
// thread does a 64 x 64 block's work at 4 warps and a row's metadata words
// leave in one 16-byte piece instead of two 8-byte ones (bench/NOTES.md,
// "compress24 and the mask update over 64 x 128 blocks": 2.7-3.7% faster
// than 64 x 64 at 16384 x 4096). The other
// forms (PASS1 0-2) take square blocks of kCompressRows at 4 warps.
constexpr int64_t kCompressRows = 64, kCompressCols = 128;
constexpr int kCompressWarps = 8;
// The update's one-read program capped at 80 registers: 3 programs an SM
// instead of 2 at its 94, with no spills on sm_90a or sm_80 (bench/NOTES.md,
// "Block rows in one load, the mask update at 80 registers, ...").
constexpr int kUpdateMaxRegs = 80;
// Their second pass (CompressPass1), each as it measured fastest.
constexpr CompressPass1 kCompressPass1 = CompressPass1::Once,
                        kUpdatePass1 = CompressPass1::Once;

/// `p`, or `fallback` when p is Default.
CompressPass1 resolved(CompressPass1 p, CompressPass1 fallback) {
  return p == CompressPass1::Default ? fallback : p;
}

using detail::checkPointer;
using detail::fail;
using detail::kI32Limit;

const rt::KernelSource &source() {
  // Looked up once (every launch calls this), not under the map's lock.
  static const rt::KernelSource &src = detail::embeddedSource("sparse24.tile");
  return src;
}

/// The integer type of T's width: compress24 and mask24_update move the
/// kept values as their bits (the kernels' TI).
const char *bitsTypeName(DType t) { return t == DType::F32 ? "i32" : "i16"; }

void checkDtype(const char *op, DType t) {
  if (t != DType::BF16 && t != DType::F16 && t != DType::F32)
    fail(op,
         std::string("dtype must be bf16, f16 or f32, got ") + dtypeName(t));
}

void checkStride(const char *op, const char *name, int64_t stride, int64_t C,
                 const char *dim = "C") {
  if (stride < C)
    fail(op, std::string(name) + " = " + std::to_string(stride) +
                 " is smaller than " + dim + " = " + std::to_string(C));
  if (stride >= kI32Limit)
    fail(op, std::string(name) + " = " + std::to_string(stride) +
                 " does not fit the kernels' i32 strides");
}

rt::LaunchConfig grid(const char *op, int64_t programs, CUstream_st *stream) {
  if (programs >= kI32Limit)
    fail(op, std::to_string(programs) + " programs exceed the grid limit");
  rt::LaunchConfig c;
  c.grid = rt::Dim3(unsigned(programs));
  c.stream = stream;
  return c;
}

/// mvue24_compress_t's token blocks a program: the most of 32, 16, 8 and 4
/// whose programs still fill every SM's slots once (5% short allowed).
/// Longer runs pay a program's setup (~110 instructions a thread) over more
/// units; fewer programs than slots leave SMs idle. H100 (bench/NOTES.md,
/// "The fused MVUE compression through shared memory"): at 16384 x 4096
/// L 32 (256 programs) took 0.0864 ms against 0.0869 at L 16 and 0.0883 at
/// L 8 ("The fused MVUE compression's program length"); at 4096^2 L 8 (256
/// programs for 264 slots) 0.0271 against 0.0310 at L 16 and 0.0283 at L 4.
int64_t gradBlocks(int64_t rowBlocks, int64_t tokenBlocks) {
  int64_t slots = kGradSlotsPerSM * rt::Device::get().multiprocessorCount();
  int64_t l = 32;
  while (l > 4 && 20 * rowBlocks * ((tokenBlocks + l - 1) / l) < 19 * slots)
    l /= 2;
  return l;
}

rt::Dim3 gradGrid(const char *op, int64_t rowBlocks, int64_t programs) {
  // Programs along tokens on y, and on z past y's limit of 65535: the kernel
  // takes program y + Y z along tokens, and the fewer than z programs past
  // the last one store nothing.
  constexpr int64_t kMaxY = 65535;
  int64_t z = (programs + kMaxY - 1) / kMaxY;
  int64_t y = (programs + z - 1) / z;
  if (rowBlocks >= kI32Limit || z > kMaxY)
    fail(op, std::to_string(rowBlocks) + " x " + std::to_string(programs) +
                 " programs exceed the grid limit");
  return rt::Dim3(unsigned(rowBlocks), unsigned(y), unsigned(z));
}

void launchMask(const char *op, const char *kernel, bool transposable,
                int64_t block, DType dtype, int64_t R, int64_t C,
                rt::DevicePtr w, int64_t strideW, rt::DevicePtr mask,
                int64_t strideMask, rt::DevicePtr out, int64_t strideOut,
                CUstream_st *stream) {
  checkDtype(op, dtype);
  if (R < 0 || C < 0 || (transposable && R % 4) || C % 4)
    fail(op, "shape [" + std::to_string(R) + ", " + std::to_string(C) +
                 (transposable ? "] must have R and C multiples of 4"
                               : "] must have C a multiple of 4"));
  if (R >= kI32Limit || C >= kI32Limit)
    fail(op, "shape [" + std::to_string(R) + ", " + std::to_string(C) +
                 "] does not fit i32");
  int64_t groups = transposable ? (R / 4) * (C / 4) : R * (C / 4);
  // Group indices run to a program's last group, and one program further
  // for the prefetch of L > 1.
  int64_t perThread =
      transposable ? transposableBlocksPerThread(groups, out != 0) : 1;
  if (groups >= kI32Limit - block * (perThread + 1))
    fail(op, std::to_string(groups) + " groups do not fit i32");
  if (!mask && !out)
    fail(op, "neither mask nor out is given");
  checkPointer(op, "w", w);
  checkStride(op, "strideW", strideW, C);
  if (mask) {
    checkPointer(op, "mask", mask);
    checkStride(op, "strideMask", strideMask, C);
  }
  if (out) {
    checkPointer(op, "out", out);
    checkStride(op, "strideOut", strideOut, C);
  }
  if (groups == 0)
    return;
  rt::Constants c = {{"T", dtypeName(dtype)},
                     {"WRITE_MASK", mask ? "1" : "0"},
                     {"WRITE_OUT", out ? "1" : "0"},
                     {"BLOCK", std::to_string(block)}};
  if (transposable)
    c["L"] = std::to_string(perThread);
  rt::Kernel &k = rt::JIT::global().get(source(), kernel, c);
  int64_t perProgram = block * perThread;
  // Unwritten outputs get w as a harmless placeholder of the right type.
  k.launch(grid(op, (groups + perProgram - 1) / perProgram, stream),
           {rt::Arg::ptr(w, dtype), rt::Arg::ptr(mask ? mask : w, DType::I8),
            rt::Arg::ptr(out ? out : w, dtype), rt::Arg::i32(int32_t(R)),
            rt::Arg::i32(int32_t(C)), rt::Arg::i32(int32_t(strideW)),
            rt::Arg::i32(int32_t(mask ? strideMask : C)),
            rt::Arg::i32(int32_t(out ? strideOut : C))});
}

void checkHalfDtype(const char *op, DType t) {
  if (t != DType::BF16 && t != DType::F16)
    fail(op, std::string("dtype must be bf16 or f16 (tensor-core operands), "
                         "got ") +
                 dtypeName(t));
}

void checkDim(const char *op, const char *name, int64_t v, int64_t multiple) {
  if (v < 0 || v >= kI32Limit)
    fail(op, std::string(name) + " = " + std::to_string(v) +
                 " out of range [0, 2^31)");
  if (v % multiple)
    fail(op, std::string(name) + " = " + std::to_string(v) +
                 " is not a multiple of " + std::to_string(multiple));
}

void checkCount(const char *op, int64_t n) {
  if (n < 0 || n >= (int64_t(1) << 46))
    fail(op, "n = " + std::to_string(n) + " out of range");
}

/// The arguments compress24 and mask24Update share: W [R, C] and its mask
/// in, both compressed operands out.
void checkCompressArgs(const char *op, DType dtype, int64_t R, int64_t C,
                       rt::DevicePtr w, int64_t strideW, rt::DevicePtr mask,
                       int64_t strideMask, rt::DevicePtr vals,
                       rt::DevicePtr meta, rt::DevicePtr valsT,
                       rt::DevicePtr metaT) {
  checkHalfDtype(op, dtype);
  // One i16 of metadata covers 16 entries along a row of W and of W^T.
  checkDim(op, "R", R, 16);
  checkDim(op, "C", C, 16);
  checkPointer(op, "w", w);
  checkStride(op, "strideW", strideW, C);
  checkPointer(op, "mask", mask);
  checkStride(op, "strideMask", strideMask, C);
  checkPointer(op, "vals", vals);
  checkPointer(op, "meta", meta);
  checkPointer(op, "valsT", valsT);
  checkPointer(op, "metaT", metaT);
}

/// The block a compress24 or mask24_update program takes for PASS1 `pass1`
/// (already resolved from Default): its rows and columns, and its warps.
struct CompressBlock {
  int64_t rows, cols;
  int warps;
};
CompressBlock compressBlock(CompressPass1 pass1) {
  if (pass1 == CompressPass1::Once)
    return {kCompressRows, kCompressCols, kCompressWarps};
  return {kCompressRows, kCompressRows, 4};
}

/// Kernel `name` of sparse24.tile (compress24 or mask24_update) for `dtype`
/// and PASS1 `pass1` over blocks `b`; `maxnreg` > 0 sets its MAXNREG.
rt::Kernel &compressKernel(const char *name, DType dtype, CompressPass1 pass1,
                           const CompressBlock &b, int maxnreg = 0) {
  rt::JITOptions o;
  o.numWarps = b.warps;
  rt::Constants c = {{"T", dtypeName(dtype)},
                     {"TI", bitsTypeName(dtype)},
                     {"BLK", std::to_string(b.rows)},
                     {"BLKC", std::to_string(b.cols)},
                     {"PASS1", std::to_string(int(pass1))}};
  if (maxnreg > 0)
    c["MAXNREG"] = std::to_string(maxnreg);
  return rt::JIT::global().get(source(), name, c, o);
}

/// Programs of rows x cols blocks covering an [R, C] matrix.
int64_t blocks(int64_t R, int64_t C, const CompressBlock &b) {
  return ((R + b.rows - 1) / b.rows) * ((C + b.cols - 1) / b.cols);
}

/// Rows per program of meta_pad24.
constexpr int64_t kMetaPadRows = 512;

/// Writes kMetaPadWord into the padding words of the last block of the
/// metadata of a [rows, cols] operand (sparse24.tile's meta_pad24), which
/// compress24 and mask24_update leave: nothing to do when cols % 128 == 0.
void padMeta(const char *op, rt::DevicePtr meta, int64_t rows, int64_t cols,
             CUstream_st *stream) {
  if (cols % 128 == 0 || rows == 0)
    return;
  rt::Kernel &k = rt::JIT::global().get(source(), "meta_pad24",
                                        {{"BR", std::to_string(kMetaPadRows)}});
  k.launch(grid(op, (rows + kMetaPadRows - 1) / kMetaPadRows, stream),
           {rt::Arg::ptr(meta, DType::I16), rt::Arg::i32(int32_t(rows)),
            rt::Arg::i32(int32_t(cols))});
}

} // namespace

const std::array<uint16_t, 90> &transposable24Patterns() {
  // Every pattern the mask kernels may choose, in one fixed order.
  static const std::array<uint16_t, 90> patterns = {
#include "Transposable24Patterns.inc"
  };
  return patterns;
}

void mask24Transposable(DType dtype, int64_t R, int64_t C, rt::DevicePtr w,
                        int64_t strideW, rt::DevicePtr mask, int64_t strideMask,
                        rt::DevicePtr out, int64_t strideOut,
                        CUstream_st *stream) {
  launchMask("mask24Transposable", "mask24_transposable", true, kBlockBlock,
             dtype, R, C, w, strideW, mask, strideMask, out, strideOut, stream);
}

void mask24Rowwise(DType dtype, int64_t R, int64_t C, rt::DevicePtr w,
                   int64_t strideW, rt::DevicePtr mask, int64_t strideMask,
                   rt::DevicePtr out, int64_t strideOut, CUstream_st *stream) {
  launchMask("mask24Rowwise", "mask24_rowwise", false, kGroupBlock, dtype, R, C,
             w, strideW, mask, strideMask, out, strideOut, stream);
}

void maskFlipCountPartials(rt::DevicePtr a, rt::DevicePtr b, int64_t n,
                           rt::DevicePtr partials, CUstream_st *stream) {
  const char *op = "maskFlipCount";
  checkCount(op, n);
  checkPointer(op, "a", a);
  checkPointer(op, "b", b);
  checkPointer(op, "partials", partials);
  if (n == 0)
    return;
  rt::Kernel &k = rt::JIT::global().get(
      source(), "mask_flip_partials", {{"BLOCK", std::to_string(kFlipBlock)}});
  k.launch(grid(op, maskFlipPartials(n), stream),
           {rt::Arg::ptr(a, DType::I8), rt::Arg::ptr(b, DType::I8),
            rt::Arg::ptr(partials, DType::I32), rt::Arg::i64(n)});
}

int64_t maskFlipCount(rt::DevicePtr a, rt::DevicePtr b, int64_t n,
                      CUstream_st *stream) {
  const char *op = "maskFlipCount";
  checkCount(op, n);
  checkPointer(op, "a", a);
  checkPointer(op, "b", b);
  if (n == 0)
    return 0;
  // Every program adds its count to one i64 counter (atomic_add), zeroed
  // first on the same stream.
  rt::DeviceBuffer count(8);
  using MemsetFn = int (*)(unsigned long long, unsigned char, size_t,
                           CUstream_st *); // cuMemsetD8Async
  static auto memset =
      reinterpret_cast<MemsetFn>(rt::driverEntryPoint("cuMemsetD8Async"));
  if (int r = memset(count.ptr(), 0, 8, stream))
    fail(op, "cuMemsetD8Async failed with CUresult " + std::to_string(r));
  rt::Kernel &k = rt::JIT::global().get(
      source(), "mask_flip_count", {{"BLOCK", std::to_string(kFlipBlock)}});
  k.launch(grid(op, maskFlipPartials(n), stream),
           {rt::Arg::ptr(a, DType::I8), rt::Arg::ptr(b, DType::I8),
            rt::Arg::ptr(count.ptr(), DType::I64), rt::Arg::i64(n)});
  using SyncFn = int (*)(CUstream_st *); // cuStreamSynchronize
  static auto sync =
      reinterpret_cast<SyncFn>(rt::driverEntryPoint("cuStreamSynchronize"));
  if (int r = sync(stream))
    fail(op, "cuStreamSynchronize failed with CUresult " + std::to_string(r));
  return count.toHost<int64_t>()[0];
}

double maskFlipRate(rt::DevicePtr a, rt::DevicePtr b, int64_t n,
                    CUstream_st *stream) {
  int64_t c = maskFlipCount(a, b, n, stream);
  return n ? double(c) / double(n) : 0.0;
}

void maskedDecay(DType dtype, rt::DevicePtr g, rt::DevicePtr w,
                 rt::DevicePtr mask, int64_t n, float lambda,
                 CUstream_st *stream) {
  const char *op = "maskedDecay";
  checkDtype(op, dtype);
  checkCount(op, n);
  checkPointer(op, "g", g);
  checkPointer(op, "w", w);
  checkPointer(op, "mask", mask);
  if (n == 0)
    return;
  rt::Kernel &k = rt::JIT::global().get(
      source(), "masked_decay",
      {{"T", dtypeName(dtype)}, {"BLOCK", std::to_string(kDecayBlock)}});
  k.launch(grid(op, (n + kDecayBlock - 1) / kDecayBlock, stream),
           {rt::Arg::ptr(g, dtype), rt::Arg::ptr(w, dtype),
            rt::Arg::ptr(mask, DType::I8), rt::Arg::i64(n),
            rt::Arg::f32(lambda)});
}

void mvue24(DType dtype, rt::DevicePtr x, rt::DevicePtr y, int64_t n,
            uint64_t seed, int64_t offset, CUstream_st *stream) {
  const char *op = "mvue24";
  checkDtype(op, dtype);
  checkCount(op, n);
  if (n % 4)
    fail(op, "n = " + std::to_string(n) + " is not a multiple of 4");
  checkPointer(op, "x", x);
  checkPointer(op, "y", y);
  if (n == 0)
    return;
  rt::Kernel &k = rt::JIT::global().get(
      source(), "mvue24",
      {{"T", dtypeName(dtype)}, {"BLOCK", std::to_string(kGroupBlock)}});
  int64_t groups = n / 4;
  k.launch(grid(op, (groups + kGroupBlock - 1) / kGroupBlock, stream),
           {rt::Arg::ptr(x, dtype), rt::Arg::ptr(y, dtype), rt::Arg::i64(n),
            rt::Arg::u64(seed), rt::Arg::i64(offset)});
}

void compress24(DType dtype, int64_t R, int64_t C, rt::DevicePtr w,
                int64_t strideW, rt::DevicePtr mask, int64_t strideMask,
                rt::DevicePtr vals, rt::DevicePtr meta, rt::DevicePtr valsT,
                rt::DevicePtr metaT, CUstream_st *stream,
                CompressPass1 pass1) {
  const char *op = "compress24";
  checkCompressArgs(op, dtype, R, C, w, strideW, mask, strideMask, vals, meta,
                    valsT, metaT);
  if (R == 0 || C == 0)
    return;
  pass1 = resolved(pass1, kCompressPass1);
  CompressBlock b = compressBlock(pass1);
  rt::Kernel &k = compressKernel("compress24", dtype, pass1, b);
  k.launch(grid(op, blocks(R, C, b), stream),
           {rt::Arg::ptr(w, dtype), rt::Arg::ptr(mask, DType::I8),
            rt::Arg::ptr(vals, dtype), rt::Arg::ptr(meta, DType::I16),
            rt::Arg::ptr(valsT, dtype), rt::Arg::ptr(metaT, DType::I16),
            rt::Arg::i32(int32_t(R)), rt::Arg::i32(int32_t(C)),
            rt::Arg::i32(int32_t(strideW)), rt::Arg::i32(int32_t(strideMask))});
  padMeta(op, meta, R, C, stream);
  padMeta(op, metaT, C, R, stream);
}

void mask24Update(DType dtype, int64_t R, int64_t C, rt::DevicePtr w,
                  int64_t strideW, rt::DevicePtr mask, int64_t strideMask,
                  rt::DevicePtr out, int64_t strideOut, rt::DevicePtr vals,
                  rt::DevicePtr meta, rt::DevicePtr valsT, rt::DevicePtr metaT,
                  CUstream_st *stream, CompressPass1 pass1) {
  const char *op = "mask24Update";
  checkCompressArgs(op, dtype, R, C, w, strideW, mask, strideMask, vals, meta,
                    valsT, metaT);
  checkPointer(op, "out", out);
  checkStride(op, "strideOut", strideOut, C);
  // In place is safe: each thread reads its 4x4 block of W before it
  // writes the block's out, and the compression reads out after a barrier.
  // A shifted alias would let one block's writes reach another's reads.
  if (out == w && strideOut != strideW)
    fail(op, "out = w (in place) needs strideOut = strideW, got " +
                 std::to_string(strideOut) + " and " + std::to_string(strideW));
  if (R == 0 || C == 0)
    return;
  pass1 = resolved(pass1, kUpdatePass1);
  CompressBlock b = compressBlock(pass1);
  rt::Kernel &k =
      compressKernel("mask24_update", dtype, pass1, b,
                     pass1 == CompressPass1::Once ? kUpdateMaxRegs : 0);
  k.launch(grid(op, blocks(R, C, b), stream),
           {rt::Arg::ptr(w, dtype), rt::Arg::ptr(mask, DType::I8),
            rt::Arg::ptr(out, dtype), rt::Arg::ptr(vals, dtype),
            rt::Arg::ptr(meta, DType::I16), rt::Arg::ptr(valsT, dtype),
            rt::Arg::ptr(metaT, DType::I16), rt::Arg::i32(int32_t(R)),
            rt::Arg::i32(int32_t(C)), rt::Arg::i32(int32_t(strideW)),
            rt::Arg::i32(int32_t(strideMask)),
            rt::Arg::i32(int32_t(strideOut))});
  padMeta(op, meta, R, C, stream);
  padMeta(op, metaT, C, R, stream);
}

namespace {
/// The names a caller of sparseLinear gives its dimensions I and K and its
/// strides ldx and ldo, for the error messages.
struct LinearNames {
  const char *op, *i, *k, *ldx, *ldo;
};

/// The epilogue a launch fuses (sparse24.tile's linear_epilogue and its
/// BIAS, ACT and DACT): with none, the plain kernels run, so the layer's
/// own GEMMs are what they were.
struct Epilogue {
  rt::DevicePtr bias = 0, h = 0;
  bool act = false, dact = false;
  bool any() const { return bias || act || dact; }
  std::map<std::string, std::string> constants() const {
    return {{"BIAS", bias ? "1" : "0"},
            {"ACT", act ? "1" : "0"},
            {"DACT", dact ? "1" : "0"}};
  }
};

/// Whether the TMA epilogue kernel runs `t` without spilling. Measured with
/// ptxas for sm_90a (bf16 and f16, META8 0 and 1, with and without the
/// runtime's multiple-of-16 variants): the GELU and dH epilogues spill over
/// 128 x 128 accumulators once I and ldo are known multiples of 16 (88 and
/// 136 bytes a thread; their 16-byte staged stores), over 256 x 64 too (4
/// and 176), and over 256 x 128 always; over 128 x 64 never. The bias alone
/// spills at no tiling.
bool epilogueTilingOk(const Epilogue &ep, const SparseLinearTiles &t) {
  if (ep.act || ep.dact)
    return t.tileI * t.tileM <= 128 * 64;
  return true;
}

/// How an error names the mma.sp kernels' tiling.
std::string mmaTiling(const SparseLinearTiles &t) {
  return std::to_string(t.tileI) + " x " + std::to_string(t.tileM) + ", " +
         std::to_string(t.warps) + " warps";
}

void checkTiles(const char *op, const SparseLinearTiles &t) {
  auto pow2 = [](int v) { return v > 0 && (v & (v - 1)) == 0; };
  if (!pow2(t.tileI) || !pow2(t.tileM) || t.tileI < 16 || t.tileM < 16 ||
      t.tileI > 256 || t.tileM > 256)
    fail(op, "tiles " + std::to_string(t.tileI) + " x " +
                 std::to_string(t.tileM) +
                 " must be powers of two in [16, 256]");
  if (t.warps != 1 && t.warps != 2 && t.warps != 4 && t.warps != 8)
    fail(op, "warps = " + std::to_string(t.warps) + " must be 1, 2, 4 or 8");
  if (t.tileK != 0 && t.tileK != 64 && t.tileK != 128)
    fail(op, "tileK = " + std::to_string(t.tileK) +
                 " must be 64 or 128 (0: the default)");
  // The split of the tensor-core lowering (DotToMMA.cpp's mmaLayout): warps
  // go to rows first, in 16-row steps, the rest to 8-column steps.
  int wm = 1;
  while (wm < t.warps && t.tileI % (32 * wm) == 0)
    wm *= 2;
  if (t.tileM % (8 * (t.warps / wm)))
    fail(op, "a " + std::to_string(t.tileI) + " x " + std::to_string(t.tileM) +
                 " tile cannot be split over " + std::to_string(t.warps) +
                 " warps");
}

/// K step of the TMA kernels (SparseLinearTiles::tileK = 0): 64 compressed
/// values (one 128-byte swizzled panel) and 16-byte metadata rows per
/// stage. At 64 a stage holds half as much (more stages fit); its 8-byte
/// metadata rows come as the leading half of 16-byte TMA boxes.
constexpr int64_t kSparseTmaK = 128;

/// What keeps a TMA kernel from running `t`'s tiling ("" when nothing).
std::string tmaTilingError(const SparseLinearTiles &t) {
  if (t.pingpong != 0 && t.pingpong != 1)
    return "pingpong = " + std::to_string(t.pingpong) + " must be 0 or 1";
  if (t.pingpong == 1) {
    // One warpgroup's tile, alternating over the persistent loop.
    if (t.warps != 4 || (t.tileI != 64 && t.tileI != 128) ||
        (t.tileM != 64 && t.tileM != 128 && t.tileM != 256))
      return "ping-pong needs 4 warps, tileI 64 or 128 and tileM 64, 128 or "
             "256";
    if (t.tileI * t.tileM > 128 * 128)
      return "a ping-pong tile holds at most 128 x 128 accumulators";
    if (t.persistent == 0 || t.warpSpecialize == 0 || t.cluster > 1)
      return "ping-pong needs the persistent loop (persistent and "
             "warpSpecialize -1 or 1, cluster 1)";
    return "";
  }
  if (t.warps != 8 || (t.tileI != 128 && t.tileI != 256) ||
      (t.tileM != 64 && t.tileM != 128 && t.tileM != 256))
    return "it needs 8 warps, tileI 128 or 256 and tileM 64, 128 or 256";
  if (t.tileI * t.tileM > 256 * 128)
    // 128 f32 accumulators per consumer thread is the most that fits in
    // its registers; 256 x 256 spills (ptxas C7511).
    return "its tile holds at most 256 x 128 accumulators";
  return "";
}

/// Whether sparse_linear runs its sm_90 TMA + sparse wgmma kernel.
bool useSparseTma(const char *op, const SparseLinearTiles &t, int64_t K,
                  int64_t ldx) {
  if (t.tma == 0)
    return false;
  std::string why = tmaTilingError(t);
  if (why.empty() && (K % kSparseLinearK || K == 0))
    // The metadata's blocks of 128 K steps are padded to 8 words a row
    // (ops/Sparse24.h, metaCols), so every block is whole 16-byte rows; a
    // last step of 64 reads vals and x past K as zeros. I is ragged (the
    // boxes past it read as zeros too).
    why = "it needs K a positive multiple of 64";
  else if (why.empty() && ldx % 8)
    why = "it needs a row stride of x that is a multiple of 8 elements";
  bool sm90 = false;
  if (why.empty()) {
    try {
      sm90 = rt::Device::get().computeMajor() == 9;
    } catch (const rt::Error &) {
      if (t.tma > 0)
        throw;
    }
    if (!sm90)
      why = "it needs an sm_90 GPU";
  }
  if (!why.empty() && t.tma > 0)
    fail(op, "the TMA kernel cannot run: " + why);
  return why.empty();
}

/// Whether a TMA kernel runs persistent: as asked, or by default (-1)
/// unless clusters (the tile queue does not hand out tiles in pairs) or the
/// ring without a producer warpgroup (which a persistent loop needs) were
/// asked for.
bool persistentOf(const SparseLinearTiles &t, bool byDefault) {
  if (t.persistent >= 0)
    return t.persistent == 1;
  if (t.pingpong == 1)
    return true;
  return byDefault && t.warpSpecialize != 0 && t.cluster <= 1;
}

/// Programs per cluster of the TMA kernels: 1 under a persistent loop or
/// without the producer warpgroup (multicast copies need the
/// warp-specialized ring).
int clusterOf(const SparseLinearTiles &t, bool persistent) {
  if (persistent || t.warpSpecialize == 0)
    return 1;
  return t.cluster > 0 ? t.cluster : kSparseTmaCluster;
}

/// Programs of a TMA sparse GEMM over [I, N] in [bi, bn] tiles: clusters
/// of `cluster` tiles along I (the last one's extra tiles past I do
/// nothing), times the tiles along N.
int64_t tmaPrograms(int64_t I, int64_t N, int64_t bi, int64_t bn,
                    int64_t cluster) {
  int64_t strips = ((I + bi - 1) / bi + cluster - 1) / cluster;
  return strips * cluster * ((N + bn - 1) / bn);
}

/// Whether the TMA kernels copy an operand's metadata (laid out in blocks
/// of K steps of 128, a last partial one padded: sparse24.tile's meta_at)
/// as rows of 128 bytes, eight of the operand's rows each (sparse24.tile's
/// META8): the rows must come in eights, and a K step must be a whole
/// block (BK 128). Otherwise as rows of 16 bytes, one each, as the
/// row-major layout had them; the 128-byte rows cut the forward GEMM's L2
/// requests by a third (bench/NOTES.md, "What inside L2 bounds the forward
/// GEMM").
bool metaRows128(const SparseLinearTiles &tiles, int64_t rows) {
  return rows % 8 == 0 && (tiles.tileK ? tiles.tileK : kSparseTmaK) == 128;
}

/// The TMA view of the metadata of an operand with `rows` rows and K
/// columns that metaRows128 describes: its metaCols(K) / 8 blocks, the
/// last one padded when K % 128 != 0.
rt::Arg metaDescriptor(rt::DevicePtr meta, int64_t rows, int64_t K,
                       bool rows128) {
  int64_t nb = metaCols(K) / 8;
  return rows128 ? rt::Arg::tensor2d(meta, DType::I16, nb * (rows / 8), 64, 64)
                 : rt::Arg::tensor2d(meta, DType::I16, nb * rows, 8, 8);
}

/// The constants of a TMA sparse GEMM kernel; `nTile` names its N tile,
/// `persistentByDefault` says whether it runs persistent when the tiles
/// leave it open, and `meta8` is metaRows128's answer for its operand (the
/// same one its metadata descriptor was made for).
std::map<std::string, std::string>
tmaConstants(DType dtype, const SparseLinearTiles &tiles, const char *nTile,
             bool persistentByDefault, bool meta8) {
  bool persistent = persistentOf(tiles, persistentByDefault);
  std::map<std::string, std::string> constants = {
      {"T", dtypeName(dtype)},
      {"BI", std::to_string(tiles.tileI)},
      {nTile, std::to_string(tiles.tileM)},
      {"BK", std::to_string(tiles.tileK ? tiles.tileK : kSparseTmaK)},
      {"PERSISTENT", persistent ? "1" : "0"},
      {"CLUSTER", std::to_string(clusterOf(tiles, persistent))},
      {"PINGPONG", tiles.pingpong == 1 ? "1" : "0"},
      {"META8", meta8 ? "1" : "0"}};
  if (tiles.warpSpecialize >= 0)
    constants["WS"] = std::to_string(tiles.warpSpecialize);
  return constants;
}

/// One program per tile on one axis: the TMA kernels order their tiles in
/// groups along I themselves.
rt::LaunchConfig tileGrid(const char *op, int64_t tiles, CUstream_st *stream) {
  if (tiles >= (int64_t(1) << 31))
    fail(op, std::to_string(tiles) + " tiles exceed the grid limit");
  rt::LaunchConfig c;
  c.grid = rt::Dim3(unsigned(tiles));
  c.stream = stream;
  return c;
}

/// Candidate TMA tilings when the caller gave none (the 2:4 layer's
/// entry points): the default first, so SPARSETILE_AUTOTUNE=0 keeps it; the
/// smaller tiles win where 256 x 128 leaves SMs idle.
const std::pair<int, int> kTmaCandidates[] = {{128, 128}, {256, 64}};

/// Launches sparse_linear_tma with `tiles`, or, when `tune`, with the
/// fastest of `tiles` and kTmaCandidates for this problem (which change
/// only the I and M tiles, so `meta8`, the form of args' metadata
/// descriptor, holds for all).
/// The kernel and grid launchSparseTma runs: `tiles`, or, when `tune`, the
/// fastest of `tiles` and kTmaCandidates for this problem (which change
/// only the I and M tiles, so `meta8`, the form of args' metadata
/// descriptor, holds for all).
detail::Chosen chooseSparseTma(const char *op, const SparseLinearTiles &tiles,
                               bool tune, DType dtype, int64_t M, int64_t I,
                               int64_t K, int64_t ldx, bool meta8,
                               const Epilogue &ep,
                               const std::vector<rt::Arg> &args,
                               CUstream_st *stream) {
  const char *kernel = ep.any() ? "sparse_linear_tma_ep" : "sparse_linear_tma";
  auto configOf = [&](const SparseLinearTiles &t) {
    rt::TuneConfig c;
    c.constants = tmaConstants(dtype, t, "BM", kSparseTmaPersistent, meta8);
    if (ep.any())
      c.constants.merge(ep.constants());
    c.numWarps = t.warps;
    c.numStages = t.stages;
    return c;
  };
  std::vector<rt::TuneConfig> configs = {configOf(tiles)};
  for (auto [bi, bm] : kTmaCandidates) {
    SparseLinearTiles t = tiles;
    t.tileI = bi, t.tileM = bm;
    if (tune && epilogueTilingOk(ep, t) && useSparseTma(op, t, K, ldx))
      configs.push_back(configOf(t));
  }
  configs = detail::uniqueConfigs(configs);
  auto grid = [&](const rt::Constants &c) {
    return tileGrid(op,
                    tmaPrograms(I, M, detail::constantOf(c, "BI"),
                                detail::constantOf(c, "BM"),
                                detail::constantOf(c, "CLUSTER")),
                    stream);
  };
  if (configs.size() == 1) {
    rt::JITOptions o;
    o.numWarps = tiles.warps;
    o.numStages = tiles.stages;
    return {&rt::JIT::global().get(source(), kernel, configs[0].constants, o),
            grid(configs[0].constants)};
  }
  rt::LaunchContext ctx;
  ctx.key = "M=" + std::to_string(M) + ",I=" + std::to_string(I) +
            ",K=" + std::to_string(K);
  ctx.grid = [&](const rt::Constants &c, const rt::LaunchArgs &) {
    return grid(c).grid;
  };
  rt::AutotunedKernel &tuner =
      detail::tunedKernel(source(), kernel, {}, {}, configs, {"out"});
  size_t index = tuner.choose(args, stream, &ctx);
  return {&tuner.candidate(index), grid(configs[index].constants)};
}

/// Launches sparse_linear_tma as chooseSparseTma decides, once per problem.
void launchSparseTma(const char *op, const SparseLinearTiles &tiles, bool tune,
                     DType dtype, int64_t M, int64_t I, int64_t K, int64_t ldx,
                     bool meta8, const Epilogue &ep,
                     const std::vector<rt::Arg> &args, CUstream_st *stream) {
  // Decided once per problem and tiling request (OpsCommon.h, Decisions).
  detail::DecisionKey key;
  key.add(std::string(op)).add(tune).add(int(dtype)).add(M).add(I).add(K)
      .add(ldx).add(meta8).add(tiles.prefetch);
  key.add(ep.bias != 0).add(ep.act).add(ep.dact);
  for (int v : {tiles.tileI, tiles.tileM, tiles.warps, tiles.tma,
                tiles.stages, tiles.warpSpecialize, tiles.persistent,
                tiles.cluster, tiles.tileK})
    key.add(v);
  static detail::Decisions<detail::Chosen> decided;
  detail::Chosen c;
  if (!decided.find(key, c)) {
    c = chooseSparseTma(op, tiles, tune, dtype, M, I, K, ldx, meta8, ep, args,
                        stream);
    decided.put(key, c);
  }
  c.config.stream = stream;
  c.kernel->launch(c.config, args);
}

void launchSparseLinear(const LinearNames &nm, const SparseLinearTiles &tiles,
                        bool tune, DType dtype, int64_t M, int64_t I, int64_t K,
                        rt::DevicePtr vals, rt::DevicePtr meta, rt::DevicePtr x,
                        int64_t ldx, rt::DevicePtr out, int64_t ldo,
                        CUstream_st *stream, const Epilogue &ep = {}) {
  const char *op = nm.op;
  checkHalfDtype(op, dtype);
  checkDim(op, "M", M, 1);
  checkDim(op, nm.i, I, 1);
  checkDim(op, nm.k, K, kSparseLinearK);
  checkTiles(op, tiles);
  checkPointer(op, "vals", vals);
  checkPointer(op, "meta", meta);
  checkPointer(op, "x", x);
  checkStride(op, nm.ldx, ldx, K, nm.k);
  checkPointer(op, "out", out);
  checkStride(op, nm.ldo, ldo, I, nm.i);
  if (ep.bias)
    checkPointer(op, "bias", ep.bias);
  if (ep.act || ep.dact)
    checkPointer(op, "h", ep.h);
  if (M == 0 || I == 0)
    return;
  // The epilogue kernels take bias and h always; where the epilogue reads
  // neither, `out` stands in (never accessed: the constants remove the code).
  std::vector<rt::Arg> epArgs;
  if (ep.any())
    epArgs = {rt::Arg::ptr(ep.bias ? ep.bias : out, dtype),
              rt::Arg::ptr(ep.h ? ep.h : out, dtype)};
  // The mma.sp kernel's tiling: with an epilogue 128 x 128, where neither
  // form spills (ptxas sm_80 and sm_90a; 256 x 128 spilled 44 bytes a
  // thread without an epilogue and 80-232 with one).
  SparseLinearTiles mt = tiles;
  if (ep.any())
    mt.tileI = 128, mt.tileM = 128;
  int64_t gridI = (I + mt.tileI - 1) / mt.tileI,
          gridM = (M + mt.tileM - 1) / mt.tileM;
  if (gridM > 65535)
    fail(op, "M = " + std::to_string(M) + " needs more than 65535 tiles of " +
                 std::to_string(mt.tileM) + " rows");
  rt::JITOptions o;
  o.numWarps = tiles.warps;
  o.numStages = tiles.stages;
  if (useSparseTma(op, tiles, K, ldx)) {
    bool meta8 = metaRows128(tiles, I);
    std::vector<rt::Arg> args = {
        rt::Arg::tensor2d(vals, dtype, I, K / 2, K / 2),
        metaDescriptor(meta, I, K, meta8),
        rt::Arg::tensor2d(x, dtype, M, K, ldx), rt::Arg::ptr(out, dtype)};
    args.insert(args.end(), epArgs.begin(), epArgs.end());
    for (int64_t v : {M, I, K, ldo})
      args.push_back(rt::Arg::i32(int32_t(v)));
    launchSparseTma(op, tiles, tune, dtype, M, I, K, ldx, meta8, ep, args,
                    stream);
    return;
  }
  std::map<std::string, std::string> constants = {
      {"T", dtypeName(dtype)},
      {"BI", std::to_string(mt.tileI)},
      {"BM", std::to_string(mt.tileM)},
      {"BK", std::to_string(kSparseLinearK)},
      {"PREFETCH", mt.prefetch ? "1" : "0"}};
  if (ep.any())
    constants.merge(ep.constants());
  rt::Kernel &k = rt::JIT::global().get(
      source(), ep.any() ? "sparse_linear_ep" : "sparse_linear", constants, o);
  rt::LaunchConfig c;
  c.grid = rt::Dim3(unsigned(gridI), unsigned(gridM));
  c.stream = stream;
  // K == 0 is allowed: the kernel's K loop does not run and out = 0.
  std::vector<rt::Arg> args = {
      rt::Arg::ptr(vals, dtype), rt::Arg::ptr(meta, DType::I16),
      rt::Arg::ptr(x, dtype), rt::Arg::ptr(out, dtype)};
  args.insert(args.end(), epArgs.begin(), epArgs.end());
  for (int64_t v : {M, I, K, ldx, ldo})
    args.push_back(rt::Arg::i32(int32_t(v)));
  detail::launchTiling(op, mmaTiling(mt), k, c, args);
}

/// The tiling of a launch with epilogue `ep` (epilogueTilingOk): for the
/// TMA kernel the layer's default (256 x 128) where it does not spill, else
/// 128 x 64 (dH's read of H moves through 16 KB of shared memory there,
/// which the ring leaves); the mma.sp kernel (128 x 128 with an epilogue)
/// without register double buffering under GELU (it spilled 80 bytes with
/// it, none without).
SparseLinearTiles epilogueTiles(const Epilogue &ep) {
  SparseLinearTiles t;
  if (!epilogueTilingOk(ep, t))
    t.tileI = 128, t.tileM = 64;
  if (ep.act)
    t.prefetch = false;
  return t;
}

void checkActivation(const char *op, LinearActivation act) {
  if (act != LinearActivation::None && act != LinearActivation::GeluTanh)
    fail(op, "activation " + std::to_string(int(act)) +
                 " must be 0 (none) or 1 (gelu_tanh)");
}
} // namespace

void sparseLinear(DType dtype, int64_t M, int64_t I, int64_t K,
                  rt::DevicePtr vals, rt::DevicePtr meta, rt::DevicePtr x,
                  int64_t ldx, rt::DevicePtr out, int64_t ldo,
                  CUstream_st *stream, const SparseLinearTiles &tiles) {
  launchSparseLinear({"sparseLinear", "I", "K", "ldx", "ldo"}, tiles, false,
                     dtype, M, I, K, vals, meta, x, ldx, out, ldo, stream);
}

void sparse24LinearForward(DType dtype, int64_t M, int64_t R, int64_t C,
                           rt::DevicePtr vals, rt::DevicePtr meta,
                           rt::DevicePtr x, int64_t ldx, rt::DevicePtr y,
                           int64_t ldy, CUstream_st *stream) {
  launchSparseLinear({"sparse24LinearForward", "R", "C", "ldx", "ldy"}, {},
                     true, dtype, M, R, C, vals, meta, x, ldx, y, ldy, stream);
}

void sparse24LinearBackwardX(DType dtype, int64_t M, int64_t R, int64_t C,
                             rt::DevicePtr valsT, rt::DevicePtr metaT,
                             rt::DevicePtr dy, int64_t lddy, rt::DevicePtr dx,
                             int64_t lddx, CUstream_st *stream) {
  launchSparseLinear({"sparse24LinearBackwardX", "C", "R", "lddy", "lddx"}, {},
                     true, dtype, M, C, R, valsT, metaT, dy, lddy, dx, lddx,
                     stream);
}

void sparse24LinearForwardAct(DType dtype, int64_t M, int64_t R, int64_t C,
                              rt::DevicePtr vals, rt::DevicePtr meta,
                              rt::DevicePtr x, int64_t ldx, rt::DevicePtr bias,
                              LinearActivation act, rt::DevicePtr h,
                              rt::DevicePtr y, int64_t ldy,
                              CUstream_st *stream) {
  const char *op = "sparse24LinearForwardAct";
  checkActivation(op, act);
  if (act == LinearActivation::None && h)
    fail(op, "h is written only with an activation: pass 0");
  Epilogue ep;
  ep.bias = bias;
  ep.act = act == LinearActivation::GeluTanh;
  ep.h = h;
  launchSparseLinear({op, "R", "C", "ldx", "ldy"}, epilogueTiles(ep), true,
                     dtype, M, R, C, vals, meta, x, ldx, y, ldy, stream, ep);
}

void sparse24LinearBackwardXAct(DType dtype, int64_t M, int64_t R, int64_t C,
                                rt::DevicePtr valsT, rt::DevicePtr metaT,
                                rt::DevicePtr dy, int64_t lddy,
                                LinearActivation act, rt::DevicePtr h,
                                rt::DevicePtr dx, int64_t lddx,
                                CUstream_st *stream) {
  const char *op = "sparse24LinearBackwardXAct";
  checkActivation(op, act);
  if (act != LinearActivation::GeluTanh)
    fail(op, "the activation must be 1 (gelu_tanh); without one, call "
             "sparse24LinearBackwardX");
  Epilogue ep;
  ep.dact = true;
  ep.h = h;
  launchSparseLinear({op, "C", "R", "lddy", "lddx"}, epilogueTiles(ep), true,
                     dtype, M, C, R, valsT, metaT, dy, lddy, dx, lddx, stream,
                     ep);
}

void mvue24CompressT(DType dtype, int64_t M, int64_t R, rt::DevicePtr dy,
                     int64_t lddy, rt::DevicePtr vals, rt::DevicePtr meta,
                     uint64_t seed, int64_t offset, CUstream_st *stream) {
  const char *op = "mvue24CompressT";
  checkHalfDtype(op, dtype);
  checkDim(op, "M", M, 1);
  checkDim(op, "R", R, 1);
  // The kernel's token indices are i32, and a program past the last one (a
  // z slice's remainder) starts up to (Z - 1) L blocks of 128 tokens past
  // the padded M (under 2^17 tokens: Z <= 17 slices, L <= 32): keep 2^20 of
  // room.
  if (sparse24GradTokens(M) + (int64_t(1) << 20) >= kI32Limit)
    fail(op, "M = " + std::to_string(M) +
                 " padded to a multiple of 128 "
                 "does not fit i32 with the kernel's room of 2^20 tokens");
  checkPointer(op, "dy", dy);
  checkStride(op, "lddy", lddy, R, "R");
  checkPointer(op, "vals", vals);
  checkPointer(op, "meta", meta);
  if (M == 0 || R == 0)
    return;
  int64_t rowBlocks = (R + kGradRows - 1) / kGradRows;
  int64_t tokenBlocks = sparse24GradTokens(M) / kGradTokens;
  // ALIGNED: every unit of 16 tokens wholly below M or wholly past it.
  bool aligned = M % 16 == 0;
  int64_t l = gradBlocks(rowBlocks, tokenBlocks);
  rt::Kernel &k = rt::JIT::global().get(source(), "mvue24_compress_t",
                                        {{"T", dtypeName(dtype)},
                                         {"BR", std::to_string(kGradRows)},
                                         {"BT", std::to_string(kGradTokens)},
                                         {"L", std::to_string(l)},
                                         {"ALIGNED", aligned ? "1" : "0"}});
  int64_t programs = (tokenBlocks + l - 1) / l;
  k.launch(rt::LaunchConfig(gradGrid(op, rowBlocks, programs),
                            rt::Dim3(0, 1, 1), 0, stream),
           {rt::Arg::ptr(dy, dtype), rt::Arg::ptr(vals, dtype),
            rt::Arg::ptr(meta, DType::I16), rt::Arg::i32(int32_t(M)),
            rt::Arg::i32(int32_t(R)), rt::Arg::i32(int32_t(lddy)),
            rt::Arg::u64(seed), rt::Arg::i64(offset)});
}

void sparse24LinearBackwardW(DType dtype, int64_t M, int64_t R, int64_t C,
                             rt::DevicePtr vals, rt::DevicePtr meta,
                             rt::DevicePtr x, int64_t ldx, rt::DevicePtr dw,
                             int64_t lddw, CUstream_st *stream,
                             const SparseLinearTiles &tiles, DType dwType) {
  const char *op = "sparse24LinearBackwardW";
  checkHalfDtype(op, dtype);
  if (dwType != DType::F32 && dwType != dtype)
    fail(op, std::string("dW must be f32 or ") + dtypeName(dtype) +
                 " (the operands' dtype), got " + dtypeName(dwType));
  checkDim(op, "M", M, 1);
  checkDim(op, "R", R, 1);
  checkDim(op, "C", C, 1);
  int64_t K = sparse24GradTokens(M);
  if (K >= kI32Limit)
    fail(op, "M = " + std::to_string(M) +
                 " padded to a multiple of 128 "
                 "does not fit i32");
  checkTiles(op, tiles);
  checkPointer(op, "vals", vals);
  checkPointer(op, "meta", meta);
  checkPointer(op, "x", x);
  checkStride(op, "ldx", ldx, C);
  checkPointer(op, "dw", dw);
  checkStride(op, "lddw", lddw, C);
  if (R == 0 || C == 0)
    return;
  int64_t gridI = (R + tiles.tileI - 1) / tiles.tileI,
          gridN = (C + tiles.tileM - 1) / tiles.tileM;
  rt::JITOptions o;
  o.numWarps = tiles.warps;
  o.numStages = tiles.stages;
  // M == 0 gives K == 0: dW = 0, through the mma.sp kernel (its K loop does
  // not run); the TMA ring needs at least one step.
  if (M > 0 && useSparseTma(op, tiles, K, ldx)) {
    bool meta8 = metaRows128(tiles, R);
    auto constants =
        tmaConstants(dtype, tiles, "BN", kSparseGradWPersistent, meta8);
    constants["O"] = dtypeName(dwType);
    rt::JIT::global()
        .get(source(), "sparse_grad_w_tma", constants, o)
        .launch(tileGrid(op,
                         tmaPrograms(R, C, tiles.tileI, tiles.tileM,
                                     detail::constantOf(constants, "CLUSTER")),
                         stream),
                {rt::Arg::tensor2d(vals, dtype, R, K / 2, K / 2),
                 metaDescriptor(meta, R, K, meta8),
                 rt::Arg::tensor2d(x, dtype, M, C, ldx),
                 rt::Arg::ptr(dw, dwType), rt::Arg::i32(int32_t(C)),
                 rt::Arg::i32(int32_t(R)), rt::Arg::i32(int32_t(K)),
                 rt::Arg::i32(int32_t(lddw))});
    return;
  }
  if (gridN > 65535)
    fail(op, "C = " + std::to_string(C) + " needs more than 65535 tiles of " +
                 std::to_string(tiles.tileM) + " columns");
  rt::Kernel &k =
      rt::JIT::global().get(source(), "sparse_grad_w",
                            {{"T", dtypeName(dtype)},
                             {"O", dtypeName(dwType)},
                             {"BI", std::to_string(tiles.tileI)},
                             {"BN", std::to_string(tiles.tileM)},
                             {"BK", std::to_string(kSparseLinearK)}},
                            o);
  rt::LaunchConfig c;
  c.grid = rt::Dim3(unsigned(gridI), unsigned(gridN));
  c.stream = stream;
  detail::launchTiling(op, mmaTiling(tiles), k, c,
                       {rt::Arg::ptr(vals, dtype),
                        rt::Arg::ptr(meta, DType::I16), rt::Arg::ptr(x, dtype),
                        rt::Arg::ptr(dw, dwType), rt::Arg::i32(int32_t(C)),
                        rt::Arg::i32(int32_t(R)), rt::Arg::i32(int32_t(K)),
                        rt::Arg::i32(int32_t(M)), rt::Arg::i32(int32_t(ldx)),
                        rt::Arg::i32(int32_t(lddw))});
}

} // namespace sparsetile::ops
