#!/usr/bin/env python3
"""Draws step_dw.png: the 2:4 layer step and its dW GEMM against cuBLAS in
one process (clocks24.py), dW stored as f32 or bf16, at both layer shapes.
Reads the three runs' tables under data/ (clocks24_<commit>_run<N>.md, the
markdown clocks24.py prints; H100, bench/NOTES.md, "dW in the operands'
dtype"). Each bar is the median of the runs, the ticks the runs
themselves; the dashed line is issue 13's 1.3x target for the step.
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
    runs = [tables(p) for p in
            sorted(glob.glob(os.path.join(HERE, "data", "clocks24_*_run*.md")))]
    series = [("dW", "sparsetile, f32 out", "dW, f32 out"),
              ("dW", "sparsetile, bf16 out", "dW, bf16 out"),
              ("step", "sparsetile, dW f32", "step, dW f32"),
              ("step", "sparsetile, dW bf16", "step, dW bf16")]
    shapes = sorted(runs[0])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    width = 0.8 / len(series)
    for i, (gemm, what, name) in enumerate(series):
        for j, shape in enumerate(shapes):
            vals = [r[shape][(gemm, what)] for r in runs]
            x = j + (i - (len(series) - 1) / 2) * width
            ax.bar(x, statistics.median(vals), width,
                   color=f"C{i}", label=name if j == 0 else None)
            ax.plot([x] * len(vals), vals, "k_", markersize=10)
            ax.text(x, max(vals) + 0.01, f"{statistics.median(vals):.2f}x",
                    ha="center", fontsize=8)
    ax.axhline(1.0, color="black", linewidth=0.8, label="cuBLAS dense")
    ax.axhline(1.3, color="gray", linestyle="--", linewidth=0.8,
               label="issue 13: step >= 1.3x")
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels([f"W {r} x {c}, M 16384" for r, c in shapes])
    ax.set_ylim(0.9, 1.5)
    ax.set_ylabel("cuBLAS time / sparsetile time (higher is better)")
    ax.set_title("2:4 dW GEMM and whole layer step vs cuBLAS, one process, "
                 f"H100 ({len(runs)} runs: bar = median, ticks = runs)",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    save(fig, "step_dw.png")


if __name__ == "__main__":
    main()
