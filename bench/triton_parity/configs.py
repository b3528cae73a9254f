"""The launch configurations shared by parity.py, the GPU tests and the
compile check (check_kernels.py): one place, so that what is checked on the
CPU is what runs on the GPU. Needs nothing beyond the standard library."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "kernels")


def kernel_path(name):
    """bench/triton_parity/kernels/<name>.tile"""
    return os.path.join(KERNELS, name + ".tile")


def next_pow2(n):
    return 1 << max(0, (int(n) - 1).bit_length())


def cdiv(a, b):
    return -(-a // b)


# Elementwise kernels: 1024 elements a program, 4 warps (both sides).
ELEMENTWISE = dict(BLOCK=1024, num_warps=4)


def softmax_config(n_cols):
    """One row a program in one tile; warps grow with the row."""
    block = next_pow2(n_cols)
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    return dict(BLOCK=block, num_warps=warps)


def layer_norm_config(n_cols, elem_bytes=2):
    """The tutorial's choice: the row in one tile when it fits in 64 KB,
    num_warps = clamp(BLOCK / 256, 1, 8), and the partial dW/dB buffer's
    row count (GROUP) by N. The backward's dx kernel holds four f32 rows
    in registers: 16 warps at BLOCK 16384 (8 spill), on both sides."""
    block = min(65536 // elem_bytes, next_pow2(n_cols))
    warps = min(max(block // 256, 1), 8)
    bwd_warps = 16 if block >= 16384 else warps
    group = 64
    if n_cols <= 8192:
        group = 96
    if n_cols <= 4096:
        group = 128
    if n_cols <= 1024:
        group = 256
    return dict(BLOCK=block, num_warps=warps, bwd_warps=bwd_warps,
                GROUP=group)


# layer_norm_bwd_dwdb: partial rows a step, columns a program.
LN_DWDB = dict(BLOCK_M=32, BLOCK_N=128, num_warps=4)

# Pointer matmul: one fixed tile for the DSL port (ptxas allots it no
# spills on sm_90a); the Triton kernel autotunes over MATMUL_TRITON, the
# tutorial's Hopper-style candidates, this tile first.
MATMUL = dict(BM=128, BN=128, BK=64, GROUP=8, num_warps=8)
# Where every integer argument is a multiple of 16 (the JIT's divisibility
# variant), the K loop runs on sm_90's cp.async/wgmma ring, which holds a
# 128 x 256 tile without spills and runs it 1.2-1.4x faster than 128 x 128
# (matmul_tiles.py, run of 7b8f43e); the other variant (mma.sync) would
# spill at that tile, so the port launches it only there (ports.matmul).
MATMUL_RING = dict(MATMUL, BN=256)
MATMUL_TRITON = [
    dict(BM=128, BN=128, BK=64, GROUP=8, num_warps=8, num_stages=3),
    dict(BM=128, BN=256, BK=64, GROUP=8, num_warps=8, num_stages=3),
    dict(BM=128, BN=128, BK=32, GROUP=8, num_warps=4, num_stages=4),
    dict(BM=64, BN=256, BK=32, GROUP=8, num_warps=4, num_stages=4),
]

# Fused attention, per (head dimension, causal). On sm_90 the key loop runs
# on the cp.async / wgmma ring (tile-pipeline-tma's chained-dot form); the
# key block is what attention_tiles.py measured fastest at N 4096 (run of
# 6384d06 with two-stage rings refilled an iteration ahead, as landed
# after it; data/attention_tiles_6384d06-wt.json and -wt-lag0.json):
# 64 keys for D 64 (full 0.83x Triton against 0.70x at 128; causal 0.84x
# against 0.69x), 128 for D 128 (full 0.87x against 0.80x at 64; causal
# 0.88x against 0.86x). No spills on sm_90a.
ATTENTION_RING = {(64, False): dict(BM=128, BN=64, num_warps=8),
                  (64, True): dict(BM=128, BN=64, num_warps=8),
                  (128, False): dict(BM=128, BN=128, num_warps=8),
                  (128, True): dict(BM=128, BN=128, num_warps=8)}
# Elsewhere the dots are mma.sync, which spills on sm_80 at 128 keys.
ATTENTION = {(d, causal): dict(BM=128, BN=64 if d == 64 else 32, num_warps=8)
             for d in (64, 128) for causal in (False, True)}
ATTENTION_TRITON = [
    dict(BM=128, BN=64, num_warps=8, num_stages=3),
    dict(BM=128, BN=32, num_warps=8, num_stages=3),
    dict(BM=128, BN=128, num_warps=8, num_stages=3),
    dict(BM=64, BN=64, num_warps=4, num_stages=3),
]

# Block-sparse matmul: the mask's block is [BM, BK].
BSR = dict(BM=128, BN=128, BK=64, GROUP=8, num_warps=8)


def ring_variants():
    """The variants launched only on sm_90 (the ring; the matmul's only with
    every integer argument a multiple of 16): check_kernels.py compiles them
    with --div16 all for sm_90 alone."""
    mm = {k: v for k, v in MATMUL_RING.items() if k != "num_warps"}
    out = [("matmul", name, dict(mm, T=t, LEAKY=leaky),
            MATMUL_RING["num_warps"])
           for name in ("matmul", "matmul_kofs") for t in ("f16", "bf16")
           for leaky in (0, 1)]
    for (d, causal), c in sorted(ATTENTION_RING.items()):
        out.append(("attention", "attn_fwd",
                    dict(D=d, BM=c["BM"], BN=c["BN"], CAUSAL=int(causal)),
                    c["num_warps"]))
    return out


def compile_variants():
    """(file, kernel, {const: value}, num_warps) for every configuration
    parity.py and the tests launch, for check_kernels.py."""
    out = []
    ew = dict(BLOCK=ELEMENTWISE["BLOCK"])
    out.append(("vector_add", "add", ew, 4))
    out.append(("dropout", "seeded_dropout", ew, 4))
    # Every power-of-two row tile parity.py and the tests reach.
    for n in (256, 512, 1024, 2048, 4096, 8192, 16384):
        c = softmax_config(n)
        out.append(("softmax", "softmax", dict(BLOCK=c["BLOCK"]),
                    c["num_warps"]))
    for n in (512, 1024, 2048, 4096, 8192, 12288):
        c = layer_norm_config(n)
        for t in ("f16", "bf16"):
            out.append(("layernorm", "layer_norm_fwd",
                        dict(BLOCK=c["BLOCK"], T=t), c["num_warps"]))
            out.append(("layernorm", "layer_norm_bwd_dx",
                        dict(BLOCK=c["BLOCK"], GROUP=c["GROUP"], T=t),
                        c["bwd_warps"]))
    for t in ("f16", "bf16"):
        out.append(("layernorm", "layer_norm_bwd_dwdb",
                    dict(BLOCK_M=LN_DWDB["BLOCK_M"],
                         BLOCK_N=LN_DWDB["BLOCK_N"], T=t),
                    LN_DWDB["num_warps"]))
    mm = {k: v for k, v in MATMUL.items() if k != "num_warps"}
    for name in ("matmul", "matmul_kofs"):
        for t in ("f16", "bf16"):
            for leaky in (0, 1):
                out.append(("matmul", name, dict(mm, T=t, LEAKY=leaky),
                            MATMUL["num_warps"]))
    for (d, causal), c in sorted(ATTENTION.items()):
        out.append(("attention", "attn_fwd",
                    dict(D=d, BM=c["BM"], BN=c["BN"], CAUSAL=int(causal)),
                    c["num_warps"]))
    bsr = {k: v for k, v in BSR.items() if k != "num_warps"}
    out.append(("blocksparse", "bsr_matmul", bsr, BSR["num_warps"]))
    return out
