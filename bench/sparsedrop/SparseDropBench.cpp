//===- SparseDropBench.cpp - SparseDrop block-sparse GEMMs -----------------===//
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
//===----------------------------------------------------------------------===//

#include "BenchUtil.h"
#include "sparsetile/ops/SparseDrop.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/Error.h"

#include <algorithm>
#include <bitset>
#include <cstdio>
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
using bench::randomBf16; // about [-4, 4], never zeros or NaN
} // namespace

int main() {
  std::string why;
  if (!rt::gpuAvailable(&why)) {
    std::printf("sparsedrop bench skipped: no GPU (%s)\n", why.c_str());
    return 0;
  }
  rt::Device &dev = rt::Device::get();
  std::printf("device: %s (%s)\n\n", dev.name().c_str(), dev.arch().c_str());
  std::printf("bf16, mask blocks 128 x 128; TFLOP/s on kept blocks "
              "(2 M N K (1 - p_actual)); speedup = time at p = 0 / time; "
              "ideal = 1 / (1 - p_actual). Medians of 30, L2 flushed.\n\n");

  const int64_t M = 16384, bm = 128, bk = 128;
  std::mt19937 rng(1234);

  // Engines and output tiles at p = 0, 16384 x 4096 x 4096: mma.sync
  // (tma = 0, the sm_80 path) against the TMA + wgmma kernels.
  {
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
    for (int cfg : {0, 1, 2, 3}) {
      sd::Tiling tf, tx, tw;
      tf.tma = tx.tma = tw.tma = cfg ? 1 : 0;
      if (cfg == 2)
        tf.tileN = 256, tw.tileN = 256;
      else if (cfg == 1 || cfg == 3)
        tf.tileN = 128, tw.tileN = 128;
      if (cfg == 3)
        tf.stages = tx.stages = tw.stages = 3;
      double f = medianMs([&] {
        sd::forward(pr, X.ptr(), K, W.ptr(), K, mask.ptr(), Y.ptr(), N,
                    nullptr, tf);
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
      const char *names[] = {"mma.sync (no TMA)", "TMA+wgmma, 128 x 128 tiles",
                             "TMA+wgmma, fwd 128 x 256, dW 256 x 128",
                             "TMA+wgmma, 128 x 128 tiles, 3 stages"};
      std::printf("| %s | %.1f | %.1f | %.1f |\n", names[cfg],
                  flop / (f * 1e-3) / 1e12, x ? flop / (x * 1e-3) / 1e12 : 0.0,
                  flop / (w * 1e-3) / 1e12);
    }
    std::printf("\n");
  }
  struct KN {
    int64_t K, N;
  };
  for (KN s : {KN{4096, 4096}, KN{4096, 16384}}) {
    auto X = rt::DeviceBuffer::fromHost(randomBf16(size_t(M * s.K), rng));
    auto W = rt::DeviceBuffer::fromHost(randomBf16(size_t(s.N * s.K), rng));
    auto dY = rt::DeviceBuffer::fromHost(randomBf16(size_t(M * s.N), rng));
    rt::DeviceBuffer Y(size_t(M * s.N) * 2), dX(size_t(M * s.K) * 2),
        dW(size_t(s.N * s.K) * 2);
    int64_t words = sd::maskWords(M, s.K, bm, bk);
    rt::DeviceBuffer mask(size_t(words) * 8);
    double base[3] = {0, 0, 0};
    std::printf("| M | K | N | p | p_actual | mask ms | fwd ms | fwd TFLOP/s | "
                "fwd speedup | dX ms | dX TFLOP/s | dX speedup | dW ms | dW "
                "TFLOP/s | dW speedup | ideal |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (double p : {0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9}) {
      sd::Problem pr{DType::BF16, M, s.N, s.K, bm, bk, p};
      double maskMs = medianMs(
          [&] { sd::generateMask(42, 0, p, M, s.K, bm, bk, mask.ptr()); });
      dev.synchronize();
      double keptBlocks = 0;
      for (uint64_t w : mask.toHost<uint64_t>())
        keptBlocks += double(std::bitset<64>(w).count());
      double keep = keptBlocks / double((M / bm) * (s.K / bk));
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
      std::printf("| %lld | %lld | %lld | %.2f | %.4f | %.4f | %.3f | %.1f | "
                  "%.2fx | %.3f | %.1f | %.2fx | %.3f | %.1f | %.2fx | %.2fx |\n",
                  (long long)M, (long long)s.K, (long long)s.N, p, 1 - keep,
                  maskMs, fwd, tf(fwd), base[0] / fwd, dx, tf(dx),
                  base[1] / dx, dw, tf(dw), base[2] / dw,
                  keep > 0 ? 1 / keep : 0.0);
    }
    std::printf("\nDSL dense speed (p = 0, all blocks kept), M %lld K %lld N "
                "%lld: fwd %.1f, dX %.1f, dW %.1f TFLOP/s\n\n",
                (long long)M, (long long)s.K, (long long)s.N,
                2.0 * M * s.N * s.K / (base[0] * 1e-3) / 1e12,
                2.0 * M * s.N * s.K / (base[1] * 1e-3) / 1e12,
                2.0 * M * s.N * s.K / (base[2] * 1e-3) / 1e12);
  }
  return 0;
}
