"""bench/plot.py reads one run's JSON files: the dense GEMM table puts the
two-process ratio (our bench against torch_ref.py's cuBLAS, timed minutes
apart) beside the same-process one from clocks_p.py, and shows the latter
only when the run has it. Needs no GPU, torch or matplotlib."""

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))

import plot  # noqa: E402


def _write(directory, name, bench, rows):
    with open(os.path.join(directory, name), "w") as f:
        json.dump({"bench": bench, "device": "test GPU", "rows": rows}, f)


class DenseTable(unittest.TestCase):
    def _run(self, with_clocks):
        d = tempfile.mkdtemp()
        _write(d, "sparsedrop_bench.json", "sparsedrop", [
            {"kernel": "gemm", "M": 8192, "N": 8192, "K": 8192,
             "tiling": "128x256", "ms": 1.5, "tflops": 733.0},
            {"kernel": "gemm", "M": 8192, "N": 8192, "K": 8192,
             "tiling": "128x128", "ms": 1.7, "tflops": 647.0}])
        _write(d, "torch_sparsedrop.json", "torch_sparsedrop", [
            {"kernel": "gemm", "impl": "cuBLAS", "M": 8192, "N": 8192,
             "K": 8192, "ms": 1.65, "tflops": 666.0}])
        if with_clocks:
            _write(d, "clocks_p.json", "clocks_p", [
                {"table": "dense", "kernel": "gemm", "impl": "cuBLAS",
                 "M": 8192, "N": 8192, "K": 8192, "ms": 1.60,
                 "vs_cublas": 1.0},
                {"table": "dense", "kernel": "gemm",
                 "impl": "matmul_store_block", "M": 8192, "N": 8192,
                 "K": 8192, "ms": 1.66, "vs_cublas": 0.964}])
        run = plot.load_run(d)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            plot.dense_gemm_table(run)
        return [line for line in out.getvalue().splitlines()
                if line.startswith("| 8192 ")]

    def test_best_tiling_against_both_cublas_figures(self):
        (line,) = self._run(with_clocks=True)
        cells = [c.strip() for c in line.strip("|").split("|")]
        self.assertEqual(cells[3], "128x256")  # the faster tiling
        self.assertEqual(cells[8], "1.10x")    # 1.65 / 1.5, two processes
        self.assertEqual(cells[9], "0.96x")    # clocks_p's own ratio

    def test_no_same_process_figure_without_clocks_p(self):
        (line,) = self._run(with_clocks=False)
        cells = [c.strip() for c in line.strip("|").split("|")]
        self.assertEqual(cells[8], "1.10x")
        self.assertEqual(cells[9], "")


if __name__ == "__main__":
    unittest.main()
