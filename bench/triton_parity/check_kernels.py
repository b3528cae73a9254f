#!/usr/bin/env python3
"""Compiles every DSL port in kernels/ for sm_90 (ptxas -arch=sm_90a) and
sm_80, in every configuration parity.py and the GPU tests launch
(configs.compile_variants), with and without --div16 all, and runs ptxas on
the PTX: any ptxas performance message (C75xx), or any warning (a spill) on
sm_90a, fails; sm_80 spills are listed. Also checks that every kernel of
every .tile file is covered. No GPU needed.

    check_kernels.py [--stc build/compiler/stc] [--ptxas .../ptxas] [-j N]

Exit status 0 when all compile cleanly, 1 otherwise."""

import argparse
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import configs  # noqa: E402

REPO = os.path.dirname(os.path.dirname(configs.HERE))


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    return p.returncode, p.stdout


def listed_kernels(stc, path):
    rc, out = run([stc, path, "--list"])
    if rc != 0:
        return None, out
    return [line.split("(")[0].strip() for line in out.splitlines()
            if "(" in line], out


def check_one(stc, ptxas, tmp, i, variant, arch, div16):
    """(tag, failure text or None, sm_80 spill note or None) of one
    compile and its ptxas run."""
    fname, kernel, consts, warps = variant
    defs = []
    for k, v in sorted(consts.items()):
        defs += ["-D", "%s=%s" % (k, v)]
    tag = "%s:%s %s num_warps=%d (%s%s)" % (
        fname, kernel, " ".join("%s=%s" % kv for kv in sorted(consts.items())),
        warps, arch, ", div16" if div16 else "")
    ptx = os.path.join(tmp, "k%d.%s.%d.ptx" % (i, arch, div16))
    rc, out = run([stc, configs.kernel_path(fname), "--kernel", kernel,
                   "--arch", arch, "--num-warps", str(warps), "-o", ptx] +
                  defs + (["--div16", "all"] if div16 else []))
    if rc != 0:
        return tag, "stc failed: %s\n%s" % (tag, out), None
    rc, msgs = run([ptxas, "-v", "-arch=" + ("sm_90a" if arch == "sm_90"
                                             else arch),
                    "-warn-spills", "-warn-lmem-usage", ptx,
                    "-o", ptx + ".cubin"])
    if rc != 0:
        return tag, "ptxas failed: %s\n%s" % (tag, msgs), None
    if re.search(r"C75[0-9][0-9]|Performance", msgs):
        return tag, "ptxas performance message: %s\n%s" % (tag, msgs), None
    if "warning" in msgs:
        line = re.search(r"\d+ bytes spill stores.*", msgs)
        text = "%s: %s" % (tag, line.group(0) if line else
                           msgs.strip().splitlines()[0])
        return (tag, text, None) if arch == "sm_90" else (tag, None, text)
    return tag, None, None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stc", default=os.path.join(REPO, "build", "compiler",
                                                  "stc"))
    ap.add_argument("--ptxas", default=os.path.join(
        os.environ.get("CUDA_ROOT", "/usr/local/cuda"), "bin", "ptxas"))
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    failures, notes = [], []
    variants = configs.compile_variants()
    covered = set((f, k) for f, k, _, _ in variants)
    with tempfile.TemporaryDirectory() as tmp:
        jobs = [(i, v, arch, div16) for i, v in enumerate(variants)
                for arch in ("sm_90", "sm_80") for div16 in (False, True)]
        # The ring's variants: launched only where the divisibility variant
        # is (ports.matmul), on sm_90.
        jobs += [(len(variants) + i, v, "sm_90", True)
                 for i, v in enumerate(configs.ring_variants())]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(
                lambda job: check_one(args.stc, args.ptxas, tmp, *job), jobs))
        for tag, failure, note in results:
            print(("FAIL " if failure else "ok   ") + tag)
            if failure:
                failures.append(failure)
            if note:
                notes.append(note)
        for path in sorted(glob.glob(os.path.join(configs.KERNELS,
                                                  "*.tile"))):
            fname = os.path.splitext(os.path.basename(path))[0]
            names, out = listed_kernels(args.stc, path)
            if names is None:
                failures.append("stc --list failed on %s\n%s" % (path, out))
                continue
            for name in names:
                if (fname, name) not in covered:
                    failures.append("%s:%s is in no configuration of "
                                    "configs.compile_variants()" % (fname,
                                                                    name))
    for n in notes:
        print("note (sm_80 spill): " + n)
    for f in failures:
        print("FAILED: " + f)
    print("%s: %d failures" % ("check_kernels", len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
