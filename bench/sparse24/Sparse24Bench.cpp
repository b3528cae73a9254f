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
// Also times the row-wise mask, the MVUE sparsifier and masked decay on the
// same shapes for reference.
//
//===----------------------------------------------------------------------===//

#include "sparsetile/ops/Sparse24.h"
#include "sparsetile/runtime/Driver.h"
#include "sparsetile/runtime/Error.h"

#include "BenchUtil.h"

#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

using namespace sparsetile;
using namespace sparsetile::ops;

using namespace sparsetile::bench;

int main() {
  std::string why;
  if (!rt::gpuAvailable(&why)) {
    std::printf("sparse24 bench skipped: no GPU (%s)\n", why.c_str());
    return 0;
  }
  rt::Device &dev = rt::Device::get();
  // Copy ceiling: 1 GiB device-to-device, read + write.
  CopyCeiling ceiling;
  double copyTBs = ceiling.tbs(size_t(1) << 30);

  std::printf("device: %s (%s)\n", dev.name().c_str(), dev.arch().c_str());
  std::printf("device-to-device copy: %.3f TB/s (1 GiB, median of 50)\n\n",
              copyTBs);
  std::printf("| op | R | C | ms | bytes/entry | TB/s | %% of copy |\n");
  std::printf("|---|---|---|---|---|---|---|\n");

  struct Shape {
    int64_t R, C;
  };
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
      std::printf("| %s | %lld | %lld | %.4f | %.0f | %.3f | %.0f%% |\n", op,
                  (long long)s.R, (long long)s.C, ms, bytesPerEntry, tbs,
                  100 * tbs / copyTBs);
    };
    row("transposable mask", 3, [&] {
      mask24Transposable(DType::BF16, s.R, s.C, w.ptr(), s.C, mask.ptr(), s.C, 0, 0);
    });
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
    row("masked decay", 7, [&] {
      maskedDecay(DType::BF16, g.ptr(), w.ptr(), mask.ptr(), n, 1e-6f);
    });
  }
  return 0;
}
