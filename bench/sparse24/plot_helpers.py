#!/usr/bin/env python3
"""Draws helpers.png: the 2:4 helper kernels' effective bandwidth (bytes read
+ written over time) as a share of the 1 GiB copy measured in the same run,
at W 16384 x 4096 and 4096 x 4096, with issue 13's 80% line. The grey tick
over each bar is what a device-to-device copy of the same bytes reaches at
that size, also as a share of the 1 GiB copy: at 4096 x 4096 a copy itself
falls to 78-91% (launch and tail), so a 3-byte-per-entry helper would have
to beat a copy to meet 80% there (bench/NOTES.md, "Block rows in one load,
..."). The black tick, where data/size_floor_<commit>.json exists, is the
floor for the helper's byte mix: the better of the fastest of 30 streaming
kernels and a memcpy of those bytes (size_floor_probe.cu; bench/NOTES.md,
"What any kernel reaches at 4096 x 4096"). Reads the rows
sparsetile_sparse24_bench --json wrote, data/bandwidth_<commit>.json (its
printed table beside it as .md; H100; bench/sparse24/RESULTS.md, "Run at
182486d"). Needs Debian's python3-matplotlib.
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
# Each helper's byte mix in the floor probe: (bytes read, bytes written) an
# entry, rounded as size_floor_probe.cu rounds them.
MIX = {"transposable mask": (2, 1), "row-wise mask": (2, 1), "mvue24": (2, 2),
       "masked decay": (5, 2), "compress24 (W and W^T)": (3, 2),
       "mask update (mask, W*mask, both operands)": (2, 5),
       "fused MVUE + compress (dY^T)": (2, 1)}


def rows(path):
    """{(op, R, C): (% of copy, % of same-size copy)} from the bench's JSON."""
    with open(path) as f:
        data = json.load(f)
    return {(r["op"], r["R"], r["C"]): (r["pct_of_copy"], r["pct_of_same_size_copy"])
            for r in (data["rows"] if isinstance(data, dict) else data)
            if r.get("table") == "bandwidth" and "R" in r}


def floors(path):
    """{(rb, wb, R, C): floor as % of the 1 GiB copy} from the probe's JSON
    line, or {} when the run has none."""
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        data = json.load(f)
    out = {}
    for m in data["mixes"]:
        bytes_ = m["R"] * m["C"] * (m["rb"] + m["wb"])
        memcpy = 100 * bytes_ / (m["memcpy_ms"] * 1e-3) / 1e12 / data["copy_tbs"]
        out[(m["rb"], m["wb"], m["R"], m["C"])] = max(memcpy, m["best_pct_copy"])
    return out


def main():
    commit = sys.argv[1] if len(sys.argv) > 1 else "182486d"
    table = rows(os.path.join(HERE, "data", f"bandwidth_{commit}.json"))
    floor = floors(os.path.join(HERE, "data", f"size_floor_{commit}.json"))
    shapes = [(16384, 4096), (4096, 4096)]
    fig, ax = plt.subplots(figsize=(11, 5.2))
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
            f = floor.get(MIX[op] + (R, C))
            if f is not None:
                ax.plot([x - width / 2, x + width / 2], [f] * 2, color="black",
                        linewidth=2,
                        label="the floor for its bytes (probe)"
                        if i == 0 and j == 0 else None)
    ax.axhline(80, color="black", linestyle="--", linewidth=0.8,
               label="issue 13: 80% of copy")
    ax.set_xticks(range(len(HELPERS)))
    ax.set_xticklabels([label for _, label in HELPERS], fontsize=8)
    ax.set_ylim(0, 115)
    ax.set_ylabel("% of the 1 GiB copy's bandwidth (3.0 TB/s)")
    ax.set_title(f"2:4 helpers at {commit}, bf16, H100, one run "
                 "(CUDA events, L2 flushed, medians of 50)", fontsize=10)
    # Below the axes: inside, it covered the bars.
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16),
              ncol=4)
    save(fig, "helpers.png")


if __name__ == "__main__":
    main()
