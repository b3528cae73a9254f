"""How far greedy tile scheduling falls behind a balanced one, for the
SparseDrop list kernels: a model, not a measurement.

Each tile of the forward (dW) runs as many K steps as its mask row (column)
kept blocks, binomial in 1 - p, plus a fixed cost. Tiles go to 132 SMs in
the given order, each to the SM that frees first (what the hardware block
scheduler and the persistent tile queue both do). The script prints the
resulting run time over the balanced one (total work / 132) for grid order
(the kernels' groups) and for longest tiles first. bench/NOTES.md, "Longest
lists first", compares it with the H100.

Then the same for dX's kept tiles at p = 0.9, unsplit and with their N loop
split in two or four parts.

Usage: python3 bench/sparsedrop/schedule_sim.py (standard library only).
"""

import heapq
import random

SMS = 132
FIXED_STEPS = 5     # per-tile fixed cost, in K steps of 64 (bench/NOTES.md)
STEPS_PER_BLOCK = 2 # a 128-wide mask block is two K steps of 64


def makespan(works):
    free = [0.0] * SMS
    heapq.heapify(free)
    for w in works:
        heapq.heappush(free, heapq.heappop(free) + w)
    return max(free)


def tiles(kernel, n, p, rng):
    """Tile works in grid order: dW's tiles are 256 x 128 over [N, K = 4096]
    with lists per mask column (over 128 row blocks, M = 16384); the
    forward's 128 x 256 over [M = 16384, N] with lists per mask row (over 32
    column blocks, K = 4096)."""
    if kernel == "dW":
        rows, cols, list_len, group = n // 256, 32, 128, 8
        counts = [sum(rng.random() > p for _ in range(list_len))
                  for _ in range(cols)]
        work = lambda r, c: counts[c] * STEPS_PER_BLOCK + FIXED_STEPS
    else:
        rows, cols, list_len = 128, n // 256, 32
        group = max(8, round(8 / (1 - p)))
        counts = [sum(rng.random() > p for _ in range(list_len))
                  for _ in range(rows)]
        work = lambda r, c: counts[r] * STEPS_PER_BLOCK + FIXED_STEPS
    out = []
    for first in range(0, rows, group):
        size = min(group, rows - first)
        for c in range(cols):
            for r in range(first, first + size):
                out.append(work(r, c))
    return out


def main():
    print("| kernel | N | p | grid order / balanced | longest first / balanced |")
    print("|---|---|---|---|---|")
    for kernel, n in [("dW", 4096), ("dW", 16384), ("fwd", 4096), ("fwd", 16384)]:
        for p in (0.5, 0.9):
            works = tiles(kernel, n, p, random.Random(1))
            balanced = sum(works) / SMS
            print(f"| {kernel} | {n} | {p} | {makespan(works) / balanced:.3f} | "
                  f"{makespan(sorted(works, reverse=True)) / balanced:.3f} |")


def dx_tiles(n, p, split, zero_steps, rng):
    """dX's listed form at high p (kept tiles first): one 128 x 128 tile per
    mask block of [M = 16384, K = 4096], 4096 tiles. A kept tile runs the
    whole N loop (N / 64 steps), in `split` parts that each pay the fixed
    cost (and, split, a reduction of its f32 partial tile, counted as one
    more fixed cost); a dropped tile only stores zeros (`zero_steps`)."""
    kept = sum(rng.random() > p for _ in range(128 * 32))
    part = (n // 64) / split + FIXED_STEPS + (FIXED_STEPS if split > 1 else 0)
    return [part] * (kept * split) + [zero_steps] * (128 * 32 - kept)


def dx_main():
    """dX at p = 0.9: the launch's end against its balanced time, and what a
    split of the kept tiles' N loop would give (bench/NOTES.md, "Where
    issues 11 and 13 stand after the run at 23d5747")."""
    print()
    print("| dX, p = 0.9 | N | zero tile (steps) | split | makespan (steps) "
          "| balanced | makespan / unsplit |")
    print("|---|---|---|---|---|---|---|")
    for n in (4096, 16384):
        for zero in (1, 2):
            base = None
            for split in (1, 2, 4):
                works = dx_tiles(n, 0.9, split, zero, random.Random(1))
                m = makespan(works)
                base = base or m
                print(f"| | {n} | {zero} | {split} | {m:.0f} | "
                      f"{sum(works) / SMS:.0f} | {m / base:.3f} |")


if __name__ == "__main__":
    main()
    dx_main()
