"""Results of examples/train_gpt.py: table, plot and pairwise comparison.

Needs no torch (only the standard library, and matplotlib for the PNG), so it
runs on any machine with the JSON files a GPU run wrote. train_gpt.py imports
it to write the same files at the end of a run.

Usage:
  python3 examples/plot_train.py DIR            # DIR/results.md + DIR/val_loss.png
  python3 examples/plot_train.py --compare A.json B.json [--tol 0.03]

The table compares each run with the `dense` run of the same number of GPUs
found in DIR. --compare prints both validation curves side by side and exits 1
when the final validation losses differ by more than --tol (relative).
"""
import argparse
import glob
import json
import os
import sys

VARIANTS = ("dense", "dense_dropout", "sparsedrop", "sparsedrop_ref", "sparse24",
            "sparse24_fused")


def run_label(run):
    """'sparse24' for one GPU, 'sparse24_ddp2' for two: the name in train_<label>.json."""
    ws = run.get("world_size", 1)
    return run["variant"] + (f"_ddp{ws}" if ws > 1 else "")


def load_runs(run_dir):
    """The parsed train_*.json files of run_dir, in variant order, 1 GPU before DDP."""
    runs = []
    for path in sorted(glob.glob(os.path.join(run_dir, "train_*.json"))):
        try:
            with open(path) as f:
                run = json.load(f)
            run["variant"], run["val"]  # the two keys everything below needs
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"plot_train: skipping {path}: {e!r}", file=sys.stderr)
            continue
        run["_path"] = path
        runs.append(run)

    def order(run):
        v = run["variant"]
        return (run.get("world_size", 1), VARIANTS.index(v) if v in VARIANTS else len(VARIANTS), v)

    return sorted(runs, key=order)


def _fmt(x, spec):
    return "—" if x is None else format(x, spec)


