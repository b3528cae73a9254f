#!/usr/bin/env python3
"""Draws helpers.png: the 2:4 helper kernels' effective bandwidth (bytes read
+ written over time) as a share of the 1 GiB copy measured in the same run,
at W 16384 x 4096 and 4096 x 4096, with issue 13's 80% line. The grey tick
over each bar is what a device-to-device copy of the same bytes reaches at
that size, also as a share of the 1 GiB copy: at 4096 x 4096 a copy itself
falls to 78-91% (launch and tail), so a 3-byte-per-entry helper would have
to beat a copy to meet 80% there (bench/NOTES.md, "Block rows in one load,
..."). Reads the rows sparsetile_sparse24_bench --json wrote,
data/bandwidth_<commit>.json (its printed table beside it as .md; H100;
bench/sparse24/RESULTS.md, "Run at f361851"). Needs Debian's
python3-matplotlib.
Usage: /usr/bin/python3 bench/sparse24/plot_helpers.py [COMMIT]
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from plot_variants import save  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HELPERS = [("transposable mask", "transposable\nmask"),
           ("row-wise mask", "row-wise\nmask"),
           ("mvue24", "mvue24"),
           ("masked decay", "masked\ndecay"),
           ("compress24 (W and W^T)", "compress24"),
           ("mask update (mask, W*mask, both operands)", "mask\nupdate"),
           ("fused MVUE + compress (dY^T)", "fused MVUE\n+ compress")]


def rows(path):
    """{(op, R, C): (% of copy, % of same-size copy)} from the bench's JSON."""
    with open(path) as f:
        data = json.load(f)
    return {(r["op"], r["R"], r["C"]): (r["pct_of_copy"], r["pct_of_same_size_copy"])
            for r in (data["rows"] if isinstance(data, dict) else data)
            if r.get("table") == "bandwidth" and "R" in r}


def main():
    commit = sys.argv[1] if len(sys.argv) > 1 else "f361851"
    table = rows(os.path.join(HERE, "data", f"bandwidth_{commit}.json"))
    shapes = [(16384, 4096), (4096, 4096)]
    fig, ax = plt.subplots(figsize=(11, 4.6))
    width = 0.38
    for i, (R, C) in enumerate(shapes):
        for j, (op, label) in enumerate(HELPERS):
            pct, same = table[(op, R, C)]
            x = j + (i - 0.5) * width
            ax.bar(x, pct, width, color=f"C{i}",
                   label=f"W {R} x {C}" if j == 0 else None)
            ax.text(x, pct + 1, f"{pct:.1f}", ha="center", fontsize=7)
            # The same-size copy's own share of the 1 GiB copy.
            ax.plot([x - width / 2, x + width / 2], [100 * pct / same] * 2,
                    color="gray", linewidth=2,
                    label="a copy of the same bytes" if i == 0 and j == 0 else None)
    ax.axhline(80, color="black", linestyle="--", linewidth=0.8,
               label="issue 13: 80% of copy")
    ax.set_xticks(range(len(HELPERS)))
    ax.set_xticklabels([label for _, label in HELPERS], fontsize=8)
    ax.set_ylim(0, 115)
    ax.set_ylabel("% of the 1 GiB copy's bandwidth (3.0 TB/s)")
    ax.set_title(f"2:4 helpers at {commit}, bf16, H100, one run "
                 "(CUDA events, L2 flushed, medians of 50)", fontsize=10)
    ax.legend(fontsize=8, loc="lower left", ncol=4)
    save(fig, "helpers.png")


if __name__ == "__main__":
    main()
