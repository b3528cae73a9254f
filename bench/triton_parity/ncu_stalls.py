"""Sums an ncu source-page CSV (ncu -i R.ncu-rep --page source --print-source
sass --csv > R.csv): the warp-stall reasons as shares of all samples, and
the executed instructions by opcode. No GPU needed:

    python3 bench/triton_parity/ncu_stalls.py mm_st.csv mm_tr.csv

With --roles, a warp-specialized kernel's samples and instructions are
split at its setmaxnreg instructions into the producer's (after
USETMAXREG.DEALLOC) and the consumers' (after the other)."""
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


def by_role(path):
    rows = list(csv.reader(open(path)))
    hdr, data = rows[1], rows[2:]
    ix = {h: i for i, h in enumerate(hdr)}
    stalls = [h for h in hdr
              if h.startswith("stall_") and "Not Issued" not in h]
    role, roles = "entry", {}
    for r in data:
        if len(r) < len(hdr):
            continue
        if "SETMAXREG" in r[ix["Source"]]:
            role = "producer" if "DEALLOC" in r[ix["Source"]] else "consumer"
        d = roles.setdefault(role, collections.Counter())
        d["samples"] += int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
        d["instructions"] += int(r[ix["Instructions Executed"]] or 0)
        for s in stalls:
            d[s[6:]] += int(r[ix[s]] or 0)
    for role, d in roles.items():
        top = [(s, v) for s, v in d.most_common()
               if s not in ("samples", "instructions")][:5]
        print("%s %s: samples %d, instructions %d; %s" % (
            path, role, d["samples"], d["instructions"],
            ", ".join("%s %d" % sv for sv in top)))


if __name__ == "__main__":
    args = sys.argv[1:]
    roles = "--roles" in args
    for p in (a for a in args if a != "--roles"):
        (by_role if roles else summarize)(p)
