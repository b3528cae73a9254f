#!/usr/bin/env python3
"""Triton parity: the DSL ports of the Triton tutorial kernels (kernels/,
launched by ports.py) against Triton kernels of the same designs
(triton_kernels.py) and torch (cuBLAS, torch softmax / layer_norm /
dropout, F.scaled_dot_product_attention), in one process.

For every shape: inputs random (never zeros); the sparsetile output (and
Triton's) is poisoned (NaN) and checked once against a float64 reference
(attention: two heads) before timing, the result recorded as check
pass/fail; then the implementations run ROUND-ROBIN (sparsetile, triton,
torch, sparsetile, ...) after a warm-up (which includes the JIT compiles),
each timed run with CUDA events after a 256 MB write that flushes L2; the
median of the reps is kept.

    parity.py [--quick | --full] [--small] [--only REGEX] [--json PATH]
              [--reps N]

--quick: a representative subset (about 4 minutes on one H200, compiles
included; Triton autotunes over the first two candidates only); default:
the tutorials' shapes >= 1024 wide; --full adds the 16384^3 matmul,
--small the narrower softmax and layer-norm rows. Output: a
markdown table on stdout; --json writes one row per kernel / shape / impl
(median ms, TFLOP/s or GB/s, speed ratio to Triton and to torch, check)
with the git revision, GPU and date. Ratios are time_other / time_this
(above 1: this one is faster).

Without torch, Triton, a GPU or libsparsetile it prints why and exits 0.
Exit status 1 when a sparsetile result failed its check or raised."""

import argparse
import datetime
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import configs  # noqa: E402

IMPLS = ("sparsetile", "triton", "torch")


