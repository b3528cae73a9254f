"""The sparse layers in a training step against their dense baselines, at
GPT-2 widths, eager and as CUDA graphs, in one process, round-robin.

Two suites (bf16 weights, 16384 tokens unless --tokens):
  ffn24       the 2:4 FFN pair: fc d -> 4d and proj 4d -> d as Sparse24Linear
              against nn.Linear; one step = forward, backward, and an SGD
              step (the 2:4 layers then compress W again and add the masked
              decay, through sparsetile.nn.attach: the whole per-step cost);
  ffn24_fused the 2:4 FFN as a GPT block has it (biases, GELU tanh form):
              Sparse24MLP, the biases and the GELU fused into the 2:4 GEMMs
              (forward and backward), against the same Sparse24Linear pair
              unfused and against nn.Linear (three rows a width: unfused vs
              dense, fused vs dense, fused vs unfused), with an SGD step as
              in ffn24;
  sparsedrop  SparseDropLinear at p against F.dropout(x, p) + nn.Linear (the
              SparseDrop paper's baseline), 1024 -> 4096 and 4096 -> 1024;
              one step = forward + backward.
Each case is timed eager and captured in a torch.cuda.CUDAGraph. Timing: CUDA
events around ITERS back-to-back steps after warm-up, a 256 MiB write to
flush L2 before each round, baseline and candidate alternating round by
round, medians of ROUNDS. The eager rounds also record the host's time per
step (CPU ms, the GPU synchronized only at the round's end).

Usage: ffn_bench.py [--suite ffn24|ffn24_fused|sparsedrop|all]
                    [--dims 768,1024,...]
                    [--tokens 16384] [--json PATH]
Exits 3 without torch or a GPU."""
import argparse
import json
import statistics
import sys
import time

try:
    import torch
except ImportError:
    print("ffn_bench: no torch", file=sys.stderr)
    sys.exit(3)
if not torch.cuda.is_available():
    print("ffn_bench: no GPU", file=sys.stderr)
    sys.exit(3)

import torch.nn.functional as F
from torch import nn

import sparsetile.nn as stnn

ITERS, ROUNDS = 10, 7
DT = torch.bfloat16


class Pair(nn.Module):
    """fc -> GELU -> proj, without bias: the linears under test."""

    def __init__(self, d, sparse, weight_grad="dense"):
        super().__init__()
        kw = dict(bias=False, device="cuda", dtype=DT)
        if sparse:
            kw["weight_grad"] = weight_grad
        cls = stnn.Sparse24Linear if sparse else nn.Linear
        self.fc, self.proj = cls(d, 4 * d, **kw), cls(4 * d, d, **kw)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x)))


class Ffn(nn.Module):
    """fc -> GELU (tanh) -> proj with biases, as train_gpt.py's blocks:
    kind "dense" (nn.Linear), "unfused" (two Sparse24Linear and F.gelu) or
    "fused" (the same layers through sparsetile.nn.sparse24_mlp, the fused
    kernels of Sparse24MLP)."""

    def __init__(self, d, kind, weight_grad="dense"):
        super().__init__()
        kw = dict(device="cuda", dtype=DT)
        if kind != "dense":
            kw["weight_grad"] = weight_grad
        cls = nn.Linear if kind == "dense" else stnn.Sparse24Linear
        self.fc, self.proj = cls(d, 4 * d, **kw), cls(4 * d, d, **kw)
        self.fused = kind == "fused"

    def forward(self, x):
        if self.fused:
            return stnn.sparse24_mlp(x, self.fc, self.proj)
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class DropLinear(nn.Module):
    """F.dropout + nn.Linear, or SparseDropLinear."""

    def __init__(self, k, n, p, sparse):
        super().__init__()
        self.p, self.sparse = p, sparse
        kw = dict(bias=False, device="cuda", dtype=DT)
        self.lin = stnn.SparseDropLinear(k, n, p, **kw) if sparse else \
            nn.Linear(k, n, **kw)

    def forward(self, x):
        return self.lin(x) if self.sparse else \
            self.lin(F.dropout(x, self.p, training=True))


def make_step(model, x, gy, opt):
    def step():
        if opt is not None:
            opt.zero_grad(set_to_none=False)
        y = model(x)
        y.backward(gy)
        if opt is not None:
            opt.step()
    return step


def graphed(step):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    return g.replay


