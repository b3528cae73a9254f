"""One SparseDrop GEMM launch per drop rate, for a profiler to compare.

The bench (SparseDropBench.cpp) shows a dip: at p = 0.05-0.1 the TMA
kernels are no faster, sometimes slower, than at p = 0, although they skip
5-10% of the blocks. This script launches each GEMM once per p (after one
warm-up launch at p = 0), so that

    ncu -k regex:'dsd_fwd_tma|sdd_dx_tma|dsd_dw_tma' --launch-skip 3 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section LaunchStats --section Occupancy \
        python3 bench/sparsedrop/profile_p.py

profiles p = 0, 0.05, 0.1, 0.3 in order, fwd then dX then dW for each,
at the bench's shape (bf16, M = 16384, N = K = 4096, 128 x 128 blocks).

With --nvtx it instead runs every p twice (the first call tunes the ops'
tilings) and wraps the second in an NVTX range named "profiled", so that

    ncu --nvtx --nvtx-include 'profiled/' --section SourceCounters ...

profiles the launches the ops make once tuned, and nothing else. With
--cublas the range also holds cuBLAS's three dense GEMMs of the same shape
(torch.matmul) and the dense DSL GEMM on the forward's operands
(matmul_store_block, as clocks_p.py --dense runs it), for comparing what
each moves through the memory levels (gpu_run.sh PROFILE_VS_CUBLAS=1).

Usage: python3 bench/sparsedrop/profile_p.py [--n N] [--rates R,R] [--nvtx]
           [--cublas].
Needs torch and a GPU.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--rates", default="0,0.05,0.1,0.3")
    ap.add_argument("--nvtx", action="store_true",
                    help="tune first, then run each p in an NVTX range")
    ap.add_argument("--cublas", action="store_true",
                    help="also run cuBLAS's dense GEMMs in each range")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("profile_p: skipped (no torch)")
        return 77
    if not torch.cuda.is_available():
        print("profile_p: skipped (no GPU)")
        return 77
    import sparsetile as st

    M, K, N = 16384, 4096, args.n
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16, generator=g) / 64
    dy = torch.randn(M, N, device="cuda", dtype=torch.bfloat16, generator=g)

    if args.cublas:
        # The dense DSL GEMM on the forward's operands, beside cuBLAS's.
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from clocks_p import dense_gemm
        y = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        dense = dense_gemm(st, x, w, y)

    def run(p):
        mask = st.ops.sparsedrop_mask(1234, 0, p, M, K, device=x.device)
        st.ops.sparsedrop_forward(x, w, mask, p)
        st.ops.sparsedrop_backward_x(dy, w, mask, p)
        st.ops.sparsedrop_backward_w(dy, x, mask, p)
        if args.cublas:
            dense()
            torch.matmul(x, w.t())
            torch.matmul(dy, w)
            torch.matmul(dy.t(), x)

    run(0.0)  # warm-up: compiles and loads the kernels
    torch.cuda.synchronize()
    for p in (float(r) for r in args.rates.split(",")):
        if args.nvtx:
            run(p)  # tunes the tilings for this p
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push("profiled")
        run(p)
        if args.nvtx:
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print("profile_p: launched p =", args.rates)
    return 0


if __name__ == "__main__":
    sys.exit(main())
