"""The SparseDrop GEMMs and cuBLAS under the same sustained load, with the SM
clock and the board power sampled while they run.

The bench (SparseDropBench.cpp) reads the forward no faster at p = 0.05-0.1
than at p = 0 although it skips 5-10% of the blocks; under ncu, whose clocks
are locked at about 1.4 GHz, p = 0.1 is 7.5% faster (bench/NOTES.md). An H100
under a long GEMM load sits at its 700 W power cap, and its SM clock then
depends on how long and how hard it has been working, so timings taken one
after the other (a sweep over p, cuBLAS in another process) compare clock
states as much as kernels. This script runs every item (cuBLAS and our
kernel at each p, for fwd, dX and dW) in blocks of back-to-back launches,
round-robin over several rounds, and samples `nvidia-smi` every 50 ms: all
items see the same power state, and the table shows the clock they ran at.

Usage: python3 bench/sparsedrop/clocks_p.py [--n N[,N...]] [--rates 0,0.1]
           [--rounds R] [--seconds S]
(one table per N, each its own round-robin)
Needs torch, nvidia-smi and a GPU; exits 77 (skipped) without them.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))


def sampler():
    cmd = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw",
           "--format=csv,noheader,nounits", "-lms", "50"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                            bufsize=1)


def round_robin(torch, fns, rounds, seconds, flush):
    """Runs each of `fns` in blocks of back-to-back launches (each after an
    L2 flush, as the benches do), round-robin over `rounds` rounds, while
    nvidia-smi samples the SM clock and the board power: every item runs in
    the same sustained power state. Returns, per item, one (median launch
    ms, mean SM MHz, mean W) per round."""
    import threading
    samples = []  # (time, clock MHz, watts)
    proc = sampler()

    def read():
        for line in proc.stdout:
            parts = [s.strip() for s in line.split(",")]
            try:
                samples.append((time.time(), float(parts[0]), float(parts[1])))
            except (ValueError, IndexError):
                pass

    threading.Thread(target=read, daemon=True).start()
    time.sleep(0.5)
    nan = float("nan")
    got = {i: [] for i in range(len(fns))}
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            times = []
            t0 = time.time()
            while time.time() - t0 < seconds:
                flush.zero_()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            t1 = time.time()
            inside = [s for s in samples if t0 + 0.2 <= s[0] <= t1]
            got[i].append((statistics.median(times),
                           statistics.mean(s[1] for s in inside) if inside else nan,
                           statistics.mean(s[2] for s in inside) if inside else nan))
    proc.terminate()
    return got


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="4096")
    ap.add_argument("--rates", default="0,0.05,0.1,0.2,0.9")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=0.7)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("clocks_p: skipped (no torch)")
        return 77
    if not torch.cuda.is_available():
        print("clocks_p: skipped (no GPU)")
        return 77
    import sparsetile as st
    for n in args.n.split(","):
        table(torch, st, args, int(n))
    return 0


def table(torch, st, args, N):
    M, K = 16384, 4096
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g) / 64
    dy = torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=g)
    flush = torch.empty(256 << 20, device="cuda", dtype=torch.uint8)
    rates = [float(r) for r in args.rates.split(",")]
    masks = {p: st.ops.sparsedrop_mask(1234, 0, p, M, K, device=x.device)
             for p in rates}
    ops = {
        "fwd": (lambda: torch.matmul(x, w.t()),
                lambda p: st.ops.sparsedrop_forward(x, w, masks[p], p)),
        "dX": (lambda: torch.matmul(dy, w),
               lambda p: st.ops.sparsedrop_backward_x(dy, w, masks[p], p)),
        "dW": (lambda: torch.matmul(dy.t(), x),
               lambda p: st.ops.sparsedrop_backward_w(dy, x, masks[p], p)),
    }
    items = []  # (op, label, fn)
    for name, (dense, sparse) in ops.items():
        items.append((name, "cuBLAS", dense))
        for p in rates:
            items.append((name, f"p = {p:g}", (lambda f, q: lambda: f(q))(sparse, p)))
    for _, _, fn in items:  # compile, load and tune outside the timed blocks
        fn()
    torch.cuda.synchronize()

    got = round_robin(torch, [fn for _, _, fn in items], args.rounds,
                      args.seconds, flush)
    print(f"SparseDrop GEMMs against cuBLAS (torch.matmul) under sustained load: "
          f"M {M} K {K} N {N}, bf16, L2 flushed before each launch; "
          f"{args.rounds} rounds over all items, blocks of {args.seconds:.1f} s; "
          f"median launch of each block, median over rounds.\n")
    print("| op | what | ms | vs cuBLAS | mean SM MHz | mean W |")
    print("|---|---|---|---|---|---|")
    base = {}
    for i, (name, label, _) in enumerate(items):
        ms = statistics.median(v[0] for v in got[i])
        mhz = statistics.mean(v[1] for v in got[i])
        watts = statistics.mean(v[2] for v in got[i])
        if label == "cuBLAS":
            base[name] = ms
        print(f"| {name} | {label} | {ms:.3f} | {base[name] / ms:.2f}x | "
              f"{mhz:.0f} | {watts:.0f} |")
    print()


if __name__ == "__main__":
    sys.exit(main())
