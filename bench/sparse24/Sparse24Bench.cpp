//===- Sparse24Bench.cpp - Transposable 2:4 mask bandwidth ----------------===//
//
// Times sparsetile's transposable 2:4 mask (bf16) on [16384, 4096] and
// [4096, 4096], and a device-to-device copy in the same process, with CUDA
// events after warm-up and an L2 flush before every timed run (as
// bench/gated/GatedBench.cpp); prints medians as a markdown table.
// Effective bandwidth = (bytes read + bytes written) / time:
//   mask only:        reads W (2 B/entry), writes the i8 mask (1 B)  = 3 R C
//   mask + pruned W:  reads W, writes mask and W * mask (2 B)        = 5 R C
//   pruned W only:    reads W, writes W * mask                        = 4 R C
// Also times the row-wise mask, the MVUE sparsifier, masked decay,
// compress24 (5.25 B/entry), the one-pass mask update (7.25 B/entry) and
// the fused MVUE compression of dY^T (3.125 B/entry) on the same shapes, all
// against the copy of this run: the 1 GiB copy (issue 13's yardstick) and a
// copy of the row's own byte count, timed the same way, which tells launch
// and tail costs at small sizes apart from the kernel's own rate.
//
// Then the 2:4 sparse GEMMs (bf16, 16384 tokens) at W [16384, 4096] and
// W [4096, 16384]: compress24 (W and W^T), the forward Y = X W^T and the
// input gradient dX = dY W on sparse tensor cores (sparse_linear), timed the
// same way. TFLOP/s count the dense work 2 M R C, so they compare directly
// with cuBLAS on the pruned weight (torch_sparse24.py, same session).
//
// Last, one whole 2:4 linear layer training step (per-step compress24, the
// forward, the fused MVUE compression of dY^T, dX and dW on sparse tensor
// cores) at W [4096, 16384] and [16384, 4096], 16384 tokens, part by part and
// whole; torch_sparse24.py times the dense and cuSPARSELt steps.
//
// Usage: sparsetile_sparse24_bench [--json PATH] [--tables NAME,NAME]; with
// --json every row also goes to PATH (bench/plot.py reads it); --tables runs
// only the named tables of bandwidth, gemm and step (default: all). The
// bandwidth table's JIT-compiled rows read dsl_examples/ (or
// $SPARSETILE_EXAMPLES_DIR), so an edited kernel can be timed against the
// library's embedded one without a rebuild.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/ops/Sparse24.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/JIT.h"

#include "BenchUtil.h"

#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace sparsetile;
using namespace sparsetile::ops;

using namespace sparsetile::bench;

