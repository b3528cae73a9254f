"""Plots one GPU run of the SparseDrop and 2:4 benches from their JSON files
(scripts/gpu_run.sh runs each bench with --json and packs the files into
logs.tar.gz).

Usage: python3 bench/plot.py RUN_DIR [--out DIR]
  RUN_DIR   holds the JSON files (anywhere below it) or the .tar.gz files
            they are packed in; each file names its bench inside
            ("sparsedrop", "torch_sparsedrop", "sparse24", "torch_sparse24")
  --out     write the PNGs to DIR instead of bench/sparsedrop/ and
            bench/sparse24/

Draws
  bench/sparsedrop/sparsedrop_N<N>.png  one per N: for fwd, dX and dW, time
      against p (top) and speed-up over cuBLAS against p (bottom), with
      cuBLAS dense (a horizontal line), Triton's block-skipping forward, and
      the ideal: cuBLAS's time scaled by 1 - p, i.e. a 1 / (1 - p) speed-up.
      Points sit at the dropped fraction each mask really had (p_actual).
  bench/sparse24/sparse24_gemm.png  the 2:4 GEMMs' speed-up over cuBLAS dense
      (on the pruned weight), sparsetile's default tiling beside cuSPARSELt,
      and clocks24.py's same-process figure where the run has one.
and prints, as markdown, the dense GEMM comparison (sparsetile's
matmul_blocks, best tiling, against cuBLAS). Where the run has clocks_p.py's
JSON (CLOCKS=1), its same-process ratios join the table and the speed-up
plots: the other figures compare two processes run minutes apart. Without matplotlib it prints the
table, says so and exits 0.
"""
import argparse
import json
import os
import sys
import tarfile

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    plt = None

HERE = os.path.dirname(os.path.abspath(__file__))


def load_run(run_dir):
    """{bench name: parsed JSON} from the .json files and tarballs below run_dir."""
    found = {}

    def add(name, text):
        try:
            data = json.loads(text)
        except ValueError as e:
            print(f"plot: skipping {name}: {e}", file=sys.stderr)
            return
        bench = data.get("bench") if isinstance(data, dict) else None
        if not bench or "rows" not in data:
            return  # Some other JSON file.
        if bench in found:
            print(f"plot: {name}: a second '{bench}' file, ignored", file=sys.stderr)
            return
        if data.get("skipped"):
            print(f"plot: {bench} was skipped: {data['skipped']}", file=sys.stderr)
        data["_run"] = os.path.basename(os.path.abspath(run_dir))
        found[bench] = data

    for root, _, files in os.walk(run_dir):
        for f in sorted(files):
            path = os.path.join(root, f)
            if f.endswith(".json"):
                with open(path) as fh:
                    add(path, fh.read())
            elif f.endswith((".tar.gz", ".tgz")):
                with tarfile.open(path) as tar:
                    for m in tar.getmembers():
                        if m.isfile() and m.name.endswith(".json"):
                            add(f"{path}:{m.name}", tar.extractfile(m).read())
    return found


def rows(run, bench, **match):
    """The rows of `bench` whose fields equal `match`."""
    return [r for r in run.get(bench, {}).get("rows", [])
            if all(r.get(k) == v for k, v in match.items())]


def check_devices(run, a, b):
    da, db = run.get(a, {}).get("device"), run.get(b, {}).get("device")
    if da and db and da != db:
        print(f"plot: WARNING: {a} ran on {da}, {b} on {db}; "
              "their ratios mean little", file=sys.stderr)


