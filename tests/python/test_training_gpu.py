"""Training with the sparse layers as torch users do it: fp32 master weights
under torch.autocast, gradient accumulation and a GradScaler with the masked
decay applied once per optimizer step, the mask refreshed in optimizer
steps, the dense fine-tuning switch, swapping nn.Linear modules in and out
with their state_dicts, and CUDA graphs (each layer's and the fused
Sparse24MLP's forward + backward, and a whole training step captured and
replayed, bit for bit eager). Skips without torch or a CUDA GPU."""

import ctypes
import unittest

from _gpu import HAVE_GPU, rel_err, requires_gpu, torch

if HAVE_GPU:
    import torch.nn.functional as F
    from torch import nn

    import sparsetile.nn as stnn
    from sparsetile import _lib, ops
    from sparsetile.nn import (Sparse24Linear, Sparse24MLP, SparseDropLinear,
                               SwiGLU)

BF16 = torch.bfloat16 if torch is not None else None


def _launch_memory():
    """(descriptor blocks, uploads, uploads captured in graphs, tile
    queues) from the library."""
    out = (ctypes.c_int64 * 4)()
    _lib.check(_lib.lib().st_launch_memory_stats(out))
    return tuple(out)


class _Block(nn.Module if torch is not None else object):
    """fc (d -> 2F, SparseDrop on its input) -> SwiGLU -> proj (F -> d,
    2:4), with a residual: the layers of a transformer MLP."""

    def __init__(self, d=128, f=256, dtype=BF16, p=0.25, interval=1000):
        super().__init__()
        kw = dict(device="cuda", dtype=dtype)
        self.fc = SparseDropLinear(d, 2 * f, p=p, block=(64, 64), seed=5,
                                   **kw)
        self.act = SwiGLU()
        self.proj = Sparse24Linear(f, d, mask_interval=interval, decay=1e-2,
                                   **kw)

    def forward(self, x):
        return x + self.proj(self.act(self.fc(x)))


@requires_gpu
class MasterWeights(unittest.TestCase):
    def test_fp32_params_under_autocast_match_bf16_params(self):
        # An fp32 layer under autocast computes what a bf16 copy of it
        # computes, bit for bit, and its gradient is that one, in fp32.
        # The fused Sparse24MLP too (its biases cast inside its op).
        torch.manual_seed(1)
        for cls, kw in ((Sparse24Linear, {}),
                        (SparseDropLinear, dict(p=0.3, block=(64, 64))),
                        (Sparse24MLP, dict(fused=True))):
            f32 = cls(256, 192, device="cuda", dtype=torch.float32, **kw)
            x = torch.randn(200, 256, device="cuda")
            with torch.autocast("cuda", dtype=BF16):
                y = f32(x)
                self.assertEqual(y.dtype, BF16)
                y.float().square().sum().backward()
            b16 = cls(256, 192, device="cuda", dtype=BF16, **kw)
            b16.load_state_dict(f32.state_dict())  # Casts; keeps the mask.
            if cls is SparseDropLinear:
                b16.offset = 0
            y16 = b16(x.to(BF16))
            y16.float().square().sum().backward()
            self.assertTrue(torch.equal(y, y16), cls.__name__)
            pairs = zip(f32.named_parameters(), b16.parameters()) \
                if cls is Sparse24MLP else [(("weight", f32.weight),
                                             b16.weight)]
            for (name, p), q in pairs:
                self.assertEqual(p.grad.dtype, torch.float32, name)
                self.assertTrue(torch.equal(p.grad, q.grad.float()),
                                "%s %s" % (cls.__name__, name))

    def test_fp32_without_autocast_is_a_clear_error(self):
        layer = Sparse24Linear(128, 64, device="cuda", dtype=torch.float32)
        with self.assertRaises(TypeError) as cm:
            layer(torch.randn(4, 128, device="cuda"))
        self.assertIn("autocast", str(cm.exception))


