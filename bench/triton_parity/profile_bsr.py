"""One launch of the block-sparse matmul (size^3, f16, parity.py's inputs at
`density`), ours or Triton's kernel of the same design, for ncu: after three
warm-ups, between cudaProfilerStart/Stop. ON THE GPU MACHINE (bench/NOTES.md,
"Block-sparse at density 0.1: the prologue's position loads"):

    PYTHONPATH=python:bench/triton_parity ncu --profile-from-start off \\
        --set full -o bsr_st python3 bench/triton_parity/profile_bsr.py st 0.1
    ncu -i bsr_st.ncu-rep --page source --print-source sass --csv > bsr_st.csv

Arguments: st|tr, density (default 0.1), size (default 4096).
Exits 0 with a reason where torch, a GPU or Triton is missing."""

import sys

import parity


def main(argv):
    mods, status = parity.profiler_modules(argv, "st|tr [DENSITY [SIZE]]",
                                           (2, 3, 4))
    if mods is None:
        return status
    torch, configs, ports, triton_kernels = mods
    density = float(argv[2]) if len(argv) > 2 else 0.1
    size = int(argv[3]) if len(argv) > 3 else 4096
    a, b, row_ptr, kidx, _ = parity.block_sparse_inputs(
        torch, size, size, size, density, configs.BSR, 0)
    c = torch.empty(size, size, device="cuda", dtype=a.dtype)
    mod = ports if argv[1] == "st" else triton_kernels
    parity.profile_one_launch(
        torch, lambda: mod.bsr_matmul(a, b, c, row_ptr, kidx))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
