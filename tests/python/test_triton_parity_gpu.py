"""The DSL ports of the Triton tutorial kernels (bench/triton_parity/
kernels, launched through bench/triton_parity/ports.py) against float64
references on a GPU: the pointer-style GEMM with its leaky-ReLU epilogue
(ragged shapes, f16 and bf16, both K-loop forms), fused attention forward
(causal and full, D 64 and 128, N_CTX a multiple of the blocks and not),
softmax, layer norm forward and backward, the block-sparse GEMM (empty row
blocks too) and seeded dropout (statistics, kept values, the same mask for
the same seed and the host's Philox stream). Tolerances are those of f16 /
bf16 inputs with f32 accumulation, relative to the largest reference
value. Every output is NaN-poisoned first, so an unwritten element fails.
Skips without torch or a CUDA GPU."""

import math
import os
import sys
import unittest

from _gpu import requires_gpu, torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench", "triton_parity"))
import configs  # noqa: E402
import parity  # noqa: E402
import ports  # noqa: E402


def nan_like(t, shape=None, dtype=None):
    return torch.full(shape or t.shape, float("nan"), device="cuda",
                      dtype=dtype or t.dtype)


class Base(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(1)

    def assertClose(self, actual, reference, tol, what=""):
        torch.cuda.synchronize()
        err = parity.rel_err(actual, reference.double())
        self.assertTrue(err == err, "%s: not every element was written "
                        "(NaN or inf left)" % what)
        self.assertLessEqual(err, tol, "%s: relative error %.3g" % (what,
                                                                    err))


@requires_gpu
class Matmul(Base):
    def check(self, m, n, k, dtype, leaky=True, kofs=False):
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(k, n, device="cuda", dtype=dtype)
        c = nan_like(a, (m, n))
        ports.matmul(a, b, c, leaky=leaky, kofs=kofs)
        ref = a.double() @ b.double()
        if leaky:
            ref = torch.nn.functional.leaky_relu(ref, 0.01)
        self.assertClose(c, ref, 1e-2, "matmul %dx%dx%d %s kofs=%s" % (
            m, n, k, dtype, kofs))

    def test_ragged_f16(self):
        for kofs in (False, True):
            self.check(1000, 1030, 515, torch.float16, kofs=kofs)

    def test_ragged_bf16(self):
        for kofs in (False, True):
            self.check(1000, 1030, 515, torch.bfloat16, kofs=kofs)

    def test_square_ish(self):
        for kofs in (False, True):
            self.check(4096, 2048, 1024, torch.float16, kofs=kofs)

    def test_pipelined_pointer_ring_ragged(self):
        # K, N and the strides multiples of 16 (the runtime's divisibility
        # variant): on sm_90 the pointer loads go through the cp.async ring
        # (tile.ring_copy_ptrs), whose zero fill covers the last K step
        # (528 = 8 x 64 + 16) and the last N tile (1040 = 8 x 128 + 16).
        for dtype in (torch.float16, torch.bfloat16):
            self.check(1000, 1040, 528, dtype, kofs=True)

    def test_pointer_ring_k_steps_of_32(self):
        # BK 32, Triton's pick for this kernel at 2048^3 and 3072^3: on
        # sm_90 A's [BM, 32] blocks go through the ring in one 64-byte
        # swizzled panel (cp.async as TMA's 64B swizzle would write them),
        # B's [32, BN] in 128-byte ones; the last K step (528 = 16 x 32 +
        # 16) is half masked. Elsewhere the loop runs as mma.sync.
        for name in ("matmul", "matmul_kofs"):
            for dtype in (torch.float16, torch.bfloat16):
                for bm, bn, warps in ((128, 128, 4), (128, 256, 8)):
                    m, n, k = 1000, 1040, 528
                    a = torch.randn(m, k, device="cuda", dtype=dtype)
                    b = torch.randn(k, n, device="cuda", dtype=dtype)
                    c = nan_like(a, (m, n))
                    kern = ports.kernel("matmul", name, warps, BM=bm, BN=bn,
                                        BK=32, GROUP=8,
                                        T=ports._dtype_name(a), LEAKY=1)
                    grid = (-(-m // bm) * -(-n // bn),)
                    kern[grid](a, b, c, m, n, k, a.stride(0), b.stride(0),
                               c.stride(0))
                    ref = torch.nn.functional.leaky_relu(
                        a.double() @ b.double(), 0.01)
                    self.assertClose(c, ref, 1e-2, "%s BM %d BN %d BK 32 %s"
                                     % (name, bm, bn, dtype))

    def test_no_epilogue_small_k(self):
        self.check(129, 257, 40, torch.float16, leaky=False)

    def test_leaky_slope(self):
        """The negative side is 0.01 x, the positive side untouched."""
        a = torch.eye(128, device="cuda", dtype=torch.float16)
        b = torch.linspace(-4, 4, 128 * 128, device="cuda").reshape(
            128, 128).to(torch.float16)
        c = nan_like(a)
        ports.matmul(a, b, c)
        torch.cuda.synchronize()
        ref = torch.where(b.double() >= 0, b.double(), 0.01 * b.double())
        self.assertClose(c, ref, 2e-3, "leaky slope")


@requires_gpu
class Attention(Base):
    def check(self, z, h, n_ctx, d, causal):
        q, k, v = (torch.randn(z, h, n_ctx, d, device="cuda",
                               dtype=torch.float16) for _ in range(3))
        o = nan_like(q)
        lse = nan_like(q, (z, h, n_ctx), torch.float32)
        scale = 1.0 / math.sqrt(d)
        ports.attention(q, k, v, o, lse, scale, causal)
        what = "attention z=%d h=%d n=%d d=%d causal=%s" % (z, h, n_ctx, d,
                                                            causal)
        for zi in range(z):
            for hi in range(h):
                ref, ref_lse = parity.attention_reference(
                    torch, q[zi, hi], k[zi, hi], v[zi, hi], scale, causal)
                self.assertClose(o[zi, hi], ref, 1e-2, what)
                self.assertClose(lse[zi, hi], ref_lse, 1e-3, what + " lse")

    def test_full_and_causal(self):
        for d in (64, 128):
            for causal in (False, True):
                self.check(2, 2, 1024, d, causal)

    def test_ragged_n_ctx(self):
        """N_CTX a multiple of neither block (and one shorter than a
        block): the masked pass covers the tail."""
        for n_ctx in (1000, 77):
            for d in (64, 128):
                for causal in (False, True):
                    self.check(1, 2, n_ctx, d, causal)

    def test_against_sdpa(self):
        q, k, v = (torch.randn(2, 4, 2048, 128, device="cuda",
                               dtype=torch.float16) for _ in range(3))
        o = nan_like(q)
        lse = nan_like(q, (2, 4, 2048), torch.float32)
        for causal in (False, True):
            ports.attention(q, k, v, o, lse, 0.125, causal)
            ref = torch.nn.functional.scaled_dot_product_attention(
                q.float(), k.float(), v.float(), is_causal=causal,
                scale=0.125)
            self.assertClose(o, ref, 1e-2, "sdpa causal=%s" % causal)


@requires_gpu
class Softmax(Base):
    def test_rows(self):
        for n in (256, 1000, 4096, 16384):
            x = torch.randn(97, n, device="cuda") * 4
            y = nan_like(x)
            ports.softmax(x, y)
            self.assertClose(y, torch.softmax(x.double(), -1), 1e-5,
                             "softmax n=%d" % n)

    def test_strided_rows(self):
        x = torch.randn(64, 1500, device="cuda")[:, :1200]
        y = nan_like(x, (64, 1200))
        ports.softmax(x, y)
        self.assertClose(y, torch.softmax(x.double(), -1), 1e-5, "strided")


@requires_gpu
class LayerNorm(Base):
    def inputs(self, m, n, dtype):
        x = torch.randn(m, n, device="cuda", dtype=dtype) * 2 + 0.5
        w = torch.randn(n, device="cuda", dtype=dtype)
        b = torch.randn(n, device="cuda", dtype=dtype)
        return x, w, b

    def test_forward(self):
        F = torch.nn.functional
        for dtype in (torch.float16, torch.bfloat16):
            tol = 5e-3 if dtype == torch.float16 else 2e-2
            for n in (512, 1000, 4096, 12288):
                x, w, b = self.inputs(300, n, dtype)
                y = nan_like(x)
                mean = nan_like(x, (300,), torch.float32)
                rstd = nan_like(x, (300,), torch.float32)
                ports.layer_norm_fwd(x, w, b, 1e-5, y, mean, rstd)
                x64 = x.double()
                what = "layer_norm_fwd n=%d %s" % (n, dtype)
                self.assertClose(y, F.layer_norm(x64, (n,), w.double(),
                                                 b.double(), 1e-5), tol, what)
                self.assertClose(mean, x64.mean(-1), 1e-4, what + " mean")
                self.assertClose(rstd, 1.0 / torch.sqrt(
                    x64.var(-1, unbiased=False) + 1e-5), 1e-4, what + " rstd")

    def test_backward(self):
        F = torch.nn.functional
        for dtype in (torch.float16, torch.bfloat16):
            tol = 5e-3 if dtype == torch.float16 else 2e-2
            for m, n in ((500, 512), (300, 1000), (1024, 4096), (64, 12288)):
                x, w, b = self.inputs(m, n, dtype)
                dy = torch.randn(m, n, device="cuda", dtype=dtype)
                mean = torch.empty(m, device="cuda")
                rstd = torch.empty(m, device="cuda")
                ports.layer_norm_fwd(x, w, b, 1e-5, torch.empty_like(x), mean,
                                     rstd)
                group = configs.layer_norm_config(n, 2)["GROUP"]
                dx, dw, db = nan_like(x), nan_like(w), nan_like(b)
                parts = [nan_like(x, (group, n), torch.float32)
                         for _ in range(2)]
                ports.layer_norm_bwd(dy, x, w, mean, rstd, dx, dw, db, *parts)
                x64 = x.double().requires_grad_(True)
                w64 = w.double().requires_grad_(True)
                b64 = b.double().requires_grad_(True)
                gx, gw, gb = torch.autograd.grad(
                    F.layer_norm(x64, (n,), w64, b64, 1e-5), (x64, w64, b64),
                    dy.double())
                what = "layer_norm_bwd %dx%d %s" % (m, n, dtype)
                self.assertClose(dx, gx, tol, what + " dx")
                self.assertClose(dw, gw, tol, what + " dw")
                self.assertClose(db, gb, tol, what + " db")


@requires_gpu
class BlockSparse(Base):
    def test_densities(self):
        for size, density in ((1024, 0.1), (1024, 0.5), (2048, 0.25)):
            a, b, row_ptr, kidx, _ = parity.block_sparse_inputs(
                torch, size, size, size, density, configs.BSR, seed=3)
            c = nan_like(a, (size, size))
            ports.bsr_matmul(a, b, c, row_ptr, kidx)
            self.assertClose(c, a.double() @ b.double(), 1e-2,
                             "bsr %d density %.2f" % (size, density))

    def test_empty_row_blocks(self):
        """Row blocks without a nonzero block give zeros; the others sum
        only their listed blocks (A's other blocks hold values that must
        be skipped)."""
        bm, bk = configs.BSR["BM"], configs.BSR["BK"]
        m, n, k = 3 * bm, 256, 4 * bk
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        lists = [[], [0, 3], [2]]
        row_ptr = torch.tensor([0, 0, 2, 3], dtype=torch.int32, device="cuda")
        kidx = torch.tensor([0, 3, 2], dtype=torch.int32, device="cuda")
        ref = torch.zeros(m, n, dtype=torch.float64, device="cuda")
        for i, ks in enumerate(lists):
            for kb in ks:
                ref[i * bm:(i + 1) * bm] += (
                    a[i * bm:(i + 1) * bm, kb * bk:(kb + 1) * bk].double() @
                    b[kb * bk:(kb + 1) * bk].double())
        c = nan_like(a, (m, n))
        ports.bsr_matmul(a, b, c, row_ptr, kidx)
        torch.cuda.synchronize()
        self.assertTrue(bool((c[:bm] == 0).all()), "empty row block")
        self.assertClose(c, ref, 1e-2, "listed blocks only")


@requires_gpu
class Dropout(Base):
    def run_once(self, x, p, seed):
        out = nan_like(x)
        ports.dropout(x, out, p, seed)
        torch.cuda.synchronize()
        return out

    def test_statistics_and_values(self):
        n = (1 << 20) + 3  # ragged
        x = torch.randn(n, device="cuda")
        for p in (0.1, 0.5, 0.9):
            out = self.run_once(x, p, 1234)
            self.assertFalse(bool(out.isnan().any()), "unwritten elements")
            kept = out != 0
            frac = float(kept.double().mean())
            sigma = math.sqrt(p * (1 - p) / n)
            self.assertLess(abs(frac - (1 - p)), 6 * sigma,
                            "p=%.1f: kept fraction %.5f" % (p, frac))
            self.assertClose(torch.where(kept, out, 0.0),
                             torch.where(kept, x.double() / (1 - p), 0.0),
                             1e-6, "kept values p=%.1f" % p)

    def test_determinism(self):
        x = torch.randn(1 << 18, device="cuda")
        a = self.run_once(x, 0.5, 42)
        b = self.run_once(x, 0.5, 42)
        c = self.run_once(x, 0.5, 43)
        self.assertTrue(bool(torch.equal(a, b)), "same seed, other mask")
        self.assertFalse(bool(torch.equal(a, c)), "new seed, same mask")

    def test_host_stream(self):
        """The mask is rand(seed, i) > p of the host's Philox stream (p
        compared as the f32 the kernel gets)."""
        import struct
        import sparsetile.random as r
        p32 = struct.unpack("f", struct.pack("f", 0.3))[0]
        x = torch.randn(4096, device="cuda").abs() + 0.5  # never 0
        out = self.run_once(x, 0.3, 7)
        want = [r.rand(7, i) > p32 for i in range(4096)]
        got = (out != 0).tolist()
        self.assertEqual(got, want)


@requires_gpu
class VectorAdd(Base):
    def test_ragged(self):
        n = 100003
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = nan_like(x)
        ports.add(x, y, out)
        self.assertClose(out, x.double() + y.double(), 1e-6, "add")


if __name__ == "__main__":
    unittest.main()
