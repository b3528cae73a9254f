//===- SparseDropBench.cpp - SparseDrop block-sparse GEMMs
//-----------------===//
//
// Times sparsetile's SparseDrop kernels (dsl_examples/sparsedrop.tile) with
// CUDA events after warm-up, L2 flushed before every run, medians of 30:
//   fwd  Y  = s (X . mask) W^T     dsd_fwd
//   dX   dX = s (dY W) . mask      sdd_dx
//   dW   dW = s dY^T (X . mask)    dsd_dw
//   mask generateMask
// bf16, M = 16384, (K, N) in {(4096, 4096), (4096, 16384)}, mask blocks
// 128 x 128, p in {0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9}. TFLOP/s count only
// the kept blocks: 2 M N K (1 - p_actual), p_actual the dropped fraction of
// the generated mask. "speedup" is the p = 0 time over this p's time (the
// ideal is 1 / (1 - p_actual)). The p = 0 rows are the DSL kernels' dense
// speed (every block kept, same code path). bench/sparsedrop/torch_ref.py
// times cuBLAS for the same shapes.
//
// Last, the dense DSL GEMM for reference: matmul_blocks of
// dsl_examples/matmul.tile (TMA + wgmma on sm_90), C = A W^T with A [M, K],
// W [N, K] bf16 and C [M, N] f32, at M x N x K = 8192^3 and 16384 x 4096 x
// 4096, tiles 128 x {128, 256} x 64; torch_ref.py times cuBLAS on the same
// shapes (its C is bf16, so it writes half the bytes).
//
// Usage: sparsetile_sparsedrop_bench [--json PATH]; with --json every row
// (the numbers of the markdown, plus ms where the markdown shows only
// TFLOP/s) also goes to PATH for bench/plot.py.
//
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"
#include "EnergyMeter.h"
#include "sparsetile/ops/SparseDrop.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/Error.h"
#include "sparsetile/runtime/JIT.h"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <random>
#include <vector>

using namespace sparsetile;
namespace sd = sparsetile::ops::sparsedrop;

