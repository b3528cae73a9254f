"""The sparsetile torch layers against nn.Linear, at a transformer FFN's shapes.

For each layer (and for each of its kernels called directly through
sparsetile.ops), forward + backward of one linear is timed two ways:
  gpu ms   CUDA events around many back-to-back iterations (the GPU's time,
           launch overhead hidden when the CPU keeps ahead);
  cpu ms   the host's time per iteration with the GPU synchronized only at
           the end, i.e. what the Python + dispatch side costs.
A layer whose cpu ms exceeds its gpu ms is host-bound: the GPU waits for it.
Times are medians of 5 rounds; L2 is flushed before each round.

Usage: layers_bench.py [--tokens 8192] [--d 1024] [--ff 4096] [--json PATH]
Exits 3 without torch or a GPU."""
import argparse
import json
import statistics
import sys
import time

try:
    import torch
except ImportError:
    print("layers_bench: no torch", file=sys.stderr)
    sys.exit(3)
if not torch.cuda.is_available():
    print("layers_bench: no GPU", file=sys.stderr)
    sys.exit(3)

import sparsetile.nn as stnn
from sparsetile import ops

ITERS = 20


def measure(step, rounds=5):
    """(gpu ms, cpu ms) per call of `step`, medians over `rounds`."""
    flush = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    gpu, cpu = [], []
    for _ in range(rounds):
        flush.zero_()
        start, stop = torch.cuda.Event(True), torch.cuda.Event(True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        for _ in range(ITERS):
            step()
        stop.record()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        gpu.append(start.elapsed_time(stop) / ITERS)
        cpu.append((t1 - t0) * 1e3 / ITERS)
    return statistics.median(gpu), statistics.median(cpu)


def layer_step(layer, x):
    gy = torch.randn(x.shape[0], layer.out_features, device="cuda",
                     dtype=x.dtype)

    def step():
        layer(x).backward(gy)
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--ff", type=int, default=4096)
    ap.add_argument("--json")
    a = ap.parse_args()
    dt = torch.bfloat16
    rows = []
    for (k, n) in ((a.d, a.ff), (a.ff, a.d)):
        x = torch.randn(a.tokens, k, device="cuda", dtype=dt,
                        requires_grad=True)
        layers = {
            "nn.Linear": torch.nn.Linear(k, n, bias=False, device="cuda",
                                         dtype=dt),
            "SparseDropLinear p=0.1": stnn.SparseDropLinear(
                k, n, 0.1, bias=False, device="cuda", dtype=dt),
            "SparseDropLinear p=0.5": stnn.SparseDropLinear(
                k, n, 0.5, bias=False, device="cuda", dtype=dt),
            "Sparse24Linear": stnn.Sparse24Linear(
                k, n, bias=False, device="cuda", dtype=dt),
        }
        for name, layer in layers.items():
            layer.train()
            g, c = measure(layer_step(layer, x))
            rows.append({"what": name + " fwd+bwd", "M": a.tokens, "K": k,
                         "N": n, "gpu_ms": g, "cpu_ms": c})
        # The kernels alone, through sparsetile.ops (no autograd, no layer).
        w = layers["nn.Linear"].weight.detach()
        xd = x.detach()
        gy = torch.randn(a.tokens, n, device="cuda", dtype=dt)
        mask = ops.sparsedrop_mask(0, 0, 0.1, a.tokens, k, (128, 128))
        kernels = {
            "torch.matmul fwd": lambda: torch.matmul(xd, w.t()),
            "sparsedrop_mask": lambda: ops.sparsedrop_mask(
                0, 0, 0.1, a.tokens, k, (128, 128)),
            "sparsedrop_forward": lambda: ops.sparsedrop_forward(
                xd, w, mask, 0.1, (128, 128)),
            "sparsedrop_backward_x": lambda: ops.sparsedrop_backward_x(
                gy, w, mask, 0.1, (128, 128)),
            "sparsedrop_backward_w": lambda: ops.sparsedrop_backward_w(
                gy, xd, mask, 0.1, (128, 128)),
        }
        m24 = ops.mask24_transposable(w)
        comp = ops.compress24(w, m24)
        kernels.update({
            "mask24_transposable": lambda: ops.mask24_transposable(w),
            "compress24": lambda: ops.compress24(w, m24),
            "sparse24_linear_forward": lambda: ops.sparse24_linear_forward(
                xd, comp[0], comp[1]),
            "sparse24_linear_backward_x": lambda:
                ops.sparse24_linear_backward_x(gy, comp[2], comp[3]),
        })
        for name, fn in kernels.items():
            g, c = measure(fn)
            rows.append({"what": name, "M": a.tokens, "K": k, "N": n,
                         "gpu_ms": g, "cpu_ms": c})
    print("| what | M | K | N | gpu ms | cpu ms | host-bound |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        print("| %s | %d | %d | %d | %.3f | %.3f | %s |" % (
            r["what"], r["M"], r["K"], r["N"], r["gpu_ms"], r["cpu_ms"],
            "yes" if r["cpu_ms"] > r["gpu_ms"] * 1.05 else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bench": "layers", "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
