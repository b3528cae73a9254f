"""Triton 3.x kernels of the same designs as the DSL ports in kernels/
(written for this bench, after the tutorials' designs), and their launchers
on torch tensors. Imports without Triton: then AVAILABLE is False and WHY
says why; nothing else is defined.

The launchers mirror ports.py (the sparsetile side): same arguments, same
outputs, same configurations (configs.py), so parity.py times like with
like. The matmul and attention kernels autotune over configs.MATMUL_TRITON /
ATTENTION_TRITON (the tutorials' Hopper-style candidates); `limit_configs`
trims those lists (parity.py --quick takes the first two)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import configs  # noqa: E402

try:
    import triton
    import triton.language as tl
    AVAILABLE, WHY = True, ""
except ImportError as e:  # the CPU-only machines
    triton = tl = None
    AVAILABLE, WHY = False, "triton is not installed (%s)" % e

_MAX_CONFIGS = [None]


def limit_configs(n):
    """Autotune over at most n candidates (call before the first launch)."""
    _MAX_CONFIGS[0] = n


def _configs(candidates):
    n = _MAX_CONFIGS[0]
    chosen = candidates if n is None else candidates[:n]
    out = []
    for c in chosen:
        meta = {k: v for k, v in c.items()
                if k not in ("num_warps", "num_stages")}
        out.append(triton.Config(meta, num_warps=c["num_warps"],
                                 num_stages=c["num_stages"]))
    return out


if AVAILABLE:
    @triton.jit
    def _add(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=m) +
                 tl.load(y + offs, mask=m), mask=m)

    @triton.jit
    def _softmax(x, y, n_cols, x_stride, y_stride, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        m = cols < n_cols
        v = tl.load(x + row * x_stride + cols, mask=m, other=-float("inf"))
        num = tl.exp(v - tl.max(v, axis=0))
        tl.store(y + row * y_stride + cols, num / tl.sum(num, axis=0),
                 mask=m)

    @triton.jit
    def _ln_fwd(x, y, w, b, mean, rstd, stride, N, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        xr = x + row * stride
        yr = y + row * stride
        cols = tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], tl.float32)
        for off in range(0, N, BLOCK):
            acc += tl.load(xr + off + cols, mask=off + cols < N,
                           other=0.0).to(tl.float32)
        mu = tl.sum(acc, axis=0) / N
        acc2 = tl.zeros([BLOCK], tl.float32)
        for off in range(0, N, BLOCK):
            c = off + cols
            d = tl.where(c < N, tl.load(xr + c, mask=c < N, other=0.0)
                         .to(tl.float32) - mu, 0.0)
            acc2 += d * d
        r = tl.rsqrt(tl.sum(acc2, axis=0) / N + eps)
        tl.store(mean + row, mu)
        tl.store(rstd + row, r)
        for off in range(0, N, BLOCK):
            c = off + cols
            m = c < N
            xh = (tl.load(xr + c, mask=m, other=0.0).to(tl.float32) - mu) * r
            wv = tl.load(w + c, mask=m).to(tl.float32)
            bv = tl.load(b + c, mask=m).to(tl.float32)
            tl.store(yr + c, (xh * wv + bv).to(y.dtype.element_ty), mask=m)

    @triton.jit
    def _ln_bwd_dx(dx, dy, dw_part, db_part, x, w, mean, rstd, stride, N,
                   GROUP: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        m = cols < N
        r = tl.load(rstd + row)
        xhat = tl.where(m, (tl.load(x + row * stride + cols, mask=m,
                                    other=0.0).to(tl.float32) -
                            tl.load(mean + row)) * r, 0.0)
        dyv = tl.load(dy + row * stride + cols, mask=m,
                      other=0.0).to(tl.float32)
        slot = (row % GROUP) * N + cols
        tl.atomic_add(dw_part + slot, dyv * xhat, mask=m, sem="relaxed")
        tl.atomic_add(db_part + slot, dyv, mask=m, sem="relaxed")
        wdy = tl.load(w + cols, mask=m, other=0.0).to(tl.float32) * dyv
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        tl.store(dx + row * stride + cols,
                 ((wdy - (xhat * c1 + c2)) * r).to(dx.dtype.element_ty),
                 mask=m)

    @triton.jit
    def _ln_bwd_dwdb(dw_part, db_part, dw, db, GROUP, N,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
        rows = tl.arange(0, BLOCK_M)
        dw_acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        db_acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
        for r0 in range(0, GROUP, BLOCK_M):
            r = r0 + rows
            m = (r[:, None] < GROUP) & (cols[None, :] < N)
            offs = r[:, None] * N + cols[None, :]
            dw_acc += tl.load(dw_part + offs, mask=m, other=0.0)
            db_acc += tl.load(db_part + offs, mask=m, other=0.0)
        tl.store(dw + cols, tl.sum(dw_acc, axis=0).to(dw.dtype.element_ty),
                 mask=cols < N)
        tl.store(db + cols, tl.sum(db_acc, axis=0).to(db.dtype.element_ty),
                 mask=cols < N)

    @triton.jit
    def _grouped(pid, grid_m, grid_n, GROUP: tl.constexpr):
        per_group = GROUP * grid_n
        first_m = (pid // per_group) * GROUP
        rows_here = tl.minimum(grid_m - first_m, GROUP)
        return (first_m + (pid % per_group) % rows_here,
                (pid % per_group) // rows_here)

    @triton.jit
    def _matmul_body(a, b, c, M, N, K, stride_am, stride_ak, stride_bk,
                     stride_bn, stride_cm, stride_cn, BM: tl.constexpr,
                     BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr,
                     LEAKY: tl.constexpr):
        pid_m, pid_n = _grouped(tl.program_id(0), tl.cdiv(M, BM),
                                tl.cdiv(N, BN), GROUP)
        am = (pid_m * BM + tl.arange(0, BM)) % M
        bn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_ptrs = a + am[:, None] * stride_am + rk[None, :] * stride_ak
        b_ptrs = b + rk[:, None] * stride_bk + bn[None, :] * stride_bn
        acc = tl.zeros([BM, BN], tl.float32)
        for kb in range(0, tl.cdiv(K, BK)):
            left = K - kb * BK
            ta = tl.load(a_ptrs, mask=rk[None, :] < left, other=0.0)
            tb = tl.load(b_ptrs, mask=(rk[:, None] < left) &
                         (bn[None, :] < N), other=0.0)
            acc = tl.dot(ta, tb, acc)
            a_ptrs += BK * stride_ak
            b_ptrs += BK * stride_bk
        if LEAKY:
            acc = tl.where(acc >= 0.0, acc, 0.01 * acc)
        cm = pid_m * BM + tl.arange(0, BM)
        tl.store(c + cm[:, None] * stride_cm + bn[None, :] * stride_cn,
                 acc.to(c.dtype.element_ty),
                 mask=(cm[:, None] < M) & (bn[None, :] < N))

    def _matmul_kernel():
        return triton.autotune(configs=_configs(configs.MATMUL_TRITON),
                               key=["M", "N", "K"])(_matmul_body)

    @triton.jit
    def _dropout(x, out, n, p, seed, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x + offs, mask=m)
        keep = tl.rand(seed, offs) > p
        tl.store(out + offs, tl.where(keep, v / (1.0 - p), 0.0), mask=m)

    @triton.jit
    def _attn_body(q, k, v, o, lse, sm_scale, N_CTX, D: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, CAUSAL: tl.constexpr):
        start_m = tl.program_id(0)
        head = tl.program_id(1).to(tl.int64) * N_CTX * D
        offs_m = start_m * BM + tl.arange(0, BM)
        offs_n = tl.arange(0, BN)
        offs_d = tl.arange(0, D)
        q_ok = offs_m < N_CTX
        qt = tl.load(q + head + offs_m[:, None] * D + offs_d[None, :],
                     mask=q_ok[:, None], other=0.0)
        qk_scale = sm_scale * 1.4426950408889634
        m_i = tl.full([BM], -float("inf"), tl.float32)
        l_i = tl.zeros([BM], tl.float32)
        acc = tl.zeros([BM, D], tl.float32)
        if CAUSAL:
            unmasked_hi = start_m * BM
            masked_hi = tl.minimum((start_m + 1) * BM, N_CTX)
        else:
            unmasked_hi = (N_CTX // BN) * BN
            masked_hi = N_CTX
        for pass_ in tl.static_range(2):
            if pass_ == 0:
                lo, hi = 0, unmasked_hi
            else:
                lo, hi = unmasked_hi, masked_hi
            for start_n in range(lo, hi, BN):
                keys = start_n + offs_n
                kv = head + keys[:, None] * D + offs_d[None, :]
                if pass_ == 0:
                    kt = tl.load(k + kv)
                    vt = tl.load(v + kv)
                else:
                    kt = tl.load(k + kv, mask=(keys < N_CTX)[:, None],
                                 other=0.0)
                    vt = tl.load(v + kv, mask=(keys < N_CTX)[:, None],
                                 other=0.0)
                qk = tl.dot(qt, tl.trans(kt))
                # The tutorial's two stages: the unmasked one scales the
                # row max, the masked one every score (to add the mask).
                if pass_ == 0:
                    m_new = tl.maximum(m_i, tl.max(qk, axis=1) * qk_scale)
                    p = tl.exp2(qk * qk_scale - m_new[:, None])
                else:
                    ok = (keys < N_CTX)[None, :]
                    if CAUSAL:
                        ok = ok & (offs_m[:, None] >= keys[None, :])
                    s = qk * qk_scale + tl.where(ok, 0.0, -1.0e6)
                    m_new = tl.maximum(m_i, tl.max(s, axis=1))
                    p = tl.exp2(s - m_new[:, None])
                alpha = tl.exp2(m_i - m_new)
                l_i = l_i * alpha + tl.sum(p, axis=1)
                acc = tl.dot(p.to(tl.float16), vt, acc * alpha[:, None])
                m_i = m_new
        tl.store(lse + tl.program_id(1).to(tl.int64) * N_CTX + offs_m,
                 m_i + tl.log2(l_i), mask=q_ok)
        tl.store(o + head + offs_m[:, None] * D + offs_d[None, :],
                 (acc / l_i[:, None]).to(tl.float16), mask=q_ok[:, None])

    def _attn_kernel():
        return triton.autotune(configs=_configs(configs.ATTENTION_TRITON),
                               key=["N_CTX", "D", "CAUSAL"])(_attn_body)

    @triton.jit
    def _bsr_matmul(a, b, c, row_ptr, kidx, M, N, stride_a, stride_b,
                    stride_c, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr, GROUP: tl.constexpr):
        pid_m, pid_n = _grouped(tl.program_id(0), M // BM, N // BN, GROUP)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros([BM, BN], tl.float32)
        for i in range(tl.load(row_ptr + pid_m), tl.load(row_ptr + pid_m + 1)):
            k0 = tl.load(kidx + i) * BK
            ta = tl.load(a + rm[:, None] * stride_a + (k0 + rk)[None, :])
            tb = tl.load(b + (k0 + rk)[:, None] * stride_b + rn[None, :])
            acc = tl.dot(ta, tb, acc)
        tl.store(c + rm[:, None] * stride_c + rn[None, :],
                 acc.to(c.dtype.element_ty))

    _TUNED = {}

    def _tuned(name, make):
        if name not in _TUNED:
            _TUNED[name] = make()
        return _TUNED[name]

    # --- launchers (same signatures as ports.py) ------------------------
    def add(x, y, out):
        n = x.numel()
        blk = configs.ELEMENTWISE["BLOCK"]
        _add[(configs.cdiv(n, blk),)](
            x, y, out, n, BLOCK=blk,
            num_warps=configs.ELEMENTWISE["num_warps"])

    def softmax(x, y):
        m, n = x.shape
        c = configs.softmax_config(n)
        _softmax[(m,)](x, y, n, x.stride(0), y.stride(0), BLOCK=c["BLOCK"],
                       num_warps=c["num_warps"])

    def layer_norm_fwd(x, w, b, eps, y, mean, rstd):
        m, n = x.shape
        c = configs.layer_norm_config(n, x.element_size())
        _ln_fwd[(m,)](x, y, w, b, mean, rstd, x.stride(0), n, eps,
                      BLOCK=c["BLOCK"], num_warps=c["num_warps"])

    def layer_norm_bwd(dy, x, w, mean, rstd, dx, dw, db, dw_part, db_part):
        m, n = x.shape
        c = configs.layer_norm_config(n, x.element_size())
        dw_part.zero_()
        db_part.zero_()
        _ln_bwd_dx[(m,)](dx, dy, dw_part, db_part, x, w, mean, rstd,
                         x.stride(0), n, GROUP=c["GROUP"], BLOCK=c["BLOCK"],
                         num_warps=c["bwd_warps"])
        d = configs.LN_DWDB
        _ln_bwd_dwdb[(configs.cdiv(n, d["BLOCK_N"]),)](
            dw_part, db_part, dw, db, c["GROUP"], n, BLOCK_M=d["BLOCK_M"],
            BLOCK_N=d["BLOCK_N"], num_warps=d["num_warps"])

    def matmul(a, b, c, leaky=True):
        m, k = a.shape
        n = b.shape[1]
        _tuned("matmul", _matmul_kernel)[
            lambda meta: (configs.cdiv(m, meta["BM"]) *
                          configs.cdiv(n, meta["BN"]),)](
            a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
            b.stride(1), c.stride(0), c.stride(1), LEAKY=leaky)

    def dropout(x, out, p, seed):
        n = x.numel()
        blk = configs.ELEMENTWISE["BLOCK"]
        _dropout[(configs.cdiv(n, blk),)](
            x, out, n, p, seed, BLOCK=blk,
            num_warps=configs.ELEMENTWISE["num_warps"])

    def attention(q, k, v, o, lse, sm_scale, causal):
        z, h, n_ctx, d = q.shape
        _tuned("attention", _attn_kernel)[
            lambda meta: (configs.cdiv(n_ctx, meta["BM"]), z * h)](
            q, k, v, o, lse, sm_scale, n_ctx, D=d, CAUSAL=int(causal))

    def bsr_matmul(a, b, c, row_ptr, kidx):
        m, n = a.shape[0], b.shape[1]
        cfg = configs.BSR
        _bsr_matmul[((m // cfg["BM"]) * (n // cfg["BN"]),)](
            a, b, c, row_ptr, kidx, m, n, a.stride(0), b.stride(0),
            c.stride(0), BM=cfg["BM"], BN=cfg["BN"], BK=cfg["BK"],
            GROUP=cfg["GROUP"], num_warps=cfg["num_warps"], num_stages=3)
