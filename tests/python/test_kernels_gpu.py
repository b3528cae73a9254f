"""Launching DSL kernels from Python on a GPU: torch tensors and CuPy arrays
against references, argument errors that name the parameter and launch
nothing (outputs are NaN-poisoned first and must stay NaN), streams, scalar
and descriptor arguments. Skips without torch or a CUDA GPU."""

import os
import time
import unittest

from _gpu import requires_gpu, rel_err, sm, torch

import sparsetile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
VECTOR_ADD = os.path.join(REPO, "dsl_examples", "vector_add.tile")
MATMUL = os.path.join(REPO, "dsl_examples", "matmul.tile")


def _grid(meta):
    return (sparsetile.cdiv(meta["n"], meta["BLOCK"]),)


@requires_gpu
class VectorAdd(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        self.n = 100003  # Ragged: not a multiple of BLOCK.
        self.x = torch.randn(self.n, device="cuda")
        self.y = torch.randn(self.n, device="cuda")
        self.out = torch.full((self.n,), float("nan"), device="cuda")
        self.k = sparsetile.compile(VECTOR_ADD, "vector_add", BLOCK=1024)

    def assertStillPoisoned(self):
        torch.cuda.synchronize()
        self.assertTrue(bool(self.out.isnan().all()),
                        "the output was written")

    def assertNotWritten(self, side):
        """The launch is queued behind the sleep on `side`: a snapshot of
        the output taken on another stream (streams from torch are
        non-blocking, so it does not wait for `side`) is still all NaN. A
        launch on any other stream would have run during the host sleep."""
        time.sleep(0.02)
        probe = torch.cuda.Stream()
        with torch.cuda.stream(probe):
            snapshot = self.out.clone()
        probe.synchronize()
        self.assertFalse(side.query(), "the sleep was too short")
        self.assertTrue(bool(snapshot.isnan().all()),
                        "the kernel did not wait for the side stream")
        side.synchronize()

    def test_torch_tensors(self):
        self.k[_grid](self.x, self.y, self.out, self.n)
        torch.testing.assert_close(self.out, self.x + self.y, rtol=0, atol=0)

    def test_constants_and_tuple_grid(self):
        k = sparsetile.compile(VECTOR_ADD, "vector_add", BLOCK=256)
        k[(sparsetile.cdiv(self.n, 256), 1, 1)](self.x, self.y, self.out,
                                                self.n)
        torch.testing.assert_close(self.out, self.x + self.y, rtol=0, atol=0)

    def test_launch_time_constants(self):
        # BLOCK and num_warps at the launch, as Triton takes them; the grid
        # callable sees the launch's BLOCK.
        self.k[_grid](self.x, self.y, self.out, self.n, BLOCK=256,
                      num_warps=2)
        torch.testing.assert_close(self.out, self.x + self.y, rtol=0, atol=0)

    def test_keyword_arguments(self):
        self.k[_grid](self.x, self.y, n=self.n, out=self.out)
        torch.testing.assert_close(self.out, self.x + self.y, rtol=0, atol=0)

    def test_cupy_arrays(self):
        try:
            import cupy
        except ImportError:
            self.skipTest("cupy is not installed")
        x = cupy.random.standard_normal(self.n, dtype=cupy.float32)
        y = cupy.random.standard_normal(self.n, dtype=cupy.float32)
        out = cupy.full(self.n, cupy.nan, dtype=cupy.float32)
        self.k[_grid](x, y, out, self.n)
        cupy.cuda.Device().synchronize()
        self.assertTrue(bool(cupy.allclose(out, x + y, rtol=0, atol=0)))
        with self.assertRaises(sparsetile.ArgumentTypeError) as cm:
            self.k[_grid](x.astype(cupy.float16), y, out, self.n)
        self.assertIn("parameter 'x' expects a pointer to f32",
                      str(cm.exception))

    def test_dlpack_objects(self):
        class OnlyDlpack(object):
            """An array known only through the DLPack protocol."""

            def __init__(self, t):
                self.t = t

            def __dlpack__(self, stream=None, **kwargs):
                return self.t.__dlpack__(stream=stream, **kwargs)

            def __dlpack_device__(self):
                return self.t.__dlpack_device__()

        x, y, out = OnlyDlpack(self.x), OnlyDlpack(self.y), OnlyDlpack(self.out)
        self.k[_grid](x, y, out, self.n)
        torch.cuda.synchronize()
        torch.testing.assert_close(self.out, self.x + self.y, rtol=0, atol=0)
        with self.assertRaises(sparsetile.ArgumentTypeError):
            self.k[_grid](OnlyDlpack(self.x.half()), y, out, self.n)

    def test_wrong_dtype_names_the_parameter(self):
        with self.assertRaises(sparsetile.ArgumentTypeError) as cm:
            self.k[_grid](self.x.bfloat16(), self.y, self.out, self.n)
        self.assertIn("vector_add: parameter 'x' expects a pointer to f32, "
                      "got a torch.bfloat16 tensor", str(cm.exception))
        self.assertIsInstance(cm.exception, TypeError)
        self.assertStillPoisoned()

    def test_cpu_tensor(self):
        with self.assertRaises(sparsetile.ArgumentTypeError) as cm:
            self.k[_grid](self.x, self.y.cpu(), self.out, self.n)
        self.assertIn("parameter 'y'", str(cm.exception))
        self.assertIn("CUDA", str(cm.exception))
        self.assertStillPoisoned()

    def test_argument_count(self):
        with self.assertRaises(TypeError) as cm:
            self.k[_grid](self.x, self.y, self.out)
        self.assertIn("vector_add", str(cm.exception))
        self.assertIn("'n'", str(cm.exception))
        self.assertStillPoisoned()

    def test_int_out_of_range(self):
        with self.assertRaises(ValueError) as cm:
            self.k[(1,)](self.x, self.y, self.out, 2 ** 31)
        self.assertIn("parameter 'n'", str(cm.exception))
        self.assertStillPoisoned()

    def test_tensor_for_scalar(self):
        with self.assertRaises(TypeError) as cm:
            self.k[(1,)](self.x, self.y, self.out,
                         torch.tensor(5, device="cuda"))
        self.assertIn("parameter 'n' expects an i32 scalar",
                      str(cm.exception))
        self.assertStillPoisoned()

    def test_lands_on_torch_current_stream(self):
        side = torch.cuda.Stream()
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(500000000)  # Keep `side` busy (~0.3 s).
            self.k[_grid](self.x, self.y, self.out, self.n)
        self.assertNotWritten(side)
        torch.testing.assert_close(self.out, self.x + self.y, rtol=0, atol=0)

    def test_explicit_stream(self):
        side = torch.cuda.Stream()
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(500000000)
        self.k[_grid](self.x, self.y, self.out, self.n, stream=side)
        self.assertNotWritten(side)
        torch.testing.assert_close(self.out, self.x + self.y, rtol=0, atol=0)


@requires_gpu
class ScalarsAndDescriptors(unittest.TestCase):
    def _operands(self, dtype, M=200, N=136, K=96):
        torch.manual_seed(1)
        a = torch.randn(M, K, device="cuda", dtype=dtype)
        b = torch.randn(K, N, device="cuda", dtype=dtype)
        c = torch.full((M, N), float("nan"), device="cuda")
        return a, b, c

    def test_matmul_pointer_kernel_with_dtype_constant(self):
        for dtype in (torch.float16, torch.bfloat16):
            a, b, c = self._operands(dtype)
            (M, K), N = a.shape, b.shape[1]
            k = sparsetile.compile(MATMUL, "matmul", T=dtype)
            k[lambda m: (sparsetile.cdiv(m["M"], m["BM"]),
                         sparsetile.cdiv(m["N"], m["BN"]))](
                a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), 0.5)
            ref = 0.5 * (a.double() @ b.double())
            self.assertLess(rel_err(c, ref), 1e-2, dtype)

    def test_matmul_descriptor_kernel(self):
        a, b, c = self._operands(torch.bfloat16, M=256, N=256, K=192)
        (M, K), N = a.shape, b.shape[1]
        k = sparsetile.compile(MATMUL, "matmul_blocks", T="bf16")
        grid = (sparsetile.cdiv(M, 128), sparsetile.cdiv(N, 128))
        if sm() < 80:
            self.skipTest("dot needs sm_80")
        k[grid](a, b, c, M, N, K, c.stride(0), 2.0)
        ref = 2.0 * (a.double() @ b.double())
        self.assertLess(rel_err(c, ref), 1e-2)

    def test_descriptor_needs_unit_column_stride(self):
        a, b, c = self._operands(torch.bfloat16, M=128, N=128, K=128)
        k = sparsetile.compile(MATMUL, "matmul_blocks", T="bf16")
        with self.assertRaises(ValueError) as cm:
            k[(1, 1)](a.t(), b, c, 128, 128, 128, 128, 1.0)
        self.assertIn("parameter 'a'", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            k[(1, 1)](a.half(), b, c, 128, 128, 128, 128, 1.0)
        self.assertIn("parameter 'a' expects a 2-D tensor of bf16",
                      str(cm.exception))
        torch.cuda.synchronize()
        self.assertTrue(bool(c.isnan().all()))


if __name__ == "__main__":
    unittest.main()


SCALE = '''
kernel scale(x: *f32, out: *f32, a: f32, n: i32, const BLOCK: i32 = 1024) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = offs < n;
  store(out + offs, load(x + offs, mask=m) * a, mask=m);
}
'''


@requires_gpu
class FastLaunch(unittest.TestCase):
    """The launch path without conversions (sparsetile/_fastlaunch.py): it
    computes what the checked path does, and anything it does not recognise
    goes to the checked path (whose errors the VectorAdd tests check)."""

    def setUp(self):
        torch.manual_seed(2)
        self.n = 5000
        self.x = torch.randn(self.n, device="cuda")
        self.out = torch.full((self.n,), float("nan"), device="cuda")

    def test_plan_is_made_and_used(self):
        from sparsetile import _fastlaunch
        k = sparsetile.compile(SCALE, BLOCK=512)
        grid = (sparsetile.cdiv(self.n, 512),)
        self.assertTrue(k._fast_run((self.x, self.out, 1.5, self.n), grid,
                                    None))
        self.assertIsInstance(k._plan, _fastlaunch.Plan)
        torch.testing.assert_close(self.out, self.x * 1.5, rtol=0, atol=0)
        # What it leaves to the checked path: a CPU tensor, an int too
        # large for i32, a grid of floats; each launches nothing here.
        for args, g in (((self.x.cpu(), self.out, 1.0, self.n), grid),
                        ((self.x, self.out, 1.0, 2 ** 31), grid),
                        ((self.x, self.out, 1.0, self.n), (2.0,)),
                        ((self.x, self.out, 1.0), grid)):
            self.assertFalse(k._fast_run(args, g, None), args)

    def test_scalars_and_grid_functions(self):
        k = sparsetile.compile(SCALE)
        for a in (0.25, -3, 1e30):
            self.out.fill_(float("nan"))
            k[lambda m: [sparsetile.cdiv(m["n"], m["BLOCK"])]](
                self.x, self.out, a, self.n)
            torch.testing.assert_close(self.out, self.x * float(a), rtol=0,
                                       atol=0)
        with self.assertRaises(ValueError):  # f32 overflow, from the checked path
            k[(1,)](self.x, self.out, 1e300, self.n)

    def test_descriptor_kernels_take_the_checked_path(self):
        k = sparsetile.compile(MATMUL, "matmul_blocks", T="bf16")
        a = torch.randn(128, 128, device="cuda", dtype=torch.bfloat16)
        c = torch.full((128, 128), float("nan"), device="cuda")
        if sm() < 80:
            self.skipTest("dot needs sm_80")
        k[(1, 1)](a, a, c, 128, 128, 128, 128, 1.0)
        self.assertIs(k._plan, False)
        self.assertLess(rel_err(c, a.double() @ a.double()), 1e-2)

    def test_cuda_graph_capture(self):
        # The fast path launches on torch's current stream, which under
        # torch.cuda.graph is the capture stream: the launch is recorded
        # and replays with the tensors' current contents.
        k = sparsetile.compile(SCALE)
        grid = (sparsetile.cdiv(self.n, 1024),)
        k[grid](self.x, self.out, 2.0, self.n)  # compiled before capture
        torch.cuda.synchronize()
        self.out.fill_(float("nan"))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            k[grid](self.x, self.out, 2.0, self.n)
        self.assertIsInstance(k._plan, sparsetile._fastlaunch.Plan)
        torch.cuda.synchronize()
        self.assertTrue(bool(self.out.isnan().all()), "ran at capture")
        self.x.copy_(torch.randn_like(self.x))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(self.out, self.x * 2.0, rtol=0, atol=0)

    def test_threads_launching_one_kernel(self):
        # Each thread has its own argument buffer: launches from several
        # threads at once keep their own pointers and scalars.
        import threading
        k = sparsetile.compile(SCALE)
        outs = [torch.full((self.n,), float("nan"), device="cuda")
                for _ in range(8)]
        errors = []

        def work(i):
            try:
                with torch.cuda.stream(torch.cuda.Stream()):
                    for _ in range(200):
                        k[(sparsetile.cdiv(self.n, 1024),)](
                            self.x, outs[i], float(i + 1), self.n)
                    torch.cuda.current_stream().synchronize()
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for i, out in enumerate(outs):
            torch.testing.assert_close(out, self.x * float(i + 1), rtol=0,
                                       atol=0)


AUTOTUNED_AXPY = '''
@autotune(key=[n], grid=[cdiv(n, BLOCK)],
          configs=[{BLOCK: 128}, {BLOCK: 1024, num_warps: 8}])
kernel axpy(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 256) {
  let i = program_id(0) * BLOCK + arange(0, BLOCK);
  let o = out + i;
  store(o, load(o, mask=i < n) + 2.0 * load(x + i, mask=i < n), mask=i < n);
}
'''


@requires_gpu
class Autotuned(unittest.TestCase):
    """A kernel that declares @autotune, launched as kernel(*args): tuning
    (on scratch outputs) leaves the in-place output to the winner alone."""

    def test_in_place_kernel_runs_once(self):
        torch.manual_seed(0)
        n = 100003
        x = torch.randn(n, device="cuda")
        out = torch.randn(n, device="cuda")
        before = out.clone()
        want = out + 2 * x
        k = sparsetile.compile(AUTOTUNED_AXPY)
        self.assertTrue(k.autotuned)
        index, config = k.autotune_choice(x, out, n)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, before, rtol=0, atol=0)
        self.assertIn(index, (0, 1))
        self.assertIn("BLOCK=", config)
        k(x, out, n)
        torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)

    def test_grid_launch(self):
        # Triton's habit: kernel[grid](...) on an autotuned kernel. A grid
        # function sees the chosen configuration's BLOCK; a tuple grid is
        # taken as given (here more programs than needed: the mask holds).
        torch.manual_seed(3)
        n = 70001
        x = torch.randn(n, device="cuda")
        k = sparsetile.compile(AUTOTUNED_AXPY)
        blocks = []

        def grid(meta):
            blocks.append(meta["BLOCK"])
            return (sparsetile.cdiv(meta["n"], meta["BLOCK"]),)
        out = torch.randn(n, device="cuda")
        want = out + 2 * x
        k[grid](x, out, n)
        torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)
        _, config = k.autotune_choice(x, out, n)
        self.assertEqual("BLOCK=%d" % blocks[-1], config.split()[0])
        out = torch.randn(n, device="cuda")
        want = out + 2 * x
        k[(sparsetile.cdiv(n, 128),)](x, out, n)
        torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)
