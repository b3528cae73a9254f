//===- BenchUtil.h - Timing helpers shared by the GPU benches ---*- C++ -*-===//
//
// How every sparsetile bench times a GPU operation, so that all figures in
// bench/ are comparable with each other and with triton's do_bench:
//  - warm-up runs first (JIT compilation and module loads stay out);
//  - before each timed run, a 256 MB write evicts the inputs from L2 and
//    keeps the GPU busy while the host enqueues the timed launch (so host
//    launch overhead is not measured);
//  - CUDA events around each run; the median is reported.
//
//===----------------------------------------------------------------------===//

#ifndef SPARSETILE_BENCH_BENCHUTIL_H
#define SPARSETILE_BENCH_BENCHUTIL_H

#include "sparsetile/runtime/Driver.h"

#include <cuda.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

namespace sparsetile::bench {

/// The 256 MB L2-flushing write issued before each timed run.
struct L2Flush {
  rt::DeviceBuffer buf{size_t(256) << 20};
  CUresult (*memset)(CUdeviceptr, unsigned, size_t, CUstream) =
      reinterpret_cast<CUresult (*)(CUdeviceptr, unsigned, size_t, CUstream)>(
          rt::driverEntryPoint("cuMemsetD32Async"));
  void operator()() { memset(buf.ptr(), 0, buf.size() / 4, nullptr); }
};

/// Median time in ms of `fn` over `reps` runs after `warmup` runs.
inline double medianMs(const std::function<void()> &fn, int warmup = 10,
                       int reps = 50) {
  static L2Flush flush;
  for (int i = 0; i < warmup; ++i)
    fn();
  std::vector<double> t;
  rt::Event a, b;
  for (int i = 0; i < reps; ++i) {
    flush();
    a.record();
    fn();
    b.record();
    b.synchronize();
    t.push_back(rt::Event::elapsedMs(a, b));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// The copy ceiling: a device-to-device copy timed like the kernels, its
/// rate counting bytes read + written.
struct CopyCeiling {
  rt::DeviceBuffer src, dst;
  CUresult (*copy)(CUdeviceptr, CUdeviceptr, size_t, CUstream) =
      reinterpret_cast<CUresult (*)(CUdeviceptr, CUdeviceptr, size_t,
                                    CUstream)>(
          rt::driverEntryPoint("cuMemcpyDtoDAsync"));

  explicit CopyCeiling(size_t maxBytes = size_t(1) << 30)
      : src(maxBytes), dst(maxBytes) {
    src.fill(0x3f);
  }
  /// TB/s of copying `bytes` (at most the size given at construction).
  double tbs(size_t bytes) {
    double ms = medianMs([&] { copy(dst.ptr(), src.ptr(), bytes, nullptr); });
    return 2.0 * double(bytes) / (ms * 1e-3) / 1e12;
  }
};

/// Random bf16 bits in about [-4, 4]: never zeros, never NaN.
inline std::vector<uint16_t> randomBf16(size_t n, std::mt19937 &rng) {
  std::vector<uint16_t> v(n);
  std::uniform_int_distribution<int> exp(0x3c, 0x40), man(0, 127), sign(0, 1);
  for (auto &x : v)
    x = uint16_t(sign(rng) << 15 | exp(rng) << 7 | man(rng));
  return v;
}

} // namespace sparsetile::bench

#endif // SPARSETILE_BENCH_BENCHUTIL_H
