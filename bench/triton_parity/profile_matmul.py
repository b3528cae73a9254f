"""One launch of the pointer matmul + leaky ReLU at S^3, f16, ours at
128 x 128 tiles, 8 warps, three ring stages (two blocks an SM, as Triton's
pick at 2048^3) or Triton's autotuned kernel, for ncu: after three warm-ups,
between cudaProfilerStart/Stop. ON THE GPU MACHINE (bench/NOTES.md, "wgmma
descriptors as one add per K step"):

    PYTHONPATH=python:bench/triton_parity ncu --profile-from-start off \\
        --set full -o mm_st python3 bench/triton_parity/profile_matmul.py st
    ncu -i mm_st.ncu-rep --page source --print-source sass --csv > mm_st.csv

`st S KERNEL BN` profiles that kernel of kernels/matmul.tile (matmul or
matmul_kofs) at 128 x BN with its default ring instead (at BN 256 the
producer warpgroup's form; bench/NOTES.md, "A producer warpgroup for
pointer rings").

Exits 0 with a reason where torch, a GPU or Triton is missing."""

import sys

import parity


def main(argv):
    mods, status = parity.profiler_modules(
        argv, "st|tr [S] | st S KERNEL BN", (2, 3, 5))
    if mods is None:
        return status
    torch, configs, ports, triton_kernels = mods
    s = int(argv[2]) if len(argv) >= 3 else 2048
    a = torch.randn(s, s, device="cuda", dtype=torch.float16)
    b = torch.randn(s, s, device="cuda", dtype=torch.float16)
    c = torch.empty(s, s, device="cuda", dtype=torch.float16)
    if argv[1] == "st" and len(argv) == 5:
        bn = int(argv[4])
        kern = ports.kernel("matmul", argv[3], 8, BM=128, BN=bn, BK=64,
                            GROUP=8, T="f16", LEAKY=1)
        grid = (configs.cdiv(s, 128) * configs.cdiv(s, bn),)

        def run():
            kern[grid](a, b, c, s, s, s, a.stride(0), b.stride(0),
                       c.stride(0))
    elif argv[1] == "st":
        kern = ports.kernel("matmul", "matmul", 8, BM=128, BN=128, BK=64,
                            GROUP=8, T="f16", LEAKY=1).specialize(
                                num_stages=3)
        grid = (configs.cdiv(s, 128) ** 2,)

        def run():
            kern[grid](a, b, c, s, s, s, a.stride(0), b.stride(0),
                       c.stride(0))
    else:
        def run():
            triton_kernels.matmul(a, b, c)
    parity.profile_one_launch(torch, run)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
