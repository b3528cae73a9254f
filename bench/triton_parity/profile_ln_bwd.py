"""One launch of the layer norm backward (dx and dW/dB kernels), ours or
Triton's, for ncu: M 4096, N given, f16, after three warm-ups, between
cudaProfilerStart/Stop. ON THE GPU MACHINE (bench/NOTES.md, "Layer norm
backward at N 4096 under ncu"):

    PYTHONPATH=python:bench/triton_parity ncu --profile-from-start off \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis \\
        python3 bench/triton_parity/profile_ln_bwd.py st|tr N

Exits 0 with a reason where torch, a GPU or Triton is missing."""

import sys

import parity


def main(argv):
    mods, status = parity.profiler_modules(argv, "st|tr N", (3,))
    if mods is None:
        return status
    torch, configs, ports, triton_kernels = mods
    impl, n, m = argv[1], int(argv[2]), 4096
    mod = ports if impl == "st" else triton_kernels
    x = torch.randn(m, n, device="cuda", dtype=torch.float16)
    w = torch.randn(n, device="cuda", dtype=torch.float16)
    dy = torch.randn_like(x)
    mean = x.float().mean(1)
    rstd = 1 / (x.float().var(1) + 1e-5).sqrt()
    dx = torch.empty_like(x)
    dw, db = torch.empty_like(w), torch.empty_like(w)
    group = configs.layer_norm_config(n, 2)["GROUP"]
    dwp = torch.empty(group, n, device="cuda")
    dbp = torch.empty_like(dwp)

    def run():
        mod.layer_norm_bwd(dy, x, w, mean, rstd, dx, dw, db, dwp, dbp)

    parity.profile_one_launch(torch, run)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
