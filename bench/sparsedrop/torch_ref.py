"""PyTorch baselines for the SparseDrop bench (bench/sparsedrop), run in the
same GPU session: bf16, M = 16384, (K, N) in {(4096, 4096), (4096, 16384)},
mask blocks 128 x 128.
  dense       Y = X @ W^T (torch.matmul, cuBLAS), and the backward GEMMs
              dX = dY @ W and dW = dY^T @ X
  drop+mm     block dropout then matmul: X * expand(mask) * s, then X' @ W^T
              (what SparseDrop fuses; the mask is drawn with torch.rand on the
              block grid and expanded with repeat_interleave outside the
              timed region, the multiply inside it)
  triton      a plain Triton block-skipping GEMM for the forward (128 x 128 x 64
              tiles, 8 warps, 3 stages): one mask load per K step, the dot
              skipped when the block is dropped. The issue's comparison point.
  dense GEMM  cuBLAS (torch.matmul, bf16 in and out) C = A @ W^T at the
              M x N x K = 8192^3 and 16384 x 4096 x 4096 shapes the
              sparsetile bench times matmul_blocks on (its C is f32)
Times are medians from triton.testing.do_bench (CUDA events; it flushes L2).
TFLOP/s are 2 M N K / time (dense work, whatever p is) except the Triton
column, which counts kept blocks like the sparsetile bench.

Usage: torch_ref.py [--json PATH]: with --json every row also goes to PATH
(bench/plot.py reads it). Exits 3 when there is no GPU."""
import argparse
import json
import math
import sys

import torch
import triton
import triton.language as tl
from triton.testing import do_bench


@triton.jit
def block_skip_fwd(x, w, y, keep, K, nkb, scale, stride_x, stride_w, stride_y,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   MASK_BM: tl.constexpr, MASK_BK: tl.constexpr):
    # Y = scale * (X * mask) @ W^T; shapes are multiples of the tiles.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    mrow = (pid_m * BM) // MASK_BM
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        if tl.load(keep + mrow * nkb + k // MASK_BK) != 0:
            a = tl.load(x + rm[:, None] * stride_x + (k + rk)[None, :])
            b = tl.load(w + rn[:, None] * stride_w + (k + rk)[None, :])
            acc += tl.dot(a, tl.trans(b))
    tl.store(y + rm[:, None] * stride_y + rn[None, :], (acc * scale).to(tl.bfloat16))

M, BM, BK = 16384, 128, 128
PS = [0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9]


def bench(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def device_name():
    major, minor = torch.cuda.get_device_capability()
    return f"{torch.cuda.get_device_name()} (sm_{major}{minor})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", metavar="PATH", help="also write every row here")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no GPU", file=sys.stderr)
        sys.exit(3)
    torch.manual_seed(0)
    dev = torch.device("cuda")
    print(f"torch: {torch.__version__}, {torch.cuda.get_device_name()}\n")
    rows = []
    for k, n in [(4096, 4096), (4096, 16384)]:
        x = torch.randn(M, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        dy = torch.randn(M, n, device=dev, dtype=torch.bfloat16)
        flop = 2.0 * M * n * k
        fwd = bench(lambda: torch.matmul(x, w.t()))
        dx = bench(lambda: torch.matmul(dy, w))
        dw = bench(lambda: torch.matmul(dy.t(), x))
        tf = lambda ms: flop / (ms * 1e-3) / 1e12
        print(f"cuBLAS dense M {M} K {k} N {n}: fwd {fwd:.3f} ms "
              f"({tf(fwd):.1f} TFLOP/s), dX {dx:.3f} ms ({tf(dx):.1f}), "
              f"dW {dw:.3f} ms ({tf(dw):.1f})\n")
        shape = {"M": M, "N": n, "K": k}
        for kernel, t in [("fwd", fwd), ("dX", dx), ("dW", dw)]:
            rows.append({"kernel": kernel, "impl": "cuBLAS", **shape,
                         "ms": t, "tflops": tf(t)})
        print("| M | K | N | p | drop+mm fwd ms | TFLOP/s (dense work) | "
              "vs dense matmul | Triton block-skip fwd ms | Triton TFLOP/s (kept) "
              "| Triton vs dense matmul | Triton rel. error |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for p in PS:
            keep = (torch.rand(M // BM, k // BK, device=dev) >= p)
            full = keep.repeat_interleave(BM, 0).repeat_interleave(BK, 1)
            scale = 1.0 / (1.0 - p)

            def drop_mm():
                xd = x * full * scale
                return torch.matmul(xd, w.t())

            ms = bench(drop_mm)
            keep8 = keep.to(torch.int8).contiguous()
            y = torch.empty(M, n, device=dev, dtype=torch.bfloat16)
            grid = (M // 128, n // 128)

            def triton_fwd():
                block_skip_fwd[grid](x, w, y, keep8, k, k // BK, scale,
                                     x.stride(0), w.stride(0), y.stride(0),
                                     BM=128, BN=128, BK=64, MASK_BM=BM,
                                     MASK_BK=BK, num_warps=8, num_stages=3)

            tms = bench(triton_fwd)
            kept = keep.float().mean().item()
            triton_fwd()
            ref = drop_mm().float()
            err = ((y.float() - ref).norm() / ref.norm().clamp_min(1e-30)).item()
            print(f"| {M} | {k} | {n} | {p:.2f} | {ms:.3f} | {tf(ms):.1f} | "
                  f"{fwd / ms:.2f}x | {tms:.3f} | {tf(tms) * kept:.1f} | "
                  f"{fwd / tms:.2f}x | {err:.1e} |")
            # p_actual: the dropped fraction of this mask (drawn here with
            # torch.rand, so not the sparsetile bench's mask).
            at = {**shape, "p": p, "p_actual": 1.0 - kept}
            rows.append({"kernel": "fwd", "impl": "drop+mm", **at, "ms": ms,
                         "tflops": tf(ms), "tflops_counts": "dense",
                         "vs_cublas": fwd / ms})
            rows.append({"kernel": "fwd", "impl": "Triton block-skip", **at,
                         "ms": tms, "tflops": tf(tms) * kept,
                         "tflops_counts": "kept", "vs_cublas": fwd / tms,
                         "rel_error": err})
        print()
        del x, w, dy

    # Dense GEMMs at the shapes of the sparsetile bench's matmul_blocks rows.
    print("cuBLAS dense GEMM (torch.matmul, bf16): C = A W^T, A [M, K], "
          "W [N, K]\n")
    print("| M | N | K | ms | TFLOP/s |")
    print("|---|---|---|---|---|")
    for m, n, k in [(8192, 8192, 8192), (16384, 4096, 4096)]:
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        ms = bench(lambda: torch.matmul(a, w.t()))
        tflops = 2.0 * m * n * k / (ms * 1e-3) / 1e12
        print(f"| {m} | {n} | {k} | {ms:.3f} | {tflops:.1f} |")
        rows.append({"kernel": "gemm", "impl": "cuBLAS", "M": m, "N": n,
                     "K": k, "ms": ms, "tflops": tflops})
        del a, w
    print()

    if args.json:
        # JSON has no NaN: a non-finite figure (say, an error) becomes null.
        rows = [{key: None if isinstance(v, float) and not math.isfinite(v)
                 else v for key, v in r.items()} for r in rows]
        with open(args.json, "w") as f:
            json.dump({"bench": "torch_sparsedrop", "device": device_name(),
                       "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
