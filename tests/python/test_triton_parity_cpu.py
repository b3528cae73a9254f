"""bench/triton_parity without a GPU: plot.py draws a made-up run's JSON
(parity_<rev>.png, with Debian's matplotlib when the interpreter running
the test has none), parity.py's shape lists, geometric means and checks'
verdicts, and parity.py's clean exit (status 0, a reason) where torch,
Triton or a GPU is missing. Needs no GPU or torch."""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "bench", "triton_parity")
sys.path.insert(0, BENCH)

import parity  # noqa: E402
import plot  # noqa: E402


def made_up_run():
    rows = []
    for kernel, shape, st, tr, th, check in (
            ("matmul", dict(m=4096, n=4096, k=4096), 1.0, 0.9, 0.8, "pass"),
            ("matmul", dict(m=8192, n=8192, k=8192), 8.0, 8.8, 7.2, "fail"),
            ("attention", dict(z=4, h=32, n_ctx=4096, d=128, causal=True),
             2.0, 1.0, 1.5, "pass"),
            ("vector_add", dict(n=1 << 20), 0.1, 0.1, 0.2, "pass")):
        for impl, ms in (("sparsetile", st), ("triton", tr), ("torch", th)):
            row = dict(kernel=kernel, shape=shape, impl=impl, ms=ms,
                       unit="TFLOP/s", value=1.0 / ms, vs_triton=tr / ms,
                       vs_torch=th / ms)
            if impl == "sparsetile":
                row["check"] = check
            rows.append(row)
    rows.append(dict(kernel="softmax", shape=dict(m=4096, n=1024),
                     impl="sparsetile", error="CompileError: x",
                     check="error"))
    return dict(bench="triton_parity", revision="abc1234", gpu="test GPU",
                date="2026-01-01T00:00:00Z", mode="quick", rows=rows)


class Plot(unittest.TestCase):
    def test_ratios(self):
        data = plot.ratios(made_up_run())
        self.assertEqual(list(data), ["vector_add", "matmul", "attention"])
        self.assertEqual([p[0] for p in data["matmul"]], ["4096", "8192"])
        self.assertAlmostEqual(data["matmul"][0][1], 0.9)
        self.assertAlmostEqual(data["matmul"][1][2], 0.9)
        self.assertEqual(data["attention"][0][0], "4096/128c")
        self.assertEqual(data["vector_add"][0][0], "2^20")

    def test_png(self):
        d = tempfile.mkdtemp()
        try:
            path = os.path.join(d, "parity.json")
            with open(path, "w") as f:
                json.dump(made_up_run(), f)
            try:
                import matplotlib  # noqa: F401
                cmd = [sys.executable]
            except ImportError:
                python = "/usr/bin/python3"
                ok = os.path.exists(python) and subprocess.call(
                    [python, "-c", "import matplotlib"],
                    stderr=subprocess.DEVNULL) == 0
                if not ok:
                    self.skipTest("no matplotlib here or in /usr/bin/python3")
                cmd = [python]
            out = subprocess.run(cmd + [os.path.join(BENCH, "plot.py"), path],
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT,
                                 universal_newlines=True)
            self.assertEqual(out.returncode, 0, out.stdout)
            png = os.path.join(d, "parity_abc1234.png")
            self.assertEqual(out.stdout.strip(), png)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        finally:
            shutil.rmtree(d)


class Parity(unittest.TestCase):
    def test_shapes(self):
        quick = parity.shapes("quick")
        default = parity.shapes("default")
        full = parity.shapes("full")
        kernels = set(k for k, _ in default)
        self.assertEqual(kernels, set(k for k, _ in quick))
        self.assertEqual(kernels, set(plot.KERNEL_ORDER))
        self.assertLess(len(quick), len(default))
        self.assertEqual(len(full), len(default) + 1)
        # Only --small goes below 1024 wide.
        self.assertTrue(all(parity.width(k, s) >= 1024 for k, s in full))
        small = parity.shapes("default", small=True)
        self.assertIn(("softmax", dict(m=4096, n=256)), small)
        self.assertIn(("layer_norm_bwd", dict(m=4096, n=512)), small)
        # The tutorials' ranges: every matmul >= 1024, 16384 only in full.
        mm = [s["m"] for k, s in default if k == "matmul"]
        self.assertEqual((min(mm), max(mm)), (1024, 8192))
        self.assertIn(dict(m=16384, n=16384, k=16384),
                      [s for k, s in full if k == "matmul"])
        va = [s["n"] for k, s in default if k == "vector_add"]
        self.assertEqual((min(va), max(va)), (1 << 12, 1 << 26))
        # Every kernel's case builder exists.
        for k in kernels:
            self.assertTrue(hasattr(parity.Cases, k), k)

    def test_geomeans(self):
        g = parity.geomeans(made_up_run()["rows"])
        self.assertAlmostEqual(g["matmul"]["vs_triton"], (0.9 * 1.1) ** 0.5)
        self.assertEqual(g["all"]["shapes"], 4)
        rows = made_up_run()["rows"] + [dict(
            kernel="softmax", shape=dict(m=4096, n=256), impl="sparsetile",
            ms=1.0, vs_triton=0.1, vs_torch=0.1)]
        self.assertNotIn("softmax", parity.geomeans(rows))

    def test_verdict(self):
        self.assertEqual(parity.verdict([1e-3, 2e-3], 1e-2), (True, 2e-3))
        ok, err = parity.verdict([1e-3, float("nan")], 1e-2)
        self.assertFalse(ok)
        self.assertNotEqual(err, err)
        self.assertFalse(parity.verdict([0.5], 1e-2)[0])

    def test_clean_exit_without_requirements(self):
        try:
            import torch
            if torch.cuda.is_available():
                self.skipTest("torch and a GPU are here")
        except ImportError:
            pass
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = parity.main(["--quick"])
        self.assertEqual(rc, 0)
        self.assertIn("parity.py: skipped:", out.getvalue())


