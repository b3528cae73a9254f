// probe_timing.cuh: the timing the CUDA probes of bench/sparse24/ share, the
// benches' own (bench/common/BenchUtil.h) in the runtime API: CUDA events
// around each launch, L2 flushed by a 256 MiB memset before every launch,
// the median after warm-up. The probes are standalone nvcc tools, so they
// cannot link the runtime's BenchUtil.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                  \
  do {                                                                         \
    cudaError_t e_ = (x);                                                      \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__,                   \
                   cudaGetErrorString(e_));                                    \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

struct ProbeTimer {
  void *flush = nullptr;
  size_t flushBytes = size_t(256) << 20;
  int warmup, reps;
  cudaEvent_t a, b;
  ProbeTimer(int warmup, int reps) : warmup(warmup), reps(reps) {
    CK(cudaMalloc(&flush, flushBytes));
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
  }
  /// Median ms of `launch` (which enqueues on the default stream).
  template <class F> double median(F launch) {
    for (int i = 0; i < warmup; ++i)
      launch();
    std::vector<float> ms;
    for (int i = 0; i < reps; ++i) {
      CK(cudaMemsetAsync(flush, 0, flushBytes));
      CK(cudaEventRecord(a));
      launch();
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float t;
      CK(cudaEventElapsedTime(&t, a, b));
      ms.push_back(t);
    }
    CK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  }
};
