"""The ops and layers on a GPU, in bf16 and f16, on ragged shapes:
SparseDropLinear (sparsetile backend vs the pure-torch backend on the same
masks, both vs a float64 reference), Sparse24Linear vs a torch reference on
the layer's own mask, Sparse24MLP (bias and GELU fused into the 2:4 GEMMs)
vs float64 and vs the unfused layers, swiglu/geglu vs torch, clear errors
for bad inputs,
and a small model under torch.compile (custom ops, fullgraph). Outputs given
to ops are NaN-poisoned first; inputs are random. Skips without torch or a
CUDA GPU."""

import unittest

from _gpu import HAVE_GPU, rel_err, requires_gpu, torch

import sparsetile

if HAVE_GPU:
    import torch.nn.functional as F
    from sparsetile import ops
    from sparsetile._reference import sparsedrop_mask_reference
    from sparsetile.nn import (GEGLU, HAS_CUSTOM_OP, Sparse24Linear,
                               Sparse24MLP, SparseDropLinear, SwiGLU, geglu,
                               swiglu)
    import sparsetile.nn as stnn

# (dtype, tolerance of max|error| / max|reference| against float64).
DTYPES = (((torch.bfloat16, 2e-2), (torch.float16, 4e-3)) if torch is not None
          else ())


def _nan(*shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device="cuda")


