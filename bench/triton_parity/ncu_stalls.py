"""Sums an ncu source-page CSV (ncu -i R.ncu-rep --page source --print-source
sass --csv > R.csv): the warp-stall reasons as shares of all samples, and
the executed instructions by opcode. No GPU needed:

    python3 bench/triton_parity/ncu_stalls.py mm_st.csv mm_tr.csv"""
import collections
import csv
import sys


def summarize(path):
    rows = list(csv.reader(open(path)))
    hdr, data = rows[1], rows[2:]  # rows[0] names the kernel
    ix = {h: i for i, h in enumerate(hdr)}
    stalls = [h for h in hdr
              if h.startswith("stall_") and "Not Issued" not in h]
    reasons, ops, samples = collections.Counter(), collections.Counter(), 0
    for r in data:
        if len(r) < len(hdr):
            continue
        words = r[ix["Source"]].split()
        if words and words[0].startswith("@"):  # a predicate
            words = words[1:]
        op = words[0].split(".")[0] if words else "?"
        ops[op] += int(r[ix["Instructions Executed"]] or 0)
        for s in stalls:
            reasons[s] += int(r[ix[s]] or 0)
        samples += int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
    print("==", path, "samples", samples, "instructions", sum(ops.values()))
    print("  stalls:", ", ".join("%s %.1f%%" % (s[6:], 100.0 * v / samples)
                                 for s, v in reasons.most_common(9)))
    print("  ops:", ", ".join("%s %d" % (o, v)
                              for o, v in ops.most_common(22)))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        summarize(p)
