"""One launch of each 2:4 helper kernel per shape, for a profiler.

Issue 13 wants every helper at >= 80% of copy bandwidth; the bench
(Sparse24Bench.cpp) says how far each is, this says why. Each helper runs
once as a warm-up (compiling it) and once between cudaProfilerStart/Stop,
so that

    ncu --profile-from-start off --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section Occupancy \
        --section LaunchStats --section WarpStateStats \
        --section ComputeWorkloadAnalysis \
        python3 bench/sparse24/profile_helpers.py

profiles exactly one launch of each, at W 16384 x 4096 and 4096 x 4096
(bf16, the bench's shapes). Inputs are random normals (never zeros).
With --gemm it profiles instead one launch of the 2:4 forward GEMM (Y = X
W^T, 16384 tokens, the TMA kernel at 256 x 128, 128 x 256 and 128 x 128
tiles) per shape: where it stands against the L2, shared-memory and
tensor-pipe ceilings.

Usage: python3 bench/sparse24/profile_helpers.py [--shapes 16384x4096,...]
           [--gemm].
Needs torch and a GPU; exits 3 without them (gpu_run.sh's "unavailable").
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="16384x4096,4096x4096")
    ap.add_argument("--gemm", action="store_true")
    ap.add_argument("--flush", choices=("none", "write", "read"), default="none",
                    help="before each profiled launch, write 256 MB (as the "
                    "benches' default flush) or read a separate 256 MB "
                    "(SPARSETILE_BENCH_FLUSH=read); run ncu with "
                    "--cache-control none to see its effect")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("profile_helpers: skipped (no torch)")
        return 3
    if not torch.cuda.is_available():
        print("profile_helpers: skipped (no GPU)")
        return 3
    import sparsetile as st

    ops = st.ops
    g = torch.Generator(device="cuda").manual_seed(0)
    for shape in args.shapes.split(","):
        R, C = (int(v) for v in shape.split("x"))
        w = torch.randn(R, C, device="cuda", dtype=torch.bfloat16, generator=g)
        grad = torch.randn(R, C, device="cuda", dtype=torch.bfloat16, generator=g)
        mask = ops.mask24_transposable(w)
        if args.gemm:
            x = torch.randn(16384, C, device="cuda", dtype=torch.bfloat16,
                            generator=g)
            vals, meta, _, _ = ops.compress24(w * mask, mask)
            # The three TMA tilings: their shared-memory traffic per FLOP
            # differs (bench/NOTES.md, "What the 2:4 GEMM is bound by").
            steps = [("sparse_linear_tma %dx%d" % (ti, tm),
                      lambda ti=ti, tm=tm: ops.sparse_linear(
                          x, vals, meta, tile_i=ti, tile_m=tm, tma=1))
                     for ti, tm in ((256, 128), (128, 256), (128, 128))]
        else:
            steps = [
                ("mask24_transposable", lambda: ops.mask24_transposable(w)),
                ("mask24_rowwise", lambda: ops.mask24_rowwise(w, prune=True)),
                ("masked_decay", lambda: ops.masked_decay_(grad, w, mask, 1e-4)),
                ("mvue24", lambda: ops.mvue24(grad, 7, 0)),
                ("compress24", lambda: ops.compress24(w, mask)),
                ("mask24_update", lambda: ops.mask24_update(w)),
                ("mvue24_compress_t", lambda: ops.mvue24_compress_t(grad, 7, 0)),
            ]
        if not args.gemm:
            # Copies of 3 and 7 bytes an entry (read + written), the
            # helpers' byte counts, for their DRAM traffic under the flush.
            src = torch.empty(R * C * 7 // 2, device="cuda", dtype=torch.uint8)
            dst = torch.empty_like(src)
            src.fill_(1)
            n3 = R * C * 3 // 2
            # As kernels (copy_ would be a memcpy, which ncu does not see).
            steps.append(("copy 3 B/entry",
                          lambda: torch.mul(src[:n3], 1, out=dst[:n3])))
            steps.append(("copy 7 B/entry", lambda: torch.mul(src, 1, out=dst)))
        buf = torch.ones(64 << 20, device="cuda", dtype=torch.float32)

        def flush():
            if args.flush == "write":
                buf.zero_()
            elif args.flush == "read":
                buf.sum()

        for _, fn in steps:  # warm-up: compiles and loads every kernel
            fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for _, fn in steps:
            flush()
            fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        print("profile_helpers: %dx%d: %s" % (R, C, ", ".join(n for n, _ in steps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
