"""`pip install ./python` gives a working package: installed into a scratch
directory from a copy of python/ (the source tree is not written), imported
from there (not from PYTHONPATH), it loads the library named by
SPARSETILE_LIBRARY and compiles a kernel to PTX. Needs no GPU or torch;
skips when this Python has no pip or setuptools, or no library to load."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "..", "python")


def _imports(module):
    return subprocess.run([sys.executable, "-c", "import " + module],
                          capture_output=True).returncode == 0


def _missing():
    for module in ("pip", "setuptools"):
        if not _imports(module):
            return "this Python has no %s" % module
    # Building without isolation (there is no index to fetch from) needs
    # bdist_wheel: in setuptools >= 70.1, else from the wheel package.
    if not (_imports("setuptools.command.bdist_wheel") or _imports("wheel")):
        return "this Python's setuptools cannot build wheels (no wheel package)"
    library = os.environ.get("SPARSETILE_LIBRARY", "")
    if not os.path.isfile(library):
        return "SPARSETILE_LIBRARY does not name a built libsparsetile.so"
    return None


class PipInstall(unittest.TestCase):
    def test_installed_package_compiles_a_kernel(self):
        why = _missing()
        if why:
            self.skipTest(why)
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "src")
            shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns(
                "build", "*.egg-info", "__pycache__"))
            target = os.path.join(tmp, "site")
            done = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--no-deps",
                 "--no-build-isolation", "--no-index", "--target", target,
                 source], capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            env = dict(os.environ, PYTHONPATH=target)
            script = (
                "import sparsetile, sys\n"
                "assert sparsetile.__file__.startswith(sys.argv[1]), "
                "sparsetile.__file__\n"
                "k = sparsetile.compile('kernel k(x: *f32, n: i32) {\\n"
                "  let i = arange(0, 128);\\n"
                "  store(x + i, load(x + i, mask=i < n) * 2.0, mask=i < n);\\n"
                "}\\n', 'k', arch='sm_90')\n"
                "assert '.entry k' in k.asm['ptx']\n"
                "print('ok')\n")
            run = subprocess.run([sys.executable, "-c", script, target],
                                 env=env, capture_output=True, text=True,
                                 cwd=tmp)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("ok", run.stdout)


if __name__ == "__main__":
    unittest.main()
