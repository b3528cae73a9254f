"""Where a training step's time goes: torch.profiler over a few steps of the
2:4 FFN pair (dW dense and MVUE), of the FFN with biases and GELU (dense,
2:4 unfused, 2:4 fused: Sparse24MLP) and of SparseDropLinear, against their dense
baselines, as the bench times them (bench/python/ffn_bench.py's models).
Prints, per case, every kernel's total CUDA time per step and its share,
and the host time per step; writes JSON with --json.

Usage: step_profile.py [--d 1024] [--tokens 16384] [--p 0.1] [--json PATH]
Exits 3 without torch or a GPU."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ffn_bench as fb  # noqa: E402 (exits 3 without torch or a GPU)

import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import sparsetile.nn as stnn  # noqa: E402

STEPS = 5


def profile_step(step):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) \
            as prof:
        for _ in range(STEPS):
            step()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = e.cuda_time_total
        if t and e.key and not e.key.startswith(("aten::", "cuda", "Profiler",
                                                 "autograd", "Optimizer",
                                                 "sparsetile")) \
                and e.self_cpu_time_total == 0:
            kernels[e.key] = kernels.get(e.key, 0.0) + t / STEPS / 1e3
    return sorted(kernels.items(), key=lambda kv: -kv[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--p", type=float, default=0.1)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.manual_seed(0)
    x = torch.randn(a.tokens, a.d, device="cuda", dtype=fb.DT)
    gy = torch.randn(a.tokens, a.d, device="cuda", dtype=fb.DT)
    cases = {}
    for name, sparse, wg in (("dense FFN pair", False, "dense"),
                             ("2:4 FFN pair, dW dense", True, "dense"),
                             ("2:4 FFN pair, dW mvue", True, "mvue")):
        model = fb.Pair(a.d, sparse, wg)
        opt = torch.optim.SGD(model.parameters(), lr=1e-6)
        if sparse:
            stnn.attach(opt, model)
        cases[name] = fb.make_step(model, x, gy, opt)
    # The FFN as train_gpt.py's blocks have it (biases, GELU tanh form):
    # dense, the 2:4 layers unfused, and Sparse24MLP with the biases and the
    # GELU in the 2:4 GEMMs' epilogues (no GELU or bias kernels should be
    # left in its profile but the biases' column sums).
    for name, kind in (("dense FFN+bias+GELU", "dense"),
                       ("2:4 FFN+bias+GELU, unfused", "unfused"),
                       ("2:4 FFN+bias+GELU, fused", "fused")):
        model = fb.Ffn(a.d, kind)
        opt = torch.optim.SGD(model.parameters(), lr=1e-6)
        if kind != "dense":
            stnn.attach(opt, model)
        cases[name] = fb.make_step(model, x, gy, opt)
    xs = torch.randn(a.tokens, a.d, device="cuda", dtype=fb.DT,
                     requires_grad=True)
    gys = torch.randn(a.tokens, 4 * a.d, device="cuda", dtype=fb.DT)
    for name, sparse in (("F.dropout + nn.Linear", False),
                         ("SparseDropLinear", True)):
        model = fb.DropLinear(a.d, 4 * a.d, a.p, sparse)
        cases["%s p=%g" % (name, a.p)] = fb.make_step(model, xs, gys, None)
    out = {}
    for name, step in cases.items():
        rows = profile_step(step)
        total = sum(ms for _, ms in rows)
        out[name] = {"total_ms": total, "kernels": rows}
        print("\n## %s: %.3f ms of kernels a step" % (name, total))
        print("| kernel | ms a step | share |")
        print("|---|---:|---:|")
        for k, ms in rows[:14]:
            print("| %s | %.3f | %.1f%% |" % (k[:90].replace("|", "/"), ms,
                                            100 * ms / total))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bench": "step_profile", "d": a.d, "tokens": a.tokens,
                       "cases": out}, f, indent=1)


if __name__ == "__main__":
    main()
