"""device_assert on a GPU (issue 47): with SPARSETILE_DEBUG=1 a false
element prints the message with the file, line, program and thread ids and
stops the kernel, as it does for a kernel compiled with debug=True; without
them the check is compiled out and the same launch
runs to the end. A failed assertion leaves the CUDA context unusable, so
each launch runs in a child process. Skips without torch or a CUDA GPU."""

import os
import subprocess
import sys
import textwrap
import unittest

from _gpu import requires_gpu

CHILD = textwrap.dedent(r'''
    import sys
    import torch
    import sparsetile

    SRC = """kernel check(x: *i32, out: *i32, n: i32) {
      let offs = program_id(0) * 128 + arange(0, 128);
      let v = load(x + offs, mask=offs < n, other=0);
      device_assert(v < 100, "x is below 100");
      store(out + offs, v + 1, mask=offs < n);
    }
    """
    n = 1000
    x = torch.arange(n, dtype=torch.int32, device="cuda") % 100
    bad = int(sys.argv[1])
    options = {"debug": True} if sys.argv[2:] == ["debug=True"] else {}
    if bad >= 0:
        x[bad] = 100
    out = torch.full((n,), -1, dtype=torch.int32, device="cuda")
    try:  # The failure may surface at the launch or at the sync.
        sparsetile.compile(SRC, "check", **options)[((n + 127) // 128,)](
            x, out, n)
        torch.cuda.synchronize()
    except Exception as e:
        print("launch failed:", e, flush=True)
        sys.exit(3)
    print("ok", bool((out == x + 1).all()), flush=True)
''')


def run_child(bad, debug, keyword=False):
    """debug: SPARSETILE_DEBUG=1; keyword: compile(..., debug=True)."""
    env = dict(os.environ)
    env.pop("SPARSETILE_DEBUG", None)
    if debug:
        env["SPARSETILE_DEBUG"] = "1"
    argv = [sys.executable, "-c", CHILD, str(bad)]
    if keyword:
        argv.append("debug=True")
    p = subprocess.run(argv, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=600)
    return p.returncode, p.stdout


@requires_gpu
class DeviceAssert(unittest.TestCase):
    def test_false_element_prints_and_traps(self):
        # Element 777 is program 6, thread-owned element 777 % 128 = 9.
        code, out = run_child(777, debug=True)
        self.assertEqual(code, 3, out)
        self.assertIn("Assertion `x is below 100` failed", out)
        self.assertIn("<source>:4:", out)  # the device_assert's line
        self.assertIn("block: [6,0,0]", out)
        self.assertIn("check", out)

    def test_true_everywhere_runs(self):
        code, out = run_child(-1, debug=True)
        self.assertEqual(code, 0, out)
        self.assertIn("ok True", out)

    def test_compile_keyword(self):
        # Triton's spelling: compile(..., debug=True) for one kernel.
        code, out = run_child(777, debug=False, keyword=True)
        self.assertEqual(code, 3, out)
        self.assertIn("Assertion `x is below 100` failed", out)

    def test_compiled_out_without_debug(self):
        code, out = run_child(777, debug=False)
        self.assertEqual(code, 0, out)
        self.assertIn("ok True", out)


if __name__ == "__main__":
    unittest.main()