def time_pair(base, cand):
    """Round-robin medians: (base gpu ms, cand gpu ms, base cpu ms,
    cand cpu ms) per step."""
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for fn in (base, cand):
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    gpu = {0: [], 1: []}
    cpu = {0: [], 1: []}
    for _ in range(ROUNDS):
        for i, fn in enumerate((base, cand)):
            flush.zero_()
            start, stop = torch.cuda.Event(True), torch.cuda.Event(True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            for _ in range(ITERS):
                fn()
            stop.record()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            gpu[i].append(start.elapsed_time(stop) / ITERS)
            cpu[i].append((t1 - t0) * 1e3 / ITERS)
    med = statistics.median
    return med(gpu[0]), med(gpu[1]), med(cpu[0]), med(cpu[1])


def case(rows, what, make, tokens, k, extra):
    """Times make(sparse) -> (step fn) for sparse False/True, eager and
    graphed."""
    steps = [make(False), make(True)]
    for mode in ("eager", "graph"):
        fns = steps if mode == "eager" else [graphed(s) for s in steps]
        bg, cg, bc, cc = time_pair(*fns)
        row = dict(what=what, mode=mode, tokens=tokens, d=k, base_ms=bg,
                   ms=cg, speedup=bg / cg, **extra)
        if mode == "eager":
            row.update(base_cpu_ms=bc, cpu_ms=cc)
        rows.append(row)
        print("%-28s %-5s d=%-5d base %.3f ms  sparse %.3f ms  %.2fx%s" % (
            what, mode, k, bg, cg, bg / cg,
            "  (host %.3f ms)" % cc if mode == "eager" else ""), flush=True)


def ffn24(rows, dims, tokens, weight_grads):
    for d in dims:
        torch.manual_seed(0)
        x = torch.randn(tokens, d, device="cuda", dtype=DT)
        gy = torch.randn(tokens, d, device="cuda", dtype=DT)
        dense = Pair(d, False)
        for wg in weight_grads:
            def make(sparse, wg=wg):
                model = Pair(d, sparse, wg)
                model.load_state_dict(dense.state_dict())
                opt = torch.optim.SGD(model.parameters(), lr=1e-6)
                if sparse:
                    stnn.attach(opt, model)
                return make_step(model, x, gy, opt)
            case(rows, "2:4 FFN pair, dW %s" % wg, make, tokens, d,
                 dict(weight_grad=wg))


def ffn24_fused(rows, dims, tokens, weight_grads):
    """Per width: (unfused vs dense), (fused vs dense), (fused vs unfused);
    every model from the same weights (the layers' parameter names are fc.*
    and proj.* in all three)."""
    for d in dims:
        torch.manual_seed(0)
        x = torch.randn(tokens, d, device="cuda", dtype=DT)
        gy = torch.randn(tokens, d, device="cuda", dtype=DT)
        state = Ffn(d, "dense").state_dict()
        for wg in weight_grads:
            def build(kind, wg=wg):
                model = Ffn(d, kind, wg)
                model.load_state_dict(state)
                opt = torch.optim.SGD(model.parameters(), lr=1e-6)
                if kind != "dense":
                    stnn.attach(opt, model)
                return make_step(model, x, gy, opt)
            for base, cand in (("dense", "unfused"), ("dense", "fused"),
                               ("unfused", "fused")):
                case(rows, "2:4 FFN+bias+GELU %s vs %s, dW %s" % (
                    cand, base, wg),
                    lambda sparse, b=base, c=cand: build(c if sparse else b),
                    tokens, d, dict(weight_grad=wg, base=base, cand=cand))


def sparsedrop(rows, tokens_list, ps):
    for tokens in tokens_list:
        for k, n in ((1024, 4096), (4096, 1024)):
            x = torch.randn(tokens, k, device="cuda", dtype=DT,
                            requires_grad=True)
            gy = torch.randn(tokens, n, device="cuda", dtype=DT)
            for p in ps:
                def make(sparse, p=p):
                    model = DropLinear(k, n, p, sparse)
                    return make_step(model, x, gy, None)
                case(rows, "SparseDropLinear p=%g" % p, make, tokens, k,
                     dict(n=n, p=p))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="all",
                    choices=("ffn24", "ffn24_fused", "sparsedrop", "all"))
    ap.add_argument("--dims", default="768,1024,1280,1600,2048")
    ap.add_argument("--tokens", default="16384")
    ap.add_argument("--ps", default="0,0.05,0.1,0.3,0.5")
    ap.add_argument("--weight-grads", default="dense,mvue",
                    help="the 2:4 layers' weight_grad settings to time")
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    tokens = [int(t) for t in a.tokens.split(",")]
    if a.suite in ("ffn24", "all"):
        ffn24(rows, [int(d) for d in a.dims.split(",")], tokens[-1],
              a.weight_grads.split(","))
    if a.suite in ("ffn24_fused", "all"):
        ffn24_fused(rows, [int(d) for d in a.dims.split(",")], tokens[-1],
                    a.weight_grads.split(","))
    if a.suite in ("sparsedrop", "all"):
        sparsedrop(rows, tokens, [float(p) for p in a.ps.split(",")])
    print("| case | mode | tokens | d | dense ms | sparse ms | speed-up | "
          "host ms |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %s | %d | %d | %.3f | %.3f | %.2fx | %s |" % (
            r["what"], r["mode"], r["tokens"], r["d"], r["base_ms"], r["ms"],
            r["speedup"], "%.3f" % r["cpu_ms"] if "cpu_ms" in r else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bench": "ffn", "device": torch.cuda.get_device_name(),
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
