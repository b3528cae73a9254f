"""The 2:4 GEMMs (Y = X W^T and dX = dY W at both layer shapes), cuBLAS dense
and cuSPARSELt under the same sustained load, with the SM clock and board
power sampled while they run. The sparse24 bench and torch_sparse24.py time
ours and theirs in two processes, minutes apart, at different clocks; this
is the same-process comparison.

Our 2:4 GEMM and cuSPARSELt both stop near 840 effective TFLOP/s on the
H100, about half of what the sparse tensor cores allow even at a reduced
clock. This tells whether they sit at the 700 W power cap (then only less
energy per FLOP makes them faster: fewer bytes moved through L2 and shared
memory) or run at full clock (then the kernels themselves stall). Each item
runs in blocks of back-to-back launches, round-robin, with
bench/sparsedrop/clocks_p.py's round_robin().

Usage: python3 bench/sparse24/clocks24.py [--rounds R] [--seconds S]
           [--json PATH]
Needs torch, nvidia-smi and a GPU; exits 77 (skipped) without them.
"""

import argparse
import os
import sys

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "sparsedrop"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=0.7)
    ap.add_argument("--json", metavar="PATH", help="also write every row here")
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
    from clocks_p import round_robin, write_json

    rows = []
    for R, C in ((16384, 4096), (4096, 16384)):
        rows += shape_table(torch, st, round_robin, args, 16384, R, C)
    if args.json:
        write_json(args, "clocks24", torch.cuda.get_device_name(), rows)
    return 0