def dense_gemm_table(run):
    """Markdown: sparsetile's best matmul_blocks tiling against cuBLAS, and
    where clocks_p.py ran with --dense, the two in one process (the fair
    figure: the bench processes run minutes apart, at different clocks)."""
    ours = rows(run, "sparsedrop", kernel="gemm")
    if not ours:
        return
    check_devices(run, "sparsedrop", "torch_sparsedrop")
    print("| M | N | K | sparsetile tiles | sparsetile ms | TFLOP/s | "
          "cuBLAS ms | TFLOP/s | sparsetile / cuBLAS (two processes) | "
          "same process, sustained (clocks_p) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    shapes = sorted({(r["M"], r["N"], r["K"]) for r in ours})
    for m, n, k in shapes:
        mine = [r for r in ours if (r["M"], r["N"], r["K"]) == (m, n, k)
                and r.get("correct", True) and r.get("ms")]
        if not mine:
            print(f"| {m} | {n} | {k} | (no correct run) | | | | | |")
            continue
        best = min(mine, key=lambda r: r["ms"])
        ref = rows(run, "torch_sparsedrop", kernel="gemm", M=m, N=n, K=k)
        cu = f"| {ref[0]['ms']:.3f} | {ref[0]['tflops']:.1f} | " \
             f"{ref[0]['ms'] / best['ms']:.2f}x |" if ref else "| | | |"
        same = rows(run, "clocks_p", table="dense", impl="matmul_store_block",
                    M=m, N=n, K=k)
        same = f" {same[0]['vs_cublas']:.2f}x |" if same else " |"
        print(f"| {m} | {n} | {k} | {best['tiling']} | {best['ms']:.3f} | "
              f"{best['tflops']:.1f} {cu}{same}")
    print()


def sparsedrop_plots(run, out_dir):
    ours = rows(run, "sparsedrop", table="sweep")
    if not ours:
        print("plot: no sparsedrop sweep rows; no SparseDrop plots", file=sys.stderr)
        return []
    check_devices(run, "sparsedrop", "torch_sparsedrop")
    written = []
    for n, k, m in sorted({(r["N"], r["K"], r["M"]) for r in ours}):
        fig, axes = plt.subplots(2, 3, figsize=(15, 8.5), squeeze=False)
        for col, kernel in enumerate(["fwd", "dX", "dW"]):
            top, bottom = axes[0][col], axes[1][col]
            pts = sorted((r.get("p_actual", r["p"]), r["ms"]) for r in ours
                         if r["kernel"] == kernel and r["N"] == n and r["K"] == k)
            cublas = rows(run, "torch_sparsedrop", kernel=kernel, impl="cuBLAS",
                          M=m, N=n, K=k)
            triton = sorted((r.get("p_actual", r["p"]), r["ms"]) for r in
                            rows(run, "torch_sparsedrop", kernel=kernel,
                                 impl="Triton block-skip", M=m, N=n, K=k))
            ps = [p for p, _ in pts + triton]
            pmax = max(ps) if ps else 0.9
            curve = [pmax * i / 50 for i in range(51)]
            top.plot(*zip(*pts), "o-", label="sparsetile")
            if triton:
                top.plot(*zip(*triton), "s--", label="Triton block-skip")
            if cublas:
                base = cublas[0]["ms"]
                top.axhline(base, color="k", lw=1, label="cuBLAS dense")
                top.plot(curve, [base * (1 - p) for p in curve], ":", color="gray",
                         label="ideal: cuBLAS x (1 - p)")
                bottom.plot([p for p, _ in pts], [base / t for _, t in pts], "o-",
                            label="sparsetile")
                if triton:
                    bottom.plot([p for p, _ in triton], [base / t for _, t in triton],
                                "s--", label="Triton block-skip")
                same = sorted((r["p"], r["vs_cublas"]) for r in
                              rows(run, "clocks_p", table="sparsedrop",
                                   impl="sparsetile", kernel=kernel, M=m, N=n,
                                   K=k))
                if same:
                    bottom.plot(*zip(*same), "x", ms=9, mew=2, color="tab:red",
                                label="sparsetile, same process as cuBLAS, "
                                      "sustained (clocks_p)")
                bottom.axhline(1.0, color="k", lw=1, label="cuBLAS dense")
                bottom.plot(curve, [1 / (1 - p) for p in curve], ":", color="gray",
                            label="ideal 1 / (1 - p)")
                bottom.legend(fontsize=8)
            else:
                bottom.text(0.5, 0.5, "no cuBLAS figure in this run",
                            ha="center", transform=bottom.transAxes)
            top.set_title(f"{kernel}: M {m}, N {n}, K {k}")
            top.set_ylabel("ms")
            top.set_ylim(bottom=0)
            top.legend(fontsize=8)
            bottom.set_xlabel("p (dropped fraction of 128 x 128 blocks)")
            bottom.set_ylabel("speed-up over cuBLAS dense")
            bottom.set_ylim(bottom=0)
            for ax in (top, bottom):
                ax.grid(alpha=0.3)
        dev = run["sparsedrop"].get("device") or "unknown device"
        fig.suptitle(f"SparseDrop GEMMs, bf16, {dev}")
        fig.tight_layout()
        path = os.path.join(out_dir or os.path.join(HERE, "sparsedrop"),
                            f"sparsedrop_N{n}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def sparse24_plot(run, out_dir):
    ours = rows(run, "sparse24", table="gemm", tiling="default")
    if not ours:
        print("plot: no sparse24 GEMM rows; no 2:4 plot", file=sys.stderr)
        return []
    check_devices(run, "sparse24", "torch_sparse24")
    labels, mine, lt, same = [], [], [], []
    for r in ours:
        if r["kernel"] not in ("fwd", "dX"):
            continue
        shape = dict(kernel=r["kernel"], M=r["M"], R=r["R"], C=r["C"])
        cublas = rows(run, "torch_sparse24", impl="cuBLAS", **shape)
        if not cublas:
            print(f"plot: no cuBLAS row for {shape}", file=sys.stderr)
            continue
        base = cublas[0]["ms"]
        other = rows(run, "torch_sparse24", impl="cuSPARSELt", **shape)
        name = "Y = X W^T" if r["kernel"] == "fwd" else "dX = dY W"
        labels.append(f"{name}\nW {r['R']} x {r['C']}")
        mine.append(base / r["ms"])
        lt.append(base / other[0]["ms"] if other else None)
        one = rows(run, "clocks24", impl="sparsetile", **shape)
        same.append(one[0]["vs_cublas"] if one else None)
    if not labels:
        return []
    fig, ax = plt.subplots(figsize=(9, 5))
    x = range(len(labels))
    bars = [(mine, "sparsetile (default tiles), cuBLAS in another process"),
            (lt, "cuSPARSELt, cuBLAS in another process")]
    if any(v is not None for v in same):
        bars.append((same, "sparsetile, same process as cuBLAS (clocks24)"))
    w = 0.8 / len(bars)
    for j, (vals, name) in enumerate(bars):
        off = (j - (len(bars) - 1) / 2) * w
        have = [i for i in x if vals[i] is not None]  # No bar where not measured.
        drawn = ax.bar([i + off for i in have], [vals[i] for i in have], w,
                       label=name)
        ax.bar_label(drawn, fmt="%.2fx", fontsize=8)
    ax.axhline(1.0, color="k", lw=1, label="cuBLAS dense")
    ax.axhline(2.0, color="gray", ls=":", label="ideal 2x (half the products)")
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("speed-up over cuBLAS dense (pruned W)")
    ax.set_ylim(0, max([2.2] + [1.1 * v for v in mine + lt + same if v]))
    dev = run["sparse24"].get("device") or "unknown device"
    # Name the run: the JSON carries no revision, so the run directory's name
    # (gpu_run.sh's OUT, or what the caller unpacked it as) stands for it.
    ax.set_title(f"2:4 sparse GEMMs, bf16, M {ours[0]['M']}, {dev}\n"
                 f"run: {run['sparse24'].get('_run', '?')}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out_dir or os.path.join(HERE, "sparse24"),
                        "sparse24_gemm.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", help="directory with one run's JSON files")
    ap.add_argument("--out", help="write the PNGs here instead")
    args = ap.parse_args()
    run = load_run(args.run_dir)
    if not run:
        print(f"plot: no bench JSON files under {args.run_dir}", file=sys.stderr)
        return 1
    print("found: " + ", ".join(sorted(run)) + "\n")
    dense_gemm_table(run)
    if plt is None:
        print("plot: matplotlib is not installed (apt-get install "
              "python3-matplotlib); no plots drawn")
        return 0
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    for path in sparsedrop_plots(run, args.out) + sparse24_plot(run, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