@requires_gpu
class SparseDropOps(unittest.TestCase):
    def test_mask_matches_the_documented_generator(self):
        M, K, block = 300, 264 * 40, (64, 32)
        words = ops.sparsedrop_mask(12345, 777, 0.3, M, K, block)
        ref = sparsedrop_mask_reference(12345, 777, 0.3, M, K, *block)
        self.assertEqual(words.cpu().tolist(), ref)
        self.assertTrue(torch.equal(
            words, ops.sparsedrop_mask(12345, 777, 0.3, M, K, block)))

    def test_forward_backward_against_float64(self):
        M, N, K, p, block = 300, 200, 264, 0.4, (64, 64)
        for dtype, tol in DTYPES:
            name = str(dtype)
            torch.manual_seed(2)
            x = torch.randn(M, K, device="cuda", dtype=dtype)
            w = torch.randn(N, K, device="cuda", dtype=dtype) / 16
            dy = torch.randn(M, N, device="cuda", dtype=dtype)
            mask = ops.sparsedrop_mask(3, 0, p, M, K, block)
            dense = ops.expand_sparsedrop_mask(mask, M, K, block).double()
            s = 1 / (1 - p)
            xm = x.double() * dense
            y = ops.sparsedrop_forward(x, w, mask, p, block,
                                       out=_nan(M, N, dtype=dtype))
            self.assertLess(rel_err(y, s * xm @ w.double().t()), tol, name)
            dx = ops.sparsedrop_backward_x(dy, w, mask, p, block,
                                           out=_nan(M, K, dtype=dtype))
            ref_dx = s * (dy.double() @ w.double()) * dense
            self.assertLess(rel_err(dx, ref_dx), tol, name)
            self.assertTrue(bool((dx[dense == 0] == 0).all()))
            dw = ops.sparsedrop_backward_w(dy, x, mask, p, block,
                                           out=_nan(N, K, dtype=dtype))
            self.assertLess(rel_err(dw, s * dy.double().t() @ xm), tol, name)

    def test_bad_arguments(self):
        x = torch.randn(64, 64, device="cuda")
        w = torch.randn(64, 64, device="cuda", dtype=torch.bfloat16)
        mask = ops.sparsedrop_mask(0, 0, 0.5, 64, 64, (64, 64))
        with self.assertRaises(TypeError) as cm:
            ops.sparsedrop_forward(x, w, mask, 0.5, (64, 64))
        self.assertIn("'x'", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            ops.sparsedrop_forward(w.cpu(), w, mask, 0.5, (64, 64))
        self.assertIn("CUDA", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            ops.sparsedrop_forward(w, w[:, :32], mask, 0.5, (64, 64))
        self.assertIn("'w'", str(cm.exception))
        with self.assertRaises(ValueError):
            ops.sparsedrop_forward(w, w, mask[:0], 0.5, (64, 64))


@requires_gpu
class SparseDropLayer(unittest.TestCase):
    def _pair(self, dtype, p=0.4, block=(64, 64), K=264, N=200):
        kw = dict(p=p, block=block, seed=11, device="cuda", dtype=dtype)
        st = SparseDropLinear(K, N, backend="sparsetile", **kw)
        ref = SparseDropLinear(K, N, backend="torch", **kw)
        ref.load_state_dict(st.state_dict())
        return st, ref

    def _step(self, layer, x, dy):
        x = x.clone().requires_grad_(True)
        layer.zero_grad()
        y = layer(x)
        y.backward(dy)
        return y, x.grad, layer.weight.grad, layer.bias.grad

    def test_backends_agree_on_the_same_masks(self):
        for dtype, tol in DTYPES:
            name = str(dtype)
            st, ref = self._pair(dtype)
            torch.manual_seed(4)
            x = torch.randn(3, 100, 264, device="cuda", dtype=dtype)
            dy = torch.randn(3, 100, 200, device="cuda", dtype=dtype)
            masks = []
            for step in range(2):
                out_st = self._step(st, x, dy)
                out_ref = self._step(ref, x, dy)
                self.assertTrue(torch.equal(st.last_mask, ref.last_mask))
                self.assertEqual(st.offset, ref.offset)
                masks.append(st.last_mask.clone())
                # Float64 reference of this step, from the layer's own mask.
                dense = ops.expand_sparsedrop_mask(st.last_mask, 300, 264,
                                                   st.block).double()
                x2, dy2 = x.reshape(300, 264).double(), dy.reshape(300, 200)
                w, s = st.weight.double(), st.scale
                y64 = s * (x2 * dense) @ w.t() + st.bias.double()
                dx64 = s * (dy2.double() @ w) * dense
                dw64 = s * dy2.double().t() @ (x2 * dense)
                for got, want, what in (
                        (out_st[0].reshape(300, 200), y64, "y"),
                        (out_st[1].reshape(300, 264), dx64, "dx"),
                        (out_st[2], dw64, "dw")):
                    self.assertLess(rel_err(got, want), tol, (name, what))
                for a, b, what in zip(out_st, out_ref, ("y", "dx", "dw",
                                                        "db")):
                    self.assertLess(rel_err(a, b), 2 * tol, (name, what))
            self.assertFalse(torch.equal(masks[0], masks[1]))
            self.assertEqual(st.offset, 2 * 5 * 5)  # 2 steps x 5 x 5 blocks

    def test_eval_is_a_plain_linear(self):
        st, _ = self._pair(torch.bfloat16)
        st.eval()
        x = torch.randn(7, 264, device="cuda", dtype=torch.bfloat16)
        torch.testing.assert_close(st(x), F.linear(x, st.weight, st.bias))

    def test_reproducible_from_the_seed_and_offset_in_state_dict(self):
        a, b = self._pair(torch.float16)
        b.backend = "sparsetile"
        x = torch.randn(130, 264, device="cuda", dtype=torch.float16)
        a(x)
        b.load_state_dict(a.state_dict())
        self.assertEqual(b.offset, a.offset)
        torch.testing.assert_close(a(x), b(x), rtol=0, atol=0)

    def test_shards_draw_the_rows_of_the_one_gpu_mask(self):
        # Two data-parallel ranks, each with half the tokens, drop exactly the
        # blocks one layer drops over the whole batch, step after step.
        whole = SparseDropLinear(264, 72, p=0.5, block=(32, 32), seed=5,
                                 device="cuda", dtype=torch.bfloat16)
        ranks = [SparseDropLinear(264, 72, p=0.5, block=(32, 32), seed=5,
                                  device="cuda", dtype=torch.bfloat16,
                                  shard=(r, 2)) for r in range(2)]
        for _ in range(3):
            x = torch.randn(256, 264, device="cuda", dtype=torch.bfloat16)
            whole(x)
            for r, layer in enumerate(ranks):
                layer(x[128 * r:128 * (r + 1)])
            rows = whole.last_mask.shape[0] // 2
            for r, layer in enumerate(ranks):
                self.assertTrue(torch.equal(
                    layer.last_mask, whole.last_mask[rows * r:rows * (r + 1)]))
                self.assertEqual(layer.offset, whole.offset)
        with self.assertRaises(ValueError):
            ranks[0](torch.randn(100, 264, device="cuda",
                                 dtype=torch.bfloat16))
        with self.assertRaises(ValueError):
            SparseDropLinear(64, 64, p=0.5, shard=(2, 2))

    def test_bad_inputs(self):
        st, _ = self._pair(torch.bfloat16)
        x = torch.randn(10, 264, device="cuda", dtype=torch.bfloat16)
        with self.assertRaises(TypeError) as cm:
            st(x.float())
        self.assertIn("SparseDropLinear", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            st(x.cpu())
        self.assertIn("CUDA", str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            st(x[:, :200])
        self.assertIn("264", str(cm.exception))
        with self.assertRaises(ValueError):
            SparseDropLinear(64, 64, p=1.5)


@requires_gpu
class Sparse24(unittest.TestCase):
    def test_ops(self):
        torch.manual_seed(5)
        w = torch.randn(128, 192, device="cuda", dtype=torch.bfloat16)
        mask = ops.mask24_transposable(w)
        blocks = mask.view(32, 4, 48, 4).permute(0, 2, 1, 3).int()
        self.assertTrue(bool((blocks.sum(3) == 2).all()))  # Rows of blocks.
        self.assertTrue(bool((blocks.sum(2) == 2).all()))  # Columns.
        rw = ops.mask24_rowwise(w)
        self.assertTrue(bool((rw.view(128, 48, 4).int().sum(2) == 2).all()))
        self.assertEqual(ops.mask_flip_rate(mask, mask), 0.0)
        expect = float((mask != rw).double().mean())
        self.assertAlmostEqual(ops.mask_flip_rate(mask, rw), expect)
        vals, meta, vals_t, meta_t = ops.compress24(w, mask)
        # C = 192: 12 words a row, padded to two whole blocks of 8.
        self.assertEqual((list(vals.shape), list(meta.shape)),
                         ([128, 96], [128, 16]))
        self.assertEqual(ops.compressed24_meta_cols(192), 16)
        self.assertEqual((list(vals_t.shape), list(meta_t.shape)),
                         ([192, 64], [192, 8]))
        self.assertEqual(meta.dtype, torch.int16)
        g = torch.randn_like(w)
        want = g.double() + 0.1 * w.double() * (1 - mask.double())
        ops.masked_decay_(g, w, mask, 0.1)
        self.assertLess(rel_err(g, want), 1e-2)
        y = ops.mvue24(w.float(), seed=1, offset=0)
        self.assertTrue(bool(((y.view(-1, 4) != 0).sum(1) <= 2).all()))
        with self.assertRaises(ValueError):
            ops.compress24(w[:, :100], mask[:, :100])

    def test_mask_update_equals_separate_ops(self):
        torch.manual_seed(8)
        w = torch.randn(128, 192, device="cuda", dtype=torch.bfloat16)
        got = ops.mask24_update(w)
        mask, out = ops.mask24_transposable(w, prune=True)
        want = (mask, out) + tuple(ops.compress24(w, mask))
        for name, g, e in zip(("mask", "out", "vals", "meta", "vals_t",
                               "meta_t"), got, want):
            self.assertTrue(torch.equal(g, e.to(g.dtype)), name)

    def test_weight_gradient_equals_mvue_then_dense(self):
        torch.manual_seed(7)
        dy = torch.randn(256, 192, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(256, 128, device="cuda", dtype=torch.bfloat16)
        vals, meta = ops.mvue24_compress_t(dy, seed=3, offset=5)
        self.assertEqual((list(vals.shape), list(meta.shape)),
                         ([192, 128], [192, 16]))
        dw = ops.sparse24_linear_backward_w(x, vals, meta)
        self.assertEqual(dw.dtype, torch.float32)
        # The fused operand is mvue24 of dY^T bit for bit (same seed and
        # offset), so dW is its product with X up to f32 summation.
        s = ops.mvue24(dy.t().contiguous(), seed=3, offset=5)
        want = s.double() @ x.double()
        torch.testing.assert_close(dw.double(), want, rtol=1e-4, atol=2e-3)
        # In x's dtype: the same f32 result rounded to nearest even.
        dw16 = ops.sparse24_linear_backward_w(x, vals, meta,
                                              out_dtype=torch.bfloat16)
        self.assertEqual(dw16.dtype, torch.bfloat16)
        self.assertTrue(torch.equal(dw16, dw.to(torch.bfloat16)))
        out = _nan(192, 128, dtype=torch.bfloat16)
        ops.sparse24_linear_backward_w(x, vals, meta, out=out)
        self.assertTrue(torch.equal(out, dw16))
        with self.assertRaises(ValueError):  # 100 tokens: a 128-token operand
            ops.sparse24_linear_backward_w(x[:100], vals, meta)
        with self.assertRaisesRegex(ValueError, "dW must be torch.float32 or"):
            ops.sparse24_linear_backward_w(x, vals, meta,
                                           out_dtype=torch.float16)
        with self.assertRaisesRegex(ValueError, "out_dtype"):
            ops.sparse24_linear_backward_w(x, vals, meta, out=out,
                                           out_dtype=torch.float32)

    def test_sparse_linear_tilings_agree(self):
        w = torch.randn(256, 192, device="cuda", dtype=torch.bfloat16)
        mask = ops.mask24_transposable(w)
        vals, meta, _, _ = ops.compress24(w, mask)
        x = torch.randn(100, 192, device="cuda", dtype=torch.bfloat16)
        want = ops.sparse24_linear_forward(x, vals, meta)
        for tiles in ({}, {"tile_i": 128, "tile_m": 64, "warps": 4},
                      {"tma": 0, "prefetch": False}):
            got = ops.sparse_linear(x, vals, meta, **tiles)
            # Same K order in every tiling; bf16 output rounding aside.
            torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-1,
                                       msg=lambda m: "%s: %s" % (tiles, m))
        with self.assertRaises(ValueError):
            ops.sparse_linear(x[:, :128], vals, meta)

    def test_k_multiple_of_64_only_against_float64(self):
        # K % 128 == 64 (GPT-2 XL's 1600; 192, 320): the TMA kernels read the
        # metadata's padded last block (0x4444 words, written by compress24
        # and mask24_update) and zeros past K. Y reduces over C, dX over R,
        # dW (MVUE, on the tokens) has R or C = 1600; outputs poisoned.
        for R, C in ((192, 1600), (1600, 320), (1600, 1600)):
            for dtype, tol in DTYPES:
                name = "%s R=%d C=%d" % (dtype, R, C)
                torch.manual_seed(14)
                w = torch.randn(R, C, device="cuda", dtype=dtype)
                mask = ops.mask24_transposable(w)
                vals, meta, vals_t, meta_t = ops.compress24(w, mask)
                for m, rows, cols in ((meta, R, C), (meta_t, C, R)):
                    self.assertEqual(list(m.shape),
                                     [rows, (cols + 127) // 128 * 8], name)
                    if cols % 128:
                        pad = m.reshape(-1)[cols // 128 * 8 * rows:]
                        pad = pad.reshape(rows, 8)[:, (cols // 16) % 8:]
                        self.assertTrue(bool((pad == 0x4444).all()), name)
                got = ops.mask24_update(w)
                for what, a, b in zip(("vals", "meta", "vals_t", "meta_t"),
                                      got[2:], (vals, meta, vals_t, meta_t)):
                    self.assertTrue(torch.equal(a, b), (name, what))
                wp = w.double() * mask.double()
                M = 336  # Ragged against the tiles; M % 4 == 0 for mvue24.
                x = torch.randn(M, C, device="cuda", dtype=dtype)
                y = ops.sparse24_linear_forward(x, vals, meta,
                                                out=_nan(M, R, dtype=dtype))
                self.assertLess(rel_err(y, x.double() @ wp.t()), tol, name)
                dy = torch.randn(M, R, device="cuda", dtype=dtype)
                dx = ops.sparse24_linear_backward_x(
                    dy, vals_t, meta_t, out=_nan(M, C, dtype=dtype))
                self.assertLess(rel_err(dx, dy.double() @ wp), tol, name)
                gv, gm = ops.mvue24_compress_t(dy, seed=5, offset=0)
                dw = ops.sparse24_linear_backward_w(
                    x, gv, gm, out=torch.full((R, C), float("nan"),
                                              device="cuda"))
                s = ops.mvue24(dy.t().contiguous(), seed=5, offset=0)
                torch.testing.assert_close(dw.double(), s.double() @
                                           x.double(), rtol=1e-4, atol=2e-3,
                                           msg=lambda m: "%s: %s" % (name, m))

    def test_layers_at_gpt2_xl_width_against_float64(self):
        # d = 1600, F = 4d: fc reduces over 1600 forward and 6400 in dX,
        # proj the other way round; dense and MVUE dW.
        for fin, fout in ((1600, 6400), (6400, 1600)):
            for weight_grad in ("dense", "mvue"):
                dtype, tol = DTYPES[0]
                name = "%d -> %d %s" % (fin, fout, weight_grad)
                torch.manual_seed(15)
                layer = Sparse24Linear(fin, fout, device="cuda", dtype=dtype,
                                       weight_grad=weight_grad)
                x = torch.randn(2, 150, fin, device="cuda", dtype=dtype,
                                requires_grad=True)
                dy = torch.randn(2, 150, fout, device="cuda", dtype=dtype)
                y = layer(x)
                y.backward(dy)
                wp = layer.weight.double() * layer.mask.double()
                x2, dy2 = (x.detach().reshape(300, fin).double(),
                           dy.reshape(300, fout).double())
                self.assertLess(rel_err(y.reshape(300, fout),
                                        x2 @ wp.t() + layer.bias.double()),
                                tol, name)
                self.assertLess(rel_err(x.grad.reshape(300, fin), dy2 @ wp),
                                tol, name)
                if weight_grad == "dense":
                    self.assertLess(rel_err(layer.weight.grad, dy2.t() @ x2),
                                    tol, name)
                else:
                    self.assertTrue(bool(torch.isfinite(
                        layer.weight.grad).all()), name)

    def test_layer_against_torch_reference(self):
        for dtype, tol in DTYPES:
            name = str(dtype)
            torch.manual_seed(6)
            layer = Sparse24Linear(256, 192, mask_interval=2, decay=1e-2,
                                   device="cuda", dtype=dtype)
            x = torch.randn(3, 100, 256, device="cuda", dtype=dtype,
                            requires_grad=True)
            dy = torch.randn(3, 100, 192, device="cuda", dtype=dtype)
            y = layer(x)
            y.backward(dy)
            m = layer.mask.double()
            self.assertEqual(layer.step, 0)  # Optimizer steps, not forwards.
            self.assertEqual(layer.flip_rate, 0.0)
            self.assertTrue(torch.equal(layer.mask,
                                        ops.mask24_transposable(layer.weight)))
            w = layer.weight.double()
            x2, dy2 = x.detach().reshape(300, 256).double(), dy.reshape(300,
                                                                        192)
            y64 = x2 @ (w * m).t() + layer.bias.double()
            self.assertLess(rel_err(y.reshape(300, 192), y64), tol, name)
            dx64 = dy2.double() @ (w * m)
            self.assertLess(rel_err(x.grad.reshape(300, 256), dx64), tol, name)
            # The backward gives the plain gradient; the masked decay comes
            # once per optimizer step (attach(), or by hand as here).
            dw64 = dy2.double().t() @ x2
            self.assertLess(rel_err(layer.weight.grad, dw64), tol, name)
            layer.apply_masked_decay_()
            self.assertLess(rel_err(layer.weight.grad,
                                    dw64 + 1e-2 * w * (1 - m)), tol, name)

    def test_mask_interval_and_flip_rate(self):
        torch.manual_seed(7)
        layer = Sparse24Linear(128, 64, mask_interval=2, device="cuda",
                               dtype=torch.bfloat16)
        x = torch.randn(65, 128, device="cuda", dtype=torch.bfloat16)
        layer(x)
        first = layer.mask.clone()
        with torch.no_grad():
            layer.weight.copy_(torch.randn_like(layer.weight))
        layer(x)
        layer(x)  # Forwards alone never refresh the mask.
        self.assertTrue(torch.equal(layer.mask, first))
        layer.optimizer_step_()  # Step 1: not a refresh step.
        self.assertTrue(torch.equal(layer.mask, first))
        layer.optimizer_step_()  # Step 2: refreshed.
        expect = float((layer.mask != first).double().mean())
        self.assertGreater(expect, 0)
        self.assertAlmostEqual(layer.flip_rate, expect, places=6)
        layer.eval()
        torch.testing.assert_close(
            layer(x), F.linear(x, layer.sparse_weight(), layer.bias),
            rtol=2e-2, atol=2e-2)
        self.assertEqual(layer.step, 2)

    def test_mvue_weight_gradient(self):
        # weight_grad="mvue": dW on sparse tensor cores from the MVUE 2:4
        # dY^T, in the weight's dtype; bit for bit the ops it is made of,
        # seeded by (seed, optimizer step), and dX as dense.
        for dtype, _ in DTYPES:
            torch.manual_seed(10)
            dense = Sparse24Linear(256, 192, decay=1e-2, device="cuda",
                                   dtype=dtype)
            layer = Sparse24Linear(256, 192, decay=1e-2, device="cuda",
                                   dtype=dtype, weight_grad="mvue", seed=77)
            layer.load_state_dict(dense.state_dict())
            self.assertIn("weight_grad=mvue", repr(layer))
            x = torch.randn(300, 256, device="cuda", dtype=dtype,
                            requires_grad=True)
            dy = torch.randn(300, 192, device="cuda", dtype=dtype)
            for step in (0, 1):
                x.grad = layer.weight.grad = dense.weight.grad = None
                layer(x).backward(dy)
                dx = x.grad
                x.grad = None
                dense(x).backward(dy)
                self.assertTrue(torch.equal(dx, x.grad), str(dtype))
                self.assertEqual(layer.step, step)
                vals, meta = ops.mvue24_compress_t(dy, seed=77,
                                                   offset=step << 32)
                want = ops.sparse24_linear_backward_w(x.detach(), vals, meta,
                                                      out_dtype=dtype)
                got = layer.weight.grad
                self.assertEqual(got.dtype, dtype)
                self.assertTrue(torch.equal(got, want), (str(dtype), step))
                # Unbiased but not equal: near the dense dW, and not it.
                err = rel_err(got, dense.weight.grad)
                self.assertTrue(0 < err < 3, (str(dtype), err))
                layer.optimizer_step_()
                dense.optimizer_step_()
        # A layer used twice before one backward.
        layer.zero_grad()
        (layer(x).float().sum() + layer(x).float().sum()).backward()
        with self.assertRaises(ValueError):
            Sparse24Linear(128, 64, weight_grad="sparse")

    def test_bad_shapes(self):
        with self.assertRaises(ValueError) as cm:
            Sparse24Linear(100, 64)
        self.assertIn("multiples of 64", str(cm.exception))
        layer = Sparse24Linear(128, 64, device="cuda", dtype=torch.float16)
        with self.assertRaises(ValueError):
            layer(torch.randn(4, 64, device="cuda", dtype=torch.float16))
        with self.assertRaises(TypeError):
            layer(torch.randn(4, 128, device="cuda", dtype=torch.bfloat16))


def _gelu_tanh64(h):
    return F.gelu(h, approximate="tanh")


def _mlp_reference(mlp, x, dy):
    """y and the gradients (x, fc.weight, fc.bias, proj.weight, proj.bias) of
    proj(gelu_tanh(fc(x))) in float64 on the layers' own masks, by torch
    autograd: the same 2:4-masked math as the fused kernels, computed
    independently of them."""
    # Detached copies: leaves of their own graph, so their .grad is kept.
    w1 = (mlp.fc.weight.detach().double() *
          mlp.fc.mask.double()).requires_grad_()
    w2 = (mlp.proj.weight.detach().double() *
          mlp.proj.mask.double()).requires_grad_()
    b1 = mlp.fc.bias.detach().double().requires_grad_()
    b2 = mlp.proj.bias.detach().double().requires_grad_()
    x64 = x.detach().double().requires_grad_()
    y = F.linear(_gelu_tanh64(F.linear(x64, w1, b1)), w2, b2)
    y.backward(dy.double())
    return y.detach(), (x64.grad, w1.grad, b1.grad, w2.grad, b2.grad)


def _mlp_grads(mlp, x):
    return (x.grad, mlp.fc.weight.grad, mlp.fc.bias.grad,
            mlp.proj.weight.grad, mlp.proj.bias.grad)


_GRAD_NAMES = ("dx", "fc dW", "fc db", "proj dW", "proj db")


@requires_gpu
class Sparse24FusedMLP(unittest.TestCase):
    """The bias + GELU epilogues of the 2:4 GEMMs (ops) and Sparse24MLP,
    which runs fc -> GELU (tanh) -> proj through them. Shapes where the
    GEMMs take the TMA kernel on sm_90: K a multiple of 128 (256 <-> 512),
    and of 64 only (192 <-> 320, and GPT-2 XL's 1600 <-> 6400), which fell
    back to mma.sp before the metadata's last block was padded."""

    SHAPES = ((300, 256, 512), (77, 192, 320), (130, 1600, 6400))

    def test_epilogue_ops_against_float64(self):
        for dtype, tol in DTYPES:
            for M, d, f in self.SHAPES:
                name = "%s %s" % (dtype, (M, d, f))
                torch.manual_seed(11)
                w = torch.randn(f, d, device="cuda", dtype=dtype) / 8
                mask = ops.mask24_transposable(w)
                vals, meta, vals_t, meta_t = ops.compress24(w, mask)
                wp = w.double() * mask.double()
                x = torch.randn(M, d, device="cuda", dtype=dtype)
                b = torch.randn(f, device="cuda", dtype=dtype)
                h, g = ops.sparse24_linear_forward_act(x, vals, meta, b)
                h64 = x.double() @ wp.t() + b.double()
                self.assertLess(rel_err(h, h64), tol, name)
                # g is gelu_tanh of the stored, rounded h.
                self.assertLess(rel_err(g, _gelu_tanh64(h.double())), tol,
                                name)
                y = ops.sparse24_linear_forward_act(x, vals, meta, b, None)
                self.assertLess(rel_err(y, h64), tol, name)
                y = ops.sparse24_linear_forward_act(x, vals, meta, None, None)
                self.assertLess(rel_err(y, x.double() @ wp.t()), tol, name)
                # The input gradient of the layer d -> f, dX [M, d] = dY
                # [M, f] W (W^T's operand), carried through gelu_tanh' of a
                # pre-activation hd [M, d] (float64: autograd of F.gelu).
                dy = torch.randn(M, f, device="cuda", dtype=dtype)
                hd = torch.randn(M, d, device="cuda", dtype=dtype)
                hd64 = hd.double().requires_grad_()
                _gelu_tanh64(hd64).backward(dy.double() @ wp)
                dx = ops.sparse24_linear_backward_x_act(dy, vals_t, meta_t,
                                                        hd)
                self.assertLess(rel_err(dx, hd64.grad), tol, name)

    def test_epilogue_ops_bad_arguments(self):
        w = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16)
        vals, meta, vals_t, meta_t = ops.compress24(
            w, ops.mask24_transposable(w))
        x = torch.randn(16, 256, device="cuda", dtype=torch.bfloat16)
        with self.assertRaises(ValueError):
            ops.sparse24_linear_forward_act(x, vals, meta, None, "relu")
        with self.assertRaises(ValueError):  # Bias of the wrong size.
            ops.sparse24_linear_forward_act(x, vals, meta, x[0])
        with self.assertRaises(TypeError):  # Bias of the wrong dtype.
            ops.sparse24_linear_forward_act(
                x, vals, meta, torch.zeros(128, device="cuda"))
        dy = torch.randn(16, 128, device="cuda", dtype=torch.bfloat16)
        with self.assertRaises(ValueError):  # h of the wrong shape.
            ops.sparse24_linear_backward_x_act(dy, vals_t, meta_t, dy)
        with self.assertRaises(ValueError):  # No activation.
            ops.sparse24_linear_backward_x_act(dy, vals_t, meta_t, x, None)

    def test_mlp_forward_backward_against_float64(self):
        for dtype, tol in DTYPES:
            for M, d, f in self.SHAPES:
                name = "%s %s" % (dtype, (M, d, f))
                torch.manual_seed(12)
                mlp = Sparse24MLP(d, f, fused=True, device="cuda", dtype=dtype)
                with torch.no_grad():  # Biases large enough to matter.
                    mlp.fc.bias.normal_()
                    mlp.proj.bias.normal_()
                x = torch.randn(M, d, device="cuda", dtype=dtype,
                                requires_grad=True)
                dy = torch.randn(M, d, device="cuda", dtype=dtype)
                y = mlp(x)
                y.backward(dy)
                y64, grads64 = _mlp_reference(mlp, x, dy)
                self.assertLess(rel_err(y, y64), tol, name)
                for what, got, want in zip(_GRAD_NAMES, _mlp_grads(mlp, x),
                                           grads64):
                    self.assertEqual(got.dtype, dtype, what)
                    self.assertLess(rel_err(got, want), tol,
                                    "%s: %s" % (name, what))

    def test_fused_matches_unfused_layers_and_dense_mode(self):
        M, d, f = 4 * 75, 256, 512
        for dtype, tol in DTYPES:
            torch.manual_seed(13)
            fused = Sparse24MLP(d, f, fused=True, device="cuda", dtype=dtype)
            unfused = Sparse24MLP(d, f, fused=False, device="cuda",
                                  dtype=dtype)
            unfused.load_state_dict(fused.state_dict())
            x = torch.randn(4, 75, d, device="cuda", dtype=dtype)
            dy = torch.randn(4, 75, d, device="cuda", dtype=dtype)
            outs = []
            for mlp in (fused, unfused):
                xi = x.clone().requires_grad_()
                y = mlp(xi)
                y.backward(dy)
                self.assertEqual(y.shape, x.shape)
                outs.append((y,) + _mlp_grads(mlp, xi))
            self.assertTrue(torch.equal(fused.fc.mask, unfused.fc.mask))
            for what, a, b in zip(("y",) + _GRAD_NAMES, *outs):
                self.assertLess(rel_err(a, b), tol, "%s %s" % (dtype, what))
            # Dense mode is the unfused composition on whole weights, bit for
            # bit: nn.Linear's math, F.gelu, nn.Linear's math.
            stnn.set_dense(fused, True)
            y = fused(x)
            want = F.linear(F.gelu(F.linear(x, fused.fc.weight, fused.fc.bias),
                                   approximate="tanh"),
                            fused.proj.weight, fused.proj.bias)
            self.assertTrue(torch.equal(y, want), dtype)

    def test_mlp_options(self):
        mlp = Sparse24MLP(128, 256, bias=False, fused=True, device="cuda",
                          dtype=torch.bfloat16, seed=4, weight_grad="mvue")
        self.assertEqual((mlp.fc.seed, mlp.proj.seed), (4, 5))
        self.assertEqual((mlp.in_features, mlp.out_features), (128, 128))
        self.assertEqual(mlp.proj.weight_grad, "mvue")
        x = torch.randn(64, 128, device="cuda", dtype=torch.bfloat16,
                        requires_grad=True)
        mlp(x).float().square().sum().backward()  # No biases, MVUE dW.
        self.assertEqual(mlp.fc.weight.grad.shape, (256, 128))
        self.assertTrue(bool(torch.isfinite(x.grad).all()))
        with self.assertRaises(ValueError):
            Sparse24MLP(128, 256, activation="relu")


@requires_gpu
class GatedActivations(unittest.TestCase):
    def test_against_torch(self):
        cases = (("swiglu", swiglu, lambda g: F.silu(g)),
                 ("geglu", geglu, lambda g: F.gelu(g)),
                 ("geglu_tanh", lambda h: geglu(h, approximate="tanh"),
                  lambda g: F.gelu(g, approximate="tanh")))
        for dtype, tol in DTYPES:
            name = str(dtype)
            for what, fn, act in cases:
                torch.manual_seed(8)
                h = torch.randn(3, 101, 2 * 200, device="cuda", dtype=dtype,
                                requires_grad=True)
                dy = torch.randn(3, 101, 200, device="cuda", dtype=dtype)
                y = fn(h)
                y.backward(dy)
                h64 = h.detach().double().requires_grad_(True)
                g, u = h64.chunk(2, dim=-1)
                y64 = act(g) * u
                y64.backward(dy.double())
                self.assertEqual(y.shape, (3, 101, 200))
                self.assertLess(rel_err(y, y64), tol, (name, what))
                self.assertLess(rel_err(h.grad, h64.grad), tol, (name, what))

    def test_ops_poisoned_output_and_modules(self):
        h = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
        y = ops.glu_forward(h, "silu", out=_nan(64, 128, dtype=torch.bfloat16))
        self.assertFalse(bool(y.isnan().any()))
        torch.testing.assert_close(SwiGLU()(h), y)
        self.assertEqual(GEGLU("tanh")(h).shape, (64, 128))

    def test_bad_inputs(self):
        h = torch.randn(8, 33, device="cuda", dtype=torch.bfloat16)
        with self.assertRaises(ValueError) as cm:
            swiglu(h)
        self.assertIn("2F", str(cm.exception))
        with self.assertRaises(TypeError):
            swiglu(torch.randn(8, 32, device="cuda"))
        with self.assertRaises(TypeError):
            swiglu(torch.randn(8, 32, dtype=torch.bfloat16))
        with self.assertRaises(ValueError):
            geglu(torch.randn(8, 32, device="cuda", dtype=torch.bfloat16),
                  approximate="erf")


@requires_gpu
class Compile(unittest.TestCase):
    class Tiny(torch.nn.Module if torch is not None else object):
        def __init__(self, weight_grad="dense"):
            super().__init__()
            kw = dict(device="cuda", dtype=torch.bfloat16)
            self.up = SparseDropLinear(128, 256, p=0.25, block=(64, 64),
                                       seed=3, **kw)
            self.act = SwiGLU()
            self.down = Sparse24Linear(128, 64, mask_interval=2,
                                       weight_grad=weight_grad, **kw)

        def forward(self, x):
            return self.down(self.act(self.up(x)))

    def test_model_compiles_without_graph_breaks(self):
        self._compiles("dense")

    def test_fused_mlp_compiles_without_graph_breaks(self):
        if not HAS_CUSTOM_OP:
            self.skipTest("torch.library.custom_op needs torch >= 2.4")
        torch.manual_seed(10)
        kw = dict(device="cuda", dtype=torch.bfloat16)
        eager = Sparse24MLP(128, 256, fused=True, **kw)
        compiled_model = Sparse24MLP(128, 256, fused=True, **kw)
        compiled_model.load_state_dict(eager.state_dict())
        compiled = torch.compile(compiled_model, fullgraph=True)
        x = torch.randn(2, 96, 128, **kw)
        outs = []
        for model, params in ((eager, eager), (compiled, compiled_model)):
            y = model(x)
            y.float().square().mean().backward()
            outs.append((y, params.fc.weight.grad, params.fc.bias.grad,
                         params.proj.weight.grad))
        for a, b in zip(*outs):
            self.assertLess(rel_err(a, b), 2e-2)

    def test_model_with_mvue_weight_gradient_compiles(self):
        self._compiles("mvue")

    def _compiles(self, weight_grad):
        if not HAS_CUSTOM_OP:
            self.skipTest("torch.library.custom_op needs torch >= 2.4")
        torch.manual_seed(9)
        eager = self.Tiny(weight_grad)
        compiled_model = self.Tiny(weight_grad)
        compiled_model.load_state_dict(eager.state_dict())
        compiled = torch.compile(compiled_model, fullgraph=True)
        for step in range(3):
            x = torch.randn(2, 96, 128, device="cuda", dtype=torch.bfloat16)
            outs = []
            for model, params in ((eager, eager), (compiled, compiled_model)):
                params.zero_grad()
                y = model(x)
                y.float().square().mean().backward()
                outs.append((y, params.up.weight.grad,
                             params.down.weight.grad))
            for a, b in zip(*outs):
                self.assertLess(rel_err(a, b), 2e-2, step)
        self.assertEqual(compiled_model.up.offset, eager.up.offset)
        self.assertTrue(torch.equal(compiled_model.down.mask,
                                    eager.down.mask))

    def test_reduce_overhead_training_replays_cuda_graphs(self):
        # torch.compile(mode="reduce-overhead") runs the forward and the
        # backward as CUDA graphs (no op of either layer makes inductor skip
        # them), through optimizer steps that refresh the 2:4 mask and
        # SparseDrop masks drawn afresh at every replay: the same as eager.
        if not HAS_CUSTOM_OP:
            self.skipTest("torch.library.custom_op needs torch >= 2.4")
        from torch._dynamo.utils import counters
        import sparsetile.nn as stnn
        torch.manual_seed(11)
        eager, compiled_model = self.Tiny(), self.Tiny()
        compiled_model.load_state_dict(eager.state_dict())
        # Masks taken before compiling: the first forward would otherwise
        # take them inside the graph, and the next one recompile without.
        for m in (eager, compiled_model):
            m.down.refresh_mask_()
        compiled = torch.compile(compiled_model, mode="reduce-overhead",
                                 fullgraph=True)
        opts = []
        for m in (eager, compiled_model):
            opt = torch.optim.SGD(m.parameters(), lr=0.5)
            stnn.attach(opt, m)
            opts.append(opt)
        counters.clear()
        for step in range(5):
            x = torch.randn(2, 96, 128, device="cuda", dtype=torch.bfloat16)
            outs = []
            for model, params, opt in ((eager, eager, opts[0]),
                                       (compiled, compiled_model, opts[1])):
                if model is compiled:
                    torch.compiler.cudagraph_mark_step_begin()
                y = model(x)
                y.float().square().mean().backward()
                outs.append((y.clone(), params.up.weight.grad.clone(),
                             params.down.weight.grad.clone()))
                opt.step()
                opt.zero_grad()
            for a, b in zip(*outs):
                self.assertLess(rel_err(a, b), 2e-2, step)
        self.assertEqual(dict(counters["inductor"]).get("cudagraph_skips", 0),
                         0, dict(counters["inductor"]))
        self.assertEqual(compiled_model.up.offset, eager.up.offset)
        self.assertEqual(compiled_model.down.step, 5)
        same = float((compiled_model.down.mask == eager.down.mask)
                     .double().mean())
        self.assertGreater(same, 0.99)


if __name__ == "__main__":
    unittest.main()