def shape_table(torch, st, round_robin, args, M, R, C):
    """Y = X W^T and dX = dY W for W [R, C] pruned 2:4 (transposable mask),
    M tokens: cuBLAS on the pruned W, cuSPARSELt (torch's semi-structured
    tensors) and sparsetile's library ops; and the whole layer step, dense
    on cuBLAS and ours (as the two benches define them); round-robin. Our
    GEMMs are checked against cuBLAS before anything is timed."""
    from clocks_p import rel_err, summarize
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, C, device="cuda", dtype=torch.bfloat16, generator=g)
    dy = torch.randn(M, R, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(R, C, device="cuda", dtype=torch.bfloat16, generator=g) / 64
    mask, wp = st.ops.mask24_transposable(w, prune=True)
    vals, meta, vals_t, meta_t = st.ops.compress24(wp, mask)
    flush = torch.empty(256 << 20, device="cuda", dtype=torch.uint8)
    ops = {
        "Y": (lambda: torch.matmul(x, wp.t()),
              lambda: st.ops.sparse24_linear_forward(x, vals, meta)),
        "dX": (lambda: torch.matmul(dy, wp),
               lambda: st.ops.sparse24_linear_backward_x(dy, vals_t, meta_t)),
    }
    lt = {}
    try:
        from torch.sparse import to_sparse_semi_structured
        ws, wts = (to_sparse_semi_structured(wp),
                   to_sparse_semi_structured(wp.t().contiguous()))
        xt, dyt = x.t().contiguous(), dy.t().contiguous()
        lt = {"Y": lambda: torch.mm(ws, xt), "dX": lambda: torch.mm(wts, dyt)}
    except Exception as e:  # no cuSPARSELt in this build: leave it out
        print(f"(cuSPARSELt left out: {e})")
    # dW: cuBLAS on the dense dY^T (bf16 out, as torch's linear backward
    # gives a bf16 weight), and where torch has it with an f32 out; ours on
    # the MVUE operand, f32 and bf16 out, checked against S(dY^T) X first.
    sv, sm = st.ops.mvue24_compress_t(dy, 1234, 0)
    s_dyt = st.ops.mvue24(dy.t().contiguous(), seed=1234, offset=0)
    err = rel_err(st.ops.sparse24_linear_backward_w(x, sv, sm),
                  s_dyt.float() @ x.float())
    if not err < 1e-2:
        raise SystemExit(f"sparsetile dW, W {R} x {C}: relative error {err} "
                         f"against S(dY^T) X")
    dts = dy.t()
    dense_dw32 = None
    try:
        torch.mm(dts, x, out_dtype=torch.float32)
        dense_dw32 = lambda: torch.mm(dts, x, out_dtype=torch.float32)
    except (TypeError, RuntimeError) as e:
        print(f"(cuBLAS dW with an f32 out left out: {e})")
    dw_items = [("dW", "cuBLAS", lambda: torch.matmul(dts, x))]
    if dense_dw32:
        dw_items.append(("dW", "cuBLAS, f32 out", dense_dw32))
    dw_items += [
        ("dW", "sparsetile, f32 out",
         lambda: st.ops.sparse24_linear_backward_w(x, sv, sm)),
        ("dW", "sparsetile, bf16 out",
         lambda: st.ops.sparse24_linear_backward_w(
             x, sv, sm, out_dtype=torch.bfloat16))]

    def dense_step():
        # torch_sparse24.py's dense step: the three GEMMs on cuBLAS.
        torch.matmul(x, wp.t())
        torch.matmul(dy, wp)
        torch.matmul(dy.t(), x)

    def our_step(dw_dtype=torch.float32):
        # Sparse24Bench's step: W and W^T compressed every step, Y, the MVUE
        # compression of dY^T, dX, and dW on sparse tensor cores (f32, or
        # bf16 as the dense step's).
        v, m, vt, mt = st.ops.compress24(wp, mask)
        st.ops.sparse24_linear_forward(x, v, m)
        sv, sm = st.ops.mvue24_compress_t(dy, 1234, 0)
        st.ops.sparse24_linear_backward_x(dy, vt, mt)
        st.ops.sparse24_linear_backward_w(x, sv, sm, out_dtype=dw_dtype)

    items = []  # (op, label, fn)
    for name, (dense, ours) in ops.items():
        err = rel_err(ours(), dense())
        if not err < 1e-2:
            raise SystemExit(f"sparsetile {name}, W {R} x {C}: relative "
                             f"error {err} against cuBLAS")
        items.append((name, "cuBLAS", dense))
        if name in lt:
            items.append((name, "cuSPARSELt", lt[name]))
        items.append((name, "sparsetile", ours))
    items += dw_items
    items += [("step", "cuBLAS", dense_step),
              ("step", "sparsetile, dW f32", our_step),
              ("step", "sparsetile, dW bf16",
               lambda: our_step(torch.bfloat16))]
    our_step()
    torch.cuda.synchronize()
    got = round_robin(torch, [fn for _, _, fn in items], args.rounds,
                      args.seconds, flush)
    flop = 2.0 * M * R * C
    print(f"2:4 GEMMs, W [{R}, {C}] pruned 2:4 (transposable mask), M {M}, "
          f"bf16; round-robin in one process, L2 flushed before each launch; "
          f"{args.rounds} rounds, blocks of {args.seconds:.1f} s; median launch "
          f"per block, median over rounds.\n")
    print("| GEMM | what | ms | TFLOP/s (dense-equivalent) | vs cuBLAS | "
          "mean SM MHz | mean W | J per launch |")
    print("|---|---|---|---|---|---|---|---|")
    out = []
    for (name, label, _), (ms, ratio, mhz, watts) in zip(
            items, summarize(items, got)):
        gemms = 3 if name == "step" else 1
        print(f"| {name} | {label} | {ms:.3f} | {gemms * flop / ms / 1e9:.0f} | "
              f"{ratio:.2f}x | {mhz:.0f} | {watts:.0f} | "
              f"{watts * ms * 1e-3:.2f} |")
        out.append({"kernel": {"Y": "fwd"}.get(name, name), "impl": label,
                    "M": M, "R": R, "C": C, "ms": ms, "vs_cublas": ratio,
                    "mhz": mhz, "watts": watts})
    print()
    return out


if __name__ == "__main__":
    sys.exit(main())
