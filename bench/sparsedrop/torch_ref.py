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
Times are medians from triton.testing.do_bench (CUDA events; it flushes L2).
TFLOP/s are 2 M N K / time (dense work, whatever p is) except the Triton
column, which counts kept blocks like the sparsetile bench."""
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


def main():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    print(f"torch: {torch.__version__}, {torch.cuda.get_device_name()}\n")
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
        print()
        del x, w, dy


if __name__ == "__main__":
    main()