@requires_gpu
class OptimizerStep(unittest.TestCase):
    def _model(self, interval=1000):
        torch.manual_seed(2)
        return Sparse24Linear(128, 64, mask_interval=interval, decay=0.05,
                              bias=False, device="cuda",
                              dtype=torch.float32)

    def test_decay_once_per_step_with_accumulation_and_grad_scaler(self):
        layer = self._model()
        opt = torch.optim.SGD(layer.parameters(), lr=1.0)
        handle = stnn.attach(opt, layer)
        scaler = torch.amp.GradScaler("cuda", init_scale=1024.0)
        xs = [torch.randn(96, 128, device="cuda") for _ in range(3)]
        w0 = layer.weight.detach().double().clone()
        for x in xs:  # Three accumulated micro-batches, scaled losses.
            with torch.autocast("cuda", dtype=BF16):
                loss = layer(x).float().square().mean()
            scaler.scale(loss).backward()
        grad = layer.weight.grad.double() / 1024.0  # What unscaling gives.
        m = layer.mask.double()
        scaler.step(opt)
        scaler.update()
        want = w0 - (grad + 0.05 * w0 * (1 - m))
        self.assertLess(rel_err(layer.weight.detach(), want), 1e-5)
        self.assertEqual(layer.step, 1)
        handle.remove()

    def test_mask_refresh_and_compression_count_optimizer_steps(self):
        layer = self._model(interval=2)
        opt = torch.optim.SGD(layer.parameters(), lr=0.5)
        stnn.attach(opt, layer)
        calls = []
        real = ops.compress24

        def counting(*args, **kwargs):
            calls.append(1)
            return real(*args, **kwargs)

        ops.compress24 = counting
        try:
            masks = []
            for step in range(4):
                for _ in range(3):  # Accumulated forwards share one packing.
                    with torch.autocast("cuda", dtype=BF16):
                        layer(torch.randn(64, 128, device="cuda")).float() \
                            .sum().backward()
                self.assertEqual(len(calls), step + 1)
                masks.append(layer.mask.clone())
                opt.step()
                opt.zero_grad()
        finally:
            ops.compress24 = real
        self.assertEqual(layer.step, 4)
        # Refreshed after steps 2 and 4 only: masks[1] (before step 2's
        # refresh) equals masks[0]; masks[2] is the refreshed one.
        self.assertTrue(torch.equal(masks[0], masks[1]))
        self.assertFalse(torch.equal(masks[1], masks[2]))
        rates = stnn.flip_rates(layer)
        self.assertTrue(rates.is_cuda)
        self.assertGreater(float(rates[0]), 0.0)

    def test_forward_follows_fused_optimizer_updates(self):
        # AdamW(fused=True) updates W without bumping its version counter:
        # the compressed operands must still follow every step.
        for how in ("attach", "by hand", "not driven"):
            layer = self._model()
            opt = torch.optim.AdamW(layer.parameters(), lr=1e-2, fused=True)
            if how == "attach":
                stnn.attach(opt, layer)
            x = torch.randn(64, 128, device="cuda")
            for _ in range(3):
                with torch.autocast("cuda", dtype=BF16):
                    y = layer(x)
                    want = F.linear(x, layer.sparse_weight())
                torch.testing.assert_close(y, want, rtol=2e-2, atol=2e-2,
                                           msg=how)
                y.float().square().sum().backward()
                opt.step()
                if how == "by hand":
                    layer.optimizer_step_()
                opt.zero_grad()

    def test_dense_switch(self):
        layer = self._model()
        x = torch.randn(32, 128, device="cuda")
        with torch.autocast("cuda", dtype=BF16):
            sparse = layer(x)
            stnn.set_dense(layer, True)
            dense = layer(x)
            torch.testing.assert_close(dense, F.linear(x, layer.weight),
                                       rtol=0, atol=0)
        self.assertFalse(torch.allclose(sparse.float(), dense.float()))
        self.assertIn("dense=True", repr(layer))


@requires_gpu
class Swap(unittest.TestCase):
    def _mlp(self):
        torch.manual_seed(3)
        return nn.Sequential(nn.Linear(128, 256), nn.GELU(),
                             nn.Linear(256, 128), nn.Linear(128, 10)).cuda()

    def test_sparsify_shares_weights_and_loads_linear_state_dicts(self):
        model = self._mlp()
        dense_sd = {k: v.clone() for k, v in model.state_dict().items()}
        w0 = model[0].weight
        stnn.sparsify_(model, "sparse24")
        self.assertIsInstance(model[0], Sparse24Linear)
        self.assertIsInstance(model[2], Sparse24Linear)
        self.assertIs(type(model[3]), nn.Linear)  # 10 outputs: not 2:4.
        self.assertIs(model[0].weight, w0)
        model.load_state_dict(dense_sd)  # nn.Linear's keys, strict.
        x = torch.randn(16, 128, device="cuda")
        with torch.autocast("cuda", dtype=BF16):
            y = model(x)
        # A state_dict round trip between sparse models gives the same mask
        # and outputs; to_dense gives the same function as a plain Linear.
        other = stnn.sparsify_(self._mlp(), "sparse24")
        other.load_state_dict(model.state_dict())
        self.assertTrue(torch.equal(other[0].mask, model[0].mask))
        with torch.autocast("cuda", dtype=BF16):
            self.assertTrue(torch.equal(other(x), y))
            plain = model[0].to_dense()
            self.assertIs(type(plain), nn.Linear)
            torch.testing.assert_close(plain(x), model[0](x), rtol=2e-2,
                                       atol=2e-2)
        with self.assertRaises(ValueError):
            stnn.sparsify_(self._mlp(), "sparse24",
                           filter_fn=lambda name, m: name == "3")
        drop = stnn.sparsify_(self._mlp(), "sparsedrop", p=0.1)
        self.assertIsInstance(drop[3], SparseDropLinear)
        drop.load_state_dict(dense_sd)


