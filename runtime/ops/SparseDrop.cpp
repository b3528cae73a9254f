//===- SparseDrop.cpp - SparseDrop mask and linear-layer launchers
//---------===//
//
// Validates shapes, strides, pointers, mask blocks and tilings, then launches
// the kernels of dsl_examples/sparsedrop.tile (embedded in the library at
// build time) through the JIT. Tile sizes and the dtype are compile-time
// constants of the kernels; mask blocks, shapes and strides are run-time
// arguments. Unless the caller fixes a tiling, each GEMM's tiling is
// autotuned per problem over a few candidates, the default first.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/ops/SparseDrop.h"
#include "OpsCommon.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/JIT.h"
#include "sparsetile/runtime/LaunchMemory.h"

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <set>

namespace sparsetile::ops::sparsedrop {
namespace {

constexpr int kMaskGenRows = 64; // ROWS of mask_gen: half-words per program.
constexpr int kGroup = 8;        // GROUP: tiles per swizzle group.
constexpr int kListOrderBlock = 128; // BLOCK of list_order: lists per program.
constexpr double kListedFrom = 0.7;  // dX takes its kept tiles first from here.
// dX's tiles by kind by default in [kKindsFrom, kKindsTo): 0.93-0.97x the
// autotuned single launch at p = 0.1-0.5, 1.00-1.06x at 0.05, 1.05-1.10x
// at 0.7 (bench/NOTES.md, "dX's tiles by kind").
constexpr double kKindsFrom = 0.1, kKindsTo = 0.6;

using detail::kI32Limit;

const rt::KernelSource &source() {
  // Looked up once (every launch calls this), not under the map's lock.
  static const rt::KernelSource &src =
      detail::embeddedSource("sparsedrop.tile");
  return src;
}

[[noreturn]] void fail(const std::string &op, const std::string &what) {
  detail::fail("sparsedrop " + op, what);
}

std::string str(int64_t v) { return std::to_string(v); }

void checkPointer(const std::string &op, const char *name, rt::DevicePtr p) {
  detail::checkPointer("sparsedrop " + op, name, p);
}

/// A [rows, cols] row-major matrix with element stride `stride`.
void checkMatrix(const std::string &op, const char *name, rt::DevicePtr p,
                 int64_t rows, int64_t cols, int64_t stride) {
  checkPointer(op, name, p);
  if (stride < cols || stride < 1)
    fail(op, std::string("stride of ") + name + " = " + str(stride) +
                 " is smaller than its row width " + str(cols));
  if (stride >= kI32Limit ||
      (rows > 0 && (rows - 1) * stride + cols >= kI32Limit))
    fail(op, std::string(name) + " [" + str(rows) + ", " + str(cols) +
                 "] with stride " + str(stride) +
                 " has element offsets beyond int32");
}

void checkBlocks(const std::string &op, int64_t blockM, int64_t blockK) {
  if (blockM < 16 || blockM % 16 || blockM >= kI32Limit)
    fail(op, "blockM = " + str(blockM) + " must be a positive multiple of 16");
  if (blockK < 16 || blockK % 16 || blockK >= kI32Limit)
    fail(op, "blockK = " + str(blockK) + " must be a positive multiple of 16");
}

void checkProblem(const std::string &op, const Problem &p) {
  if (p.dtype != DType::BF16 && p.dtype != DType::F16)
    fail(op,
         std::string("dtype must be bf16 or f16, got ") + dtypeName(p.dtype));
  if (p.M < 0 || p.M >= kI32Limit)
    fail(op, "M = " + str(p.M) + " out of range [0, 2^31)");
  if (p.N < 0 || p.N >= kI32Limit)
    fail(op, "N = " + str(p.N) + " out of range [0, 2^31)");
  if (p.K < 0 || p.K >= kI32Limit)
    fail(op, "K = " + str(p.K) + " out of range [0, 2^31)");
  checkBlocks(op, p.blockM, p.blockK);
  if (!(p.p >= 0.0 && p.p <= 1.0))
    fail(op, "p = " + std::to_string(p.p) + " must be in [0, 1]");
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The largest power of two dividing v, capped at cap.
int pow2Divisor(int64_t v, int cap) {
  int t = 1;
  while (t < cap && v % (2 * t) == 0)
    t *= 2;
  return t;
}

bool pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

/// Whether the compiler can split a [m, n] dot result over `warps` warps:
/// rows go to up to `warps` warps in 16-row steps, the remaining warps split
/// the columns in 8-column steps (TileToGPU's mmaLayout).
bool splitsOverWarps(int64_t m, int64_t n, int warps) {
  int64_t wm = 1;
  while (wm < warps && m % (16 * wm * 2) == 0)
    wm *= 2;
  int64_t wn = warps / wm;
  return m % 16 == 0 && n % (8 * wn) == 0;
}

float scaleFor(double p) { return p < 1.0 ? float(1.0 / (1.0 - p)) : 0.0f; }

rt::LaunchConfig gridFor(const std::string &op, int64_t programs,
                         CUstream_st *stream) {
  if (programs >= kI32Limit)
    fail(op, str(programs) + " programs exceed the grid limit");
  rt::LaunchConfig c;
  c.grid = rt::Dim3(unsigned(programs));
  c.stream = stream;
  return c;
}

/// GROUP of a TMA kernel at drop rate p: how many output row blocks sweep
/// the columns together, which sets what the running tiles share in L2.
/// bench/NOTES.md, "The tile order follows p", has the tables (H100,
/// groups 1 to all rows at p = 0, 0.5, 0.7, 0.9).
/// - The forward: 8 / (1 - p) (all rows at p = 1). Its tiles read their
///   rows' kept blocks of X and, per column block, the blocks of W that any
///   of the rows kept: at p = 0.9 a window of 8 rows holds under 1 MB of X
///   but needs more than half of W again for every group. Scaling the group
///   by 1 / (1 - p) keeps the window's kept X bytes at p = 0's, and W is
///   read about once: 0.85x (N = 4096) and 0.73x (N = 16384) the time of
///   groups of 8 at p = 0.9.
/// - dW: 8, and 4 from p = 0.6. Its rows are 256-wide strips of dY, which
///   every column's kept blocks revisit; at high p fewer strips per window
///   stay in L2 across all the columns: 0.89x at p = 0.9 and 0.97-0.99x
///   at 0.7, while below p = 0.5 smaller groups lose 1-5%.
/// - dX: 8, and 1 from p = 0.8 (0.94-0.97x at p = 0.9; mixed at 0.7); from
///   p = 0.7 the default dX takes its tiles from a list instead (listed).
int defaultGroup(const std::string &kernel, double p) {
  if (kernel == "dsd_fwd") {
    double keep = 1.0 - p;
    if (keep <= 8.0 / (1 << 20))
      return 1 << 20;
    return int(std::lround(kGroup / keep));
  }
  if (kernel == "dsd_dw")
    return p >= 0.6 ? 4 : kGroup;
  return p >= 0.8 ? 1 : kGroup;
}

/// The constants every tiling of a matmul kernel shares.
rt::Constants baseConstants(const Problem &p) {
  return {{"T", dtypeName(p.dtype)}, {"GROUP", std::to_string(kGroup)}};
}

/// A tiling as an autotuning candidate: its constants and options.
rt::TuneConfig configOf(const Problem &p, const std::string &kernel,
                        const Tiling &t) {
  rt::TuneConfig c;
  c.constants = {{"BM", std::to_string(t.tileM)},
                 {"BN", std::to_string(t.tileN)},
                 {"BK", std::to_string(t.tileK)}};
  // dX's TMA tile may span whole mask blocks along K (resolveTmaTiling).
  if (kernel == "sdd_dx_tma" && t.tileK > p.blockK)
    c.constants["SPAN"] = std::to_string(t.tileK / p.blockK);
  // Only the TMA kernels have the persistent loop and take GROUP from the
  // tiling (the plain kernels keep the base constants' kGroup).
  if (t.persistent >= 0 && kernel.find("_tma") != std::string::npos)
    c.constants["PERSISTENT"] = std::to_string(t.persistent);
  if (t.pingpong > 0 && kernel.find("_tma") != std::string::npos)
    c.constants["PINGPONG"] = "1";
  if (t.listed > 0 && kernel == "sdd_dx_tma")
    c.constants["LISTED"] = "1";
  // dX's tiles by kind: the launch of kept pairs (two blocks wide) or of
  // single blocks (runGemm launches both).
  if (t.kinds > 0 && kernel == "sdd_dx_tma")
    c.constants["KIND"] = t.tileK > p.blockK ? "1" : "2";
  if (t.group > 0 && kernel.find("_tma") != std::string::npos)
    c.constants["GROUP"] = std::to_string(t.group);
  c.numWarps = t.warps;
  c.numStages = t.stages;
  return c;
}

rt::Kernel &kernelFor(const Problem &p, const std::string &name,
                      const Tiling &t) {
  rt::TuneConfig c = configOf(p, name, t);
  rt::JITOptions o;
  o.numWarps = c.numWarps;
  o.numStages = c.numStages;
  rt::Constants constants = baseConstants(p);
  for (const auto &kv : c.constants) // The tiling's constants win.
    constants[kv.first] = kv.second;
  return rt::JIT::global().get(source(), name, constants, o);
}

/// Whether the caller fixed the tiling (then nothing is tuned). `tma`
/// alone only picks the kernel family, whose tilings are still tuned.
bool fixesTiling(const Tiling &t) {
  return t.tileM || t.tileN || t.tileK || t.warps || t.stages ||
         t.persistent >= 0 || t.group > 0 || t.pingpong >= 0 || t.ranked >= 0 ||
         t.listed >= 0 || t.kinds > 0;
}

/// What autotuning tries after a kernel's default tiling, as requests that
/// resolveTmaTiling / resolveTiling complete for the problem (a request the
/// problem cannot run is dropped before anything is compiled). Fields:
/// tileM, tileN, tileK, warps, tma, stages, persistent, group, pingpong.
/// The TMA sets trade the output tile's shape (128 x 256 against 256 x 128
/// and 128 x 128), the 4-warp tile and the persistent loop (bench/NOTES.md,
/// "Persistent tiles from a queue": the forward gains 2-10% from it, dX and
/// dW lose or gain a few per cent by shape; dW is persistent by default
/// since it measured 2-4% faster so under sustained load, "dW on the
/// persistent loop"); dX's 128 x 256 tile spans two
/// 128 x 128 mask blocks and pays at low p only. Ping-pong consumers
/// (Tiling::pingpong) are not tried: on one-warpgroup tiles they measured
/// 0-35% slower than the cooperative 8-warp tiles in every cell from p = 0
/// to 0.9 (bench/NOTES.md, "Ping-pong consumer warpgroups"). The plain sets
/// narrower tiles and fewer warps.
// clang-format off
constexpr int kPersist = 1, kOnePerTile = 0;
const std::map<std::string, std::vector<Tiling>> kCandidates = {
  {"dsd_fwd_tma", {{0, 128, 0, 0}, {256, 128, 0, 0}, {0, 256, 0, 4},
                   {0, 0, 0, 0, -1, 0, kOnePerTile}}},
  {"sdd_dx_tma",  {{0, 0, 256, 0}, {0, 0, 64, 0},   {256, 0, 0, 0},
                   {0, 0, 0, 0, -1, 0, kPersist},
                   {0, 0, 256, 0, -1, 0, kPersist}}},
  {"dsd_dw_tma",  {{0, 128, 0, 0}, {0, 128, 256, 0}, {0, 0, 64, 0},
                   {0, 0, 0, 0, -1, 0, kOnePerTile}}},
  {"dsd_fwd",     {{0, 64, 0, 0},  {0, 0, 0, 4}}},
  {"sdd_dx",      {{0, 0, 64, 0},  {0, 0, 0, 4}}},
  {"dsd_dw",      {{0, 64, 0, 0},  {0, 0, 0, 4}}},
};
// clang-format on

/// The run-time arguments shared by the three matmul kernels after the four
/// pointers: M, N, K, three strides, bm, bk, wpr, scale.
std::vector<rt::Arg> matmulArgs(const Problem &p, rt::DevicePtr a, int64_t sa,
                                rt::DevicePtr b, int64_t sb, rt::DevicePtr mask,
                                rt::DevicePtr out, int64_t so) {
  return {rt::Arg::ptr(a, p.dtype),
          rt::Arg::ptr(b, p.dtype),
          rt::Arg::ptr(mask, DType::I64),
          rt::Arg::ptr(out, p.dtype),
          rt::Arg::i32(int32_t(p.M)),
          rt::Arg::i32(int32_t(p.N)),
          rt::Arg::i32(int32_t(p.K)),
          rt::Arg::i32(int32_t(sa)),
          rt::Arg::i32(int32_t(sb)),
          rt::Arg::i32(int32_t(so)),
          rt::Arg::i32(int32_t(p.blockM)),
          rt::Arg::i32(int32_t(p.blockK)),
          rt::Arg::i32(int32_t(maskWordsPerRow(p.K, p.blockK))),
          rt::Arg::f32(scaleFor(p.p))};
}

/// Whether `kernel` runs its TMA version, and with which tiling.
bool useTma(const std::string &op, const Problem &p, const char *kernel,
            const Tiling &requested, int64_t strideA, int64_t strideB,
            Tiling &t) {
  if (requested.tma == 0)
    return false;
  bool anyTile =
      requested.tileM || requested.tileN || requested.tileK || requested.warps;
  if (requested.tma < 0 && anyTile)
    return false;
  std::string why;
  if (!resolveTmaTiling(p, kernel, requested, strideA, strideB, t, why)) {
    if (requested.tma > 0)
      fail(op, "the TMA kernel cannot run: " + why);
    return false;
  }
  // Only now look at the GPU: argument errors come first, and without a
  // GPU the plain kernels report the missing device themselves.
  bool sm90 = false;
  try {
    sm90 = rt::Device::get().computeMajor() == 9;
  } catch (const rt::Error &) {
    if (requested.tma > 0)
      throw;
  }
  if (requested.tma < 0)
    return sm90;
  if (!sm90)
    fail(op, "the TMA kernels need an sm_90 GPU, this is " +
                 rt::Device::get().arch());
  return true;
}

/// Kept-block lists of the mask, in a scratch buffer owned per stream
/// (calls on one stream are ordered, so reuse is safe): `cap` i32 entries
/// per list, then one count per list, then the lists' ranks longest first
/// (or, unless `ranked`, in index order) and their counts in that order
/// (list_order), then, with a tile list (mask rows only, for dX), every
/// mask block as a tile list, kept ones first (TileList::Kept), or for dX's
/// tiles by kind the single kept blocks and the dropped ones, their number
/// first (TileList::Singles: mask_lists' PAIRS, list_order's TILES = 2).
/// The memory is held until the launches that read the lists are enqueued
/// (with a scratch allocator it is then given back in stream order).
struct KeptLists {
  rt::DevicePtr lists = 0, order = 0, tiles = 0;
  std::unique_ptr<rt::Scratch> memory;
};
enum class TileList { None, Kept, Singles };
KeptLists keptLists(const std::string &op, const Problem &p, rt::DevicePtr mask,
                    bool byCols, bool ranked, TileList tileList,
                    CUstream_st *stream) {
  bool tiles = tileList != TileList::None;
  bool pairs = tileList == TileList::Singles;
  if (byCols && tiles)
    fail(op, "tile lists are over mask rows");
  int64_t nmb = ceilDiv(p.M, p.blockM), nkb = ceilDiv(p.K, p.blockK);
  int64_t lists = byCols ? nkb : nmb, cap = byCols ? nmb : nkb;
  if (lists * (cap + 8) >= kI32Limit)
    fail(op, "the mask has too many blocks for kept-block lists");
  // The counts follow the lists, and the lists' order (2 ints per list,
  // list_order) the counts, each at a 16-byte boundary (kernel pointers are
  // 16-byte aligned).
  // Two counts per list with pairs (singles, then dropped ones).
  int64_t countsAt = (lists * cap * 4 + 15) / 16 * 16;
  int64_t orderAt = countsAt + (lists * (pairs ? 8 : 4) + 15) / 16 * 16;
  int64_t tilesAt = orderAt + (lists * 8 + 15) / 16 * 16;
  size_t bytes = size_t(tilesAt + (tiles ? (1 + lists * cap) * 4 : 0));
  // Graph-safe: from the user's allocator while capturing (LaunchMemory.h).
  auto memory = std::make_unique<rt::Scratch>(bytes, stream, byCols ? 1 : 0,
                                              "sparsedrop's kept-block lists");
  rt::DevicePtr base = memory->ptr();
  rt::DevicePtr counts = base + rt::DevicePtr(countsAt);
  rt::Kernel &k = rt::JIT::global().get(
      source(), "mask_lists",
      {{"BY_COLS", byCols ? "1" : "0"}, {"PAIRS", pairs ? "1" : "0"}});
  k.launch(gridFor(op, lists, stream),
           {rt::Arg::ptr(mask, DType::I64), rt::Arg::ptr(base, DType::I32),
            rt::Arg::ptr(counts, DType::I32), rt::Arg::i32(int32_t(nmb)),
            rt::Arg::i32(int32_t(nkb)),
            rt::Arg::i32(int32_t(maskWordsPerRow(p.K, p.blockK))),
            rt::Arg::i32(int32_t(cap))});
  // The kernels take their tiles longest list first (list_order).
  rt::DevicePtr order = base + rt::DevicePtr(orderAt);
  rt::DevicePtr tilesPtr = base + rt::DevicePtr(tilesAt);
  rt::JIT::global()
      .get(source(), "list_order",
           {{"RANKED", ranked ? "1" : "0"},
            {"TILES", pairs   ? "2"
                      : tiles ? "1"
                              : "0"}})
      .launch(gridFor(op, ceilDiv(lists, kListOrderBlock), stream),
              {rt::Arg::ptr(counts, DType::I32),
               rt::Arg::ptr(order, DType::I32), rt::Arg::i32(int32_t(lists)),
               rt::Arg::ptr(base, DType::I32), rt::Arg::i32(int32_t(cap)),
               rt::Arg::ptr(tilesPtr, DType::I32)});
  return {base, order, tilesPtr, std::move(memory)};
}

rt::Arg tensor(const Problem &p, rt::DevicePtr ptr, int64_t rows, int64_t cols,
               int64_t stride) {
  return rt::Arg::tensor2d(ptr, p.dtype, rows, cols, stride);
}

} // namespace

bool resolveTmaTiling(const Problem &p, const char *kernel,
                      const Tiling &requested, int64_t strideA, int64_t strideB,
                      Tiling &t, std::string &why) {
  std::string k = kernel;
  t = requested;
  bool pingpong = t.pingpong > 0;
  if (!t.warps)
    t.warps = pingpong ? 4 : 8;
  if (pingpong) {
    // Each consumer warpgroup owns whole tiles of the persistent loop.
    if (t.warps != 4) {
      why = "ping-pong tiles are one warpgroup's (warps = 4), got warps = " +
            str(t.warps);
      return false;
    }
    if (t.persistent == 0) {
      why = "ping-pong consumers take alternate tiles of the persistent "
            "loop (persistent = 0 was asked for)";
      return false;
    }
    t.persistent = 1;
  }
  // The output rows of a tile are one 16-row strip per warp (one m64
  // wgmma per warpgroup); the reduction step is 64 (one swizzled panel).
  int *outRows, *red;
  if (k == "dsd_fwd") {
    outRows = &t.tileM, red = &t.tileK;
    // 256 wide: 582 vs 441 TFLOP/s at 128 (bench/sparsedrop/RESULTS.md).
    if (!t.tileN)
      t.tileN = 256;
  } else if (k == "sdd_dx") {
    outRows = &t.tileM, red = &t.tileN;
    if (!t.tileK)
      t.tileK = 128;
  } else if (k == "dsd_dw") {
    outRows = &t.tileN, red = &t.tileM;
    if (!t.tileK)
      t.tileK = 128;
    // 256 rows (two m64 wgmmas per warpgroup): 512 vs 398 TFLOP/s at 128.
    if (!t.tileN)
      t.tileN = 32 * (t.warps ? t.warps : 8);
  } else {
    why = "unknown kernel (dsd_fwd, sdd_dx or dsd_dw)";
    return false;
  }
  if (!t.group)
    t.group = defaultGroup(k, p.p);
  if (t.warps != 4 && t.warps != 8) {
    why = "warps = " + str(t.warps) + " must be 4 or 8";
    return false;
  }
  if (!*outRows)
    *outRows = 16 * t.warps;
  if (!*red)
    *red = 64;
  int outCols = k == "dsd_fwd" ? t.tileN : t.tileK;
  if (*outRows != 16 * t.warps && *outRows != 32 * t.warps) {
    why = "the output tile needs 16 or 32 rows per warp (" + str(16 * t.warps) +
          " or " + str(32 * t.warps) + "), got " + str(*outRows);
    return false;
  }
  if (*red != 64) {
    why = "the reduction step must be 64, got " + str(*red);
    return false;
  }
  if (!pow2(outCols) || outCols < 64 || outCols > 256) {
    why = "the output tile width must be 64, 128 or 256, got " + str(outCols);
    return false;
  }
  // dX's tile may also span whole mask blocks along K (it stores zeros in
  // the dropped ones' columns): 128 x 256 tiles on 128 x 128 blocks.
  bool spansK = k == "sdd_dx" && t.tileK > p.blockK && t.tileK % p.blockK == 0;
  if (p.blockM % t.tileM || (p.blockK % t.tileK && !spansK)) {
    why = "mask blocks " + str(p.blockM) + " x " + str(p.blockK) +
          " are not multiples of the tile (" + str(t.tileM) + " x " +
          str(t.tileK) + ")";
    return false;
  }
  // The f32 accumulators of a consumer thread: more than 128 do not fit
  // beside the operands' fragments, and ptxas spills them and serializes
  // the wgmmas (C7511; 256 x 256 on 8 warps, 128 x 256 on 4).
  if (*outRows * outCols > 128 * 32 * t.warps) {
    why = "a " + str(*outRows) + " x " + str(outCols) + " output tile on " +
          str(t.warps) + " warps holds " +
          str(*outRows * outCols / (32 * t.warps)) +
          " accumulators per thread (at most 128: use 32 x 128 per warp)";
    return false;
  }
  // dX's tiles from the kept-first tile list (LISTED): one tile per mask
  // block, on the persistent loop. By default from p = 0.7: 0.83-0.93x the
  // time there, 0.95-1.18x at p = 0.1-0.5 (bench/NOTES.md, "dX's kept tiles
  // first").
  bool blockTile = k == "sdd_dx" && t.tileM == p.blockM && t.tileK == p.blockK;
  if (k != "sdd_dx")
    t.listed = 0; // The forward and dW take lists of their own.
  if (t.listed > 0 && !blockTile) {
    why = "listed dX tiles are whole mask blocks (" + str(p.blockM) + " x " +
          str(p.blockK) + "), got " + str(t.tileM) + " x " + str(t.tileK);
    return false;
  }
  // dX's tiles by kind: single blocks plus pairs of them (two blocks wide,
  // at most 256 columns). By default where it measured faster, unless the
  // caller asked for something the two launches do not take.
  bool kindsFit = blockTile && 2 * t.tileK <= 256 && !pingpong;
  if (k != "sdd_dx")
    t.kinds = 0;
  if (t.kinds > 0 && !kindsFit) {
    why = "dX's tiles by kind take tiles of one mask block, at most 128 "
          "wide, without ping-pong; got " +
          str(t.tileM) + " x " + str(t.tileK) + " on " + str(p.blockM) + " x " +
          str(p.blockK) + " blocks";
    return false;
  }
  if (t.kinds < 0)
    t.kinds = kindsFit && p.p >= kKindsFrom && p.p < kKindsTo &&
                      t.persistent != 0 && t.listed <= 0
                  ? 1
                  : 0;
  if (t.kinds > 0)
    t.listed = 1; // The single blocks come from the device-side list.
  if (t.listed < 0)
    t.listed = blockTile && p.p >= kListedFrom && t.persistent != 0 ? 1 : 0;
  if (t.listed > 0) {
    if (t.persistent == 0) {
      why =
          std::string(t.kinds > 0 ? "dX's tiles by kind" : "listed dX tiles") +
          " run on the persistent loop (persistent = 0 was asked for)";
      return false;
    }
    t.persistent = 1;
  }
  if (strideA % 8 || strideB % 8) {
    why = "operand row strides must be multiples of 8 elements, got " +
          str(strideA) + " and " + str(strideB);
    return false;
  }
  return true;
}

int64_t maskWordsPerRow(int64_t K, int64_t blockK) {
  return blockK > 0 ? ceilDiv(ceilDiv(K, blockK), 64) : 0;
}

int64_t maskWords(int64_t M, int64_t K, int64_t blockM, int64_t blockK) {
  return blockM > 0 ? ceilDiv(M, blockM) * maskWordsPerRow(K, blockK) : 0;
}

int64_t dropThreshold(double p) { return std::llround(std::ldexp(p, 32)); }

Tiling resolveTiling(const Problem &p, const char *kernel,
                     const Tiling &requested) {
  std::string op = std::string("tiling of ") + kernel;
  checkProblem(op, p);
  std::string k = kernel;
  Tiling t = requested;
  int capM, capN, capK;
  if (k == "dsd_fwd")
    capM = 128, capN = 128, capK = 32;
  else if (k == "sdd_dx")
    capM = 128, capN = 32, capK = 128;
  else if (k == "dsd_dw")
    capM = 32, capN = 128, capK = 128;
  else
    fail(op, "unknown kernel (dsd_fwd, sdd_dx or dsd_dw)");
  if (!t.tileM)
    t.tileM = pow2Divisor(p.blockM, capM);
  if (!t.tileN)
    t.tileN = capN;
  if (!t.tileK)
    t.tileK = pow2Divisor(p.blockK, capK);
  // The output tile's area picks the warps: 8 for 128 x 128, else 4.
  int64_t outArea = k == "dsd_fwd"  ? int64_t(t.tileM) * t.tileN
                    : k == "sdd_dx" ? int64_t(t.tileM) * t.tileK
                                    : int64_t(t.tileN) * t.tileK;
  int64_t outRows = k == "dsd_dw" ? t.tileN : t.tileM;
  int64_t outCols = k == "dsd_fwd" ? t.tileN : t.tileK;
  if (!t.warps) {
    t.warps = outArea >= 128 * 128 ? 8 : 4;
    while (t.warps > 1 && !splitsOverWarps(outRows, outCols, t.warps))
      t.warps /= 2;
  }

  for (auto [name, v] : {std::pair<const char *, int>{"tileM", t.tileM},
                         {"tileN", t.tileN},
                         {"tileK", t.tileK}})
    if (!pow2(v) || v < 16 || v > 256)
      fail(op, std::string(name) + " = " + str(v) +
                   " must be a power of two in [16, 256]");
  if (t.warps != 1 && t.warps != 2 && t.warps != 4 && t.warps != 8)
    fail(op, "warps = " + str(t.warps) + " must be 1, 2, 4 or 8");
  if (!splitsOverWarps(outRows, outCols, t.warps))
    fail(op, "the " + str(outRows) + " x " + str(outCols) +
                 " output tile cannot be split over " + str(t.warps) +
                 " warps; use a larger tile or fewer warps");
  if (p.blockM % t.tileM)
    fail(op, "blockM = " + str(p.blockM) + " is not a multiple of tileM = " +
                 str(t.tileM) + " (a tile may not straddle mask blocks)");
  if (p.blockK % t.tileK)
    fail(op, "blockK = " + str(p.blockK) + " is not a multiple of tileK = " +
                 str(t.tileK) + " (a tile may not straddle mask blocks)");
  return t;
}

namespace {
/// The checks and launch shape both mask generators share; false when the
/// mask is empty (nothing to launch).
struct MaskShape {
  int64_t nmb, nkb, wpr, halves;
};
bool maskShape(const std::string &op, double p, int64_t M, int64_t K,
               int64_t blockM, int64_t blockK, rt::DevicePtr maskOut,
               MaskShape &s) {
  if (!(p >= 0.0 && p <= 1.0))
    fail(op, "p = " + std::to_string(p) + " must be in [0, 1]");
  if (M < 0 || M >= kI32Limit || K < 0 || K >= kI32Limit)
    fail(op, "M = " + str(M) + ", K = " + str(K) + " out of range [0, 2^31)");
  checkBlocks(op, blockM, blockK);
  checkPointer(op, "maskOut", maskOut);
  s.nmb = ceilDiv(M, blockM), s.nkb = ceilDiv(K, blockK);
  s.wpr = maskWordsPerRow(K, blockK);
  s.halves = 2 * s.nmb * s.wpr;
  if (s.halves >= kI32Limit || s.nmb * s.nkb >= kI32Limit)
    fail(op, "the mask has too many blocks");
  return s.halves != 0;
}
} // namespace

void generateMask(uint64_t seed, int64_t offset, double p, int64_t M, int64_t K,
                  int64_t blockM, int64_t blockK, rt::DevicePtr maskOut,
                  CUstream_st *stream) {
  const std::string op = "generateMask";
  MaskShape s;
  if (!maskShape(op, p, M, K, blockM, blockK, maskOut, s))
    return;
  rt::Kernel &k = rt::JIT::global().get(
      source(), "mask_gen", {{"ROWS", std::to_string(kMaskGenRows)}});
  k.launch(gridFor(op, ceilDiv(s.halves, kMaskGenRows), stream),
           {rt::Arg::ptr(maskOut, DType::I32), rt::Arg::u64(seed),
            rt::Arg::i64(offset), rt::Arg::i64(dropThreshold(p)),
            rt::Arg::i32(int32_t(s.nmb)), rt::Arg::i32(int32_t(s.nkb)),
            rt::Arg::i32(int32_t(s.wpr))});
}

void generateMaskAt(uint64_t seed, rt::DevicePtr offsetAt, int64_t base,
                    double p, int64_t M, int64_t K, int64_t blockM,
                    int64_t blockK, rt::DevicePtr maskOut,
                    CUstream_st *stream) {
  const std::string op = "generateMaskAt";
  checkPointer(op, "offsetAt", offsetAt);
  MaskShape s;
  if (!maskShape(op, p, M, K, blockM, blockK, maskOut, s))
    return;
  rt::Kernel &k = rt::JIT::global().get(
      source(), "mask_gen_at", {{"ROWS", std::to_string(kMaskGenRows)}});
  k.launch(gridFor(op, ceilDiv(s.halves, kMaskGenRows), stream),
           {rt::Arg::ptr(maskOut, DType::I32), rt::Arg::u64(seed),
            rt::Arg::ptr(offsetAt, DType::I64), rt::Arg::i64(base),
            rt::Arg::i64(dropThreshold(p)), rt::Arg::i32(int32_t(s.nmb)),
            rt::Arg::i32(int32_t(s.nkb)), rt::Arg::i32(int32_t(s.wpr))});
}

namespace {

/// A problem dimension; each operand and output is a matrix over two.
enum class Dim { M, N, K };

/// What tells the three GEMMs apart: the operands' names and shapes, and how
/// the TMA kernel gets the mask. Everything else (checks, the choice of TMA
/// or plain kernel, the grid, the arguments) is shared by `runGemm`.
struct GemmSpec {
  const char *op, *kernel; ///< "forward", "dsd_fwd"
  const char *a, *b, *out; ///< Operand names in error messages.
  const char *outParam;    ///< The kernels' output parameter.
  Dim aRows, aCols, bRows, bCols, outRows, outCols;
  Dim reduction;
  /// The TMA kernel takes kept-block lists (by mask rows or columns)
  /// instead of the mask bits.
  enum { MaskBits, ListsByRows, ListsByCols } tmaMask;
};

// clang-format off
//                        op           kernel     A     B    out   param  A rows  A cols  B rows  B cols  out rows out cols reduction  mask for TMA
const GemmSpec kForward  {"forward",   "dsd_fwd", "X",  "W", "Y",  "y",  Dim::M, Dim::K, Dim::N, Dim::K, Dim::M, Dim::N, Dim::K, GemmSpec::ListsByRows};
const GemmSpec kBackwardX{"backwardX", "sdd_dx",  "dY", "W", "dX", "dx", Dim::M, Dim::N, Dim::N, Dim::K, Dim::M, Dim::K, Dim::N, GemmSpec::MaskBits};
const GemmSpec kBackwardW{"backwardW", "dsd_dw",  "dY", "X", "dW", "dw", Dim::M, Dim::N, Dim::M, Dim::K, Dim::N, Dim::K, Dim::M, GemmSpec::ListsByCols};
// clang-format on

int64_t extent(const Problem &p, Dim d) {
  return d == Dim::M ? p.M : d == Dim::N ? p.N : p.K;
}
int64_t tileOf(const Tiling &t, Dim d) {
  return d == Dim::M ? t.tileM : d == Dim::N ? t.tileN : t.tileK;
}

void addTo(detail::DecisionKey &k, const Problem &p) {
  k.add(int(p.dtype)).add(p.M).add(p.N).add(p.K).add(p.blockM).add(p.blockK)
      .add(p.p);
}
void addTo(detail::DecisionKey &k, const Tiling &t) {
  for (int v : {t.tileM, t.tileN, t.tileK, t.warps, t.tma, t.stages,
                t.persistent, t.group, t.pingpong, t.ranked, t.listed,
                t.kinds})
    k.add(v);
}

/// Launches `kernel` with the first of `tilings` when it is the only one,
/// else with the one autotuning picks for this problem (the first is the
/// default, so SPARSETILE_AUTOTUNE=0 keeps it). The choice is made once per
/// (problem, tilings) and remembered.
void launchGemm(const GemmSpec &g, const Problem &p, const std::string &kernel,
                const std::vector<Tiling> &tilings,
                const std::vector<rt::Arg> &args, CUstream_st *stream) {
  // The list kernels take their ranked dim in whole mask blocks (the
  // partial last block may be ranked anywhere).
  bool lists = g.tmaMask != GemmSpec::MaskBits &&
               kernel.find("_tma") != std::string::npos;
  auto tiles = [&](Dim d, const Tiling &t) {
    int64_t e = extent(p, d);
    if (lists && d == Dim::M && g.tmaMask == GemmSpec::ListsByRows)
      e = ceilDiv(e, p.blockM) * p.blockM;
    if (lists && d == Dim::K && g.tmaMask == GemmSpec::ListsByCols)
      e = ceilDiv(e, p.blockK) * p.blockK;
    return ceilDiv(e, tileOf(t, d));
  };
  auto programs = [&](const Tiling &t) {
    return tiles(g.outRows, t) * tiles(g.outCols, t);
  };
  detail::DecisionKey key;
  key.add(&g).add(tilings.size()).add(kernel);
  addTo(key, p);
  for (const Tiling &t : tilings)
    addTo(key, t);
  // The integer arguments (strides, counts) are part of the tuner's key.
  for (const rt::Arg &a : args)
    if (!a.isTensor() && a.isInteger())
      key.add(a.intValue());
  static detail::Decisions<detail::Chosen> chosen;
  detail::Chosen c;
  if (!chosen.find(key, c)) {
    if (tilings.size() == 1) {
      // The first launch compiles the tiling; a refusal (the shared memory
      // it would need, as the compiler counts it) names it.
      const Tiling &t = tilings[0];
      c = {&kernelFor(p, kernel, t), gridFor(g.op, programs(t), stream)};
      c.config.stream = stream;
      detail::launchTiling(g.op,
                           str(t.tileM) + " x " + str(t.tileN) + " x " +
                               str(t.tileK) +
                               (t.warps ? ", " + str(t.warps) + " warps" : ""),
                           *c.kernel, c.config, args);
      chosen.put(key, c);
      return;
    }
    std::vector<rt::TuneConfig> configs;
    for (const Tiling &t : tilings)
      configs.push_back(configOf(p, kernel, t));
    // The tuner's candidates are the distinct configurations, in order;
    // each keeps the first tiling that gave it, for its grid.
    std::vector<Tiling> distinct;
    std::set<std::string> seen;
    for (size_t i = 0; i < configs.size(); ++i)
      if (seen.insert(configs[i].describe()).second)
        distinct.push_back(tilings[i]);
    rt::LaunchContext ctx;
    ctx.key = "M=" + str(p.M) + ",N=" + str(p.N) + ",K=" + str(p.K) +
              ",bm=" + str(p.blockM) + ",bk=" + str(p.blockK) +
              ",p=" + std::to_string(p.p);
    ctx.grid = [&](const rt::Constants &cs, const rt::LaunchArgs &) {
      Tiling t;
      t.tileM = int(detail::constantOf(cs, "BM"));
      t.tileN = int(detail::constantOf(cs, "BN"));
      t.tileK = int(detail::constantOf(cs, "BK"));
      return gridFor(g.op, programs(t), stream).grid;
    };
    rt::AutotunedKernel &tuner =
        detail::tunedKernel(source(), kernel, baseConstants(p), {},
                            detail::uniqueConfigs(configs), {g.outParam});
    size_t index = tuner.choose(args, stream, &ctx);
    c = {&tuner.candidate(index),
         gridFor(g.op, programs(distinct.at(index)), stream)};
    chosen.put(key, c);
  }
  c.config.stream = stream;
  c.kernel->launch(c.config, args);
}

void runGemm(const GemmSpec &g, const Problem &p, rt::DevicePtr a,
             int64_t strideA, rt::DevicePtr b, int64_t strideB,
             rt::DevicePtr mask, rt::DevicePtr out, int64_t strideOut,
             CUstream_st *stream, const Tiling &tiling) {
  const std::string op = g.op;
  auto ext = [&](Dim d) { return extent(p, d); };
  checkProblem(op, p);
  checkMatrix(op, g.a, a, ext(g.aRows), ext(g.aCols), strideA);
  checkMatrix(op, g.b, b, ext(g.bRows), ext(g.bCols), strideB);
  checkMatrix(op, g.out, out, ext(g.outRows), ext(g.outCols), strideOut);
  checkPointer(op, "mask", mask);
  if (ext(g.outRows) == 0 || ext(g.outCols) == 0)
    return;
  bool tune = !fixesTiling(tiling);

  // Whether the TMA kernels run, and their candidate tilings: decided once
  // per (problem, strides, request).
  struct TmaChoice {
    bool tma = false;
    std::vector<Tiling> tilings;
  };
  static detail::Decisions<TmaChoice> tmaChoices;
  detail::DecisionKey key;
  key.add(&g).add(strideA).add(strideB);
  addTo(key, p);
  addTo(key, tiling);
  TmaChoice choice;
  if (!tmaChoices.find(key, choice)) {
    Tiling tt;
    choice.tma = useTma(op, p, g.kernel, tiling, strideA, strideB, tt);
    if (choice.tma) {
      choice.tilings = {tt};
      // dX's tiles by kind are two launches, which the tuner does not time.
      std::string kernel = std::string(g.kernel) + "_tma";
      for (Tiling request : tune && tt.kinds <= 0 ? kCandidates.at(kernel)
                                                 : std::vector<Tiling>{}) {
        std::string why;
        Tiling resolved;
        request.kinds = 0;
        if (resolveTmaTiling(p, g.kernel, request, strideA, strideB, resolved,
                             why))
          choice.tilings.push_back(resolved);
      }
    }
    tmaChoices.put(key, choice);
  }
  if (choice.tma) {
    // The tensor maps need a non-empty box even when the reduction is empty
    // (the kernel then runs no K step and writes zeros).
    auto box = [&](Dim d) {
      return d == g.reduction ? std::max<int64_t>(ext(d), 1) : ext(d);
    };
    std::string kernel = std::string(g.kernel) + "_tma";
    const std::vector<Tiling> &tilings = choice.tilings;
    bool kinds = tilings[0].kinds > 0;
    KeptLists kept; // Held until the GEMM is enqueued.
    std::vector<rt::Arg> args = {
        tensor(p, a, box(g.aRows), box(g.aCols), strideA),
        tensor(p, b, box(g.bRows), box(g.bCols), strideB)};
    if (g.tmaMask == GemmSpec::MaskBits) {
      // dX: the tile list when a tiling takes it (Tiling::listed), else
      // the mask again in the unused parameter.
      bool listed = false;
      for (const Tiling &t : tilings)
        listed |= t.listed > 0;
      rt::DevicePtr tiles = mask;
      if (listed) {
        kept = keptLists(op, p, mask, /*byCols=*/false, /*ranked=*/true,
                         kinds ? TileList::Singles : TileList::Kept, stream);
        tiles = kept.tiles;
      }
      args.insert(args.end(),
                  {rt::Arg::ptr(mask, DType::I64),
                   rt::Arg::ptr(tiles, DType::I32), rt::Arg::ptr(out, p.dtype),
                   rt::Arg::i32(int32_t(p.M)), rt::Arg::i32(int32_t(p.N)),
                   rt::Arg::i32(int32_t(p.K))});
    } else {
      bool byCols = g.tmaMask == GemmSpec::ListsByCols;
      kept = keptLists(op, p, mask, byCols, tiling.ranked != 0,
                       TileList::None, stream);
      args.insert(args.end(), {rt::Arg::ptr(kept.lists, DType::I32),
                               rt::Arg::ptr(kept.order, DType::I32),
                               rt::Arg::ptr(out, p.dtype),
                               rt::Arg::i32(int32_t(ext(g.outRows))),
                               rt::Arg::i32(int32_t(ext(g.outCols)))});
    }
    // The last count: mask words per row, or the capacity of a list.
    int64_t last =
        g.tmaMask == GemmSpec::MaskBits      ? maskWordsPerRow(p.K, p.blockK)
        : g.tmaMask == GemmSpec::ListsByRows ? ceilDiv(p.K, p.blockK)
                                             : ceilDiv(p.M, p.blockM);
    args.insert(args.end(),
                {rt::Arg::i32(int32_t(strideOut)),
                 rt::Arg::i32(int32_t(p.blockM)),
                 rt::Arg::i32(int32_t(p.blockK)), rt::Arg::i32(int32_t(last)),
                 rt::Arg::f32(scaleFor(p.p))});
    if (kinds) {
      // The kept pairs over the grid of pairs (the others return at once),
      // then the single blocks from the list, as many as it counts.
      Tiling wide = tilings[0];
      wide.tileK *= 2;
      wide.listed = 0;
      launchGemm(g, p, kernel, {wide}, args, stream);
    }
    launchGemm(g, p, kernel, tilings, args, stream);
    return;
  }
  std::vector<Tiling> tilings = {resolveTiling(p, g.kernel, tiling)};
  for (const Tiling &request :
       tune ? kCandidates.at(g.kernel) : std::vector<Tiling>{}) {
    try {
      tilings.push_back(resolveTiling(p, g.kernel, request));
    } catch (const rt::Error &) {
      // This problem cannot run the candidate (mask blocks; a candidate
      // the compiler refuses is skipped by the tuner).
    }
  }
  launchGemm(g, p, g.kernel, tilings,
             matmulArgs(p, a, strideA, b, strideB, mask, out, strideOut),
             stream);
}

} // namespace

// The three entry points, one line each: each is its row of the table.
// clang-format off
void forward(const Problem &p, rt::DevicePtr X, int64_t strideX, rt::DevicePtr W, int64_t strideW, rt::DevicePtr mask, rt::DevicePtr Y, int64_t strideY, CUstream_st *stream, const Tiling &tiling) { runGemm(kForward, p, X, strideX, W, strideW, mask, Y, strideY, stream, tiling); }
void backwardX(const Problem &p, rt::DevicePtr dY, int64_t strideDY, rt::DevicePtr W, int64_t strideW, rt::DevicePtr mask, rt::DevicePtr dX, int64_t strideDX, CUstream_st *stream, const Tiling &tiling) { runGemm(kBackwardX, p, dY, strideDY, W, strideW, mask, dX, strideDX, stream, tiling); }
void backwardW(const Problem &p, rt::DevicePtr dY, int64_t strideDY, rt::DevicePtr X, int64_t strideX, rt::DevicePtr mask, rt::DevicePtr dW, int64_t strideDW, CUstream_st *stream, const Tiling &tiling) { runGemm(kBackwardW, p, dY, strideDY, X, strideX, mask, dW, strideDW, stream, tiling); }
// clang-format on

} // namespace sparsetile::ops::sparsedrop
