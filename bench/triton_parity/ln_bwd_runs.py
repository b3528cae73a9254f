"""Layer norm backward's dx kernel at M 4096, f16, N 1024-12288, by the run
length of its f32 partial-sum reductions: the JIT's default, the kernel
compiled with `@thread_run(8)` (runs of 16 bytes of the f16 loads: each
thread's eight f32 go as two 16-byte reds, as before the reduction got runs
of its own) and `@thread_run(4)`, the default with scalar reds
(SPARSETILE_VECTOR_ATOMICS=0), and Triton's kernel of the same design; one
process, round-robin CUDA events, L2 flushed, medians (parity.Timer).
Every variant's dX and partial dW rows are checked against Triton's.
ON THE GPU MACHINE (bench/NOTES.md, "Layer norm backward: a reduction's
runs are its own"):

    PYTHONPATH=python:bench/triton_parity \\
        python3 bench/triton_parity/ln_bwd_runs.py [--json out.json]

Exits 0 with a reason where torch, a GPU or Triton is missing."""

import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def with_thread_run(src, run):
    """layernorm.tile with `@thread_run(run)` on layer_norm_bwd_dx."""
    head = "@num_warps(8)\nkernel layer_norm_bwd_dx"
    assert head in src, "layer_norm_bwd_dx's header moved"
    return src.replace(head, "@num_warps(8)\n@thread_run(%d)\n"
                       "kernel layer_norm_bwd_dx" % run)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--sizes", default="1024,2048,4096,8192,12288")
    args = ap.parse_args(argv)
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("no CUDA GPU")
        import configs
        import parity
        import ports
        import triton_kernels as T
        if not T.AVAILABLE:
            raise ImportError(T.WHY)
        import sparsetile
    except ImportError as e:
        print("ln_bwd_runs.py: skipped: %s" % e)
        return 0
    src = open(configs.kernel_path("layernorm")).read()
    tmp = tempfile.mkdtemp()
    paths = {"default": configs.kernel_path("layernorm")}
    for run in (8, 4):
        paths["run%d" % run] = os.path.join(tmp, "layernorm_run%d.tile" % run)
        with open(paths["run%d" % run], "w") as f:
            f.write(with_thread_run(src, run))
    timer = parity.Timer(torch, max_reps=40, min_reps=10, budget_ms=1500,
                         warmup=5)
    rows = []
    m = 4096
    for n in [int(s) for s in args.sizes.split(",")]:
        c = configs.layer_norm_config(n, 2)
        g = c["GROUP"]
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        dy = torch.randn_like(x)
        w = torch.randn(n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, device="cuda", dtype=torch.float16)
        mean = torch.empty(m, device="cuda")
        rstd = torch.empty(m, device="cuda")
        ports.layer_norm_fwd(x, w, b, 1e-5, torch.empty_like(x), mean, rstd)

        def compile_dx(path):
            return sparsetile.compile(path, "layer_norm_bwd_dx",
                                      num_warps=c["bwd_warps"],
                                      BLOCK=c["BLOCK"], GROUP=g, T="f16")
        ks = {name: compile_dx(p) for name, p in paths.items()}
        os.environ["SPARSETILE_VECTOR_ATOMICS"] = "0"
        try:
            ks["scalar_reds"] = compile_dx(paths["default"])
        finally:
            del os.environ["SPARSETILE_VECTOR_ATOMICS"]
        bufs, fns = {}, {}
        for name in list(ks) + ["triton"]:
            dx = torch.full_like(x, float("nan"))
            dwp = torch.zeros(g, n, device="cuda")
            dbp = torch.zeros(g, n, device="cuda")
            bufs[name] = (dx, dwp)
            if name == "triton":
                def fn(dx=dx, dwp=dwp, dbp=dbp):
                    T._ln_bwd_dx[(m,)](dx, dy, dwp, dbp, x, w, mean, rstd,
                                       x.stride(0), n, GROUP=g,
                                       BLOCK=c["BLOCK"],
                                       num_warps=c["bwd_warps"])
            else:
                def fn(k=ks[name], dx=dx, dwp=dwp, dbp=dbp):
                    k[(m,)](dx, dy, dwp, dbp, x, w, mean, rstd, x.stride(0),
                            n)
            fn()  # One launch each: the partial rows hold one pass.
            fns[name] = fn
        torch.cuda.synchronize()
        errs = {}
        d0, w0 = bufs["triton"]
        for name in ks:
            d1, w1 = bufs[name]
            errs[name] = max(
                float((d1.float() - d0.float()).abs().max() /
                      d0.float().abs().max()),
                float((w1 - w0).abs().max() / w0.abs().max()))
        t = timer.run(fns)
        rows.append(dict(m=m, n=n, ms=t, rel_err_vs_triton=errs))
        print("N %5d  " % n + "  ".join(
            "%s %.1f us (%.2fx)" % (k, v * 1e3, t["triton"] / v)
            for k, v in t.items()) + "  max rel. err %.1e" %
            max(errs.values()), flush=True)
        if max(errs.values()) > 1e-3:
            print("ln_bwd_runs.py: a variant disagrees with Triton's",
                  file=sys.stderr)
            return 1
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(rows=rows, note="x: sparsetile / Triton time"),
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