namespace {
/// Medians of 30 after 5 warm-up runs, L2 flushed before each (BenchUtil.h).
double medianMs(const std::function<void()> &fn) {
  return bench::medianMs(fn, 5, 30);
}
using bench::randomBf16; // magnitudes in [1/8, 4), never zeros or NaN

/// The fraction of an M x K mask's bm x bk blocks that `mask` keeps (read
/// back after the device finished writing it).
double keptFraction(const rt::DeviceBuffer &mask, int64_t M, int64_t K,
                    int64_t bm, int64_t bk) {
  rt::Device::get().synchronize();
  double kept = 0;
  for (uint64_t w : mask.toHost<uint64_t>())
    kept += double(std::bitset<64>(w).count());
  return kept / double((M / bm) * (K / bk));
}

/// A layer's operands (random bf16) and outputs: X [M, K], W [N, K],
/// dY [M, N]; Y, dX, dW.
struct Layer {
  rt::DeviceBuffer X, W, dY, Y, dX, dW;
  Layer(int64_t M, int64_t K, int64_t N, std::mt19937 &rng)
      : X(rt::DeviceBuffer::fromHost(randomBf16(size_t(M * K), rng))),
        W(rt::DeviceBuffer::fromHost(randomBf16(size_t(N * K), rng))),
        dY(rt::DeviceBuffer::fromHost(randomBf16(size_t(M * N), rng))),
        Y(size_t(M * N) * 2), dX(size_t(M * K) * 2), dW(size_t(N * K) * 2) {}
};

/// The layer's three GEMMs as the benches' tables run them: a name, the
/// kernel (for resolveTmaTiling), a call with a given tiling, and the
/// operand strides.
struct LayerOp {
  const char *name, *kernel;
  std::function<void(const sd::Tiling &)> run;
  int64_t strideA, strideB;
};

std::vector<LayerOp> layerOps(const sd::Problem &pr, Layer &l,
                              const rt::DeviceBuffer &mask) {
  int64_t K = pr.K, N = pr.N;
  rt::DevicePtr m = mask.ptr();
  return {
      {"fwd", "dsd_fwd",
       [&pr, &l, m, K, N](const sd::Tiling &t) {
         sd::forward(pr, l.X.ptr(), K, l.W.ptr(), K, m, l.Y.ptr(), N, nullptr,
                     t);
       },
       K, K},
      {"dX", "sdd_dx",
       [&pr, &l, m, K, N](const sd::Tiling &t) {
         sd::backwardX(pr, l.dY.ptr(), N, l.W.ptr(), K, m, l.dX.ptr(), K,
                       nullptr, t);
       },
       N, K},
      {"dW", "dsd_dw",
       [&pr, &l, m, K, N](const sd::Tiling &t) {
         sd::backwardW(pr, l.dY.ptr(), N, l.X.ptr(), K, m, l.dW.ptr(), K,
                       nullptr, t);
       },
       N, K},
  };
}

/// One matmul_blocks tiling: tile rows and columns, GROUP (row blocks that
/// sweep N together; 1: plain row order), and ping-pong consumers (then one
/// warpgroup's tile, 4 warps; else 8 warps share each tile).
struct DenseTiling {
  int bm, bn, group;
  bool pingpong = false;
  /// matmul_store_block instead: C in bf16 through store_block (a TMA store
  /// in the persistent kernel), as cuBLAS writes it.
  bool storeBlock = false;
};

/// Times matmul_blocks (C = A W^T) at M x N x K for each of `tilings`,
/// prints a markdown row per tiling and adds JSON rows. Before
/// timing, one launch into a NaN-poisoned C is checked: no entry may stay NaN
/// or be infinite, and a few entries must match a float64 dot product on the
/// host (the GPU tests check the kernel thoroughly; this guards the figures).
/// Returns false when the check fails.
bool denseGemm(int64_t M, int64_t N, int64_t K,
               const std::vector<DenseTiling> &tilings, std::mt19937 &rng,
               bench::JsonReport &json) {
  const int BK = 64;
  std::vector<uint16_t> a = randomBf16(size_t(M * K), rng);
  std::vector<uint16_t> w = randomBf16(size_t(N * K), rng);
  auto A = rt::DeviceBuffer::fromHost(a), W = rt::DeviceBuffer::fromHost(w);
  rt::DeviceBuffer C(size_t(M * N) * 4);
  // Kept for the process (KernelSource's digest is computed once).
  static const rt::KernelSource src =
      rt::KernelSource::fromFile(bench::examplesDir() + "/matmul.tile");
  std::vector<rt::Arg> args = {rt::Arg::tensor2d(A.ptr(), DType::BF16, M, K, K),
                               rt::Arg::tensor2d(W.ptr(), DType::BF16, N, K, K),
                               rt::Arg::ptr(C.ptr(), DType::F32),
                               rt::Arg::i32(int32_t(M)),
                               rt::Arg::i32(int32_t(N)),
                               rt::Arg::i32(int32_t(K)),
                               rt::Arg::i32(int32_t(N)), // ldc
                               rt::Arg::f32(1.0f)};
  std::vector<rt::Arg> storeBlockArgs = {
      args[0], args[1], rt::Arg::tensor2d(C.ptr(), DType::BF16, M, N, N),
      rt::Arg::i32(int32_t(K)), rt::Arg::f32(1.0f)};
  // Positions checked against the host: the corners, the middle, and some
  // random ones.
  std::vector<std::pair<int64_t, int64_t>> probes = {
      {0, 0}, {0, N - 1}, {M - 1, 0}, {M - 1, N - 1}, {M / 2, N / 3}};
  std::uniform_int_distribution<int64_t> ri(0, M - 1), rj(0, N - 1);
  for (int i = 0; i < 11; ++i)
    probes.push_back({ri(rng), rj(rng)});
  double flop = 2.0 * double(M) * double(N) * double(K);
  bool allOk = true;
  for (const DenseTiling &t : tilings) {
    const int BM = t.bm, BN = t.bn;
    rt::JITOptions o;
    o.numWarps = t.pingpong ? 4 : 8;
    rt::Kernel &k = rt::JIT::global().get(
        src, t.storeBlock ? "matmul_store_block" : "matmul_blocks",
        {{"T", "bf16"},
         {"TRANS_A", "0"},
         {"TRANS_B", "1"},
         {"BM", std::to_string(BM)},
         {"BN", std::to_string(BN)},
         {"BK", std::to_string(BK)},
         {"GROUP", std::to_string(t.group)},
         {"PINGPONG", t.pingpong ? "1" : "0"}},
        o);
    // The full logical grid, whatever the kernel's runtime does with it.
    rt::LaunchConfig cfg(
        rt::Dim3(unsigned((M + BM - 1) / BM), unsigned((N + BN - 1) / BN)));
    auto run = [&] { k.launch(cfg, t.storeBlock ? storeBlockArgs : args); };
    C.fill(0xff); // NaN
    run();
    rt::Device::get().synchronize();
    std::vector<float> c(size_t(M * N));
    if (t.storeBlock) {
      std::vector<uint16_t> h = C.toHost<uint16_t>();
      for (size_t i = 0; i < c.size(); ++i)
        c[i] = bench::bf16ToFloat(h[i]);
    } else {
      c = C.toHost<float>();
      c.resize(size_t(M * N));
    }
    int64_t bad = 0;
    for (float v : c)
      bad += !std::isfinite(v);
    int wrong = 0;
    for (auto [i, j] : probes) {
      double ref = 0, mag = 0;
      for (int64_t kk = 0; kk < K; ++kk) {
        double t = double(bench::bf16ToFloat(a[size_t(i * K + kk)])) *
                   double(bench::bf16ToFloat(w[size_t(j * K + kk)]));
        ref += t;
        mag += std::fabs(t);
      }
      // Rounding in f32 accumulation stays far below 1e-4 of sum |a w|
      // (about sqrt(K) 2^-24 of it), while one lost or repeated 64-wide K
      // step moves the sum by some 8 |a w| ~ 10 times the tolerance.
      // A bf16 C adds its rounding: 2^-8 of the value.
      double round = t.storeBlock ? std::fabs(ref) / 256 : 0.0;
      wrong += !(std::fabs(double(c[size_t(i * N + j)]) - ref) <=
                 1e-4 * mag + round);
    }
    bool ok = bad == 0 && wrong == 0;
    if (!ok) {
      std::fprintf(stderr,
                   "matmul_blocks %lldx%lldx%lld BN %d: %lld entries NaN or "
                   "infinite, %d of %zu probes wrong\n",
                   (long long)M, (long long)N, (long long)K, BN, (long long)bad,
                   wrong, probes.size());
      allOk = false;
    }
    double ms = medianMs(run);
    double tflops = flop / (ms * 1e-3) / 1e12;
    std::string tiling = std::to_string(BM) + "x" + std::to_string(BN) + "x" +
                         std::to_string(BK) + " group " +
                         std::to_string(t.group) +
                         (t.pingpong ? " ping-pong" : "") +
                         (t.storeBlock ? ", bf16 C (store_block)" : "");
    std::printf("| %lld | %lld | %lld | %s | %.3f | %.1f | %s |\n",
                (long long)M, (long long)N, (long long)K, tiling.c_str(), ms,
                tflops, ok ? "ok" : "WRONG");
    json.row()
        .str("kernel", "gemm")
        .str("impl", "sparsetile")
        .str("engine", t.storeBlock ? "matmul_store_block" : "matmul_blocks")
        .str("tiling", tiling)
        .integer("M", M)
        .integer("N", N)
        .integer("K", K)
        .num("ms", ms)
        .num("tflops", tflops)
        .boolean("correct", ok);
  }
  return allOk;
}
/// A JSON row for one cell of those tables: the table, the kernel, the
/// problem's shape and p.
bench::JsonObject &cellRow(bench::JsonReport &json, const char *table,
                           const char *kernel, const sd::Problem &pr) {
  return json.row()
      .str("table", table)
      .str("kernel", kernel)
      .str("impl", "sparsetile")
      .integer("M", pr.M)
      .integer("N", pr.N)
      .integer("K", pr.K)
      .num("p", pr.p);
}

/// The bench's two layer shapes (K = 4096; N = 4096 and 16384): runs
/// `cell(problem, layer, mask)` at each drop rate in `rates`, with the mask
/// generated for it (seed 42).
void forEachCell(int64_t M, int64_t bm, int64_t bk, std::mt19937 &rng,
                 std::initializer_list<double> rates,
                 const std::function<void(const sd::Problem &, Layer &,
                                          const rt::DeviceBuffer &)> &cell) {
  const int64_t K = 4096;
  for (int64_t N : {int64_t(4096), int64_t(16384)}) {
    Layer layer(M, K, N, rng);
    rt::DeviceBuffer mask(size_t(sd::maskWords(M, K, bm, bk)) * 8);
    for (double p : rates) {
      sd::Problem pr{DType::BF16, M, N, K, bm, bk, p};
      sd::generateMask(42, 0, p, M, K, bm, bk, mask.ptr());
      cell(pr, layer, mask);
    }
  }
}

std::pair<double, double> interleavedMs(const std::function<void()> &a,
                                        const std::function<void()> &b) {
  std::vector<double> t = bench::interleavedMs({a, b});
  return {t[0], t[1]};
}

/// The names of an A/B table's two columns, on screen and in the JSON.
struct AbColumns {
  const char *a, *b, *jsonA, *jsonB;
};

/// One interleaved A/B table over the bench's two layer shapes: for each
/// rate and kernel, `setup` turns two copies of the TMA tiling into A and
/// B, and the row gives both times and B / A.
/// `only` names one kernel (e.g. "dX") to time alone.
void abTable(bench::JsonReport &json, int64_t M, int64_t bm, int64_t bk,
             std::mt19937 &rng, const char *table, const char *title,
             const AbColumns &cols, std::initializer_list<double> rates,
             const std::function<void(const LayerOp &, sd::Tiling &,
                                      sd::Tiling &)> &setup,
             const char *only = nullptr) {
  std::printf("%s, interleaved in one process: ms, median of 7 rounds of "
              "medians of 10, L2 flushed.\n\n| N | p | kernel | %s | %s | "
              "%s / %s |\n|---|---|---|---|---|---|\n",
              title, cols.a, cols.b, cols.b, cols.a);
  forEachCell(
      M, bm, bk, rng, rates,
      [&](const sd::Problem &pr, Layer &layer, const rt::DeviceBuffer &mask) {
        for (const LayerOp &op : layerOps(pr, layer, mask)) {
          if (only && std::string(op.name) != only)
            continue;
          sd::Tiling a, b;
          a.tma = b.tma = 1;
          setup(op, a, b);
          auto [ta, tb] = interleavedMs([&] { op.run(a); }, [&] { op.run(b); });
          std::printf("| %lld | %.2f | %s | %.3f | %.3f | %.3f |\n",
                      (long long)pr.N, pr.p, op.name, ta, tb, tb / ta);
          cellRow(json, table, op.name, pr)
              .num(cols.jsonA, ta)
              .num(cols.jsonB, tb);
        }
      });
  std::printf("\n");
}

/// Energy per launch under sustained load: for each drop rate, each GEMM
/// and a few variants of its tiling (each one field away from the default
/// tiling, which is pinned so that nothing is tuned), blocks of
/// back-to-back launches (no L2 flush: a training step's GEMMs follow each
/// other) run round-robin over three rounds, the board's energy counter
/// read around each block (EnergyMeter). At the 700 W cap a GEMM's speed
/// follows its joules per launch (bench/NOTES.md, "Under sustained load"),
/// which the short, flushed timings of the other tables do not show.
void energyTable(bench::JsonReport &json, int64_t M, int64_t bm, int64_t bk,
                 std::mt19937 &rng) {
  bench::EnergyMeter meter;
  if (!meter.ok()) {
    std::printf("Energy per launch: skipped (NVML's energy counter is not "
                "available)\n\n");
    return;
  }
  struct Variant {
    const char *name;
    std::function<void(sd::Tiling &)> set;
  };
  // Per kernel (fwd, dX, dW): the pinned default, the persistent loop
  // flipped, another tile, then the tile groups every kernel tries.
  auto variantsOf = [](Variant persistent, Variant tile) {
    return std::vector<Variant>{
        {"default", [](sd::Tiling &) {}},
        persistent,
        tile,
        {"group 4", [](sd::Tiling &t) { t.group = 4; }},
        {"group 16", [](sd::Tiling &t) { t.group = 16; }}};
  };
  Variant persistent0{"persistent 0", [](sd::Tiling &t) { t.persistent = 0; }};
  Variant persistent1{"persistent 1", [](sd::Tiling &t) { t.persistent = 1; }};
  const std::vector<std::vector<Variant>> variants = {
      variantsOf(persistent0,
                 {"128 x 128", [](sd::Tiling &t) { t.tileN = 128; }}),
      variantsOf(persistent1,
                 {"128 x 256", [](sd::Tiling &t) { t.tileK = 256; }}),
      variantsOf(persistent1,
                 {"128 x 128", [](sd::Tiling &t) { t.tileN = 128; }})};
  std::printf("Energy per launch under sustained load: blocks of about 0.6 s "
              "of back-to-back launches (no L2 flush), round-robin over 3 "
              "rounds, NVML's energy counter around each block; medians over "
              "the rounds. Each variant is the default tiling (pinned) with "
              "one field changed.\n\n| N | p | kernel | tiling | ms | J | W "
              "| MHz after | ms / default | J / default |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  forEachCell(
      M, bm, bk, rng, {0.0, 0.1},
      [&](const sd::Problem &pr, Layer &layer, const rt::DeviceBuffer &mask) {
        struct Item {
          const char *op, *name;
          std::function<void()> run;
          std::vector<double> ms, joules, mhz;
        };
        std::vector<Item> items;
        std::vector<LayerOp> ops = layerOps(pr, layer, mask);
        for (size_t o = 0; o < ops.size(); ++o)
          for (const Variant &v : variants[o]) {
            sd::Tiling t;
            t.tma = 1;
            t.warps = 8; // Pins the default tiling: nothing is tuned.
            v.set(t);
            const LayerOp *op = &ops[o];
            items.push_back(
                {op->name, v.name, [op, t] { op->run(t); }, {}, {}, {}});
          }
        // Compile and load outside the blocks; a variant the problem cannot
        // run is left out, said so.
        std::vector<Item> runnable;
        for (Item &it : items) {
          try {
            it.run();
            it.run();
            runnable.push_back(it);
          } catch (const rt::Error &e) {
            std::printf("| %lld | %.2f | %s | %s | (cannot run: %s) |\n",
                        (long long)pr.N, pr.p, it.op, it.name, e.what());
          }
        }
        items = runnable;
        rt::Device::get().synchronize();
        for (int round = 0; round < 3; ++round)
          for (Item &it : items) {
            rt::Event a, b;
            a.record();
            it.run();
            b.record();
            b.synchronize();
            double once = std::max(double(rt::Event::elapsedMs(a, b)), 0.01);
            int n = std::max(5, int(600.0 / once));
            unsigned long long e0 = meter.millijoules();
            a.record();
            for (int i = 0; i < n; ++i)
              it.run();
            b.record();
            b.synchronize();
            unsigned long long e1 = meter.millijoules();
            it.ms.push_back(rt::Event::elapsedMs(a, b) / n);
            it.joules.push_back(double(e1 - e0) / 1000.0 / n);
            it.mhz.push_back(meter.smClockMHz());
          }
        auto median = [](std::vector<double> v) {
          std::sort(v.begin(), v.end());
          return v[v.size() / 2];
        };
        double baseMs = 0, baseJ = 0;
        for (Item &it : items) {
          double ms = median(it.ms), j = median(it.joules),
                 mhz = median(it.mhz);
          if (std::string(it.name) == "default")
            baseMs = ms, baseJ = j;
          std::printf("| %lld | %.2f | %s | %s | %.3f | %.3f | %.0f | %.0f | "
                      "%.3f | %.3f |\n",
                      (long long)pr.N, pr.p, it.op, it.name, ms, j,
                      j / ms * 1000.0, mhz, ms / baseMs, j / baseJ);
          cellRow(json, "energy", it.op, pr)
              .str("tiling", it.name)
              .num("ms", ms)
              .num("joules", j)
              .num("mhz", mhz);
        }
      });
  std::printf("\n");
}
} // namespace

