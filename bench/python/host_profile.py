"""Where the host's time goes in a layer's forward + backward: cProfile over
ITERS steps of nn.Linear, SparseDropLinear and Sparse24Linear at
x [tokens, k] -> n (bf16), printing each layer's host microseconds a step
and its functions by own time. ctypes calls are not profiled on their own:
the C library's time shows as the own time of sparsetile.ops._call.

Usage: host_profile.py [--tokens 8192] [--k 1024] [--n 4096] [--top 18]
Exits 3 without torch or a GPU."""
import argparse
import cProfile
import io
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ffn_bench as fb  # noqa: E402 (exits 3 without torch or a GPU)

import torch  # noqa: E402

import sparsetile.nn as stnn  # noqa: E402

ITERS = 200


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--k", type=int, default=1024)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--top", type=int, default=18)
    a = ap.parse_args()
    kw = dict(bias=False, device="cuda", dtype=fb.DT)
    layers = {
        "nn.Linear": torch.nn.Linear(a.k, a.n, **kw),
        "SparseDropLinear p=0.1": stnn.SparseDropLinear(a.k, a.n, 0.1, **kw),
        "Sparse24Linear": stnn.Sparse24Linear(a.k, a.n, **kw),
    }
    x = torch.randn(a.tokens, a.k, device="cuda", dtype=fb.DT,
                    requires_grad=True)
    gy = torch.randn(a.tokens, a.n, device="cuda", dtype=fb.DT)
    for name, layer in layers.items():
        def step():
            layer(x).backward(gy)
        for _ in range(5):
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(ITERS):
            step()
        host = (time.perf_counter() - t0) / ITERS * 1e6
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(ITERS):
            step()
        prof.disable()
        torch.cuda.synchronize()
        buf = io.StringIO()
        st = pstats.Stats(prof, stream=buf)
        st.sort_stats("tottime").print_stats(a.top)
        print("\n## %s: %.1f us of host time a step (unprofiled)" % (name,
                                                                     host))
        lines = buf.getvalue().splitlines()
        start = next((i for i, l in enumerate(lines) if "ncalls" in l), 0)
        for line in lines[start:start + a.top + 1]:
            print(line)


if __name__ == "__main__":
    main()