def revision():
    """The sparsetile revision: $SPARSETILE_REVISION, git, or the carried
    build's MANIFEST (the GPU machine's copy has no .git)."""
    rev = os.environ.get("SPARSETILE_REVISION", "").strip()
    if rev:
        # MANIFEST's "d501ff2 (dirty)" -> "d501ff2-dirty": the plot's file
        # name is made from it.
        words = rev.split()
        return words[0][:12] + ("-dirty" if "(dirty)" in words[1:] else "")
    # Only this checkout's own git: the GPU machine's copy has none, and a
    # repository above it would name another revision.
    try:
        if not os.path.exists(os.path.join(REPO, ".git")):
            raise OSError("no .git here")
        out = subprocess.run(["git", "-C", REPO, "rev-parse", "--short",
                              "HEAD"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL,
                             universal_newlines=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        with open(os.path.join(REPO, ".device", "build", "MANIFEST")) as f:
            for line in f:
                m = re.match(r"revision:\s*(\S+)", line)
                if m:
                    return m.group(1)[:12]
    except OSError:
        pass
    return "unknown"


def missing_requirements():
    """None when torch, Triton, a GPU and libsparsetile are all here, else
    a sentence saying what is missing."""
    try:
        import torch
    except ImportError as e:
        return "torch is not installed (%s)" % e
    if not torch.cuda.is_available():
        return "no CUDA GPU (torch.cuda.is_available() is False)"
    import triton_kernels
    if not triton_kernels.AVAILABLE:
        return triton_kernels.WHY
    try:
        import sparsetile
        ok, why = sparsetile.gpu_available()
    except Exception as e:  # the library is missing or unloadable
        return "sparsetile is not usable: %s" % e
    if not ok:
        return "libsparsetile sees no usable GPU: %s" % why
    return None


def gpu_modules(script):
    """(torch, triton_kernels, ports) for a bench script on the GPU; exits
    3 with the reason when something is missing."""
    why = missing_requirements()
    if why:
        print("%s: %s" % (script, why), file=sys.stderr)
        sys.exit(3)
    import torch
    import triton_kernels
    import ports
    return torch, triton_kernels, ports


def require_driver_assembler(arch, script):
    """Exits 2 when `arch` (a target other than this GPU's, --arch) is asked
    for without SPARSETILE_ASSEMBLER=driver: an sm_80 cubin does not load on
    another GPU, its PTX does (the driver compiles it)."""
    if arch and os.environ.get("SPARSETILE_ASSEMBLER") != "driver":
        sys.exit("%s: --arch needs SPARSETILE_ASSEMBLER=driver" % script)


def profiler_modules(argv, usage, counts):
    """((torch, configs, ports, triton_kernels), None) for a profile_*.py
    launcher whose argv[1] is st or tr and whose len(argv) is in `counts`;
    else (None, its exit status): 2 after printing `usage`, 0 after printing
    why it skips (no torch, GPU or Triton)."""
    script = os.path.basename(argv[0])
    if len(argv) not in counts or argv[1] not in ("st", "tr"):
        print("usage: %s %s" % (script, usage), file=sys.stderr)
        return None, 2
    why = missing_requirements()
    if why:
        print("%s: skipped: %s" % (script, why))
        return None, 0
    import torch
    import configs
    import ports
    import triton_kernels
    return (torch, configs, ports, triton_kernels), None


def profile_one_launch(torch, run):
    """Three warm-ups, then one `run()` between cudaProfilerStart/Stop, for
    `ncu --profile-from-start off`."""
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    run()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


# --- timing -------------------------------------------------------------
def sweep_timer(torch):
    """The Timer of the tile-sweep scripts (matmul_tiles.py,
    attention_tiles.py): up to 30 runs a variant within 1.5 s."""
    return Timer(torch, max_reps=30, min_reps=5, budget_ms=1500, warmup=3)


class Timer(object):
    """Round-robin CUDA-event timing with an L2 flush before each run."""

    def __init__(self, torch, max_reps, min_reps, budget_ms, warmup):
        self.torch = torch
        self.flush_buf = torch.empty(256 << 20, dtype=torch.int8,
                                     device="cuda")
        self.max_reps, self.min_reps = max_reps, min_reps
        self.budget_ms, self.warmup = budget_ms, warmup

    def _once(self, fn):
        ev = [self.torch.cuda.Event(enable_timing=True) for _ in range(2)]
        self.flush_buf.zero_()
        ev[0].record()
        fn()
        ev[1].record()
        return ev

    def run(self, fns):
        """{name: median ms} of the callables in `fns` (an ordered dict)."""
        torch = self.torch
        for _ in range(self.warmup):
            for fn in fns.values():
                fn()
        est = {}
        for name, fn in fns.items():
            ev = self._once(fn)
            torch.cuda.synchronize()
            est[name] = ev[0].elapsed_time(ev[1])
        per_round = sum(est.values()) + 0.1 * len(fns)
        reps = int(max(self.min_reps, min(self.max_reps,
                                          self.budget_ms / per_round)))
        events = {name: [] for name in fns}
        for _ in range(reps):
            for name, fn in fns.items():
                events[name].append(self._once(fn))
        torch.cuda.synchronize()
        return {name: statistics.median(a.elapsed_time(b) for a, b in evs)
                for name, evs in events.items()}


# --- checks ---------------------------------------------------------------
def rel_err(actual, reference):
    """max |actual - reference| / max |reference|, NaN when actual has a
    NaN or inf (a poisoned output left unwritten)."""
    a = actual.to(reference.dtype)
    if not bool(a.isfinite().all()):
        return float("nan")
    return float((a - reference).abs().max() /
                 reference.abs().max().clamp_min(1e-30))


def verdict(errs, tol):
    """(ok, worst error) of a list of rel_err values against tol."""
    worst = max(errs, key=lambda e: float("inf") if e != e else e)
    return (worst == worst and worst <= tol), worst


def once(fn):
    """fn computed at its first call, then remembered (a reference shared by
    the checks of several implementations)."""
    memo = []

    def get():
        if not memo:
            memo.append(fn())
        return memo[0]
    return get


# --- cases: each returns (metric name, amount, {impl: fn}, check) ----------
# check(impl) poisons impl's outputs, runs it once and compares them with
# the reference: (ok, worst relative error). parity.py checks sparsetile's
# (and the "sparsetile_kofs" variant's) and Triton's; only the former count
# as failures.
class Cases(object):
    def __init__(self, torch, ports, tk):
        self.torch, self.ports, self.tk = torch, ports, tk
        self.F = torch.nn.functional

    def randn(self, *shape, dtype=None):
        t = self.torch.randn(*shape, device="cuda",
                             dtype=dtype or self.torch.float32)
        return t

    def empty_like(self, t):
        return self.torch.full_like(t, float("nan"))

    def vector_add(self, n):
        torch, P, T = self.torch, self.ports, self.tk
        x, y = self.randn(n), self.randn(n)
        o = {i: self.empty_like(x) for i in IMPLS}
        fns = {"sparsetile": lambda: P.add(x, y, o["sparsetile"]),
               "triton": lambda: T.add(x, y, o["triton"]),
               "torch": lambda: torch.add(x, y, out=o["torch"])}

        def check(impl):
            o[impl].fill_(float("nan"))
            fns[impl]()
            return verdict([rel_err(o[impl], x.double() + y.double())], 1e-6)
        return "GB/s", 3 * n * 4, fns, check

    def softmax(self, m, n):
        torch, P, T = self.torch, self.ports, self.tk
        x = self.randn(m, n)
        o = {i: self.empty_like(x) for i in IMPLS}
        fns = {"sparsetile": lambda: P.softmax(x, o["sparsetile"]),
               "triton": lambda: T.softmax(x, o["triton"]),
               "torch": lambda: torch.softmax(x, dim=-1)}

        def check(impl):
            o[impl].fill_(float("nan"))
            fns[impl]()
            return verdict([rel_err(o[impl], torch.softmax(x.double(), -1))],
                           1e-5)
        return "GB/s", 2 * m * n * 4, fns, check

    def _ln_inputs(self, m, n, dtype):
        x = self.randn(m, n, dtype=dtype)
        w = self.randn(n, dtype=dtype)
        b = self.randn(n, dtype=dtype)
        return x, w, b

    def layer_norm_fwd(self, m, n, dtype=None):
        torch, P, T, F = self.torch, self.ports, self.tk, self.F
        dtype = dtype or torch.float16
        x, w, b = self._ln_inputs(m, n, dtype)
        eps = 1e-5
        y = {i: self.empty_like(x) for i in IMPLS}
        stats = {i: (torch.empty(m, device="cuda"),
                     torch.empty(m, device="cuda")) for i in IMPLS}
        fns = {"sparsetile": lambda: P.layer_norm_fwd(
                   x, w, b, eps, y["sparsetile"], *stats["sparsetile"]),
               "triton": lambda: T.layer_norm_fwd(
                   x, w, b, eps, y["triton"], *stats["triton"]),
               "torch": lambda: F.layer_norm(x, (n,), w, b, eps)}

        @once
        def reference():
            x64 = x.double()
            return (F.layer_norm(x64, (n,), w.double(), b.double(), eps),
                    x64.mean(-1),
                    1.0 / torch.sqrt(x64.var(-1, unbiased=False) + eps))

        def check(impl):
            y[impl].fill_(float("nan"))
            for s in stats[impl]:
                s.fill_(float("nan"))
            fns[impl]()
            ref, mu, rs = reference()
            return verdict([rel_err(y[impl], ref),
                            rel_err(stats[impl][0], mu),
                            rel_err(stats[impl][1], rs)], 5e-3)
        return "GB/s", 2 * m * n * x.element_size(), fns, check

    def layer_norm_bwd(self, m, n, dtype=None):
        """dX, dW, dB from dY, as the tutorial times its backward: our
        kernels (partial buffers zeroed, dx kernel, dW/dB reduction)
        against torch's autograd backward of F.layer_norm."""
        torch, P, T, F = self.torch, self.ports, self.tk, self.F
        dtype = dtype or torch.float16
        x, w, b = self._ln_inputs(m, n, dtype)
        dy = self.randn(m, n, dtype=dtype)
        eps = 1e-5
        group = configs.layer_norm_config(n, x.element_size())["GROUP"]
        bufs = {}
        for i, mod in (("sparsetile", P), ("triton", T)):
            mean = torch.empty(m, device="cuda")
            rstd = torch.empty(m, device="cuda")
            mod.layer_norm_fwd(x, w, b, eps, torch.empty_like(x), mean, rstd)
            bufs[i] = dict(mean=mean, rstd=rstd, dx=self.empty_like(x),
                           dw=self.empty_like(w), db=self.empty_like(b),
                           dw_part=torch.empty(group, n, device="cuda"),
                           db_part=torch.empty(group, n, device="cuda"))

        def ours(mod, bb):
            return lambda: mod.layer_norm_bwd(
                dy, x, w, bb["mean"], bb["rstd"], bb["dx"], bb["dw"],
                bb["db"], bb["dw_part"], bb["db_part"])
        xt = x.clone().requires_grad_(True)
        wt = w.clone().requires_grad_(True)
        bt = b.clone().requires_grad_(True)
        yt = F.layer_norm(xt, (n,), wt, bt, eps)
        fns = {"sparsetile": ours(P, bufs["sparsetile"]),
               "triton": ours(T, bufs["triton"]),
               "torch": lambda: torch.autograd.grad(
                   yt, (xt, wt, bt), dy, retain_graph=True)}

        @once
        def reference():
            x64 = x.double().requires_grad_(True)
            w64 = w.double().requires_grad_(True)
            b64 = b.double().requires_grad_(True)
            y64 = F.layer_norm(x64, (n,), w64, b64, eps)
            return torch.autograd.grad(y64, (x64, w64, b64), dy.double())

        def check(impl):
            bb = bufs[impl]
            for k in ("dx", "dw", "db"):
                bb[k].fill_(float("nan"))
            fns[impl]()
            gx, gw, gb = reference()
            return verdict([rel_err(bb["dx"], gx), rel_err(bb["dw"], gw),
                            rel_err(bb["db"], gb)], 5e-3)
        return "GB/s", 3 * m * n * x.element_size(), fns, check

    def matmul(self, m, n, k, dtype=None):
        """leaky_relu(A @ B) in f16; torch is cuBLAS's A @ B alone (its
        epilogue would be a second kernel). sparsetile_kofs: the DSL form
        with pointers computed from k instead of carried (RESULTS.md)."""
        torch, P, T, F = self.torch, self.ports, self.tk, self.F
        dtype = dtype or torch.float16
        a = self.randn(m, k, dtype=dtype)
        b = self.randn(k, n, dtype=dtype)
        c = {i: torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
             for i in IMPLS + ("sparsetile_kofs",)}
        fns = {"sparsetile": lambda: P.matmul(a, b, c["sparsetile"]),
               "triton": lambda: T.matmul(a, b, c["triton"]),
               "torch": lambda: torch.matmul(a, b, out=c["torch"]),
               "sparsetile_kofs": lambda: P.matmul(a, b, c["sparsetile_kofs"],
                                                   kofs=True)}

        @once
        def reference():
            return F.leaky_relu(a.double() @ b.double(), 0.01)

        def check(impl):
            c[impl].fill_(float("nan"))
            fns[impl]()
            return verdict([rel_err(c[impl], reference())], 1e-2)
        return "TFLOP/s", 2.0 * m * n * k, fns, check

    def dropout(self, n, p=0.5, seed=1234):
        """Checks: every output is 0 or x / (1 - p); the kept fraction is
        within 6 sigma of 1 - p; a second run with the seed is identical."""
        torch, P, T, F = self.torch, self.ports, self.tk, self.F
        x = self.randn(n)
        o = {i: self.empty_like(x) for i in IMPLS}
        fns = {"sparsetile": lambda: P.dropout(x, o["sparsetile"], p, seed),
               "triton": lambda: T.dropout(x, o["triton"], p, seed),
               "torch": lambda: F.dropout(x, p, training=True)}

        def check(impl):
            out = o[impl]
            out.fill_(float("nan"))
            fns[impl]()
            first = out.clone()
            out.fill_(float("nan"))
            fns[impl]()
            kept = first != 0
            frac = float(kept.double().mean())
            sigma = math.sqrt(p * (1 - p) / n)
            err = rel_err(torch.where(kept, first.double(), 0.0),
                          torch.where(kept, x.double() / (1 - p), 0.0))
            ok = (err == err and err <= 1e-6 and
                  abs(frac - (1 - p)) <= 6 * sigma + 1e-12 and
                  bool(torch.equal(first, out)))
            return ok, err
        return "GB/s", 2 * n * 4, fns, check

    def attention(self, z, h, n_ctx, d, causal):
        torch, P, T, F = self.torch, self.ports, self.tk, self.F
        q, k, v = (self.randn(z, h, n_ctx, d, dtype=torch.float16)
                   for _ in range(3))
        scale = 1.0 / math.sqrt(d)
        o = {i: self.empty_like(q) for i in IMPLS}
        lse = {i: torch.empty(z, h, n_ctx, device="cuda") for i in IMPLS}
        fns = {"sparsetile": lambda: P.attention(
                   q, k, v, o["sparsetile"], lse["sparsetile"], scale, causal),
               "triton": lambda: T.attention(
                   q, k, v, o["triton"], lse["triton"], scale, causal),
               "torch": lambda: F.scaled_dot_product_attention(
                   q, k, v, is_causal=causal, scale=scale)}

        heads = ((0, 0), (z - 1, h - 1))  # in float64

        @once
        def reference():
            return [attention_reference(torch, q[zi, hi], k[zi, hi],
                                        v[zi, hi], scale, causal)
                    for zi, hi in heads]

        def check(impl):
            o[impl].fill_(float("nan"))
            lse[impl].fill_(float("nan"))
            fns[impl]()
            errs = []
            for (zi, hi), (ref, ref_lse) in zip(heads, reference()):
                errs.append(rel_err(o[impl][zi, hi], ref))
                errs.append(rel_err(lse[impl][zi, hi], ref_lse))
            return verdict(errs, 1e-2)
        flops = 4.0 * z * h * n_ctx * n_ctx * d * (0.5 if causal else 1.0)
        return "TFLOP/s", flops, fns, check

    def block_sparse(self, size, density, seed=0):
        torch, P, T = self.torch, self.ports, self.tk
        a, b, row_ptr, kidx, nnz = block_sparse_inputs(
            torch, size, size, size, density, configs.BSR, seed)
        c = {i: torch.full((size, size), float("nan"), device="cuda",
                           dtype=a.dtype) for i in IMPLS}
        fns = {"sparsetile": lambda: P.bsr_matmul(a, b, c["sparsetile"],
                                                  row_ptr, kidx),
               "triton": lambda: T.bsr_matmul(a, b, c["triton"], row_ptr,
                                              kidx),
               "torch": lambda: torch.matmul(a, b, out=c["torch"])}

        def check(impl):
            c[impl].fill_(float("nan"))
            fns[impl]()
            return verdict([rel_err(c[impl], a.double() @ b.double())], 1e-2)
        flops = 2.0 * size * nnz * configs.BSR["BM"] * configs.BSR["BK"]
        return "TFLOP/s", flops, fns, check


def attention_reference(torch, q, k, v, scale, causal):
    """(softmax(q k^T scale) v, log2-sum-exp of the scaled scores) of one
    head in float64."""
    s = (q.double() @ k.double().T) * scale
    if causal:
        n = s.shape[0]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool,
                                     device=s.device).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1) / math.log(2.0)
    return torch.softmax(s, dim=-1) @ v.double(), lse


