#!/usr/bin/env python3
"""Draws gemm_variants.png: the 2:4 layer GEMMs at the variants tried on
branches wide-tiles (192-column tiles) and persistent-cluster-24 (persistent
2-program clusters), each as its time over the default's (256 x 128,
persistent tile queue) in the same run. Reads the two runs' JSON under
data/ (sparsetile_sparse24_bench --tables tiles / --tables cluster, H100;
bench/NOTES.md, "Tiles of 192 columns for the 2:4 GEMMs" and "Persistent
2-program clusters on the 2:4 GEMMs"). Needs Debian's python3-matplotlib.
Usage: /usr/bin/python3 bench/sparse24/plot_variants.py
"""
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def rows(name, table):
    with open(os.path.join(HERE, "data", name)) as f:
        return [r for r in json.load(f)["rows"] if r.get("table") == table]


def relative(rs, default):
    """{(op, R, C): {tiling: ms / default ms}} for one run."""
    base = {(r["op"], r["R"], r["C"]): r["ms"] for r in rs if r["tiling"] == default}
    out = {}
    for r in rs:
        key = (r["op"], r["R"], r["C"])
        out.setdefault(key, {})[r["tiling"]] = r["ms"] / base[key]
    return out


def main():
    tiles = relative(rows("tiles_wide-tiles_54e69f1.json", "tiles"),
                     "256x128 (default)")
    cluster = relative(rows("cluster_persistent-cluster-24_1d1e9ee.json",
                            "cluster"), "256x128 persistent (default)")
    series = [
        ("256 x 192, BK 64 (4 stages)", tiles, "256x192, BK 64"),
        ("256 x 192, BK 128 (2 stages)", tiles, "256x192"),
        ("256 x 128, persistent clusters of 2", cluster,
         "256x128 persistent, cluster 2"),
    ]
    keys = [k for k in tiles if k in cluster]
    labels = [f"{op}\nW {r} x {c}" for op, r, c in keys]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(series)
    for i, (name, data, tiling) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(keys))]
        ax.bar(xs, [data[k][tiling] for k in keys], width, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("time / default (256 x 128, tile queue)")
    ax.set_title("2:4 layer GEMMs (M 16384, bf16), H100: variants against the "
                 "default in the same run (lower is better)", fontsize=10)
    ax.set_ylim(0, 2.1)
    ax.legend(fontsize=8, loc="upper left", ncol=3)
    save(fig, "gemm_variants.png")


def save(fig, name):
    """Writes `fig` as `name` beside RESULTS.md (plot_step.py uses it too)."""
    fig.tight_layout()
    out = os.path.join(HERE, name)
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
