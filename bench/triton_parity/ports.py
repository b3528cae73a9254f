"""Launchers of the DSL ports in kernels/ on torch tensors, through the
sparsetile Python package: the same signatures as triton_kernels.py's, the
configurations from configs.py. Imports without torch or a GPU (sparsetile
is imported lazily, at the first launch).

Every launcher writes its outputs in place and returns nothing; the kernels
are compiled once per configuration (sparsetile caches them) and looked up
here in a dict, so a timed launch costs one argument check and the launch.

SPARSETILE_PARITY_ARCH=sm_80 compiles every port for that target instead
of this GPU's (with SPARSETILE_ASSEMBLER=driver, so that its PTX loads
here): tests/python/test_triton_parity_gpu.py then checks the sm_80 code
on an sm_90 GPU. The configurations stay this GPU's."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import configs  # noqa: E402

_KERNELS = {}
_RING = []  # _ring_sms's answer, once


def _dtype_name(t):
    import torch
    return {torch.float16: "f16", torch.bfloat16: "bf16",
            torch.float32: "f32"}[t.dtype]


def kernel(fname, name, num_warps, **consts):
    """The compiled sparsetile.Kernel `name` of kernels/<fname>.tile."""
    key = (fname, name, num_warps, tuple(sorted(consts.items())))
    k = _KERNELS.get(key)
    if k is None:
        import sparsetile
        arch = os.environ.get("SPARSETILE_PARITY_ARCH")
        options = dict(arch=arch) if arch else {}
        k = sparsetile.compile(configs.kernel_path(fname), name,
                               num_warps=num_warps, **options, **consts)
        _KERNELS[key] = k
    return k


def add(x, y, out):
    n = x.numel()
    c = configs.ELEMENTWISE
    kernel("vector_add", "add", c["num_warps"], BLOCK=c["BLOCK"])[
        (configs.cdiv(n, c["BLOCK"]),)](x, y, out, n)


def softmax(x, y):
    m, n = x.shape
    c = configs.softmax_config(n)
    kernel("softmax", "softmax", c["num_warps"], BLOCK=c["BLOCK"])[(m,)](
        x, y, n, x.stride(0), y.stride(0))


def layer_norm_fwd(x, w, b, eps, y, mean, rstd):
    m, n = x.shape
    c = configs.layer_norm_config(n, x.element_size())
    kernel("layernorm", "layer_norm_fwd", c["num_warps"], BLOCK=c["BLOCK"],
           T=_dtype_name(x))[(m,)](x, y, w, b, mean, rstd, x.stride(0), n,
                                   float(eps))


def layer_norm_bwd(dy, x, w, mean, rstd, dx, dw, db, dw_part, db_part):
    """dx, and dw/db through the [GROUP, N] f32 partial buffers (GROUP from
    configs.layer_norm_config; zeroed here, as part of the backward)."""
    m, n = x.shape
    c = configs.layer_norm_config(n, x.element_size())
    t = _dtype_name(x)
    dw_part.zero_()
    db_part.zero_()
    kernel("layernorm", "layer_norm_bwd_dx", c["bwd_warps"], BLOCK=c["BLOCK"],
           GROUP=c["GROUP"], T=t)[(m,)](
        dx, dy, dw_part, db_part, x, w, mean, rstd, x.stride(0), n)
    d = configs.LN_DWDB
    kernel("layernorm", "layer_norm_bwd_dwdb", d["num_warps"],
           BLOCK_M=d["BLOCK_M"], BLOCK_N=d["BLOCK_N"], T=t)[
        (configs.cdiv(n, d["BLOCK_N"]),)](dw_part, db_part, dw, db,
                                          c["GROUP"], n)


def _ring_sms():
    """The GPU's SM count when it has the wgmma ring (sm_90), else 0."""
    if not _RING:
        try:
            import torch
            p = torch.cuda.get_device_properties(torch.cuda.current_device())
            _RING.append(p.multi_processor_count if p.major == 9 else 0)
        except Exception:  # noqa: BLE001 (no GPU, or the tests' stand-in)
            _RING.append(0)
    return _RING[0]


def matmul(a, b, c, leaky=True, kofs=False):
    """c = leaky_relu(a @ b) (a [M, K], b [K, N], c [M, N], unit column
    strides). kofs: the variant with pointers computed from k (gaps)."""
    m, k = a.shape
    n = b.shape[1]
    # The wider tile where the JIT compiles the divisibility variant (every
    # integer argument a multiple of 16), whose K loop is sm_90's ring, and
    # where it still gives at least every other SM a tile: at 2048^2 its 128
    # tiles (one wave) ran 468 TFLOP/s against 403 for 256 tiles of
    # 128 x 128 (matmul_tiles.py, data/matmul_tiles_0c55de9.json); at
    # 1024^2 (32 tiles) 99 against 143 (and 0.69x Triton against 0.94x in
    # the run of 442813c).
    wide = configs.MATMUL_RING
    tiles = configs.cdiv(m, wide["BM"]) * configs.cdiv(n, wide["BN"])
    ring = 2 * tiles >= _ring_sms() > 0 and all(v % 16 == 0 for v in (
        m, n, k, a.stride(0), b.stride(0), c.stride(0)))
    cfg = configs.MATMUL_RING if ring else configs.MATMUL
    consts = {kk: v for kk, v in cfg.items() if kk != "num_warps"}
    kernel("matmul", "matmul_kofs" if kofs else "matmul", cfg["num_warps"],
           T=_dtype_name(a), LEAKY=int(bool(leaky)), **consts)[
        (configs.cdiv(m, cfg["BM"]) * configs.cdiv(n, cfg["BN"]),)](
        a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0))


def dropout(x, out, p, seed):
    n = x.numel()
    c = configs.ELEMENTWISE
    kernel("dropout", "seeded_dropout", c["num_warps"], BLOCK=c["BLOCK"])[
        (configs.cdiv(n, c["BLOCK"]),)](x, out, n, float(p), int(seed))


def attention(q, k, v, o, lse, sm_scale, causal):
    """o = softmax(q k^T sm_scale [causal]) v over [Z, H, N_CTX, D]
    contiguous f16; lse [Z, H, N_CTX] f32 gets the base-2 log-sum-exp."""
    z, h, n_ctx, d = q.shape
    table = configs.ATTENTION_RING if _ring_sms() else configs.ATTENTION
    cfg = table[(d, bool(causal))]
    kernel("attention", "attn_fwd", cfg["num_warps"], D=d, BM=cfg["BM"],
           BN=cfg["BN"], CAUSAL=int(bool(causal)))[
        (configs.cdiv(n_ctx, cfg["BM"]), z * h)](
        q, k, v, o, lse, float(sm_scale), n_ctx)


def bsr_matmul(a, b, c, row_ptr, kidx):
    """c = a @ b over the nonzero [BM, BK] blocks of a that row_ptr / kidx
    list (CSR over blocks, configs.BSR's block)."""
    m, n = a.shape[0], b.shape[1]
    cfg = configs.BSR
    consts = {kk: v for kk, v in cfg.items() if kk != "num_warps"}
    kernel("blocksparse", "bsr_matmul", cfg["num_warps"], T=_dtype_name(a),
           **consts)[((m // cfg["BM"]) * (n // cfg["BN"]),)](
        a, b, c, row_ptr, kidx, m, n, a.stride(0), b.stride(0), c.stride(0))
