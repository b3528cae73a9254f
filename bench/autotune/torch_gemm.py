"""cuBLAS baselines for the autotune bench (bench/autotune), run in the same
GPU session: f16 C = A @ B (torch.matmul, cuBLAS) and the same followed by
leaky_relu (what gemm_leaky_relu.tile fuses), at the bench's four shapes.
Times are medians from triton.testing.do_bench (CUDA events; it flushes L2).
TFLOP/s are 2 M N K / time.

Usage: torch_gemm.py [--json PATH]. Exits 3 when there is no GPU."""
import argparse
import json
import sys

SHAPES = [(8192, 8192, 8192), (16384, 4096, 4096), (4096, 4096, 16384),
          (5000, 3000, 2000)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    try:
        import torch
        import torch.nn.functional as fn
        from triton.testing import do_bench
    except ImportError as e:
        print("torch_gemm.py skipped: %s" % e)
        return 3
    if not torch.cuda.is_available():
        print("torch_gemm.py skipped: no GPU")
        return 3
    dev = torch.device("cuda")
    torch.manual_seed(0)
    rows = []
    print("device: %s, torch %s\n" % (torch.cuda.get_device_name(),
                                      torch.__version__))
    print("| M | N | K | cuBLAS ms | TFLOP/s | cuBLAS + leaky_relu ms |")
    print("|---|---|---|---|---|---|")
    for m, n, k in SHAPES:
        a = torch.randn(m, k, device=dev, dtype=torch.float16)
        b = torch.randn(k, n, device=dev, dtype=torch.float16)
        mm = do_bench(lambda: a @ b, warmup=25, rep=100, return_mode="median")
        both = do_bench(lambda: fn.leaky_relu(a @ b, 0.01), warmup=25,
                        rep=100, return_mode="median")
        tflops = 2.0 * m * n * k / (mm * 1e-3) / 1e12
        print("| %d | %d | %d | %.4f | %.1f | %.4f |" % (m, n, k, mm, tflops,
                                                         both))
        rows.append({"M": m, "N": n, "K": k, "cublas_ms": mm,
                     "tflops": tflops, "cublas_leaky_relu_ms": both})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bench": "torch_gemm",
                       "device": torch.cuda.get_device_name(),
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
