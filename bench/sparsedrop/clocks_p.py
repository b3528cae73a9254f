"""The SparseDrop forward at p = 0 and p = 0.1, alternating, with the SM clock
and the board power sampled while it runs.

The bench (SparseDropBench.cpp) reads the forward no faster at p = 0.05-0.1
than at p = 0 although it skips 5-10% of the blocks; under ncu, whose clocks
are locked at about 1.4 GHz, p = 0.1 is 7.5% faster (bench/NOTES.md). This
script asks whether the difference is the clock: it runs blocks of about two
seconds of back-to-back forwards (each after an L2 flush, as the bench does),
alternating p = 0 and p = 0.1, and samples `nvidia-smi` every 50 ms meanwhile.
Per block it prints the median launch time (CUDA events), the mean SM clock
and the mean power draw of the samples taken inside the block.

Usage: python3 bench/sparsedrop/clocks_p.py [--n N] [--blocks B]
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=2.0)
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

    M, K, N = 16384, 4096, args.n
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g) / 64
    flush = torch.empty(256 << 20, device="cuda", dtype=torch.uint8)
    masks = {p: st.ops.sparsedrop_mask(1234, 0, p, M, K, device=x.device)
             for p in (0.0, 0.1)}
    for p in masks:  # compile, load and tune outside the timed blocks
        st.ops.sparsedrop_forward(x, w, masks[p], p)
    torch.cuda.synchronize()

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
    print(f"SparseDrop forward, M {M} K {K} N {N}, bf16, L2 flushed before "
          f"each launch; blocks of {args.seconds:.1f} s alternating p.\n")
    print("| block | p | launches | median ms | mean SM MHz | mean W |")
    print("|---|---|---|---|---|---|")
    rows = []
    for b in range(args.blocks):
        p = 0.0 if b % 2 == 0 else 0.1
        times = []
        t0 = time.time()
        while time.time() - t0 < args.seconds:
            flush.zero_()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            st.ops.sparsedrop_forward(x, w, masks[p], p)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        t1 = time.time()
        inside = [s for s in samples if t0 + 0.2 <= s[0] <= t1]
        mhz = statistics.mean(s[1] for s in inside) if inside else float("nan")
        watts = statistics.mean(s[2] for s in inside) if inside else float("nan")
        med = statistics.median(times)
        rows.append((p, med, mhz, watts))
        print(f"| {b} | {p:.1f} | {len(times)} | {med:.3f} | {mhz:.0f} | "
              f"{watts:.0f} |")
    proc.terminate()
    for p in (0.0, 0.1):
        r = [x for x in rows if x[0] == p]
        print(f"\np = {p:.1f}: median of block medians "
              f"{statistics.median(x[1] for x in r):.3f} ms, "
              f"SM {statistics.mean(x[2] for x in r):.0f} MHz, "
              f"{statistics.mean(x[3] for x in r):.0f} W")
    return 0


if __name__ == "__main__":
    sys.exit(main())