if __name__ == "__main__":
    unittest.main()


class _FakeCases(object):
    """Cases whose implementations are plain Python: one that passes (with
    a Triton that fails its check), one whose setup raises, one whose port
    raises at launch."""

    def good(self, n):
        fns = {i: (lambda: None) for i in ("sparsetile", "triton", "torch",
                                           "sparsetile_kofs")}

        def check(impl):
            return (impl != "triton", 0.5 if impl == "triton" else 1e-4)
        return "GB/s", 2e9, fns, check

    def setup_fails(self, n):
        raise RuntimeError("out of memory")

    def port_fails(self, n):
        def bad():
            raise ValueError("launch failed\nsecond line")

        fns = {"sparsetile": bad, "triton": lambda: None,
               "torch": lambda: None}

        def check(impl):
            fns[impl]()
            return True, 0.0
        return "TFLOP/s", 1e12, fns, check


class _FakeTimer(object):
    MS = dict(sparsetile=1.0, triton=2.0, torch=4.0, sparsetile_kofs=0.5)

    def run(self, fns):
        return {name: self.MS[name] for name in fns}


class Measure(unittest.TestCase):
    """parity.measure's bookkeeping on fake cases: rows, ratios, checks,
    errors attributed to the implementation that raised, the JSON."""

    def test_rows(self):
        d = tempfile.mkdtemp()
        try:
            path = os.path.join(d, "p.json")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rows, failed = parity.measure(
                    _FakeCases(), _FakeTimer(),
                    [("good", dict(n=4096)), ("setup_fails", dict(n=4096)),
                     ("port_fails", dict(n=4096))],
                    path, dict(revision="r1"), lambda: None, lambda: None)
            with open(path) as f:
                saved = json.load(f)
        finally:
            shutil.rmtree(d)
        self.assertEqual(failed, 2)
        self.assertEqual(saved["rows"], json.loads(json.dumps(rows)))
        by = {(r["kernel"], r["impl"]): r for r in rows}
        good = by[("good", "sparsetile")]
        self.assertEqual((good["vs_triton"], good["vs_torch"]), (2.0, 4.0))
        self.assertAlmostEqual(good["value"], 2000.0)  # 2e9 B in 1 ms
        self.assertEqual(good["check"], "pass")
        self.assertEqual(by[("good", "triton")]["check"], "fail")
        self.assertNotIn("check", by[("good", "torch")])
        self.assertEqual(by[("good", "sparsetile_kofs")]["vs_triton"], 4.0)
        self.assertEqual(by[("setup_fails", "setup")]["error"],
                         "RuntimeError: out of memory")
        port = by[("port_fails", "sparsetile")]
        self.assertEqual(port["check"], "error")
        self.assertEqual(port["error"], "ValueError: launch failed")
        self.assertNotIn("ms", port)
        self.assertEqual(by[("port_fails", "triton")]["vs_triton"], 1.0)
        self.assertEqual(by[("port_fails", "triton")]["vs_torch"], 2.0)
        self.assertEqual(saved["geomean"]["all"]["shapes"], 1)
        text = out.getvalue()
        self.assertIn("triton FAILS its check", text)
        self.assertIn("| good (k offsets) | n=4096 | GB/s | 4000.0 |", text)
        self.assertEqual(list(plot.ratios(saved)), ["good"])


class _FakeDtype(object):
    def __init__(self, name, size):
        self.name, self.size = name, size

    def __str__(self):
        return "torch." + self.name


class _FakeTensor(object):
    """Enough of a CUDA torch.Tensor for sparsetile's argument checks."""

    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype
        self.device, self.is_cuda = "cuda:0", True

    def stride(self, dim=None):
        out, acc = [], 1
        for extent in reversed(self.shape):
            out.insert(0, acc)
            acc *= extent
        return tuple(out) if dim is None else out[dim]

    def numel(self):
        n = 1
        for extent in self.shape:
            n *= extent
        return n

    def element_size(self):
        return self.dtype.size

    def data_ptr(self):
        return 1 << 40

    def zero_(self):
        return self


