#!/usr/bin/env python3
"""Draws step_dw.png: the 2:4 layer GEMMs (Y, dX, dW with a bf16 out) and the
whole layer step (bf16 dW, as the dense step's) against cuBLAS in one
process (clocks24.py), at both layer shapes, before and after the
metadata layout blocked by K steps of 128 (5752360: row-major metadata;
bdee950: blocked). Reads the runs' tables under data/
(clocks24_<commit>_run<N>.md, the markdown clocks24.py prints; H100,
bench/NOTES.md, "dW in the operands' dtype" and "The metadata blocked by K
steps of 128"). Each bar is the median of a commit's runs, the ticks the
runs themselves; the dashed line is issue 13's 1.3x target for the step.
Needs Debian's python3-matplotlib.
Usage: /usr/bin/python3 bench/sparse24/plot_step.py
"""
import glob
import os
import re
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_variants import save  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def tables(path):
    """{(R, C): {(gemm, what): vs cuBLAS}} from one clocks24.py output."""
    out, shape = {}, None
    with open(path) as f:
        for line in f:
            m = re.search(r"W \[(\d+), (\d+)\]", line)
            if m:
                shape = (int(m.group(1)), int(m.group(2)))
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if shape and len(cells) == 8 and cells[4].endswith("x"):
                out.setdefault(shape, {})[(cells[0], cells[1])] = \
                    float(cells[4][:-1])
    return out


def main():
    commits = [("5752360", "row-major metadata (5752360)"),
               ("bdee950", "metadata blocked by K steps of 128 (bdee950)")]
    runs = {c: [tables(p) for p in sorted(glob.glob(os.path.join(
        HERE, "data", f"clocks24_{c}_run*.md")))] for c, _ in commits}
    items = [("Y", "sparsetile"), ("dX", "sparsetile"),
             ("dW", "sparsetile, bf16 out"), ("step", "sparsetile, dW bf16")]
    shapes = sorted(runs[commits[0][0]][0])
    groups = [(shape, item) for shape in shapes for item in items]
    fig, ax = plt.subplots(figsize=(12, 4.8))
    width = 0.8 / len(commits)
    for i, (commit, name) in enumerate(commits):
        for j, (shape, (gemm, what)) in enumerate(groups):
            vals = [r[shape][(gemm, what)] for r in runs[commit]]
            x = j + (i - (len(commits) - 1) / 2) * width
            ax.bar(x, statistics.median(vals), width, color=f"C{i}",
                   label=name if j == 0 else None)
            ax.plot([x] * len(vals), vals, "k_", markersize=8)
            ax.text(x, max(vals) + 0.01, f"{statistics.median(vals):.2f}",
                    ha="center", fontsize=7)
    ax.axhline(1.0, color="black", linewidth=0.8, label="cuBLAS dense")
    ax.axhline(1.3, color="gray", linestyle="--", linewidth=0.8,
               label="issue 13: step >= 1.3x")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{g}\nW {r} x {c}" for (r, c), (g, _) in groups],
                       fontsize=8)
    ax.set_ylim(0.9, 1.6)
    ax.set_ylabel("cuBLAS time / sparsetile time (higher is better)")
    ax.set_title("2:4 layer GEMMs and the whole step vs cuBLAS, one process, "
                 "M 16384, H100 (bar = median of the runs, ticks = runs)",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    save(fig, "step_dw.png")


if __name__ == "__main__":
    main()
