#!/usr/bin/env python3
"""Triton's compile cost for kernels comparable to dsl_examples/, for
comparison with runtime_bench's cold-compile / warm-disk / in-memory numbers.

Kernels (same BLOCK and num_warps as the .tile files):
  vector_add  out = x + y, BLOCK 1024, 4 warps, n = 2^20 (f32)
  softmax     row softmax, BLOCK 1024, 4 warps, 129 rows x 1000 cols (f32)
  swiglu_fwd  y = silu(g) * u from h = [g | u], BLOCK 1024, 4 warps,
              M = 17, F = 4096 (bf16, f32 math)

Every measurement runs in a fresh python process with its own fresh
TRITON_CACHE_DIR, so no in-process or on-disk cache survives from earlier
ones. In that process CUDA (torch) is initialised and a small unrelated Triton
kernel is compiled and launched first, so Triton's one-off driver-utility
build is not charged to the measured kernel. Then:
  cold        first call of the kernel: Triton front end -> TTIR -> TTGIR ->
              LLVM -> PTX -> cubin (ptxas), launcher, module load, launch
  warm disk   same, in a second fresh process over the cache dir the cold run
              filled (disk-cache hit, module load, launch)
  in-memory   host time of later calls (median per call over 1000 calls)
Times are wall clock around the call plus torch.cuda.synchronize(); medians
over --reps processes. Prints a markdown table.

Usage: python3 bench/runtime/triton_compile.py [--reps 3] [--budget-s 210]
  --budget-s  stop starting new repetitions after this many seconds (the
              table says how many ran)
Exit status: 0 ok, 1 a measurement failed or a result was wrong, 3 torch,
triton or a GPU is not available (the table says which).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

KERNELS = ["vector_add", "softmax", "swiglu_fwd"]


def child(kernel):
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def warmup_kernel(p, n: tl.constexpr):
        offs = tl.arange(0, n)
        tl.store(p + offs, offs.to(tl.float32))

    @triton.jit
    def vector_add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        a = tl.load(x + offs, mask=m, other=0.0)
        b = tl.load(y + offs, mask=m, other=0.0)
        tl.store(out + offs, a + b, mask=m)

    @triton.jit
    def softmax(x, out, n_cols, stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        m = cols < n_cols
        v = tl.load(x + row * stride + cols, mask=m, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        s = tl.sum(e, axis=0)
        tl.store(out + row * stride + cols, e / s, mask=m)

    @triton.jit
    def swiglu_fwd(h, y, F, stride_h, stride_y, BLOCK: tl.constexpr):
        row = tl.program_id(1)
        cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = cols < F
        hrow = h + row * stride_h
        g = tl.load(hrow + cols, mask=m).to(tl.float32)
        u = tl.load(hrow + F + cols, mask=m).to(tl.float32)
        r = g * tl.sigmoid(g) * u
        tl.store(y + row * stride_y + cols, r.to(tl.bfloat16), mask=m)

    dev = "cuda"
    torch.cuda.init()
    tmp = torch.empty(128, device=dev)
    warmup_kernel[(1,)](tmp, 128)
    torch.cuda.synchronize()

    if kernel == "vector_add":
        n = 1 << 20
        x = torch.randn(n, device=dev)
        y = torch.randn(n, device=dev)
        out = torch.empty_like(x)
        call = lambda: vector_add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024, num_warps=4)
        check = lambda: torch.allclose(out, x + y)
    elif kernel == "softmax":
        rows, cols = 129, 1000
        x = torch.randn(rows, cols, device=dev)
        out = torch.empty_like(x)
        call = lambda: softmax[(rows,)](x, out, cols, x.stride(0), BLOCK=1024, num_warps=4)
        check = lambda: torch.allclose(out, torch.softmax(x, dim=1), rtol=1e-4, atol=1e-6)
    else:
        M, F = 17, 4096
        h = torch.randn(M, 2 * F, device=dev).to(torch.bfloat16)
        y = torch.empty(M, F, device=dev, dtype=torch.bfloat16)
        call = lambda: swiglu_fwd[(triton.cdiv(F, 1024), M)](h, y, F, h.stride(0), y.stride(0),
                                                            BLOCK=1024, num_warps=4)
        hf = h.float()
        check = lambda: torch.allclose(y.float(), (torch.nn.functional.silu(hf[:, :F]) * hf[:, F:]),
                                       rtol=2e-2, atol=1e-3)

    t0 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    first_ms = (time.perf_counter() - t0) * 1e3
    ok = bool(check())
    per_call = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(200):
            call()
        per_call.append((time.perf_counter() - t0) * 1e6 / 200)
        torch.cuda.synchronize()
    print(json.dumps({"first_ms": first_ms, "call_us": statistics.median(per_call),
                      "correct": ok, "triton": triton.__version__,
                      "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name(0)}))


def run_child(kernel, cache_dir):
    env = dict(os.environ, TRITON_CACHE_DIR=cache_dir)
    # Keep Triton's other caches out of the way too.
    env.pop("TRITON_ALWAYS_COMPILE", None)
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", kernel],
                       env=env, capture_output=True, text=True, timeout=150)
    if p.returncode != 0:
        lines = [l for l in p.stderr.strip().splitlines() if l.strip()]
        sys.stderr.write(p.stderr[-4000:])
        raise RuntimeError(f"child rc {p.returncode}: {lines[-1] if lines else '?'}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--budget-s", type=float, default=210)
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return 0
    try:
        import torch
        import triton
        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA GPU")
    except Exception as e:
        print("## Triton compile cost\n")
        print(f"Not measured: {type(e).__name__}: {e}\n")
        return 3
    rows = []
    info = None
    failed = False
    t_start = time.monotonic()
    for k in KERNELS:
        cold, warm, call, correct = [], [], [], True
        try:
            for rep in range(max(1, args.reps)):
                if rep > 0 and time.monotonic() - t_start > args.budget_s:
                    break
                d = tempfile.mkdtemp(prefix="triton-cache-")
                try:
                    c = run_child(k, d)   # fresh cache dir: cold
                    w = run_child(k, d)   # same dir, new process: disk hit
                finally:
                    shutil.rmtree(d, ignore_errors=True)
                info = info or c
                cold.append(c["first_ms"])
                warm.append(w["first_ms"])
                call.append(w["call_us"])
                correct = correct and c["correct"] and w["correct"]
            rows.append(f"| {k} | {statistics.median(cold):.1f} | {statistics.median(warm):.1f} | "
                        f"{statistics.median(call):.1f} | {'yes' if correct else 'NO'} | {len(cold)} |")
            failed = failed or not correct
        except Exception as e:  # keep going; report the failure in the table
            msg = str(e).strip().replace("\n", " ")[-300:]
            rows.append(f"| {k} | failed: {msg} | | | | |")
            failed = True
    print("## Triton compile cost (medians over fresh processes, each with a fresh TRITON_CACHE_DIR)\n")
    if info:
        print(f"Triton {info['triton']}, torch {info['torch']}, {info['gpu']}\n")
    print("| kernel | cold first call (ms) | warm disk-cache first call (ms) | "
          "in-memory call (us, host) | correct | reps |")
    print("|---|---:|---:|---:|---|---:|")
    for r in rows:
        print(r)
    print()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
