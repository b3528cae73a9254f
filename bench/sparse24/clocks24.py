"""The 2:4 forward GEMM, cuBLAS dense and cuSPARSELt under the same sustained
load, with the SM clock and board power sampled while they run.

Our 2:4 GEMM and cuSPARSELt both stop near 840 effective TFLOP/s on the
H100, about half of what the sparse tensor cores allow even at a reduced
clock. This tells whether they sit at the 700 W power cap (then only less
energy per FLOP makes them faster: fewer bytes moved through L2 and shared
memory) or run at full clock (then the kernels themselves stall). Each item
runs in blocks of back-to-back launches, round-robin, with
bench/sparsedrop/clocks_p.py's round_robin().

Usage: python3 bench/sparse24/clocks24.py [--rounds R] [--seconds S]
Needs torch, nvidia-smi and a GPU; exits 77 (skipped) without them.
"""

import argparse
import os
import statistics
import sys

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "sparsedrop"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=0.7)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("clocks24: skipped (no torch)")
        return 77
    if not torch.cuda.is_available():
        print("clocks24: skipped (no GPU)")
        return 77
    import sparsetile as st
    from clocks_p import round_robin

    # Y = X W^T with W [R, C] pruned 2:4 (transposable), M tokens.
    M, R, C = 16384, 16384, 4096
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, C, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(R, C, device="cuda", dtype=torch.bfloat16, generator=g) / 64
    mask, wp = st.ops.mask24_transposable(w, prune=True)
    vals, meta, _, _ = st.ops.compress24(wp, mask)
    flush = torch.empty(256 << 20, device="cuda", dtype=torch.uint8)
    items = [("cuBLAS dense", lambda: torch.matmul(x, wp.t()))]
    try:
        from torch.sparse import to_sparse_semi_structured
        ws = to_sparse_semi_structured(wp)
        xt = x.t().contiguous()
        items.append(("cuSPARSELt", lambda: torch.mm(ws, xt)))
    except Exception as e:  # no cuSPARSELt in this build: leave it out
        print(f"(cuSPARSELt left out: {e})")
    for ti, tm in ((256, 128), (128, 128), (128, 256)):
        items.append((f"sparsetile {ti}x{tm}",
                      (lambda a, b: lambda: st.ops.sparse_linear(
                          x, vals, meta, tile_i=a, tile_m=b, tma=1))(ti, tm)))
    for _, fn in items:
        fn()
    torch.cuda.synchronize()

    got = round_robin(torch, [fn for _, fn in items], args.rounds,
                      args.seconds, flush)
    flop = 2.0 * M * R * C
    print(f"Y = X W^T, M {M} R {R} C {C}, bf16, W 2:4 (transposable mask); "
          f"L2 flushed before each launch; {args.rounds} rounds, blocks of "
          f"{args.seconds:.1f} s; median launch per block, median over rounds.\n")
    print("| what | ms | TFLOP/s (dense-equivalent) | vs cuBLAS | mean SM MHz | mean W | J per launch |")
    print("|---|---|---|---|---|---|---|")
    base = None
    for i, (label, _) in enumerate(items):
        ms = statistics.median(v[0] for v in got[i])
        mhz = statistics.mean(v[1] for v in got[i])
        watts = statistics.mean(v[2] for v in got[i])
        base = base or ms
        print(f"| {label} | {ms:.3f} | {flop / ms / 1e9:.0f} | {base / ms:.2f}x | "
              f"{mhz:.0f} | {watts:.0f} | {watts * ms * 1e-3:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