def block_sparse_inputs(torch, m, n, k, density, cfg, seed, dtype=None):
    """A [m, k] with round(density * k / BK) nonzero [BM, BK] blocks per
    row block (at least one), zeros elsewhere; B [k, n]; the CSR lists
    (row_ptr, kidx, i32, on the GPU) and the nonzero block count."""
    dtype = dtype or torch.float16
    bm, bk = cfg["BM"], cfg["BK"]
    gen = torch.Generator().manual_seed(seed)
    kb = k // bk
    per_row = max(1, int(round(density * kb)))
    lists = [sorted(torch.randperm(kb, generator=gen)[:per_row].tolist())
             for _ in range(m // bm)]
    keep = torch.zeros(m // bm, kb, dtype=torch.bool)
    for i, ks in enumerate(lists):
        keep[i, ks] = True
    mask = keep.repeat_interleave(bm, 0).repeat_interleave(bk, 1)
    a = torch.randn(m, k, dtype=dtype, device="cuda") * mask.to("cuda")
    b = torch.randn(k, n, dtype=dtype, device="cuda")
    row_ptr = torch.tensor([0] + [len(x) for x in lists],
                           dtype=torch.int32).cumsum(0).to(torch.int32)
    kidx = torch.tensor([x for ks in lists for x in ks], dtype=torch.int32)
    return (a, b, row_ptr.cuda(), kidx.cuda(), per_row * (m // bm))


# --- the shapes ------------------------------------------------------------
def shapes(mode, small=False):
    """[(kernel, {shape}), ...] for mode "quick", "default" or "full": the
    tutorials' shapes >= 1024 wide (the targets' range); `small` adds the
    narrower ones (softmax N 256, 512, 1000; layer norm N 512)."""
    quick = mode == "quick"
    out = []
    for e in ((16, 20, 24) if quick else range(12, 27)):
        out.append(("vector_add", dict(n=1 << e)))
    sm = ((1024, 4096, 16384) if quick else
          (1024, 1823, 2048, 3072, 4096, 6000, 8192, 12800, 16384))
    if small:
        sm = (256, 512, 1000) + sm
    for n in sm:
        out.append(("softmax", dict(m=4096, n=n)))
    ln_n = ((1024, 8192) if quick else
            (1024, 2048, 3072, 4096, 6144, 8192, 12288))
    if small:
        ln_n = (512,) + ln_n
    for kind in ("layer_norm_fwd", "layer_norm_bwd"):
        for n in ln_n:
            out.append((kind, dict(m=4096, n=n)))
    mm = (1024, 4096, 8192) if quick else (1024, 2048, 3072, 4096, 6144, 8192)
    if mode == "full":
        mm += (16384,)
    for s in mm:
        out.append(("matmul", dict(m=s, n=s, k=s)))
    for e in ((20, 24) if quick else range(20, 27)):
        out.append(("dropout", dict(n=1 << e)))
    heads = 16 if quick else 32
    for d in (64, 128):
        for causal in (False, True):
            for n in ((1024, 4096) if quick else (1024, 2048, 4096, 8192,
                                                  16384)):
                out.append(("attention", dict(z=4, h=heads, n_ctx=n, d=d,
                                              causal=causal)))
    for density in ((0.1, 0.5) if quick else (0.1, 0.25, 0.5)):
        out.append(("block_sparse", dict(size=4096, density=density)))
    return out


def width(kernel, shape):
    """The size the targets' ">= 1024" is about."""
    for key in ("n_ctx", "size", "n"):
        if key in shape:
            return shape[key]
    return 0


def shape_text(shape):
    return " ".join("%s=%s" % kv for kv in shape.items())


def fmt(v, digits=1, suffix=""):
    return "-" if v is None else ("%.*f%s" % (digits, v, suffix))


def ratio(other_ms, ms):
    """other / this (speed of this relative to other), None when either
    was not timed."""
    return None if other_ms is None or ms is None else other_ms / ms


def error_text(e):
    text = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, text[0] if text else "")


def measure(cases, timer, shape_list, json_path, meta, sync, free):
    """Checks and times every (kernel, shape) of shape_list with `cases`
    (a Cases) and `timer` (a Timer), printing a table row each and
    rewriting the JSON at json_path; sync() waits for the GPU, free()
    returns cached memory. Returns (rows, number of sparsetile checks that
    failed or raised)."""
    rows, failed = [], 0
    for kernel, shape in shape_list:
        base = dict(kernel=kernel, shape=shape, shape_text=shape_text(shape))
        try:
            unit, amount, fns, check = getattr(cases, kernel)(**shape)
        except Exception as e:  # inputs or a setup launch failed
            failed += 1
            rows.append(dict(base, impl="setup", error=error_text(e),
                             check="error"))
            print("| %s | %s | | setup error: %s | | | | | error |" % (
                kernel, base["shape_text"], rows[-1]["error"][:100]))
            save(json_path, meta, rows)
            continue
        checked = {}
        for impl in [i for i in fns if i != "torch"]:
            try:
                checked[impl] = check(impl) + (None,)
            except Exception as e:  # a compile or launch error
                checked[impl] = (False, float("nan"), error_text(e))
        failed += sum(1 for i, c in checked.items()
                      if i.startswith("sparsetile") and not c[0])
        # Each impl once more before timing: one that raises is left out
        # of the timing (and recorded), the others are still compared.
        live, errors = {}, {}
        for name, fn in fns.items():
            try:
                fn()
                sync()
                live[name] = fn
            except Exception as e:
                errors[name] = error_text(e)
        ms = timer.run(live) if live else {}
        scale = 1e12 if unit == "TFLOP/s" else 1e9
        value = {i: amount / (t * 1e-3) / scale for i, t in ms.items()}
        for impl in fns:
            row = dict(base, impl=impl, unit=unit)
            if impl in ms:
                t = ms[impl]
                row.update(ms=t, value=value[impl],
                           vs_triton=ratio(ms.get("triton"), t),
                           vs_torch=ratio(ms.get("torch"), t))
            else:
                row["error"] = errors.get(impl, "not timed")
            if impl in checked:
                c_ok, c_err, c_error = checked[impl]
                row.update(check="pass" if c_ok else "fail", err=c_err)
                if c_error:
                    row.update(check="error", check_error=c_error)
            rows.append(row)
        for impl in [i for i in fns if i.startswith("sparsetile")]:
            t = ms.get(impl)
            ok, err, check_error = checked[impl]
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                kernel + ("" if impl == "sparsetile" else " (k offsets)"),
                base["shape_text"], unit, fmt(value.get(impl)),
                fmt(value.get("triton")), fmt(value.get("torch")),
                fmt(ratio(ms.get("triton"), t), 2, "x"),
                fmt(ratio(ms.get("torch"), t), 2, "x"),
                ("pass" if ok else "FAIL") + (" (%.1e)" % err) +
                ("" if not check_error else " " + check_error[:80]) +
                ("" if checked["triton"][0] else
                 " (triton FAILS its check: %.1e)" % checked["triton"][1]) +
                "".join(" %s: %s" % (i, e[:80]) for i, e in errors.items())))
        sys.stdout.flush()
        save(json_path, meta, rows)
        del fns, check, live
        free()
    return rows, failed


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true")
    mode.add_argument("--full", action="store_true")
    ap.add_argument("--only", help="regex over kernel names")
    ap.add_argument("--small", action="store_true",
                    help="also the shapes narrower than 1024")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--reps", type=int, help="most timed runs per impl")
    args = ap.parse_args(argv)
    run_mode = "quick" if args.quick else "full" if args.full else "default"

    why = missing_requirements()
    if why:
        print("parity.py: skipped: %s" % why)
        return 0
    import torch
    import ports
    import triton
    import triton_kernels as tk
    if args.quick:
        tk.limit_configs(2)
    torch.manual_seed(0)
    max_reps = args.reps or (10 if args.quick else 30)
    timer = Timer(torch, max_reps=max_reps, min_reps=min(5, max_reps),
                  budget_ms=300.0 if args.quick else 1500.0,
                  warmup=2 if args.quick else 3)
    cases = Cases(torch, ports, tk)
    gpu = torch.cuda.get_device_name()
    meta = dict(bench="triton_parity", revision=revision(), gpu=gpu,
                date=datetime.datetime.now(datetime.timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"),
                mode=run_mode, torch=torch.__version__,
                triton=triton.__version__, complete=False)
    print("# Triton parity: sparsetile %s, %s, %s (%s)\n" % (
        meta["revision"], gpu, meta["date"], run_mode))
    print("Ratios: time of the other / time of sparsetile (above 1: "
          "sparsetile is faster).\n")
    print("| kernel | shape | unit | sparsetile | triton | torch | "
          "vs triton | vs torch | check |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    started = time.time()
    shape_list = [(k, sh) for k, sh in shapes(run_mode, args.small)
                  if not args.only or re.search(args.only, k)]
    rows, failed = measure(cases, timer, shape_list, args.json, meta,
                           torch.cuda.synchronize, torch.cuda.empty_cache)
    summary = geomeans(rows)
    print()
    print("Geometric mean of sparsetile's speed ratio, per kernel:\n")
    print("| kernel | vs triton | vs torch | shapes |")
    print("|---|---:|---:|---:|")
    for kernel, s in summary.items():
        print("| %s | %.2fx | %.2fx | %d |" % (kernel, s["vs_triton"],
                                               s["vs_torch"], s["shapes"]))
    print("\n%d rows in %.0f s; %d sparsetile checks failed or raised" % (
        len(rows), time.time() - started, failed))
    save(args.json, dict(meta, complete=True), rows)
    return 1 if failed else 0


def save(path, meta, rows):
    """Writes the JSON (again): after every shape, so that a run cut short
    keeps what it measured ("complete": true only at the end)."""
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(dict(meta, geomean=geomeans(rows), rows=rows), f,
                      indent=1)
        os.replace(tmp, path)


def geomeans(rows):
    """{kernel or "all": {vs_triton, vs_torch, shapes}} over the plain
    sparsetile rows of shapes >= 1024 wide (the targets' range)."""
    groups = {}
    for r in rows:
        if (r.get("impl") == "sparsetile" and r.get("vs_triton") and
                r.get("vs_torch") and width(r["kernel"], r["shape"]) >= 1024):
            for key in (r["kernel"], "all"):
                groups.setdefault(key, []).append(r)
    out = {}
    for key, rs in groups.items():
        out[key] = dict(
            vs_triton=math.exp(sum(math.log(r["vs_triton"]) for r in rs) /
                               len(rs)),
            vs_torch=math.exp(sum(math.log(r["vs_torch"]) for r in rs) /
                              len(rs)),
            shapes=len(rs))
    return out


if __name__ == "__main__":
    sys.exit(main())
