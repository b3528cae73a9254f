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
           [--rounds R] [--seconds S] [--dense]
(one table per N, each its own round-robin; --n=, for none). --dense adds
the dense DSL GEMM (matmul_store_block, C in bf16 as cuBLAS writes it) to
the forward's round-robin, and a round-robin of its own against
torch.matmul at the shapes of SparseDropBench's dense table: that table and
torch_ref.py time our GEMM and cuBLAS in two processes minutes apart, in
different power states. Every block keeps the GPU busy, so the tables show
the sustained state however short --seconds is; short blocks only
interleave the items more finely.
Needs torch, nvidia-smi and a GPU; exits 77 (skipped) without them.
"""

import argparse
import json
import math
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
            # Skip the block's first samples (the previous item's state),
            # at most half of a short block.
            inside = [s for s in samples
                      if t0 + min(0.2, seconds / 2) <= s[0] <= t1]
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
    ap.add_argument("--dense", action="store_true",
                    help="also the dense DSL GEMM against cuBLAS")
    ap.add_argument("--json", metavar="PATH", help="also write every row here")
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
    rows = []
    for n in filter(None, args.n.split(",")):  # --n=, : the dense table only
        rows += table(torch, st, args, int(n))
    if args.dense:
        rows += dense_table(torch, st, args)
    if args.json:
        write_json(args, "clocks_p", torch.cuda.get_device_name(), rows)
    return 0


def write_json(args, bench, device, rows):
    """The rows of a round-robin table to args.json, as bench/plot.py reads
    them. JSON has no NaN: a clock or power never sampled becomes null."""
    rows = [{k: None if isinstance(v, float) and not math.isfinite(v) else v
             for k, v in r.items()} for r in rows]
    with open(args.json, "w") as f:
        json.dump({"bench": bench, "device": device, "rounds": args.rounds,
                   "seconds": args.seconds, "rows": rows}, f, indent=1)


def summarize(items, got):
    """Per (group, label, fn) item of round_robin's result `got`: (median ms
    over the rounds, the group's cuBLAS ms over it, mean SM MHz, mean W).
    Each group lists its cuBLAS item first."""
    out, base = [], {}
    for i, (group, label, _) in enumerate(items):
        ms = statistics.median(v[0] for v in got[i])
        if label == "cuBLAS":
            base[group] = ms
        out.append((ms, base[group] / ms,
                    statistics.mean(v[1] for v in got[i]),
                    statistics.mean(v[2] for v in got[i])))
    return out


def rel_err(got, ref):
    """|got - ref| / |ref| in f32 (NaN, e.g. an unwritten tile, fails any
    bound)."""
    got, ref = got.float(), ref.float()
    return ((got - ref).norm() / ref.norm()).item()


def dense_gemm(st, a, w, c):
    """C = A W^T through matmul_store_block at 128 x 256 tiles, groups of
    8, 8 warps (the tiling of SparseDropBench's dense rows), as a launcher
    without arguments."""
    path = os.path.join(os.path.dirname(__file__), "..", "..", "dsl_examples",
                        "matmul.tile")
    k = st.compile(path, "matmul_store_block", T="bf16", TRANS_B=1, BM=128,
                   BN=256, BK=64, GROUP=8, num_warps=8)
    grid = (st.cdiv(a.shape[0], 128), st.cdiv(w.shape[0], 256))
    K = a.shape[1]
    return lambda: k[grid](a, w, c, K, 1.0)


def dense_table(torch, st, args):
    """matmul_store_block (128 x 256 tiles, groups of 8, 8 warps: the
    tiling of SparseDropBench's dense rows) and torch.matmul, C = A W^T in
    bf16, round-robin in one process. Each result is checked against the
    other (bf16 C: relative error below 1e-2) before anything is timed."""
    BM, BN = 128, 256
    flush = torch.empty(256 << 20, device="cuda", dtype=torch.uint8)
    g = torch.Generator(device="cuda").manual_seed(0)
    items = []
    for M, N, K in [(16384, 4096, 4096), (8192, 8192, 8192)]:
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
        w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g)
        c = torch.full((M, N), float("nan"), device="cuda",
                       dtype=torch.bfloat16)
        ours = dense_gemm(st, a, w, c)
        ref = torch.matmul(a, w.t())
        ours()
        torch.cuda.synchronize()
        err = rel_err(c, ref)
        if not err < 1e-2:
            raise SystemExit(f"matmul_store_block {M}x{N}x{K}: relative "
                             f"error {err} against torch.matmul")
        items.append(((M, N, K), "cuBLAS",
                      (lambda a, w: lambda: torch.matmul(a, w.t()))(a, w)))
        items.append(((M, N, K), "matmul_store_block", ours))
    torch.cuda.synchronize()
    got = round_robin(torch, [fn for _, _, fn in items], args.rounds,
                      args.seconds, flush)
    print(f"Dense DSL GEMM (matmul_store_block {BM} x {BN}, bf16 C) against "
          f"cuBLAS (torch.matmul), C = A W^T, round-robin in one process: "
          f"L2 flushed before each launch; {args.rounds} rounds, blocks of "
          f"{args.seconds:.1f} s; median launch of each block, median over "
          f"rounds.\n")
    print("| M x N x K | what | ms | TFLOP/s | vs cuBLAS | mean SM MHz | "
          "mean W |")
    print("|---|---|---|---|---|---|---|")
    out = []
    for ((m, n, k), label, _), (ms, ratio, mhz, watts) in zip(
            items, summarize(items, got)):
        print(f"| {m} x {n} x {k} | {label} | {ms:.3f} | "
              f"{2.0 * m * n * k / (ms * 1e-3) / 1e12:.0f} | {ratio:.2f}x "
              f"| {mhz:.0f} | {watts:.0f} |")
        out.append({"table": "dense", "kernel": "gemm", "impl": label, "M": m,
                    "N": n, "K": k, "ms": ms, "vs_cublas": ratio, "mhz": mhz,
                    "watts": watts})
    print()
    return out


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
        if name == "fwd" and args.dense:
            # The dense DSL GEMM on the forward's operands: what the forward
            # costs beyond the engine it runs on.
            y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            items.append((name, "dense DSL GEMM", dense_gemm(st, x, w, y)))
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
    out = []
    for (name, label, _), (ms, ratio, mhz, watts) in zip(
            items, summarize(items, got)):
        print(f"| {name} | {label} | {ms:.3f} | {ratio:.2f}x | "
              f"{mhz:.0f} | {watts:.0f} |")
        row = {"table": "sparsedrop", "kernel": name, "M": M, "N": N, "K": K,
               "ms": ms, "vs_cublas": ratio, "mhz": mhz, "watts": watts}
        if label.startswith("p = "):
            row.update(impl="sparsetile", p=float(label[4:]))
        else:
            row.update(impl=label)
        out.append(row)
    print()
    return out


if __name__ == "__main__":
    sys.exit(main())
