"""Draws parity.py's JSON: sparsetile's speed ratio to Triton and to torch
(time of the other / time of sparsetile: above 1, sparsetile is faster)
per kernel and shape, one panel a kernel, titled with the run's revision,
GPU and date. Run with Debian's python3-matplotlib:

    /usr/bin/python3 bench/triton_parity/plot.py parity.json [OUT_DIR]

writes OUT_DIR/parity_<rev>.png (OUT_DIR: the JSON's folder) and prints
its path. `ratios` (no matplotlib needed) gives the numbers drawn."""

import json
import math
import os
import sys

KERNEL_ORDER = ("vector_add", "softmax", "layer_norm_fwd", "layer_norm_bwd",
                "matmul", "dropout", "attention", "block_sparse")


def label(kernel, shape):
    """A short x-axis label of one shape."""
    if kernel in ("vector_add", "dropout"):
        n = shape["n"]
        e = int(round(math.log2(n)))
        return "2^%d" % e if 1 << e == n else str(n)
    if kernel == "matmul":
        m, n, k = shape["m"], shape["n"], shape["k"]
        return str(m) if m == n == k else "%dx%dx%d" % (m, n, k)
    if kernel == "attention":
        return "%d/%d%s" % (shape["n_ctx"], shape["d"],
                            "c" if shape["causal"] else "")
    if kernel == "block_sparse":
        return "%g" % shape["density"]
    return str(shape.get("n", ""))


def ratios(run):
    """{kernel: [(label, vs_triton, vs_torch, check)]} of the plain
    sparsetile rows, kernels in KERNEL_ORDER (others after), shapes in run
    order; a ratio whose other side was not timed is NaN (not drawn)."""
    out = {}
    for r in run["rows"]:
        if r.get("impl") != "sparsetile" or "ms" not in r:
            continue
        nan = float("nan")
        out.setdefault(r["kernel"], []).append(
            (label(r["kernel"], r["shape"]),
             nan if r.get("vs_triton") is None else r["vs_triton"],
             nan if r.get("vs_torch") is None else r["vs_torch"],
             r.get("check")))
    order = [k for k in KERNEL_ORDER if k in out]
    order += sorted(k for k in out if k not in KERNEL_ORDER)
    return {k: out[k] for k in order}


def out_path(run, out_dir):
    rev = str(run.get("revision", "unknown")).replace("/", "_")
    return os.path.join(out_dir, "parity_%s.png" % rev)


def draw(run, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
    times = FuncFormatter(lambda v, _: "%.2gx" % v)
    data = ratios(run)
    if not data:
        raise SystemExit("plot.py: the JSON has no timed sparsetile rows")
    cols = min(4, len(data))
    nrows = (len(data) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.4 * nrows),
                             squeeze=False)
    for ax, (kernel, pts) in zip(axes.flat, data.items()):
        xs = range(len(pts))
        ax.plot(xs, [p[1] for p in pts], "o-", label="vs Triton")
        ax.plot(xs, [p[2] for p in pts], "s--", label="vs torch")
        for x, p in zip(xs, pts):
            if p[3] == "fail":
                ax.plot([x], [p[1]], "x", color="red", ms=10)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.axhline(0.95, color="red", lw=0.8, ls=":", label="0.95x")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(times)
        ax.yaxis.set_minor_formatter(times)
        ax.tick_params(axis="y", which="both", labelsize=7)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([p[0] for p in pts], rotation=60, fontsize=7)
        ax.set_title(kernel + (" (x: check failed)" if any(
            p[3] == "fail" for p in pts) else ""), fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(data):]:
        ax.axis("off")
    fig.suptitle("sparsetile speed / Triton and / torch (above 1: faster); "
                 "rev %s, %s, %s%s" % (
                     run.get("revision", "?"), run.get("gpu", "?"),
                     run.get("date", "?"),
                     ", " + run["mode"] if run.get("mode") else ""),
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1]) as f:
        run = json.load(f)
    out_dir = argv[2] if len(argv) == 3 else os.path.dirname(
        os.path.abspath(argv[1]))
    print(draw(run, out_path(run, out_dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
