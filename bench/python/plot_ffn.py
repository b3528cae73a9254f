"""Draws ffn_bench.py's JSON: the sparse layers' speed-up over their dense
baselines, eager and as CUDA graphs. Run on the build machine with Debian's
python3-matplotlib:

    /usr/bin/python3 bench/python/plot_ffn.py bench/python/data/ffn_<run>.json \\
        bench/python/ffn_<run>.png
"""
import json
import os
import sys


def main(path, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(path) as f:
        run = json.load(f)
    rows = run["rows"]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5.5))
    for wg, marker in (("dense", "o"), ("mvue", "s")):
        for mode, style in (("eager", "--"), ("graph", "-")):
            pts = [(r["d"], r["speedup"]) for r in rows
                   if r["what"].startswith("2:4 FFN pair") and
                   r.get("weight_grad") == wg and r["mode"] == mode]
            if pts:
                ax.plot(*zip(*pts), style, marker=marker,
                        label="dW %s, %s" % (wg, mode))
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.axhline(1.3, color="red", lw=0.8, ls=":", label="target 1.3x")
    ax.set_xlabel("d (fc d -> 4d, proj 4d -> d; 16384 tokens)")
    ax.set_ylabel("speed-up over nn.Linear (step incl. SGD)")
    ax.set_title("2:4 FFN pair (Sparse24Linear)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    # One line per shape, mode and token count (a run may time several).
    drop = [r for r in rows if r["what"].startswith("SparseDropLinear")]
    counts = sorted({r["tokens"] for r in drop})
    markers = dict(zip(counts, "o^sv"))
    for (k, n), color in (((1024, 4096), "C0"), ((4096, 1024), "C1")):
        for mode, style in (("eager", "--"), ("graph", "-")):
            for t in counts:
                pts = [(r["p"], r["speedup"]) for r in drop
                       if r["d"] == k and r.get("n") == n and
                       r["mode"] == mode and r["tokens"] == t]
                if pts:
                    bx.plot(*zip(*pts), style, marker=markers[t],
                            color=color, label="%d -> %d, %s%s" % (
                                k, n, mode, ", %d tokens" % t
                                if len(counts) > 1 else ""))
    bx.axhline(1.0, color="grey", lw=0.8)
    bx.set_xlabel("p (%s tokens)" % " and ".join(str(t) for t in counts))
    bx.set_ylabel("speed-up over F.dropout + nn.Linear (fwd + bwd)")
    bx.set_title("SparseDropLinear")
    bx.grid(alpha=0.3)
    # Below the axes: eight lines leave no free corner inside them.
    bx.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))
    fig.suptitle("bench/python/ffn_bench.py, %s, run %s" % (
        run.get("device", "?"), os.path.basename(path)), fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