namespace {

struct Shape {
  int64_t R, C;
};

/// The helpers' effective bandwidth against the copy (table "bandwidth").
void bandwidthTable(JsonReport &json, CopyCeiling &ceiling, double copyTBs) {
  std::printf("| op | R | C | ms | bytes/entry | TB/s | %% of copy | %% of same-size copy |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");

  std::mt19937 rng(1234);
  for (Shape s : {Shape{16384, 4096}, Shape{4096, 4096}}) {
    int64_t n = s.R * s.C;
    auto w = rt::DeviceBuffer::fromHost(randomBf16(n, rng));
    auto g = rt::DeviceBuffer::fromHost(randomBf16(n, rng));
    rt::DeviceBuffer mask(n), out(n * 2);
    mask.fill(0xff);
    out.fill(0xff);
    auto row = [&](const char *op, double bytesPerEntry,
                   const std::function<void()> &fn) {
      double ms = medianMs(fn);
      double tbs = bytesPerEntry * n / (ms * 1e-3) / 1e12;
      // Half the row's bytes copied: read + written, as the row counts.
      double sameTBs = ceiling.tbs(size_t(bytesPerEntry * double(n) / 2));
      std::printf("| %s | %lld | %lld | %.4f | %.0f | %.3f | %.0f%% | %.0f%% |\n",
                  op, (long long)s.R, (long long)s.C, ms, bytesPerEntry, tbs,
                  100 * tbs / copyTBs, 100 * tbs / sameTBs);
      json.row()
          .str("table", "bandwidth")
          .str("op", op)
          .integer("R", s.R)
          .integer("C", s.C)
          .num("ms", ms)
          .num("bytes_per_entry", bytesPerEntry)
          .num("tbs", tbs)
          .num("pct_of_copy", 100 * tbs / copyTBs)
          .num("same_size_copy_tbs", sameTBs)
          .num("pct_of_same_size_copy", 100 * tbs / sameTBs);
    };
    // A JIT-compiled mask24_transposable's arguments for the mask alone
    // (WRITE_OUT = 0; w stands in for the unwritten out).
    auto maskOnlyArgs = [&] {
      return std::vector<rt::Arg>{
          rt::Arg::ptr(w.ptr(), DType::BF16), rt::Arg::ptr(mask.ptr(), DType::I8),
          rt::Arg::ptr(w.ptr(), DType::BF16), rt::Arg::i32(int32_t(s.R)),
          rt::Arg::i32(int32_t(s.C)),         rt::Arg::i32(int32_t(s.C)),
          rt::Arg::i32(int32_t(s.C)),         rt::Arg::i32(int32_t(s.C))};
    };
    row("transposable mask", 3, [&] {
      mask24Transposable(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C, 0, 0);
    });
    {
      // The hand-written kernel (the row above, through the library) against
      // the frozen generated one it replaced (mask24_generated.tile, JIT-
      // compiled the same way), launched alike, in the same run.
      static const char *const modes[2] = {"hand-written", "generated reference"};
      rt::Kernel &ref = rt::JIT::global().get(
          rt::KernelSource::fromFile(SPARSETILE_MASK24_REFERENCE),
          "mask24_transposable",
          {{"T", "bf16"}, {"WRITE_MASK", "1"}, {"WRITE_OUT", "0"}, {"BLOCK", "128"}});
      int64_t groups = (s.R / 4) * (s.C / 4);
      for (const char *mode : modes) {
        std::string name = std::string("transposable mask, ") + mode;
        row(name.c_str(), 3, [&] {
          if (mode == modes[0]) {
            mask24Transposable(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(),
                               s.C, 0, 0);
            return;
          }
          ref.launch(rt::Dim3(unsigned((groups + 127) / 128)), maskOnlyArgs());
        });
      }
    }
    row("transposable mask + W*mask", 5, [&] {
      mask24Transposable(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C,
                         out.ptr(), s.C);
    });
    row("transposable W*mask", 4, [&] {
      mask24Transposable(DType::BF16, s.R, s.C, w.ptr(), s.C, 0, 0, out.ptr(), s.C);
    });
    row("row-wise mask", 3, [&] {
      mask24Rowwise(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C, 0, 0);
    });
    row("mvue24", 4, [&] { mvue24(DType::BF16, w.ptr(), out.ptr(), n, 1, 0); });
    // The library's kernels at other program sizes than its own, JIT-
    // compiled from dsl_examples/sparse24.tile and launched alike.
    auto kernels = rt::KernelSource::fromFile(examplesDir() + "/sparse24.tile");
    // The transposable mask: 4x4 blocks per program (the library's: 128,
    // one per thread; 256 and 512 give each thread two and four).
    for (int block : {256, 512}) {
      rt::Kernel &k = rt::JIT::global().get(kernels, "mask24_transposable",
                                            {{"T", "bf16"},
                                             {"WRITE_MASK", "1"},
                                             {"WRITE_OUT", "0"},
                                             {"BLOCK", std::to_string(block)}});
      int64_t blocks = (s.R / 4) * (s.C / 4);
      std::string name = "transposable mask, BLOCK " + std::to_string(block);
      row(name.c_str(), 3, [&, block = block] {
        k.launch(rt::Dim3(unsigned((blocks + block - 1) / block)), maskOnlyArgs());
      });
    }
    // L blocks a thread (BLOCK 128), the next one's rows loaded during the
    // current one's search, mask only and with W * mask (the library's, for
    // the mask alone: L 2 from 2^20 blocks, L 4 from 2^21, so L 4 at
    // 16384 x 4096 and L 2 at 4096 x 4096; L 1 with W * mask).
    for (int withOut : {0, 1})
      for (int l : {1, 2, 4, 8}) {
        if (withOut && l != 1 && l != 4)
          continue;
        rt::Kernel &k =
            rt::JIT::global().get(kernels, "mask24_transposable",
                                  {{"T", "bf16"},
                                   {"WRITE_MASK", "1"},
                                   {"WRITE_OUT", std::to_string(withOut)},
                                   {"BLOCK", "128"},
                                   {"L", std::to_string(l)}});
        int64_t blocks = (s.R / 4) * (s.C / 4);
        std::string name = std::string("transposable mask") +
                           (withOut ? " + W*mask" : "") + ", L " +
                           std::to_string(l);
        auto args = maskOnlyArgs();
        if (withOut)
          args[2] = rt::Arg::ptr(out.ptr(), DType::BF16);
        row(name.c_str(), withOut ? 5 : 3, [&, l = l, args] {
          k.launch(rt::Dim3(unsigned((blocks + 128 * l - 1) / (128 * l))),
                   args);
        });
      }
    // mvue24: groups per program (the library's: 512).
    for (int block : {256, 1024, 2048}) {
      rt::Kernel &k = rt::JIT::global().get(
          kernels, "mvue24", {{"T", "bf16"}, {"BLOCK", std::to_string(block)}});
      std::string name = "mvue24, BLOCK " + std::to_string(block);
      row(name.c_str(), 4, [&, block = block] {
        k.launch(rt::Dim3(unsigned((n / 4 + block - 1) / block)),
                 {rt::Arg::ptr(w.ptr(), DType::BF16),
                  rt::Arg::ptr(out.ptr(), DType::BF16), rt::Arg::i64(n),
                  rt::Arg::u64(1), rt::Arg::i64(0)});
      });
    }
    row("masked decay", 7, [&] {
      maskedDecay(DType::BF16, g.ptr(), w.ptr(), mask.ptr(), n, 1e-6f);
    });
    // Under the transposable mask written above: W and the mask read (3 B),
    // both compressed operands written (2 x (1 + 1/8) B).
    rt::DeviceBuffer vals(compressedValues(s.R, s.C) * 2),
        meta(compressedMeta(s.R, s.C) * 2),
        valsT(compressedValues(s.C, s.R) * 2),
        metaT(compressedMeta(s.C, s.R) * 2);
    row("compress24 (W and W^T)", 5.25, [&] {
      compress24(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C,
                 vals.ptr(), meta.ptr(), valsT.ptr(), metaT.ptr());
    });
    // compress24's BLK x BLK block (the library's: 64) and the fused MVUE
    // compression's BR features x BT tokens, L token blocks a program
    // (32 x 128, 4).
    // The launch arguments of compress24 (head: w, mask) and mask24_update
    // (head: w, mask, out): the head, both compressed operands, R and C,
    // then a row stride of C for each head tile.
    auto operandArgs = [&](std::vector<rt::Arg> head) {
      size_t strides = head.size();
      for (rt::Arg a : {rt::Arg::ptr(vals.ptr(), DType::BF16),
                        rt::Arg::ptr(meta.ptr(), DType::I16),
                        rt::Arg::ptr(valsT.ptr(), DType::BF16),
                        rt::Arg::ptr(metaT.ptr(), DType::I16),
                        rt::Arg::i32(int32_t(s.R)), rt::Arg::i32(int32_t(s.C))})
        head.push_back(a);
      for (size_t i = 0; i < strides; ++i)
        head.push_back(rt::Arg::i32(int32_t(s.C)));
      return head;
    };
    {
      // 8 warps at BLK 128 halve each thread's 255 registers; at BLK 64
      // half of 8 warps would only repeat the other half's units.
      // Rectangular blocks (BLKC columns) store a line's metadata words in
      // one wider piece (bench/NOTES.md, "compress24's time, part by part");
      // 64 x 128 at 8 warps is the library's, here from dsl_examples/.
      struct Block {
        int blk, blkc, warps;
      };
      for (auto [blk, blkc, warps] :
           {Block{64, 64, 4}, {32, 32, 4}, {128, 128, 4}, {128, 128, 8},
            {64, 128, 8}, {128, 64, 8}, {128, 128, 16}}) {
        rt::JITOptions o;
        o.numWarps = warps;
        rt::Kernel &k = rt::JIT::global().get(
            kernels, "compress24",
            {{"T", "bf16"},
             {"TI", "i16"},
             {"BLK", std::to_string(blk)},
             {"BLKC", std::to_string(blkc)}},
            o);
        std::string name =
            "compress24, BLK " + std::to_string(blk) +
            (blkc != blk ? " x " + std::to_string(blkc) : "") +
            (warps != 4 ? ", " + std::to_string(warps) + " warps" : "");
        row(name.c_str(), 5.25, [&, blk = blk, blkc = blkc] {
          k.launch(rt::Dim3(unsigned(((s.R + blk - 1) / blk) *
                                     ((s.C + blkc - 1) / blkc))),
                   operandArgs({rt::Arg::ptr(w.ptr(), DType::BF16),
                                rt::Arg::ptr(mask.ptr(), DType::I8)}));
        });
      }
      // dY = W's entries as [R tokens, C features] (ldy = C), as the row
      // of the library's fused kernel below reads them.
      // ALIGNED 0: the path for M % 16 != 0 (every token clamped and
      // tested), on the same aligned shape.
      // One unit a thread: BR BT / 16 = 32 x warps. The library runs BR 64
      // BT 128 at 16 warps and picks L by
      // the shape (mvue24CompressT: 32 here at 16384 x 4096, 8 at 4096^2).
      struct Tiling {
        int br, bt, l, aligned, maxnreg, warps;
      };
      for (auto [br, bt, l, aligned, maxnreg, warps] :
           {Tiling{32, 128, 4, 1, 0, 8},
            {32, 128, 8, 1, 0, 8},
            {32, 128, 16, 1, 0, 8},
            {32, 128, 16, 1, 48, 8},
            {64, 128, 8, 1, 0, 16},
            {64, 128, 16, 1, 0, 16},
            {64, 128, 4, 1, 0, 16},
            {64, 64, 8, 1, 0, 8},
            {32, 128, 8, 0, 0, 8},
            {64, 128, 16, 0, 0, 16},
            // Longer programs, and 256-byte feature rows (16-lane loads).
            {64, 128, 32, 1, 0, 16},
            {128, 64, 16, 1, 0, 16},
            {128, 64, 32, 1, 0, 16}}) {
        rt::JITOptions o;
        o.numWarps = warps;
        rt::Kernel &k =
            rt::JIT::global().get(kernels, "mvue24_compress_t",
                                  {{"T", "bf16"},
                                   {"BR", std::to_string(br)},
                                   {"BT", std::to_string(bt)},
                                   {"L", std::to_string(l)},
                                   {"ALIGNED", std::to_string(aligned)},
                                   {"MAXNREG", std::to_string(maxnreg)}},
                                  o);
        std::string name =
            "fused MVUE + compress, BR " + std::to_string(br) + " BT " +
            std::to_string(bt) + " L " + std::to_string(l) +
            (warps != 8 ? ", " + std::to_string(warps) + " warps" : "") +
            (maxnreg ? ", maxnreg " + std::to_string(maxnreg) : "") +
            (aligned ? "" : ", unaligned path");
        int64_t tokens = sparse24GradTokens(s.R);
        int64_t blocks = tokens / bt;
        rt::DeviceBuffer gv(compressedValues(s.C, tokens) * 2),
            gm(compressedMeta(s.C, tokens) * 2);
        row(name.c_str(), 3.125, [&, br = br, l = l, blocks = blocks] {
          k.launch(rt::Dim3(unsigned((s.C + br - 1) / br),
                            unsigned((blocks + l - 1) / l)),
                   {rt::Arg::ptr(w.ptr(), DType::BF16),
                    rt::Arg::ptr(gv.ptr(), DType::BF16),
                    rt::Arg::ptr(gm.ptr(), DType::I16),
                    rt::Arg::i32(int32_t(s.R)), rt::Arg::i32(int32_t(s.C)),
                    rt::Arg::i32(int32_t(s.C)), rt::Arg::u64(1),
                    rt::Arg::i64(0)});
        });
      }
    }
    // W^T's units read by columns (2-byte loads a row apart), and W's rows
    // read a second time and transposed, against the default's one read
    // (CompressPass1).
    row("compress24, pass 1 by columns", 5.25, [&] {
      compress24(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C,
                 vals.ptr(), meta.ptr(), valsT.ptr(), metaT.ptr(), nullptr,
                 CompressPass1::Columns);
    });
    row("compress24, pass 1 re-read and transposed", 5.25, [&] {
      compress24(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C,
                 vals.ptr(), meta.ptr(), valsT.ptr(), metaT.ptr(), nullptr,
                 CompressPass1::Transposed);
    });
    // The one-pass mask update: W read (2 B), mask (1 B), W * mask (2 B)
    // and both compressed operands (2.25 B) written.
    rt::DeviceBuffer pruned(n * 2);
    row("mask update (mask, W*mask, both operands)", 7.25, [&] {
      mask24Update(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C,
                   pruned.ptr(), s.C, vals.ptr(), meta.ptr(), valsT.ptr(),
                   metaT.ptr());
    });
    row("mask update, pass 1 by column pairs", 7.25, [&] {
      mask24Update(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C,
                   pruned.ptr(), s.C, vals.ptr(), meta.ptr(), valsT.ptr(),
                   metaT.ptr(), nullptr, CompressPass1::Pairs);
    });
    // The 64 x 64 block at 4 warps was the library's until 64 x 128.
    // 8 warps on the 64 x 64 block: the search's registers halve (76 a
    // thread against 116); the compression's units then repeat over the
    // second half. On 64 x 128 and 128 x 64 blocks, 8 warps do the same
    // work a thread as 4 on 64 x 64, and a line's metadata words leave in
    // one wider store (as compress24's rows above); 64 x 128 is the
    // library's, which runs at MAXNREG 80 (the row above); these rows are
    // uncapped (94 registers at 64 x 128: 2 programs an SM instead of 3).
    struct Block {
      int blk, blkc, warps;
    };
    for (auto [blk, blkc, warps] :
         {Block{64, 64, 4}, {64, 64, 8}, {64, 128, 8}, {128, 64, 8}}) {
      rt::JITOptions o;
      o.numWarps = warps;
      rt::Kernel &k = rt::JIT::global().get(kernels, "mask24_update",
                                            {{"T", "bf16"},
                                             {"TI", "i16"},
                                             {"BLK", std::to_string(blk)},
                                             {"BLKC", std::to_string(blkc)}},
                                            o);
      std::string name = "mask update, " +
                         (blkc != blk ? "BLK " + std::to_string(blk) + " x " +
                                            std::to_string(blkc) + ", "
                          : warps == 4 ? "BLK " + std::to_string(blk) + ", "
                                       : std::string()) +
                         std::to_string(warps) + " warps";
      row(name.c_str(), 7.25, [&, blk = blk, blkc = blkc] {
        k.launch(rt::Dim3(unsigned(((s.R + blk - 1) / blk) *
                                   ((s.C + blkc - 1) / blkc))),
                 operandArgs({rt::Arg::ptr(w.ptr(), DType::BF16),
                              rt::Arg::ptr(mask.ptr(), DType::I8),
                              rt::Arg::ptr(pruned.ptr(), DType::BF16)}));
      });
    }
    row("mask update, pass 1 re-read and transposed", 7.25, [&] {
      mask24Update(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C,
                   pruned.ptr(), s.C, vals.ptr(), meta.ptr(), valsT.ptr(),
                   metaT.ptr(), nullptr, CompressPass1::Transposed);
    });
    // The buffer as dY [R tokens, C features]: dY read (2 B), S(dY^T)'s
    // operand written (1 + 1/8 B); R is a multiple of 128, so no padding.
    row("fused MVUE + compress (dY^T)", 3.125, [&] {
      mvue24CompressT(DType::BF16, s.R, s.C, w.ptr(), s.C, vals.ptr(),
                      meta.ptr(), 1, 0);
    });
  }
}

/// The sparse GEMMs (table "gemm").
void gemmTable(JsonReport &json) {
  // --- The sparse GEMMs ---------------------------------------------------
  std::printf("\n| op | M | R | C | ms | rate |\n");
  std::printf("|---|---|---|---|---|---|\n");
  const int64_t M = 16384;
  std::mt19937 rng(1235);
  for (Shape s : {Shape{16384, 4096}, Shape{4096, 16384}}) {
    int64_t n = s.R * s.C;
    auto w = rt::DeviceBuffer::fromHost(randomBf16(n, rng));
    auto x = rt::DeviceBuffer::fromHost(randomBf16(M * s.C, rng));
    auto dy = rt::DeviceBuffer::fromHost(randomBf16(M * s.R, rng));
    rt::DeviceBuffer mask(n), y(M * s.R * 2), dx(M * s.C * 2);
    rt::DeviceBuffer vals(compressedValues(s.R, s.C) * 2),
        meta(compressedMeta(s.R, s.C) * 2), valsT(compressedValues(s.C, s.R) * 2),
        metaT(compressedMeta(s.C, s.R) * 2);
    mask24Transposable(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C, 0, 0);
    // The rate is work / time: dense-equivalent TFLOP/s (2 M R C flop) for
    // the GEMMs; for compress24, TB/s of W and the mask read once (3 B per
    // entry) plus both compressed operands written (2 x (1 + 1/8) B).
    // `kernel` (compress24, fwd, dX) and `tiling` ("default": what the
    // launcher picks) are for bench/plot.py; the JSON rate is named by its
    // unit (tflops or tbs).
    auto row = [&](const char *op, const std::function<void()> &fn, int reps,
                   double work, const char *unit, const char *kernel,
                   const std::string &tiling) -> JsonObject & {
      double ms = medianMs(fn, 3, reps);
      double rate = work / (ms * 1e-3) / 1e12;
      std::printf("| %s | %lld | %lld | %lld | %.3f | %.2f %s |\n", op,
                  (long long)M, (long long)s.R, (long long)s.C, ms, rate, unit);
      return json.row()
          .str("table", "gemm")
          .str("kernel", kernel)
          .str("impl", "sparsetile")
          .str("op", op)
          .str("tiling", tiling)
          .integer("M", M)
          .integer("R", s.R)
          .integer("C", s.C)
          .num("ms", ms)
          .num(std::string(unit) == "TB/s" ? "tbs" : "tflops", rate);
    };
    double flop = 2.0 * M * s.R * s.C;
    row("compress24 (W and W^T)", [&] {
      compress24(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C,
                 vals.ptr(), meta.ptr(), valsT.ptr(), metaT.ptr());
    }, 20, 5.25 * n, "TB/s", "compress24", "default");
    row("sparse Y = X W^T", [&] {
      sparse24LinearForward(DType::BF16, M, s.R, s.C, vals.ptr(), meta.ptr(),
                            x.ptr(), s.C, y.ptr(), s.R);
    }, 10, flop, "TFLOP/s", "fwd", "default");
    row("sparse dX = dY W", [&] {
      sparse24LinearBackwardX(DType::BF16, M, s.R, s.C, valsT.ptr(),
                              metaT.ptr(), dy.ptr(), s.R, dx.ptr(), s.C);
    }, 10, flop, "TFLOP/s", "dX", "default");
    if (s.R != 16384)
      continue;
    // Engines and tilings of the forward (the defaults are 256 x 128, 8
    // warps, which on sm_90 run the TMA + sparse wgmma kernel): mma.sp
    // (tma = 0) with and without prefetching, then the sparse wgmma kernel.
    for (SparseLinearTiles t :
         {SparseLinearTiles{256, 128, 8, true, 0},
          SparseLinearTiles{256, 128, 8, false, 0},
          SparseLinearTiles{128, 128, 8, true, 0},
          SparseLinearTiles{128, 256, 8, true, 0},
          SparseLinearTiles{128, 128, 8, true, 1},
          SparseLinearTiles{128, 256, 8, true, 1},
          SparseLinearTiles{256, 128, 8, true, 1},
          SparseLinearTiles{256, 128, 8, true, 1, 2},
          SparseLinearTiles{128, 128, 8, true, 1, 2},
          // The engine's parts one by one at 256 x 128 (ws, persistent).
          SparseLinearTiles{256, 128, 8, true, 1, 0, 0, 0},
          SparseLinearTiles{256, 128, 8, true, 1, 0, 1, 0},
          SparseLinearTiles{128, 128, 8, true, 1, 0, 1, 0},
          // Clusters of two programs multicasting X's block, against one.
          SparseLinearTiles{256, 128, 8, true, 1, 0, 1, 0, 1},
          SparseLinearTiles{256, 128, 8, true, 1, 0, 1, 0, 2},
          SparseLinearTiles{128, 256, 8, true, 1, 0, 1, 0, 1},
          SparseLinearTiles{128, 256, 8, true, 1, 0, 1, 0, 2},
          SparseLinearTiles{128, 128, 8, true, 1, 0, 1, 0, 1},
          SparseLinearTiles{128, 128, 8, true, 1, 0, 1, 0, 2},
          // K steps of 64: half-size stages, so 4 fit at 128 x 256 (2 at
          // a K step of 128) and up to 6 at 256 x 128.
          SparseLinearTiles{256, 128, 8, true, 1, 0, 1, 0, 1, 64},
          SparseLinearTiles{256, 128, 8, true, 1, 6, 1, 0, 1, 64},
          SparseLinearTiles{128, 256, 8, true, 1, 0, 1, 0, 1, 64},
          SparseLinearTiles{128, 256, 8, true, 1, 5, 1, 0, 1, 64},
          SparseLinearTiles{128, 128, 8, true, 1, 0, 1, 0, 1, 64},
          // The persistent tile loop (tile queue; the transposed store is
          // not staged there: element stores).
          SparseLinearTiles{256, 128, 8, true, 1, 0, 1, 1, 1},
          SparseLinearTiles{128, 256, 8, true, 1, 0, 1, 1, 1},
          // Ping-pong: two consumer warpgroups on alternate one-warpgroup
          // tiles of the persistent loop (epilogue beside the other's MMAs).
          SparseLinearTiles{128, 128, 4, true, 1, 0, 1, 1, 1, 0, 1},
          SparseLinearTiles{64, 256, 4, true, 1, 0, 1, 1, 1, 0, 1},
          SparseLinearTiles{128, 64, 4, true, 1, 0, 1, 1, 1, 0, 1}}) {
      std::string name =
          std::string("sparse Y, ") +
          (t.tma == 1 ? "TMA + wgmma.sp" : "mma.sp") + ", tiles " +
          std::to_string(t.tileI) + "x" + std::to_string(t.tileM) + ", " +
          std::to_string(t.warps) + " warps" +
          (t.tma == 1 ? (t.stages ? ", " + std::to_string(t.stages) + " stages"
                                  : std::string())
                      : t.prefetch ? ", prefetch" : ", no prefetch") +
          (t.cluster > 0 ? ", cluster " + std::to_string(t.cluster)
                         : std::string()) +
          (t.tileK ? ", BK " + std::to_string(t.tileK) : std::string()) +
          (t.warpSpecialize >= 0
               ? ", ws " + std::to_string(t.warpSpecialize) + ", persistent " +
                     std::to_string(t.persistent)
               : std::string()) +
          (t.pingpong ? ", ping-pong" : "");
      JsonObject &r = row(name.c_str(), [&] {
        sparseLinear(DType::BF16, M, s.R, s.C, vals.ptr(), meta.ptr(), x.ptr(),
                     s.C, y.ptr(), s.R, nullptr, t);
      }, 10, flop, "TFLOP/s", "fwd",
          std::to_string(t.tileI) + "x" + std::to_string(t.tileM));
      r.str("engine", t.tma == 1 ? "TMA + wgmma.sp" : "mma.sp")
          .integer("warps", t.warps);
      if (t.tma == 1)
        r.integer("stages", t.stages) // 0: as many as fit, up to 4
            .integer("tile_k", t.tileK ? t.tileK : 128)
            .integer("pingpong", t.pingpong);
      else
        r.boolean("prefetch", t.prefetch);
    }
  }
}

/// One 2:4 linear layer training step (table "step").
void stepTable(JsonReport &json) {
  // --- One 2:4 linear layer training step ----------------------------------
  // W [R, C], 16384 tokens, bf16: compress24 (W and W^T, every step: the
  // weight changes), Y = X W^T, the fused MVUE compression of dY^T, dX = dY W
  // and dW = S(dY^T) X (f32), each timed alone and then as one step. The
  // dense (cuBLAS) and cuSPARSELt steps are torch_sparse24.py's "step" table.
  const int64_t M = 16384;
  std::mt19937 rng(1236);
  std::printf("\n| 2:4 layer step part | M | R | C | ms |\n");
  std::printf("|---|---|---|---|---|\n");
  for (Shape s : {Shape{4096, 16384}, Shape{16384, 4096}}) {
    int64_t n = s.R * s.C, kp = sparse24GradTokens(M);
    auto w = rt::DeviceBuffer::fromHost(randomBf16(n, rng));
    auto x = rt::DeviceBuffer::fromHost(randomBf16(M * s.C, rng));
    auto dy = rt::DeviceBuffer::fromHost(randomBf16(M * s.R, rng));
    rt::DeviceBuffer mask(n), y(M * s.R * 2), dx(M * s.C * 2), dw(n * 4);
    rt::DeviceBuffer vals(compressedValues(s.R, s.C) * 2),
        meta(compressedMeta(s.R, s.C) * 2), valsT(compressedValues(s.C, s.R) * 2),
        metaT(compressedMeta(s.C, s.R) * 2),
        gvals(compressedValues(s.R, kp) * 2), gmeta(compressedMeta(s.R, kp) * 2);
    mask24Transposable(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C, 0, 0);
    uint64_t seed = 1;
    std::vector<std::pair<const char *, std::function<void()>>> parts = {
        {"compress24 (W and W^T)",
         [&] {
           compress24(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C,
                      vals.ptr(), meta.ptr(), valsT.ptr(), metaT.ptr());
         }},
        {"Y = X W^T",
         [&] {
           sparse24LinearForward(DType::BF16, M, s.R, s.C, vals.ptr(),
                                 meta.ptr(), x.ptr(), s.C, y.ptr(), s.R);
         }},
        {"MVUE + compress dY^T",
         [&] {
           mvue24CompressT(DType::BF16, M, s.R, dy.ptr(), s.R, gvals.ptr(),
                           gmeta.ptr(), seed++, 0);
         }},
        {"dX = dY W",
         [&] {
           sparse24LinearBackwardX(DType::BF16, M, s.R, s.C, valsT.ptr(),
                                   metaT.ptr(), dy.ptr(), s.R, dx.ptr(), s.C);
         }},
        {"dW = S(dY^T) X",
         [&] {
           sparse24LinearBackwardW(DType::BF16, M, s.R, s.C, gvals.ptr(),
                                   gmeta.ptr(), x.ptr(), s.C, dw.ptr(), s.C);
         }}};
    auto stepRow = [&](const char *part, double ms) {
      std::printf("| %s | %lld | %lld | %lld | %.3f |\n", part, (long long)M,
                  (long long)s.R, (long long)s.C, ms);
      json.row()
          .str("table", "step")
          .str("impl", "sparsetile")
          .str("op", part)
          .integer("M", M)
          .integer("R", s.R)
          .integer("C", s.C)
          .num("ms", ms);
    };
    // The parts and the whole step interleaved (bench::interleavedMs), so
    // that the clock and power drift of a long run hits them alike: timed
    // one after the other, the step and the sum of its parts differed by
    // up to 0.6 ms between runs (bench/NOTES.md, "compress24's pass 1 with a
    // column's units in adjacent slots").
    std::vector<std::function<void()>> fns;
    for (auto &part : parts)
      fns.push_back(part.second);
    fns.push_back([&] {
      for (auto &part : parts)
        part.second();
    });
    std::vector<double> times = interleavedMs(fns);
    for (size_t i = 0; i < parts.size(); ++i)
      stepRow(parts[i].first, times[i]);
    stepRow("whole step", times.back());
    // The dW GEMM with and without the persistent tile loop (A/B of its
    // default, kSparseGradWPersistent), and with ping-pong consumers on
    // 128 x 128 tiles (persistent = 2 here).
    for (int persistent : {0, 1, 2}) {
      SparseLinearTiles t;
      t.persistent = persistent == 2 ? 1 : persistent;
      if (persistent == 2)
        t.pingpong = 1, t.warps = 4, t.tileI = 128, t.tileM = 128;
      std::string part =
          persistent == 2
              ? std::string("dW = S(dY^T) X, ping-pong 128x128")
              : "dW = S(dY^T) X, persistent " + std::to_string(persistent);
      auto run = [&] {
        sparse24LinearBackwardW(DType::BF16, M, s.R, s.C, gvals.ptr(),
                                gmeta.ptr(), x.ptr(), s.C, dw.ptr(), s.C,
                                nullptr, t);
      };
      stepRow(part.c_str(), medianMs(run, 3, 10));
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  std::string jsonPath;
  TableFilter tables;
  if (!parseBenchArgs(argc, argv, jsonPath, &tables))
    return 2;
  JsonReport json("sparse24");
  std::string why;
  if (!rt::gpuAvailable(&why)) {
    std::printf("sparse24 bench skipped: no GPU (%s)\n", why.c_str());
    json.setSkipped("no GPU: " + why);
    return json.write(jsonPath) ? 0 : 1;
  }
  rt::Device &dev = rt::Device::get();
  json.setDevice(dev.name() + " (" + dev.arch() + ")");
  // Copy ceiling: 1 GiB device-to-device, read + write.
  CopyCeiling ceiling;
  double copyTBs = ceiling.tbs(size_t(1) << 30);

  std::printf("device: %s (%s)\n", dev.name().c_str(), dev.arch().c_str());
  std::printf("device-to-device copy: %.3f TB/s (1 GiB, median of 50)\n\n",
              copyTBs);
  json.row()
      .str("table", "bandwidth")
      .str("op", "device-to-device copy")
      .integer("bytes", int64_t(1) << 30)
      .num("tbs", copyTBs);
  if (tables("bandwidth"))
    bandwidthTable(json, ceiling, copyTBs);
  if (tables("gemm"))
    gemmTable(json);
  if (tables("step"))
    stepTable(json);
  return json.write(jsonPath) ? 0 : 1;
}
