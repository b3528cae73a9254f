"""The ceiling of mma.sync.m16n8k16 (f16 in, f32 accumulate) on the GPU at
hand: every warp of a full grid issues the instruction on register operands
only, with eight independent accumulators to cover its latency, no memory
traffic but the final store. What the sm_80 kernels (the pointer ring read
by mma.sync, run as sm_80 PTX on an sm_90 GPU) are measured against
(bench/NOTES.md, "The pointer ring on sm_80"). CuPy compiles the probe with
NVRTC; CUDA events, warm-up, median of the runs.

Usage: mma_sync_probe.py [--json PATH]
Exits 3 without CuPy or a GPU."""
import argparse
import json
import statistics
import sys

try:
    import cupy as cp
except ImportError:  # pragma: no cover - the build machine has no CuPy
    cp = None

SOURCE = r"""
extern "C" __global__ void probe(float *out, int iters) {
  unsigned a0 = threadIdx.x * 0x00010001u, a1 = a0 ^ 0x3c003c00u;
  unsigned a2 = a0 + 7u, a3 = a1 + 11u, b0 = a0 ^ 0x5555u, b1 = a1 ^ 0x1111u;
  float c[8][4];
  for (int j = 0; j < 8; ++j)
    for (int e = 0; e < 4; ++e)
      c[j][e] = 0.0f;
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
          "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
          "{%0, %1, %2, %3};"
          : "+f"(c[j][0]), "+f"(c[j][1]), "+f"(c[j][2]), "+f"(c[j][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float s = 0.0f;
  for (int j = 0; j < 8; ++j)
    for (int e = 0; e < 4; ++e)
      s += c[j][e];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    args = ap.parse_args()
    if cp is None:
        print("mma_sync_probe.py: skipped (no CuPy)")
        sys.exit(3)
    try:
        dev = cp.cuda.Device()
        sms = dev.attributes["MultiProcessorCount"]
    except Exception as e:  # noqa: BLE001
        print("mma_sync_probe.py: skipped (no GPU: %s)" % e)
        sys.exit(3)
    kern = cp.RawKernel(SOURCE, "probe")
    rows = []
    for warps in (4, 8):
        threads = 32 * warps
        for blocks_per_sm in (1, 2, 4):
            blocks = sms * blocks_per_sm
            out = cp.empty(blocks * threads, dtype=cp.float32)
            iters = 4096
            for _ in range(3):
                kern((blocks,), (threads,), (out, cp.int32(iters)))
            times = []
            for _ in range(10):
                start, end = cp.cuda.Event(), cp.cuda.Event()
                start.record()
                kern((blocks,), (threads,), (out, cp.int32(iters)))
                end.record()
                end.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, end))
            ms = statistics.median(times)
            flops = 2.0 * 16 * 8 * 16 * 8 * iters * blocks * warps
            row = dict(warps=warps, blocks_per_sm=blocks_per_sm, ms=ms,
                       tflops=flops / ms / 1e9)
            rows.append(row)
            print("%d warps, %d blocks an SM: %.1f TFLOP/s"
                  % (warps, blocks_per_sm, row["tflops"]), flush=True)
    best = max(r["tflops"] for r in rows)
    print("mma.sync.m16n8k16 f16 -> f32 ceiling: %.1f TFLOP/s" % best)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bench": "mma_sync_probe",
                       "gpu": cp.cuda.runtime.getDeviceProperties(
                           dev.id)["name"].decode(),
                       "sms": sms, "rows": rows, "best_tflops": best}, f,
                      indent=1)


if __name__ == "__main__":
    main()
