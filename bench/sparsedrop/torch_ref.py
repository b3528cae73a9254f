"""PyTorch baselines for the SparseDrop bench (bench/sparsedrop), run in the
same GPU session: bf16, M = 16384, (K, N) in {(4096, 4096), (4096, 16384)},
mask blocks 128 x 128.
  dense       Y = X @ W^T (torch.matmul, cuBLAS), and the backward GEMMs
              dX = dY @ W and dW = dY^T @ X
  drop+mm     block dropout then matmul: X * expand(mask) * s, then X' @ W^T
              (what SparseDrop fuses; the mask is drawn with torch.rand on the
              block grid and expanded with repeat_interleave outside the
              timed region, the multiply inside it)
Times are medians from triton.testing.do_bench (CUDA events; it flushes L2).
TFLOP/s are 2 M N K / time (dense work, whatever p is)."""
import torch
from triton.testing import do_bench

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
              "vs dense matmul |")
        print("|---|---|---|---|---|---|---|")
        for p in PS:
            keep = (torch.rand(M // BM, k // BK, device=dev) >= p)
            full = keep.repeat_interleave(BM, 0).repeat_interleave(BK, 1)
            scale = 1.0 / (1.0 - p)

            def drop_mm():
                xd = x * full * scale
                return torch.matmul(xd, w.t())

            ms = bench(drop_mm)
            print(f"| {M} | {k} | {n} | {p:.2f} | {ms:.3f} | {tf(ms):.1f} | "
                  f"{fwd / ms:.2f}x |")
        print()
        del x, w, dy


if __name__ == "__main__":
    main()
