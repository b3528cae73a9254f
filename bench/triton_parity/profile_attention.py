"""One launch of the fused attention forward, f16, Z 4, H 32, ours (the
port's configs.ATTENTION_RING tiling) or Triton's autotuned kernel, for
ncu: after three warm-ups, between cudaProfilerStart/Stop. ON THE GPU
MACHINE (bench/NOTES.md, "Attention at D 64 under ncu"):

    PYTHONPATH=python:bench/triton_parity ncu --profile-from-start off \\
        --set full -o at_st python3 bench/triton_parity/profile_attention.py \\
        st 64 0 4096
    ncu -i at_st.ncu-rep --page source --print-source sass --csv > at_st.csv

Arguments: st|tr, head dimension, causal (0/1), N_CTX (default 4096).
Exits 0 with a reason where torch, a GPU or Triton is missing."""

import math
import sys

import parity


def main(argv):
    mods, status = parity.profiler_modules(argv, "st|tr D CAUSAL [N_CTX]",
                                           (4, 5))
    if mods is None:
        return status
    torch, configs, ports, triton_kernels = mods
    d, causal = int(argv[2]), bool(int(argv[3]))
    n = int(argv[4]) if len(argv) == 5 else 4096
    q, k, v = (torch.randn(4, 32, n, d, device="cuda", dtype=torch.float16)
               for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(4, 32, n, device="cuda")
    mod = ports if argv[1] == "st" else triton_kernels

    def run():
        mod.attention(q, k, v, o, lse, 1 / math.sqrt(d), causal)
    parity.profile_one_launch(torch, run)
    if argv[1] == "tr":
        tuned = triton_kernels._TUNED.get("attention")
        print("triton's config:", getattr(tuned, "best_config", None))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
