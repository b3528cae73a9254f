"""Host time of one kernel launch from Python: sparsetile's `k[grid](...)`
against the bare ctypes call underneath it, Triton's `kernel[grid](...)`
and torch.add, in one process, round-robin.

The kernel is vector add on 1024 f32 elements (one program), so the GPU
finishes each launch well before the host issues the next and the loop
measures the host: ITERS launches timed with time.perf_counter, the GPU
synchronized only after each round (outside the timing). Each round runs
every variant once, in turn; the table gives medians over ROUNDS.

Variants:
  ctypes        st_kernel_launch through ctypes with prebuilt arguments: the
                floor under any Python launch of a sparsetile kernel
  tuple grid    k[(1,)](x, y, out, n)
  meta grid     k[lambda meta: (cdiv(meta["n"], meta["BLOCK"]),)](...)
  checked path  the same launch through the general path (the fast path
                turned off), what every launch cost before it
  triton        a @triton.jit vector add, add[(1,)](x, y, out, n, BLOCK=1024)
  torch.add     torch.add(x, y, out=out)

Usage: launch_bench.py [--iters 500] [--rounds 21] [--json PATH]
Exits 3 without torch or a GPU."""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

try:
    import torch
except ImportError:
    print("launch_bench: no torch", file=sys.stderr)
    sys.exit(3)
if not torch.cuda.is_available():
    print("launch_bench: no GPU", file=sys.stderr)
    sys.exit(3)

import sparsetile  # noqa: E402
from sparsetile import _lib  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
VECTOR_ADD = os.path.join(REPO, "dsl_examples", "vector_add.tile")
N = 1024


def _triton_variant(x, y, out):
    """The same vector add in Triton: bench/triton_parity's kernel."""
    sys.path.insert(0, os.path.join(REPO, "bench", "triton_parity"))
    import triton_kernels as tk
    if not tk.AVAILABLE:
        return None
    return lambda: tk._add[(1,)](x, y, out, N, BLOCK=1024)


def variants():
    x = torch.randn(N, device="cuda")
    y = torch.randn(N, device="cuda")
    out = torch.full((N,), float("nan"), device="cuda")
    k = sparsetile.compile(VECTOR_ADD, "vector_add", BLOCK=1024)
    checked = sparsetile.compile(VECTOR_ADD, "vector_add", BLOCK=1024,
                                 num_warps=4)
    k[(1,)](x, y, out, N)
    checked[(1,)](x, y, out, N)
    torch.cuda.synchronize()
    assert torch.equal(out, x + y), "the sparsetile launch is wrong"
    checked._plan = False  # The general path only.

    args = (_lib.st_arg * 4)()
    for i, t in enumerate((x, y, out)):
        args[i].kind, args[i].dtype, args[i].bits = (
            _lib.ST_ARG_POINTER, 7, t.data_ptr())  # 7: ST_F32
    args[3].kind, args[3].dtype, args[3].bits = _lib.ST_ARG_SCALAR, 3, N
    grid = (ctypes.c_uint * 3)(1, 1, 1)
    stream = torch.cuda.current_stream().cuda_stream or None
    launch, handle = _lib.lib().st_kernel_launch, k._handle

    def bare():
        if launch(handle, grid, None, 0, stream, args, 4):
            raise RuntimeError(_lib.last_error())

    def meta_grid(meta):
        return (sparsetile.cdiv(meta["n"], meta["BLOCK"]),)

    out_v = {
        "ctypes": bare,
        "tuple grid": lambda: k[(1,)](x, y, out, N),
        "meta grid": lambda: k[meta_grid](x, y, out, N),
        "checked path": lambda: checked[(1,)](x, y, out, N),
        "torch.add": lambda: torch.add(x, y, out=out),
    }
    tri = _triton_variant(x, y, out)
    if tri is not None:
        out_v["triton"] = tri
    for f in out_v.values():  # Warm-up: compiles, caches, first launches.
        for _ in range(50):
            f()
    torch.cuda.synchronize()
    return out_v


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--json")
    a = ap.parse_args()
    vs = variants()
    samples = {name: [] for name in vs}
    for _ in range(a.rounds):
        for name, f in vs.items():
            t0 = time.perf_counter()
            for _ in range(a.iters):
                f()
            samples[name].append((time.perf_counter() - t0) / a.iters * 1e6)
            torch.cuda.synchronize()
    med = {name: statistics.median(s) for name, s in samples.items()}
    floor = med["ctypes"]
    print("%-14s %10s %10s" % ("variant", "host us", "x ctypes"))
    for name, m in med.items():
        print("%-14s %10.2f %10.2f" % (name, m, m / floor))
    if a.json:
        # $SPARSETILE_REVISION when the tree is a copy whose git metadata lags.
        rev = os.environ.get("SPARSETILE_REVISION", "")
        if not rev:
            try:
                rev = subprocess.run(["git", "-C", REPO, "rev-parse",
                                      "--short", "HEAD"], capture_output=True,
                                     text=True).stdout.strip()
            except OSError:
                pass
        with open(a.json, "w") as f:
            json.dump({"bench": "launch_bench", "gpu":
                       torch.cuda.get_device_name(), "rev": rev,
                       "iters": a.iters, "rounds": a.rounds,
                       "torch": torch.__version__,
                       "median_us": med, "samples_us": samples}, f, indent=1)


if __name__ == "__main__":
    main()
