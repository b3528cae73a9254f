"""PyTorch baseline for the transposable 2:4 mask bench, run in the same GPU
session as Sparse24Bench: the brute force over all 90 transposable patterns
(scores = |W| blocks @ patterns^T, then argmax, then the chosen pattern
scattered back), eager and torch.compile, bf16, on [16384, 4096] and
[4096, 4096], with the device-to-device copy bandwidth. Times are medians from
triton.testing.do_bench (CUDA events; it flushes L2 between runs).
Effective bandwidth counts W read (2 B/entry) + the mask written (1 B/entry,
bool), as the sparsetile "transposable mask" row. The pattern order is the
sparsetile enumeration (runtime/ops/Transposable24Patterns.inc) and argmax returns the first
maximum, so ties resolve the same way up to the scores' rounding."""
import pathlib

import torch
from triton.testing import do_bench

PATTERNS_INC = (pathlib.Path(__file__).resolve().parents[2] / "runtime" / "ops"
                / "Transposable24Patterns.inc")


def patterns():
    """[90, 16] 0/1 in sparsetile's enumeration order (bit 4*i+j), read from
    the C++ table the kernel's PATTERNS is tested against."""
    codes = [int(tok, 16) for line in PATTERNS_INC.read_text().splitlines()
             if not line.startswith("//")
             for tok in line.replace(",", " ").split()]
    out = [[(code >> b) & 1 for b in range(16)] for code in codes]
    assert len(out) == 90
    return torch.tensor(out, dtype=torch.float32)


def transposable_mask(w, pats):
    r, c = w.shape
    blocks = w.abs().float().reshape(r // 4, 4, c // 4, 4).permute(0, 2, 1, 3)
    blocks = blocks.reshape(-1, 16)                   # [nb, 16]
    best = (blocks @ pats.t()).argmax(dim=1)          # [nb], first max
    mask = pats[best].bool()                          # [nb, 16]
    return mask.reshape(r // 4, c // 4, 4, 4).permute(0, 2, 1, 3).reshape(r, c)


def main():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    n = 1 << 29  # 1 GiB of bf16
    a = torch.randn(n, device=dev, dtype=torch.bfloat16)
    b = torch.empty_like(a)
    copy_ms = do_bench(lambda: b.copy_(a), warmup=25, rep=200, return_mode="median")
    copy_tbs = 2 * a.numel() * 2 / (copy_ms * 1e-3) / 1e12
    del a, b
    print(f"torch: {torch.__version__}, device-to-device copy {copy_tbs:.3f} TB/s\n")
    pats = patterns().to(dev)
    compiled = torch.compile(transposable_mask)
    print("| R | C | eager ms | eager TB/s | compile ms | compile TB/s | masks equal |")
    print("|---|---|---|---|---|---|---|")
    for r, c in [(16384, 4096), (4096, 4096)]:
        w = torch.randn(r, c, device=dev, dtype=torch.bfloat16)
        moved = 3 * r * c
        eager = do_bench(lambda: transposable_mask(w, pats), warmup=10, rep=100,
                         return_mode="median")
        comp = do_bench(lambda: compiled(w, pats), warmup=10, rep=100,
                        return_mode="median")
        same = bool(torch.equal(transposable_mask(w, pats), compiled(w, pats)))
        print(f"| {r} | {c} | {eager:.4f} | {moved / eager / 1e9:.3f} | "
              f"{comp:.4f} | {moved / comp / 1e9:.3f} | {same} |")


if __name__ == "__main__":
    main()
