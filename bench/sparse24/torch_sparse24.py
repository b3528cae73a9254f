"""PyTorch baselines for the 2:4 sparse GEMM bench (Sparse24Bench's second
table), run in the same GPU session: bf16, 16384 tokens, W [R, C] in
{[16384, 4096], [4096, 16384]}, pruned with a transposable 2:4 mask (the
pattern does not matter for speed; a fixed 4 x 4 block pattern with two kept
per row and column is used, so W^T is 2:4 too).
  cuBLAS      dense torch.mm on the pruned weight: W X (X [C, 16384], the
              issue's "W with X"), and dY W (dY [16384, R]), the same products
              sparsetile computes as Y^T = W X^T and dX = dY W
  cuSPARSELt  torch.sparse.to_sparse_semi_structured(W) then torch.mm(Ws, X);
              for dX, to_sparse_semi_structured(W^T) times dY^T (made
              contiguous outside the timed region): dX^T = W^T dY^T
Times are medians from triton.testing.do_bench (CUDA events; it flushes L2
between runs). TFLOP/s count the dense work 2 M R C in every row.

Usage: torch_sparse24.py [--json PATH]: with --json every row also goes to
PATH (bench/plot.py reads it). Exits 3 when there is no GPU."""
import argparse
import json
import sys

import torch
from triton.testing import do_bench

M = 16384


def bench(fn):
    return do_bench(fn, warmup=10, rep=200, return_mode="median")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH", help="also write every row here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no GPU", file=sys.stderr)
        sys.exit(3)
    from torch.sparse import SparseSemiStructuredTensor, to_sparse_semi_structured
    # CUTLASS's 2:4 path does not run on sm_90: ask for cuSPARSELt.
    SparseSemiStructuredTensor._FORCE_CUTLASS = False
    torch.manual_seed(0)
    dev = torch.device("cuda")
    print(f"torch: {torch.__version__}, {torch.cuda.get_device_name()}\n")
    block = torch.tensor([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]],
                         dtype=torch.bfloat16, device=dev)
    rows = []

    def operands(r, c):
        """W [r, c] pruned (2:4 both ways), X^T [c, M] and dY [M, r]."""
        randn = lambda *s: torch.randn(*s, device=dev, dtype=torch.bfloat16)  # noqa: E731
        return randn(r, c) * block.repeat(r // 4, c // 4), randn(c, M), randn(M, r)

    print("| op | M | R | C | ms | TFLOP/s | vs cuBLAS |")
    print("|---|---|---|---|---|---|---|")
    for r, c in [(16384, 4096), (4096, 16384)]:
        w, x, dy = operands(r, c)
        dyt = dy.t().contiguous()
        ws = to_sparse_semi_structured(w)
        wts = to_sparse_semi_structured(w.t().contiguous())
        # The sparse products are the dense ones (up to f32 summation order).
        for got, ref in [(torch.mm(ws, x), torch.mm(w, x)),
                         (torch.mm(wts, dyt).t(), torch.mm(dy, w))]:
            err = (got.float() - ref.float()).abs().max().item()
            scale = ref.float().abs().max().item()
            assert err <= 2e-2 * scale, (err, scale)
        flop = 2.0 * M * r * c
        # (name, product, run); each product's cuBLAS row comes first and is
        # the base of the "vs cuBLAS" column.
        runs = [("cuBLAS W X", "fwd", lambda: torch.mm(w, x)),
                ("cuSPARSELt W X", "fwd", lambda: torch.mm(ws, x)),
                ("cuBLAS dY W", "dX", lambda: torch.mm(dy, w)),
                ("cuSPARSELt W^T dY^T", "dX", lambda: torch.mm(wts, dyt))]
        dense = {}
        for name, product, fn in runs:
            ms = bench(fn)
            base = dense.setdefault(product, ms)
            print(f"| {name} | {M} | {r} | {c} | {ms:.3f} | {flop / ms / 1e9:.1f} | "
                  f"{base / ms:.2f}x |")
            rows.append({"kernel": product, "impl": name.split()[0], "op": name,
                         "M": M, "R": r, "C": c, "ms": ms,
                         "tflops": flop / ms / 1e9, "vs_cublas": base / ms})
    # One whole linear-layer training step (Sparse24Bench's "step" table):
    #   dense       cuBLAS Y^T = W X, dX = dY W, dW = dY^T X;
    #   cuSPARSELt  W and W^T compressed every step (to_sparse_semi_structured,
    #               W^T made contiguous first), Y^T = Ws X, dX^T = Wts dY^T
    #               (dY^T made contiguous), dW dense on cuBLAS: PyTorch has no
    #               MVUE sparsifier, so this is where cuSPARSELt applies.
    print("\n| step | M | R | C | ms |")
    print("|---|---|---|---|---|")
    for r, c in [(4096, 16384), (16384, 4096)]:
        w, x, dy = operands(r, c)

        def dense_step():
            torch.mm(w, x)
            torch.mm(dy, w)
            torch.mm(dy.t(), x.t())

        def cusparselt_step():
            ws = to_sparse_semi_structured(w)
            wts = to_sparse_semi_structured(w.t().contiguous())
            torch.mm(ws, x)
            torch.mm(wts, dy.t().contiguous())
            torch.mm(dy.t(), x.t())

        for name, fn in [("cuBLAS dense step", dense_step),
                         ("cuSPARSELt step (dW dense)", cusparselt_step)]:
            ms = bench(fn)
            print(f"| {name} | {M} | {r} | {c} | {ms:.3f} |")
            rows.append({"table": "step", "impl": name.split()[0], "op": name,
                         "M": M, "R": r, "C": c, "ms": ms})
    if args.json:
        major, minor = torch.cuda.get_device_capability()
        device = f"{torch.cuda.get_device_name()} (sm_{major}{minor})"
        with open(args.json, "w") as f:
            json.dump({"bench": "torch_sparse24", "device": device,
                       "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