def results_table(runs):
    """Markdown table: one row per run, Δ and speed-up against dense at the same world size."""
    dense = {r.get("world_size", 1): r for r in runs if r["variant"] == "dense"}
    drop = {r.get("world_size", 1): r for r in runs if r["variant"] == "dense_dropout"}
    lines = [
        "| run | GPUs | final val loss | Δ vs dense | median step ms | mean step ms | tokens/s "
        "| speed-up vs dense | speed-up vs dense_dropout |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        base = dense.get(r.get("world_size", 1))
        loss, ms = r.get("final_val_loss"), r.get("median_step_ms")
        delta = speedup = None
        if base is not None and loss is not None and base.get("final_val_loss"):
            delta = 100.0 * (loss - base["final_val_loss"]) / base["final_val_loss"]
        if base is not None and ms and base.get("median_step_ms"):
            speedup = base["median_step_ms"] / ms
        dbase = drop.get(r.get("world_size", 1))
        vs_drop = dbase["median_step_ms"] / ms if dbase is not None and ms and \
            dbase.get("median_step_ms") else None
        lines.append(
            f"| {run_label(r)} | {r.get('world_size', 1)} | {_fmt(loss, '.4f')} "
            f"| {_fmt(delta, '+.2f')}{'%' if delta is not None else ''} | {_fmt(ms, '.2f')} "
            f"| {_fmt(r.get('mean_step_ms'), '.2f')} | {_fmt(r.get('tokens_per_s'), ',.0f')} "
            f"| {_fmt(speedup, '.3f')}{'x' if speedup is not None else ''} "
            f"| {_fmt(vs_drop, '.3f')}{'x' if vs_drop is not None else ''} |"
        )
    return "\n".join(lines)


def write_results_md(runs, path):
    first = runs[0] if runs else {}
    args = first.get("args", {})
    with open(path, "w") as f:
        f.write("# examples/train_gpt.py results\n\n")
        if first:
            f.write(
                f"Device: {first.get('device', '?')}; torch {first.get('torch', '?')}, "
                f"CUDA {first.get('cuda', '?')}; git {first.get('git', '?')}.\n"
                f"Model: d={args.get('d_model')}, FFN {args.get('d_ff')}, {args.get('layers')} layers, "
                f"{args.get('heads')} heads, context {args.get('ctx')}, global batch {args.get('batch')} "
                f"sequences, {args.get('steps')} steps. Step times (median, mean) exclude the first "
                f"{args.get('timing_skip')} steps; tokens/s and the speed-ups are from the median.\n"
            )
            dense_ft = [f"{run_label(r)} from step {r['dense_from_step']}" for r in runs
                        if r.get("dense_from_step") is not None]
            if dense_ft:
                f.write("Dense fine-tuning (the 2:4 layers with their whole W; in the mean step "
                        "time, not in the median): " + ", ".join(dense_ft) + ".\n")
            f.write("\n")
        f.write(results_table(runs) + "\n")


def plot(runs, path):
    """Validation loss against step for every run; returns False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [2, 1]})
    colors = {}  # one colour per variant, in both panels and for 1 GPU and DDP alike
    for r in runs:
        # Step 0 (the untrained model, the same for every run) would set the scale and hide
        # the differences between the curves.
        val = [v for v in r["val"] if v["step"] > 0] or r["val"]
        steps = [v["step"] for v in val]
        losses = [v["loss"] for v in val]
        style = "--" if r.get("world_size", 1) > 1 else "-"
        (line,) = ax.plot(steps, losses, style, marker="o", ms=3, label=run_label(r),
                          color=colors.get(r["variant"]))
        colors[r["variant"]] = line.get_color()
    ax.set_xlabel("step")
    ax.set_ylabel("validation loss (nats/byte)")
    ax.set_title("Validation loss")
    ax.grid(alpha=0.3)
    ax.legend()
    # Throughput beside the curves: the point of the sparse layers is the same
    # loss in less time, so both belong in one picture.
    timed = [r for r in runs if r.get("tokens_per_s")]
    bx.barh([run_label(r) for r in timed], [r["tokens_per_s"] / 1e3 for r in timed],
            color=[colors[r["variant"]] for r in timed])
    bx.invert_yaxis()
    bx.set_xlabel("k tokens/s (median step)")
    bx.set_title("Throughput")
    bx.grid(alpha=0.3, axis="x")
    first = runs[0]
    a = first.get("args", {})
    fig.suptitle(f"train_gpt.py d={a.get('d_model')} F={a.get('d_ff')}, {a.get('steps')} steps, "
                 f"{'CUDA graph' if first.get('cuda_graph') else 'eager'}; "
                 f"{first.get('device', '?')}, git {first.get('git', '?')}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_all(run_dir):
    """results.md and val_loss.png for every run in run_dir; returns the table text."""
    runs = load_runs(run_dir)
    if not runs:
        print(f"plot_train: no train_*.json in {run_dir}", file=sys.stderr)
        return ""
    write_results_md(runs, os.path.join(run_dir, "results.md"))
    png = os.path.join(run_dir, "val_loss.png")
    if plot(runs, png):
        print(f"wrote {png}")
    else:
        print("matplotlib is not importable: no PNG (run examples/plot_train.py DIR elsewhere)")
    print(f"wrote {os.path.join(run_dir, 'results.md')}")
    return results_table(runs)


def compare(path_a, path_b, tol):
    """Prints both validation curves; 0 if the final losses agree within tol (relative), else 1."""
    with open(path_a) as f:
        a = json.load(f)
    with open(path_b) as f:
        b = json.load(f)
    va = {v["step"]: v["loss"] for v in a["val"]}
    vb = {v["step"]: v["loss"] for v in b["val"]}
    la, lb = run_label(a), run_label(b)
    print(f"{'step':>6} {la:>16} {lb:>16} {'rel diff':>9}")
    worst = 0.0
    for s in sorted(set(va) & set(vb)):
        rel = (vb[s] - va[s]) / va[s]
        worst = max(worst, abs(rel))
        print(f"{s:>6} {va[s]:>16.4f} {vb[s]:>16.4f} {100 * rel:>+8.2f}%")
    fa, fb = a.get("final_val_loss"), b.get("final_val_loss")
    if fa is None or fb is None:
        print("a run has no final validation loss")
        return 1
    rel = (fb - fa) / fa
    ok = abs(rel) <= tol
    print(f"final: {la} {fa:.4f}, {lb} {fb:.4f}, {100 * rel:+.2f}% "
          f"(largest along the curve {100 * worst:.2f}%): "
          f"{'PASS' if ok else 'FAIL'} at tolerance {100 * tol:.1f}%")
    for r in (a, b):
        if r.get("median_step_ms"):
            print(f"  {run_label(r)}: median step {r['median_step_ms']:.2f} ms, "
                  f"{r.get('tokens_per_s', 0):,.0f} tokens/s")
    return 0 if ok else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"),
                    help="folder holding train_*.json (default examples/out)")
    ap.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"), help="compare two runs instead")
    ap.add_argument("--tol", type=float, default=0.03, help="relative tolerance for --compare (default 0.03)")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare, args.tol)
    table = write_all(args.dir)
    if not table:
        return 1
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