int main(int argc, char **argv) {
  std::string jsonPath;
  bench::TableFilter tables;
  if (!bench::parseBenchArgs(argc, argv, jsonPath, &tables))
    return 2;
  bench::JsonReport json("sparsedrop");
  std::string why;
  if (!rt::gpuAvailable(&why)) {
    std::printf("sparsedrop bench skipped: no GPU (%s)\n", why.c_str());
    json.setSkipped("no GPU: " + why);
    return json.write(jsonPath) ? 0 : 1;
  }
  rt::Device &dev = rt::Device::get();
  std::printf("device: %s (%s)\n\n", dev.name().c_str(), dev.arch().c_str());
  json.setDevice(dev.name() + " (" + dev.arch() + ")");
  std::printf("bf16, mask blocks 128 x 128; TFLOP/s on kept blocks "
              "(2 M N K (1 - p_actual)); speedup = time at p = 0 / time; "
              "ideal = 1 / (1 - p_actual). Medians of 30, L2 flushed.\n\n");

  const int64_t M = 16384, bm = 128, bk = 128;
  std::mt19937 rng(1234);

  // Engines and output tiles at p = 0, 16384 x 4096 x 4096: mma.sync
  // (tma = 0, the sm_80 path) against the TMA + wgmma kernels.
  if (tables("engines")) {
    const int64_t K = 4096, N = 4096;
    auto X = rt::DeviceBuffer::fromHost(randomBf16(size_t(M * K), rng));
    auto W = rt::DeviceBuffer::fromHost(randomBf16(size_t(N * K), rng));
    auto dY = rt::DeviceBuffer::fromHost(randomBf16(size_t(M * N), rng));
    rt::DeviceBuffer Y(size_t(M * N) * 2), dX(size_t(M * K) * 2),
        dW(size_t(N * K) * 2), mask(size_t(sd::maskWords(M, K, bm, bk)) * 8);
    sd::Problem pr{DType::BF16, M, N, K, bm, bk, 0.0};
    sd::generateMask(42, 0, 0.0, M, K, bm, bk, mask.ptr());
    double flop = 2.0 * M * N * K;
    std::printf("| engine | fwd TFLOP/s | dX TFLOP/s | dW TFLOP/s |\n"
                "|---|---|---|---|\n");
    // Configurations: 0 mma.sync; 1 TMA, 128 x 128 output tiles; 2 TMA,
    // forward 128 x 256 and dW 256 x 128 (dX's tile lies in one 128 x 128
    // mask block: n/a).
    // 3: as 1 with 3 ring stages instead of 4 (two programs per SM fit).
    // 4: one warpgroup per program (4 warps: fwd 64 x 256, dX 64 x 128,
    // dW 128 x 128) with 2 stages, so two programs share an SM and one's
    // epilogue and ring fill run under the other's MMAs.
    for (int cfg : {0, 1, 2, 3, 4}) {
      sd::Tiling tf, tx, tw;
      tf.tma = tx.tma = tw.tma = cfg ? 1 : 0;
      if (cfg == 2)
        tf.tileN = 256, tw.tileN = 256;
      else if (cfg == 1 || cfg == 3)
        tf.tileN = 128, tw.tileN = 128;
      if (cfg == 3)
        tf.stages = tx.stages = tw.stages = 3;
      if (cfg == 4) {
        tf.warps = tx.warps = tw.warps = 4;
        tf.stages = tx.stages = tw.stages = 2;
        tf.tileM = 64, tf.tileN = 256;
        tx.tileM = 64;
        tw.tileN = 128;
      }
      double f = medianMs([&] {
        sd::forward(pr, X.ptr(), K, W.ptr(), K, mask.ptr(), Y.ptr(), N, nullptr,
                    tf);
      });
      double x = 0;
      if (cfg != 2)
        x = medianMs([&] {
          sd::backwardX(pr, dY.ptr(), N, W.ptr(), K, mask.ptr(), dX.ptr(), K,
                        nullptr, tx);
        });
      double w = medianMs([&] {
        sd::backwardW(pr, dY.ptr(), N, X.ptr(), K, mask.ptr(), dW.ptr(), K,
                      nullptr, tw);
      });
      const char *names[] = {"no TMA (pointer loads; dX on the cp.async ring on sm_90)",
                             "TMA+wgmma, 128 x 128 tiles",
                             "TMA+wgmma, fwd 128 x 256, dW 256 x 128",
                             "TMA+wgmma, 128 x 128 tiles, 3 stages",
                             "TMA+wgmma, 4 warps, 2 stages, two programs per "
                             "SM: fwd 64 x 256, dX 64 x 128, dW 128 x 128"};
      // (Not `tf`: that is the forward's Tiling here.)
      auto tflops = [&](double ms) { return flop / (ms * 1e-3) / 1e12; };
      char dxCell[32] = "n/a";
      if (x)
        std::snprintf(dxCell, sizeof dxCell, "%.1f", tflops(x));
      std::printf("| %s | %.1f | %s | %.1f |\n", names[cfg], tflops(f), dxCell,
                  tflops(w));
      const char *kernels[] = {"fwd", "dX", "dW"};
      double times[] = {f, x, w};
      for (int i = 0; i < 3; ++i) {
        double ms = times[i];
        if (ms == 0)
          continue; // Not measured (dX in configuration 2).
        json.row()
            .str("table", "engines")
            .str("kernel", kernels[i])
            .str("impl", "sparsetile")
            .str("engine", names[cfg])
            .integer("M", M)
            .integer("N", N)
            .integer("K", K)
            .num("p", 0.0)
            .num("ms", ms)
            .num("tflops", tflops(ms));
      }
    }
    std::printf("\n");
  }
  // The pointer-load engine (tma = 0: the plain kernels, sm_80's path and
  // sm_90's for tilings TMA does not take) across drop rates, 16384 x 4096
  // x 4096: a kernel whose dot is under its mask bit's `if` runs on the
  // cp.async ring since the ring takes guarded dots (dW on sm_90; every
  // kernel on sm_80), so its time should fall with the kept fraction.
  // TFLOP/s count the kept blocks' work only.
  if (tables("plain")) {
    const int64_t K = 4096, N = 4096;
    Layer layer(M, K, N, rng);
    rt::DeviceBuffer mask(size_t(sd::maskWords(M, K, bm, bk)) * 8);
    std::printf("| p | p_actual | fwd ms | fwd TFLOP/s | dX ms | dX TFLOP/s | "
                "dW ms | dW TFLOP/s |\n|---|---|---|---|---|---|---|---|\n");
    for (double p : {0.0, 0.5, 0.9}) {
      sd::Problem pr{DType::BF16, M, N, K, bm, bk, p};
      sd::generateMask(42, 0, p, M, K, bm, bk, mask.ptr());
      double keep = keptFraction(mask, M, K, bm, bk);
      double flop = 2.0 * double(M) * double(N) * double(K) * keep;
      sd::Tiling plain;
      plain.tma = 0;
      std::printf("| %.2f | %.4f", p, 1 - keep);
      for (const LayerOp &op : layerOps(pr, layer, mask)) {
        double ms = medianMs([&] { op.run(plain); });
        double tflops = flop / (ms * 1e-3) / 1e12;
        std::printf(" | %.3f | %.1f", ms, tflops);
        cellRow(json, "plain", op.name, pr)
            .num("p_actual", 1 - keep)
            .num("ms", ms)
            .num("tflops", tflops);
      }
      std::printf(" |\n");
    }
    std::printf("\n");
  }
  struct KN {
    int64_t K, N;
  };
  if (tables("sweep"))
    for (KN s : {KN{4096, 4096}, KN{4096, 16384}}) {
      Layer layer(M, s.K, s.N, rng);
      rt::DeviceBuffer &X = layer.X, &W = layer.W, &dY = layer.dY, &Y = layer.Y,
                       &dX = layer.dX, &dW = layer.dW;
      int64_t words = sd::maskWords(M, s.K, bm, bk);
      rt::DeviceBuffer mask(size_t(words) * 8);
      double base[3] = {0, 0, 0};
      std::printf(
          "| M | K | N | p | p_actual | mask ms | fwd ms | fwd TFLOP/s | "
          "fwd speedup | dX ms | dX TFLOP/s | dX speedup | dW ms | dW "
          "TFLOP/s | dW speedup | ideal |\n");
      std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---"
                  "|---|\n");
      for (double p : {0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9}) {
        sd::Problem pr{DType::BF16, M, s.N, s.K, bm, bk, p};
        double maskMs = medianMs(
            [&] { sd::generateMask(42, 0, p, M, s.K, bm, bk, mask.ptr()); });
        double keep = keptFraction(mask, M, s.K, bm, bk);
        double fwd = medianMs([&] {
          sd::forward(pr, X.ptr(), s.K, W.ptr(), s.K, mask.ptr(), Y.ptr(), s.N);
        });
        double dx = medianMs([&] {
          sd::backwardX(pr, dY.ptr(), s.N, W.ptr(), s.K, mask.ptr(), dX.ptr(),
                        s.K);
        });
        double dw = medianMs([&] {
          sd::backwardW(pr, dY.ptr(), s.N, X.ptr(), s.K, mask.ptr(), dW.ptr(),
                        s.K);
        });
        if (p == 0.0)
          base[0] = fwd, base[1] = dx, base[2] = dw;
        double flop = 2.0 * double(M) * double(s.N) * double(s.K) * keep;
        auto tf = [&](double ms) { return flop / (ms * 1e-3) / 1e12; };
        std::printf(
            "| %lld | %lld | %lld | %.2f | %.4f | %.4f | %.3f | %.1f | "
            "%.2fx | %.3f | %.1f | %.2fx | %.3f | %.1f | %.2fx | %.2fx |\n",
            (long long)M, (long long)s.K, (long long)s.N, p, 1 - keep, maskMs,
            fwd, tf(fwd), base[0] / fwd, dx, tf(dx), base[1] / dx, dw, tf(dw),
            base[2] / dw, keep > 0 ? 1 / keep : 0.0);
        auto row = [&](const char *kernel, double ms) -> bench::JsonObject & {
          return cellRow(json, "sweep", kernel, pr)
              .num("p_actual", 1 - keep)
              .num("ms", ms);
        };
        row("mask", maskMs);
        const char *kernels[] = {"fwd", "dX", "dW"};
        double times[] = {fwd, dx, dw};
        for (int i = 0; i < 3; ++i)
          row(kernels[i], times[i])
              .num("tflops", tf(times[i]))
              .num("speedup", base[i] / times[i])
              .num("ideal", keep > 0 ? 1 / keep : 0.0);
      }
      std::printf("\nDSL dense speed (p = 0, all blocks kept), M %lld K %lld N "
                  "%lld: fwd %.1f, dX %.1f, dW %.1f TFLOP/s\n\n",
                  (long long)M, (long long)s.K, (long long)s.N,
                  2.0 * M * s.N * s.K / (base[0] * 1e-3) / 1e12,
                  2.0 * M * s.N * s.K / (base[1] * 1e-3) / 1e12,
                  2.0 * M * s.N * s.K / (base[2] * 1e-3) / 1e12);
    }

  // The persistent tile loop (Tiling::persistent: about one program per SM
  // taking tiles from a queue, the epilogue staged per warp while the
  // producer loads the next tile) against one program per tile, default
  // tilings otherwise, interleaved.
  if (tables("persistent"))
    abTable(json, M, bm, bk, rng, "persistent",
            "Persistent tile loop against one program per tile",
            {"one per tile", "persistent", "one_per_tile_ms", "persistent_ms"},
            {0.0, 0.1, 0.3, 0.5, 0.9},
            [](const LayerOp &, sd::Tiling &one, sd::Tiling &loop) {
              one.persistent = 0;
              loop.persistent = 1;
            });

  // Ping-pong consumers: two warpgroups on alternate 128 x 128 tiles, one
  // storing while the other runs its main loop, against the cooperative
  // kernels (8 warps on one tile) at the default tile and at 128 x 128.
  if (tables("pingpong")) {
    std::printf("Ping-pong against cooperative consumers, interleaved: ms, as "
                "above.\n\n| N | p | kernel | cooperative (default tile) | "
                "cooperative 128 x 128 | ping-pong 128 x 128 | ping-pong / "
                "default | ping-pong / cooperative 128 x 128 |\n"
                "|---|---|---|---|---|---|---|---|\n");
    forEachCell(
        M, bm, bk, rng, {0.0, 0.5, 0.7, 0.9},
        [&](const sd::Problem &pr, Layer &layer, const rt::DeviceBuffer &mask) {
          double p = pr.p;
          KN s{pr.K, pr.N};
          for (const LayerOp &op : layerOps(pr, layer, mask)) {
            sd::Tiling coop, square, ping;
            coop.tma = square.tma = ping.tma = 1;
            coop.persistent = square.persistent = ping.persistent = 1;
            // The 128 x 128 output tile in each kernel's own names.
            std::string name = op.name;
            for (sd::Tiling *t : {&square, &ping}) {
              if (name == "fwd")
                t->tileM = 128, t->tileN = 128;
              else if (name == "dX")
                t->tileM = 128, t->tileK = 128;
              else
                t->tileN = 128, t->tileK = 128;
            }
            square.warps = 8;
            ping.warps = 4;
            ping.pingpong = 1;
            std::vector<double> t =
                bench::interleavedMs({[&] { op.run(coop); },
                                      [&] { op.run(square); },
                                      [&] { op.run(ping); }});
            std::printf("| %lld | %.2f | %s | %.3f | %.3f | %.3f | %.3f | "
                        "%.3f |\n",
                        (long long)s.N, p, op.name, t[0], t[1], t[2],
                        t[2] / t[0], t[2] / t[1]);
            cellRow(json, "pingpong", op.name, pr)
                .num("cooperative_ms", t[0])
                .num("cooperative_128x128_ms", t[1])
                .num("pingpong_128x128_ms", t[2]);
          }
        });
    std::printf("\n");
  }

  // The tile groups' size (GROUP: output row blocks that sweep the columns
  // together): the L2 window of the running tiles, and with it the DRAM
  // traffic (ncu read 780 MB for a forward whose operands are 160 MB).
  // "All" puts every row block in one group: the tiles then go column by
  // column, so the running tiles share one column block of the second
  // operand and sweep the first. At p = 0.9 the forward's first operand is
  // only its kept blocks (10% of X, which L2 can hold) while each window
  // of 8 row blocks needs most of W again; the question is whether the
  // best order moves with p.
  if (tables("groups")) {
    // Groups from 1 (row by row) to all rows; each as a ratio to the
    // default (the forward's follows p), whose tiling is fixed by the warps
    // so that nothing is tuned.
    const std::vector<int> groups = {1, 2, 4, 8, 16, 32, 1 << 20};
    std::printf("Tile groups, interleaved: ms of the default group, and each "
                "group's time over it.\n\n| N | p | kernel | default ms | "
                "1 | 2 | 4 | 8 | 16 | 32 | all |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|\n");
    forEachCell(
        M, bm, bk, rng, {0.0, 0.5, 0.7, 0.9},
        [&](const sd::Problem &pr, Layer &layer, const rt::DeviceBuffer &mask) {
          for (const LayerOp &op : layerOps(pr, layer, mask)) {
            std::vector<std::function<void()>> runs;
            sd::Tiling def;
            def.tma = 1;
            def.warps = 8;
            runs.push_back([&op, def] { op.run(def); });
            for (int group : groups) {
              sd::Tiling t;
              t.tma = 1;
              t.group = group;
              runs.push_back([&op, t] { op.run(t); });
            }
            std::vector<double> t = bench::interleavedMs(runs);
            std::printf("| %lld | %.2f | %s | %.3f |", (long long)pr.N, pr.p,
                        op.name, t[0]);
            bench::JsonObject &row =
                cellRow(json, "groups", op.name, pr).num("default_ms", t[0]);
            for (size_t g = 0; g < groups.size(); ++g) {
              std::printf(" %.3f |", t[g + 1] / t[0]);
              row.num(groups[g] == 1 << 20
                          ? "group_all_ms"
                          : "group" + std::to_string(groups[g]) + "_ms",
                      t[g + 1]);
            }
            std::printf("\n");
          }
        });
    std::printf("\n");
  }

  // Two programs per SM on a 3-stage ring (Tiling::stages = 3) against one
  // on four stages, at high p: there each kernel has a few tiles per SM
  // (dX at p = 0.9: 410 kept 128 x 128 tiles, 3.1 per SM), so the last
  // round leaves SMs idle; two resident programs halve the granularity.
  if (tables("stages"))
    abTable(json, M, bm, bk, rng, "stages",
            "One program per SM (4 stages) against two (3 stages), default "
            "tilings otherwise",
            {"4 stages", "3 stages", "four_stages_ms", "three_stages_ms"},
            {0.7, 0.9}, [](const LayerOp &, sd::Tiling &one, sd::Tiling &two) {
              // Fixed by the warps, so that nothing is tuned.
              one.warps = two.warps = 8;
              two.stages = 3;
            });

  // The list kernels' tiles longest list first (Tiling::ranked, the
  // default) against grid order, default tilings otherwise (fixed by the
  // warps, so nothing is tuned).
  if (tables("ranked"))
    abTable(
        json, M, bm, bk, rng, "ranked",
        "Longest lists first against grid order (dX: kept tiles first, "
        "persistent, against grid order)",
        {"grid order", "longest first", "grid_order_ms", "longest_first_ms"},
        {0.1, 0.5, 0.7, 0.9},
        [](const LayerOp &op, sd::Tiling &grid, sd::Tiling &ranked) {
          // Fixed by the warps, so that nothing is tuned.
          grid.warps = ranked.warps = 8;
          grid.ranked = 0;
          ranked.ranked = 1;
          // dX: its kept tiles first from the tile list
          // (Tiling::listed, persistent) against grid order.
          if (std::string(op.name) == "dX") {
            grid.listed = 0;
            ranked.listed = 1;
          }
        });

  // dX's 128 x 256 tile, which spans two 128 x 128 mask blocks (zeros in a
  // dropped one's columns, its MMAs wasted), against the 128 x 128 tile.
  if (tables("dx_tiles"))
    abTable(
        json, M, bm, bk, rng, "dx_tiles", "dX tiles",
        {"128 x 128", "128 x 256 (two mask blocks)", "narrow_ms", "wide_ms"},
        {0.0, 0.05, 0.1, 0.2},
        [](const LayerOp &, sd::Tiling &narrow, sd::Tiling &wide) {
          narrow.tileK = 128;
          wide.tileK = 256;
        },
        "dX");

  // dX's tiles by kind (Tiling::kinds: kept pairs two blocks wide, then
  // single blocks from a device-side list) against the autotuned single
  // launch, the default before it (bench/NOTES.md, "dX's tiles by kind").
  if (tables("dx_kinds"))
    abTable(
        json, M, bm, bk, rng, "dx_kinds",
        "dX by tile kind against the autotuned single launch",
        {"autotuned", "by kind", "autotuned_ms", "by_kind_ms"},
        {0.05, 0.1, 0.2, 0.3, 0.5, 0.7},
        [](const LayerOp &, sd::Tiling &single, sd::Tiling &kinds) {
          single.kinds = 0;
          kinds.kinds = 1;
        },
        "dX");

  if (tables("energy"))
    energyTable(json, M, bm, bk, rng);

  // Autotuned against the default tiling in the same process, interleaved
  // (interleavedMs), so that clock and power drift over the run cannot
  // favour either side: sweeps timed one after the other (RESULTS.md) put
  // the slow p = 0.05-0.2 cells on one side or the other from run to run.
  if (tables("autotune_ab")) {
    std::printf(
        "Autotuned against the default (hard-coded) tiling, interleaved "
        "in one process: ms, median of 7 rounds (order rotated each "
        "round) of medians of 10, L2 flushed; the default is timed "
        "twice (A/A: the spread of one kernel's timings).\n\n| N | p | "
        "kernel | default | autotuned | autotuned / default | default "
        "again / default |\n|---|---|---|---|---|---|---|\n");
    double worst = 0, worstAA = 0;
    forEachCell(
        M, bm, bk, rng, {0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9},
        [&](const sd::Problem &pr, Layer &layer, const rt::DeviceBuffer &mask) {
          double p = pr.p;
          KN s{pr.K, pr.N};
          for (const LayerOp &op : layerOps(pr, layer, mask)) {
            sd::Tiling fixed, tma;
            tma.tma = 1;
            std::string why;
            if (!sd::resolveTmaTiling(pr, op.kernel, tma, op.strideA,
                                      op.strideB, fixed, why)) {
              std::fprintf(stderr, "%s: no TMA tiling: %s\n", op.kernel,
                           why.c_str());
              continue;
            }
            // The default a second time: how far apart two timings of one
            // kernel come out here (the A/A spread), to read the column by.
            std::vector<double> t = bench::interleavedMs(
                {[&] { op.run(fixed); }, [&] { op.run(sd::Tiling{}); },
                 [&] { op.run(fixed); }});
            double def = t[0], tuned = t[1], again = t[2];
            worst = std::max(worst, tuned / def);
            worstAA = std::max(worstAA, std::max(again / def, def / again));
            std::printf("| %lld | %.2f | %s | %.3f | %.3f | %.3f | %.3f |\n",
                        (long long)s.N, p, op.name, def, tuned, tuned / def,
                        again / def);
            cellRow(json, "autotune_ab", op.name, pr)
                .num("default_ms", def)
                .num("autotuned_ms", tuned)
                .num("default_again_ms", again);
          }
        });
    std::printf("\nWorst autotuned / default: %.3f; widest A/A spread (default "
                "against itself, either way): %.3f\n\n",
                worst, worstAA);
  }
  // The dense DSL GEMM, for the dense end of the comparison with cuBLAS.
  bool gemmOk = true;
  if (tables("dense")) {
    std::printf(
        "Dense DSL GEMM (matmul_blocks, dsl_examples/matmul.tile): C = "
        "A W^T, A [M, K] and W [N, K] bf16, C [M, N] f32 (bf16 through "
        "store_block in matmul_store_block's rows); tiles BM x BN x BK; "
        "TFLOP/s = 2 M N K / time. check: no NaN left in a poisoned C, "
        "sampled entries match float64.\n\n");
    std::printf("| M | N | K | tiles | ms | TFLOP/s | check |\n"
                "|---|---|---|---|---|---|---|\n");
    struct MNK {
      int64_t M, N, K;
    };
    for (MNK g : {MNK{8192, 8192, 8192}, MNK{16384, 4096, 4096}}) {
      try {
        gemmOk &= denseGemm(g.M, g.N, g.K,
                            {{128, 128, 8},
                             {128, 256, 8},
                             {128, 256, 1},
                             {64, 256, 8, true},
                             {128, 128, 8, true},
                             {128, 256, 8, false, true},
                             {128, 128, 8, false, true}},
                            rng, json);
      } catch (const std::exception &e) {
        // Say so and carry on: the sweep above is already measured.
        std::printf("| %lld | %lld | %lld | - | - | - | failed (stderr) |\n",
                    (long long)g.M, (long long)g.N, (long long)g.K);
        std::fprintf(stderr, "dense GEMM failed: %s\n", e.what());
        gemmOk = false;
      }
    }
    std::printf("\n");
  }
  bool written = json.write(jsonPath);
  return gemmOk && written ? 0 : 1;
}
