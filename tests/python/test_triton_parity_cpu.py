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