@requires_gpu
class CudaGraphs(unittest.TestCase):
    def _capture(self, fn):
        # Warm up on a side stream (compiles, autotunes, fills caches), as
        # torch.cuda.graph's documentation asks, then capture.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = fn()
        return graph, out

    def test_layers_forward_backward_capture(self):
        for make in (lambda: SparseDropLinear(256, 192, p=0.3, block=(64, 64),
                                              device="cuda", dtype=BF16),
                     lambda: Sparse24Linear(256, 192, device="cuda",
                                            dtype=BF16)):
            torch.manual_seed(4)
            layer = make()
            x = torch.randn(128, 256, device="cuda", dtype=BF16,
                            requires_grad=True)

            def step():
                layer.weight.grad = x.grad = None
                y = layer(x)
                y.float().square().sum().backward()
                return y

            graph, y = self._capture(step)
            graph.replay()
            torch.cuda.synchronize()
            # The replay is the eager step: same output, same gradients.
            eager = make()
            eager.load_state_dict(layer.state_dict())
            if isinstance(layer, SparseDropLinear):
                eager.offset = layer.offset - 2 * 4  # One mask of 2 x 4 back.
            xe = x.detach().clone().requires_grad_(True)
            ye = eager(xe)
            ye.float().square().sum().backward()
            self.assertTrue(torch.equal(y, ye), type(layer).__name__)
            self.assertTrue(torch.equal(x.grad, xe.grad))
            self.assertTrue(torch.equal(layer.weight.grad, eager.weight.grad))

    def test_fused_mlp_forward_backward_capture(self):
        # Sparse24MLP's fused path (fc's bias + GELU epilogue, proj's bias,
        # the GELU backward in proj's dX) captured and replayed: the same
        # outputs and gradients as an eager step, bit for bit.
        torch.manual_seed(6)
        mlp = Sparse24MLP(256, 512, fused=True, device="cuda", dtype=BF16)
        x = torch.randn(128, 256, device="cuda", dtype=BF16,
                        requires_grad=True)
        params = list(mlp.parameters())

        def step():
            for p in params:
                p.grad = None
            x.grad = None
            y = mlp(x)
            y.float().square().sum().backward()
            return y

        graph, y = self._capture(step)
        graph.replay()
        torch.cuda.synchronize()
        eager = Sparse24MLP(256, 512, fused=True, device="cuda", dtype=BF16)
        eager.load_state_dict(mlp.state_dict())
        xe = x.detach().clone().requires_grad_(True)
        ye = eager(xe)
        ye.float().square().sum().backward()
        self.assertTrue(torch.equal(y, ye))
        self.assertTrue(torch.equal(x.grad, xe.grad))
        for (name, p), q in zip(mlp.named_parameters(), eager.parameters()):
            self.assertTrue(torch.equal(p.grad, q.grad), name)

    def test_whole_training_step_replays_as_eager(self):
        torch.manual_seed(5)
        eager, graphed = _Block(), _Block()
        graphed.load_state_dict(eager.state_dict())
        opts = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
                for m in (eager, graphed)]
        for m, opt in zip((eager, graphed), opts):
            stnn.attach(opt, m)
        data = [torch.randn(256, 128, device="cuda", dtype=BF16)
                for _ in range(5)]

        def train_step(model, opt, x):
            y = model(x)
            y.float().square().mean().backward()
            opt.step()
            return y

        for x in data:
            opts[0].zero_grad(set_to_none=False)
            train_step(eager, opts[0], x)
        static_x = data[0].clone()
        opts[1].zero_grad(set_to_none=False)

        def step():
            opts[1].zero_grad(set_to_none=False)
            return train_step(graphed, opts[1], static_x)

        before = _launch_memory()
        graph, _ = self._capture(step)  # The warm-up is step 1.
        self.assertGreater(_launch_memory()[2], before[2])
        for x in data[1:]:
            static_x.copy_(x)
            graph.replay()
        torch.cuda.synchronize()
        for (name, a), b in zip(eager.state_dict().items(),
                                graphed.state_dict().values()):
            if isinstance(a, torch.Tensor):
                self.assertTrue(torch.equal(a, b), name)
        self.assertEqual(graphed.fc.offset, eager.fc.offset)


if __name__ == "__main__":
    unittest.main()
