// size_floor_probe.cu: how fast can any kernel move a 2:4 helper's bytes at
// a given size? A measuring tool, not a library kernel. Issue 13 reads every
// helper against the 1 GiB device-to-device copy, also at 4096 x 4096, where
// a helper moves only 50-120 MB and the launch, the DRAM ramp and the last
// wave are a fifth of its time. The bench's own yardstick at that size is a
// memcpy of the same bytes, and the ncu one was PyTorch's elementwise
// kernel; neither is tuned for the helpers' mixes (more reads than writes).
// This probe times hand-tuned pure-streaming kernels of each helper's mix,
// so that the best of them is the floor a helper can be held to.
//
// A mix (rb, wb) reads rb and writes wb bytes an entry, in separate arrays
// of 16-byte chunks (a helper reads W and the mask and writes separate
// outputs). Every written word depends on every read one, so nothing is
// dead. Schedules:
//   oneshot U,B   a thread takes U units of 16 entries, B threads a block,
//                 all U units' loads issued before any store; one wave
//                 after another;
//   persist U,B,k k blocks an SM, grid-striding over such chunks of units.
//
// Build and run (nvcc is on both machines; the GPU is on the lent one):
//   nvcc -O3 -arch=sm_90a -o .device/sizeprobe \
//        bench/sparse24/size_floor_probe.cu
//   .device/sizeprobe [R C ...]       (default: 4096 4096 16384 4096)
// Timing as the benches (probe_timing.cuh): CUDA events around each launch
// after 10 warm-ups, L2 flushed by a 256 MiB memset before every launch,
// outputs poisoned first, median of 50. Rates count bytes read + written.
#include "probe_timing.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// One unit: 16 entries, RB 16-byte chunks in, WB out; chunk k of unit u is
// at in[k * units + u], so each load of a warp is 512 contiguous bytes.
template <int RB, int WB, int U>
__device__ __forceinline__ void units(const uint4 *__restrict__ in,
                                      uint4 *__restrict__ out, size_t units_,
                                      size_t first, size_t step) {
  uint4 v[U][RB];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    size_t i = first + u * step;
#pragma unroll
    for (int k = 0; k < RB; ++k)
      v[u][k] = i < units_ ? in[k * units_ + i] : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    size_t i = first + u * step;
    if (i >= units_)
      continue;
    uint4 x = v[u][0];
#pragma unroll
    for (int k = 1; k < RB; ++k)
      x = make_uint4(x.x ^ v[u][k].x, x.y ^ v[u][k].y, x.z ^ v[u][k].z,
                     x.w ^ v[u][k].w);
#pragma unroll
    for (int k = 0; k < WB; ++k)
      out[k * units_ + i] = make_uint4(x.x + k, x.y, x.z, x.w);
  }
}

template <int RB, int WB, int U>
__global__ void oneshot(const uint4 *in, uint4 *out, size_t n) {
  size_t first = size_t(blockIdx.x) * blockDim.x * U + threadIdx.x;
  units<RB, WB, U>(in, out, n, first, blockDim.x);
}

template <int RB, int WB, int U>
__global__ void persist(const uint4 *in, uint4 *out, size_t n) {
  size_t chunk = size_t(blockDim.x) * U;
  for (size_t base = size_t(blockIdx.x) * chunk; base < n;
       base += size_t(gridDim.x) * chunk)
    units<RB, WB, U>(in, out, n, base + threadIdx.x, blockDim.x);
}

__global__ void empty() {}