def _fake_torch():
    import types
    fake = types.ModuleType("torch")
    fake.Tensor = _FakeTensor
    fake.float16 = _FakeDtype("float16", 2)
    fake.bfloat16 = _FakeDtype("bfloat16", 2)
    fake.float32 = _FakeDtype("float32", 4)
    fake.int32 = _FakeDtype("int32", 4)
    return fake


class Launchers(unittest.TestCase):
    """Every launcher of ports.py against its kernel's signature, without a
    GPU: the kernels compile through libsparsetile, the arguments pass the
    package's checks (count, pointer element types, scalars) and the grid
    is the one the design needs; only the launch itself is left out. Runs
    where torch is absent (a fake torch stands in); with torch, the GPU
    tests launch the same code."""

    def setUp(self):
        try:
            import torch  # noqa: F401
            self.skipTest("torch is here: test_triton_parity_gpu.py "
                          "launches the ports")
        except ImportError:
            pass
        try:
            import sparsetile
            sparsetile.compile("kernel k(x: *f32) { }", "k")
        except Exception as e:  # no libsparsetile.so
            self.skipTest("libsparsetile is not usable: %s" % e)
        import sparsetile.jit as jit
        import ports
        self.ports, self.torch = ports, _fake_torch()
        self.calls = []
        calls = self.calls

        def run(kernel, *args, **kwargs):
            grid = kwargs.pop("grid")
            kwargs.pop("stream", None)
            values = kernel._bind(args, kwargs)
            kernel._c_args(values)
            calls.append((kernel.name, tuple(kernel._grid(grid, values))))
        self._saved = (sys.modules.get("torch"), jit.Kernel.run,
                       jit.Kernel._fast_run)
        sys.modules["torch"] = self.torch
        jit.Kernel.run = run
        # Every launch through the checked path, which `run` stands in for.
        jit.Kernel._fast_run = lambda *args: False

    def tearDown(self):
        if hasattr(self, "_saved"):
            import sparsetile.jit as jit
            saved_torch, jit.Kernel.run, jit.Kernel._fast_run = self._saved
            if saved_torch is None:
                sys.modules.pop("torch", None)
            else:
                sys.modules["torch"] = saved_torch

    def t(self, *shape, dtype=None):
        return _FakeTensor(shape, dtype or self.torch.float32)

    def test_every_launcher(self):
        P, f16 = self.ports, self.torch.float16
        P.add(self.t(100003), self.t(100003), self.t(100003))
        P.dropout(self.t(5000), self.t(5000), 0.5, 7)
        P.softmax(self.t(97, 3000), self.t(97, 3000))
        x, w = self.t(300, 12288, dtype=f16), self.t(12288, dtype=f16)
        P.layer_norm_fwd(x, w, w, 1e-5, x, self.t(300), self.t(300))
        P.layer_norm_bwd(x, x, w, self.t(300), self.t(300), x, w, w,
                         self.t(64, 12288), self.t(64, 12288))
        for kofs in (False, True):
            P.matmul(self.t(1000, 515, dtype=f16),
                     self.t(515, 1030, dtype=f16),
                     self.t(1000, 1030, dtype=f16), kofs=kofs)
        P.matmul(self.t(256, 64, dtype=self.torch.bfloat16),
                 self.t(64, 128, dtype=self.torch.bfloat16),
                 self.t(256, 128, dtype=self.torch.bfloat16), leaky=False)
        for d in (64, 128):
            q = self.t(2, 3, 1000, d, dtype=f16)
            P.attention(q, q, q, q, self.t(2, 3, 1000), 0.125, True)
        i32 = self.torch.int32
        P.bsr_matmul(self.t(512, 1024, dtype=f16),
                     self.t(1024, 256, dtype=f16),
                     self.t(512, 256, dtype=f16), self.t(5, dtype=i32),
                     self.t(20, dtype=i32))
        self.assertEqual(self.calls, [
            ("add", (98, 1, 1)),
            ("seeded_dropout", (5, 1, 1)),
            ("softmax", (97, 1, 1)),
            ("layer_norm_fwd", (300, 1, 1)),
            ("layer_norm_bwd_dx", (300, 1, 1)),
            ("layer_norm_bwd_dwdb", (96, 1, 1)),
            ("matmul", (72, 1, 1)),
            ("matmul_kofs", (72, 1, 1)),
            ("matmul", (2, 1, 1)),
            ("attn_fwd", (8, 6, 1)),
            ("attn_fwd", (8, 6, 1)),
            ("bsr_matmul", (8, 1, 1)),
        ])

    def test_wrong_dtype_is_refused(self):
        import sparsetile
        f16 = self.torch.float16
        with self.assertRaises(sparsetile.ArgumentTypeError):
            self.ports.softmax(self.t(4, 64, dtype=f16), self.t(4, 64))
