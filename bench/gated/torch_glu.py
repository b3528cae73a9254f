"""PyTorch baselines for the gated-activation bench, run in the same GPU
session as GatedBench: eager (chunk, silu, mul) and torch.compile of the same
function, forward and forward+backward, with the device-to-device copy
bandwidth. Times are medians from triton.testing.do_bench (CUDA events).
Effective bandwidth counts bytes read + written (forward: 6 M F bytes)."""
import torch
import torch.nn.functional as fn
from triton.testing import do_bench


def swiglu(h):
    g, u = h.chunk(2, dim=-1)
    return fn.silu(g) * u


def main():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    n = 1 << 29  # 1 GiB of bf16
    a = torch.randn(n, device=dev, dtype=torch.bfloat16)
    b = torch.empty_like(a)
    copy_ms = do_bench(lambda: b.copy_(a), warmup=25, rep=200, return_mode="median")
    copy_tbs = 2 * a.numel() * 2 / (copy_ms * 1e-3) / 1e12
    print(f"torch: {torch.__version__}, device-to-device copy {copy_tbs:.3f} TB/s\n")
    compiled = torch.compile(swiglu)
    print("| M | F | eager fwd ms | eager TB/s | compile fwd ms | compile TB/s "
          "| eager fwd+bwd ms | compile fwd+bwd ms |")
    print("|---|---|---|---|---|---|---|---|")
    for m, f in [(16384, 11008), (8192, 16384), (4096, 4096), (1, 11008)]:
        h = torch.randn(m, 2 * f, device=dev, dtype=torch.bfloat16)
        bytes_fwd = 6 * m * f
        eager = do_bench(lambda: swiglu(h), warmup=25, rep=100, return_mode="median")
        comp = do_bench(lambda: compiled(h), warmup=25, rep=100, return_mode="median")
        hg = h.clone().requires_grad_(True)
        dy = torch.randn(m, f, device=dev, dtype=torch.bfloat16)

        def fwd_bwd():
            hg.grad = None
            swiglu(hg).backward(dy)

        def fwd_bwd_compiled():
            hg.grad = None
            compiled(hg).backward(dy)

        both = do_bench(fwd_bwd, warmup=10, rep=50, return_mode="median")
        both_c = do_bench(fwd_bwd_compiled, warmup=10, rep=50, return_mode="median")
        print(f"| {m} | {f} | {eager:.4f} | {bytes_fwd / eager / 1e9:.3f} | "
              f"{comp:.4f} | {bytes_fwd / comp / 1e9:.3f} | {both:.4f} | {both_c:.4f} |")


if __name__ == "__main__":
    main()