// Times the mix of RB bytes read and WB written an entry (the helpers'
// mixes rounded to whole bytes: the fused MVUE compression writes 1.125,
// compress24 2.25, the mask update 5.25) at R x C; `helpers` names the
// helpers it stands for.
template <int RB, int WB>
static void runMix(const char *helpers, size_t R, size_t C, ProbeTimer &timer,
                   double copyTbs, int sms, std::string &json) {
  size_t n = R * C / 16;
  uint4 *in, *out;
  CK(cudaMalloc(&in, n * RB * 16));
  CK(cudaMalloc(&out, n * WB * 16));
  CK(cudaMemset(in, 0x5a, n * RB * 16));
  double bytes = double(n) * 16 * (RB + WB);
  auto tbs = [&](double ms) { return bytes / (ms * 1e-3) / 1e12; };

  void *cpSrc, *cpDst;
  size_t half = size_t(bytes / 2);
  CK(cudaMalloc(&cpSrc, half));
  CK(cudaMalloc(&cpDst, half));
  double sameMs = timer.median([&] {
    CK(cudaMemcpyAsync(cpDst, cpSrc, half, cudaMemcpyDeviceToDevice));
  });
  CK(cudaFree(cpSrc));
  CK(cudaFree(cpDst));

  struct Row {
    std::string name;
    double ms;
  };
  std::vector<Row> rows;
  // The first output chunk of the first 4096 units must be the XOR of
  // their read chunks, which the 0x5a fill makes 0x5a.. or 0.
  auto check = [&](const std::string &name) {
    std::vector<uint32_t> h(4 * std::min<size_t>(n, 4096));
    CK(cudaMemcpy(h.data(), out, h.size() * 4, cudaMemcpyDeviceToHost));
    uint32_t want = (RB % 2) ? 0x5a5a5a5au : 0u;
    for (size_t i = 0; i < h.size(); i += 4)
      if (h[i] != want) {
        std::fprintf(stderr, "%s: wrong output at chunk %zu\n", name.c_str(),
                     i / 4);
        std::exit(1);
      }
  };
  auto time = [&](const std::string &name, auto kernel, unsigned grid,
                  unsigned block) {
    CK(cudaMemset(out, 0xff, n * WB * 16)); // poison
    double ms = timer.median([&] { kernel<<<grid, block>>>(in, out, n); });
    check(name);
    rows.push_back({name, ms});
  };
  auto oneshotU = [&](auto kernel, int u) {
    for (unsigned b : {128u, 256u, 512u})
      time("oneshot U" + std::to_string(u) + " B" + std::to_string(b), kernel,
           unsigned((n + size_t(b) * u - 1) / (size_t(b) * u)), b);
  };
  auto persistU = [&](auto kernel, int u) {
    for (unsigned b : {256u, 512u})
      for (int k : {1, 2, 4, 8})
        if (b * k <= 2048)
          time("persist U" + std::to_string(u) + " B" + std::to_string(b) +
                   " k" + std::to_string(k),
               kernel, unsigned(sms * k), b);
  };
  oneshotU(oneshot<RB, WB, 1>, 1);
  oneshotU(oneshot<RB, WB, 2>, 2);
  oneshotU(oneshot<RB, WB, 4>, 4);
  persistU(persist<RB, WB, 1>, 1);
  persistU(persist<RB, WB, 2>, 2);
  persistU(persist<RB, WB, 4>, 4);

  std::sort(rows.begin(), rows.end(),
            [](const Row &x, const Row &y) { return x.ms < y.ms; });
  std::printf("\n%zu x %zu, %d+%d B/entry (%s), %.1f MB\n", R, C, RB, WB,
              helpers, bytes / 1e6);
  std::printf("| schedule | ms | TB/s | %% of 1 GiB copy | %% of same-size "
              "memcpy |\n|---|---|---|---|---|\n");
  std::printf("| memcpy of the same bytes | %.4f | %.3f | %.1f%% | 100%% |\n",
              sameMs, tbs(sameMs), 100 * tbs(sameMs) / copyTbs);
  for (size_t i = 0; i < rows.size() && i < 4; ++i)
    std::printf("| %s | %.4f | %.3f | %.1f%% | %.1f%% |\n",
                rows[i].name.c_str(), rows[i].ms, tbs(rows[i].ms),
                100 * tbs(rows[i].ms) / copyTbs, 100 * sameMs / rows[i].ms);
  std::printf("| (worst of %zu) %s | %.4f | %.3f | %.1f%% | %.1f%% |\n",
              rows.size(), rows.back().name.c_str(), rows.back().ms,
              tbs(rows.back().ms), 100 * tbs(rows.back().ms) / copyTbs,
              100 * sameMs / rows.back().ms);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s{\"R\":%zu,\"C\":%zu,\"rb\":%d,\"wb\":%d,\"memcpy_ms\":%.5f,"
                "\"best\":\"%s\",\"best_ms\":%.5f,\"best_pct_copy\":%.2f}",
                json.empty() ? "" : ",", R, C, RB, WB, sameMs,
                rows[0].name.c_str(), rows[0].ms,
                100 * tbs(rows[0].ms) / copyTbs);
  json += buf;
  CK(cudaFree(in));
  CK(cudaFree(out));
}

int main(int argc, char **argv) {
  std::vector<size_t> shapes;
  for (int i = 1; i + 1 < argc; i += 2) {
    shapes.push_back(std::strtoull(argv[i], nullptr, 10));
    shapes.push_back(std::strtoull(argv[i + 1], nullptr, 10));
  }
  if (shapes.empty())
    shapes = {4096, 4096, 16384, 4096};
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  ProbeTimer timer(10, 50);

  size_t big = size_t(1) << 30;
  void *s, *d;
  CK(cudaMalloc(&s, big));
  CK(cudaMalloc(&d, big));
  CK(cudaMemset(s, 0x3f, big));
  double copyMs = timer.median(
      [&] { CK(cudaMemcpyAsync(d, s, big, cudaMemcpyDeviceToDevice)); });
  double copyTbs = 2.0 * big / (copyMs * 1e-3) / 1e12;
  CK(cudaFree(s));
  CK(cudaFree(d));
  double emptyMs = timer.median([] { empty<<<1, 32>>>(); });
  std::printf("%s, %d SMs; 1 GiB copy %.3f TB/s; an empty launch between "
              "events %.4f ms\n",
              prop.name, prop.multiProcessorCount, copyTbs, emptyMs);

  std::string json;
  int sms = prop.multiProcessorCount;
  for (size_t i = 0; i + 1 < shapes.size(); i += 2) {
    size_t R = shapes[i], C = shapes[i + 1];
    runMix<2, 1>("transposable / row-wise mask, fused MVUE compression", R, C,
                 timer, copyTbs, sms, json);
    runMix<2, 2>("mvue24", R, C, timer, copyTbs, sms, json);
    runMix<3, 2>("compress24", R, C, timer, copyTbs, sms, json);
    runMix<5, 2>("masked decay", R, C, timer, copyTbs, sms, json);
    runMix<2, 5>("mask update", R, C, timer, copyTbs, sms, json);
  }
  std::printf("\n{\"copy_tbs\":%.4f,\"empty_ms\":%.5f,\"mixes\":[%s]}\n",
              copyTbs, emptyMs, json.c_str());
  return 0;
}
