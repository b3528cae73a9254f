"""The Python package installs offline and works where it is installed.

* python/build_wheel.py writes a valid PEP 427 wheel: tags for this
  platform, a RECORD whose sha256 and sizes match every file, METADATA in
  step with pyproject.toml, sparsetile.__version__ and CMake's version, and
  libsparsetile.so and libdevice.10.bc inside the package.
* A fresh venv (no system site-packages) installs that wheel with
  ``pip install --no-index``; there, with no PYTHONPATH, SPARSETILE_LIBRARY
  or LD_LIBRARY_PATH, the package imports from the venv, loads the library
  bundled next to itself and compiles a kernel calling exp (libdevice) to
  PTX. The compiler reads the bundled libdevice (a corrupt one is reported
  by its path), and without the library the error says where it looked and
  what to do.
* ``pip install --no-index`` of a copy of python/ (build isolation on, the
  default) builds through the in-tree backend with no network.

No GPU or torch needed. Skips without a built library (SPARSETILE_LIBRARY)
or when this Python cannot make venvs (scripts/setup.sh installs
python3-venv)."""

import base64
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
PACKAGE = os.path.join(REPO, "python")

KERNEL = ("kernel k(x: *f32, n: i32) {\n"
          "  let i = arange(0, 128);\n"
          "  store(x + i, exp(load(x + i, mask=i < n)), mask=i < n);\n"
          "}\n")
# Run inside the venv: imports from argv[1] and compiles KERNEL.
COMPILES = (
    "import os, sys, sparsetile\n"
    "where = os.path.realpath(sparsetile.__file__)\n"
    "assert where.startswith(os.path.realpath(sys.argv[1])), where\n"
    "k = sparsetile.compile(sys.argv[2], 'k', arch='sm_90')\n"
    "assert '.entry k' in k.asm['ptx']\n"
    "assert 'torch' not in sys.modules\n"
    "print('LIB', sparsetile.library_path())\n")

_state = {}


def _clean_env(**extra):
    """The environment of a user's shell: nothing pointing into the build."""
    env = dict(os.environ)
    for name in ("PYTHONPATH", "SPARSETILE_LIBRARY", "SPARSETILE_LIBDEVICE",
                 "LD_LIBRARY_PATH", "PIP_FIND_LINKS", "PIP_INDEX_URL",
                 "PIP_EXTRA_INDEX_URL", "PYTHONHOME"):
        env.pop(name, None)
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               SPARSETILE_CACHE_DISABLE="1", **extra)
    return env


def _run(args, **kwargs):
    kwargs.setdefault("env", _clean_env())
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def _why_skip():
    library = os.environ.get("SPARSETILE_LIBRARY", "")
    if not os.path.isfile(library):
        return "SPARSETILE_LIBRARY does not name a built libsparsetile.so"
    if _run([sys.executable, "-c", "import venv, ensurepip"]).returncode:
        return ("this Python cannot create venvs with pip (install "
                "python3-venv: scripts/setup.sh does)")
    return None


def setUpModule():
    why = _why_skip()
    if why:
        raise unittest.SkipTest(why)
    tmp = tempfile.mkdtemp(prefix="sparsetile-packaging-")
    _state["tmp"] = tmp
    dist = os.path.join(tmp, "dist")
    done = _run([sys.executable, os.path.join(PACKAGE, "build_wheel.py"),
                 "--library", os.environ["SPARSETILE_LIBRARY"],
                 "--out-dir", dist], cwd=tmp)
    if done.returncode:
        raise RuntimeError("build_wheel.py failed:\n" + done.stdout
                           + done.stderr)
    _state["wheel"] = done.stdout.strip().splitlines()[-1]
    venv = os.path.join(tmp, "venv")
    done = _run([sys.executable, "-m", "venv", venv])
    if done.returncode:
        raise RuntimeError("python -m venv failed:\n" + done.stderr)
    _state["python"] = os.path.join(venv, "bin", "python")


def tearDownModule():
    if "tmp" in _state:
        shutil.rmtree(_state["tmp"], ignore_errors=True)


def _site_packages(python):
    return _run([python, "-c", "import sysconfig; "
                 "print(sysconfig.get_paths()['platlib'])"]).stdout.strip()


class Wheel(unittest.TestCase):
    def setUp(self):
        self.wheel = _state["wheel"]

    def test_tags_name_this_platform(self):
        platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        self.assertEqual(os.path.basename(self.wheel),
                         "sparsetile-0.1.0-py3-none-%s.whl" % platform)
        with zipfile.ZipFile(self.wheel) as zf:
            wheel = zf.read("sparsetile-0.1.0.dist-info/WHEEL").decode()
        self.assertIn("Wheel-Version: 1.0\n", wheel)
        self.assertIn("Root-Is-Purelib: false\n", wheel)
        self.assertIn("Tag: py3-none-%s\n" % platform, wheel)

    def test_record_matches_every_file(self):
        with zipfile.ZipFile(self.wheel) as zf:
            names = set(zf.namelist())
            record = zf.read("sparsetile-0.1.0.dist-info/RECORD").decode()
            rows = list(csv.reader(io.StringIO(record)))
            self.assertEqual({row[0] for row in rows}, names)
            for name, digest, size in rows:
                if name.endswith("/RECORD"):
                    self.assertEqual((digest, size), ("", ""))
                    continue
                data = zf.read(name)
                expected = base64.urlsafe_b64encode(
                    hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual(digest, "sha256=" + expected, name)
                self.assertEqual(int(size), len(data), name)
            for name in ("sparsetile/__init__.py", "sparsetile/nn/layers.py",
                         "sparsetile/libsparsetile.so",
                         "sparsetile/libdevice.10.bc"):
                self.assertIn(name, names)
            mode = zf.getinfo("sparsetile/libsparsetile.so").external_attr
            self.assertTrue((mode >> 16) & 0o100, "the library is executable")
            # One copy of LLVM: the C library loads the compiler library,
            # which the wheel carries under the SONAME the C library asks for.
            compiler = [n for n in names if re.fullmatch(
                r"sparsetile/libsparsetile_compiler\.so\.\d+", n)]
            self.assertEqual(len(compiler), 1, sorted(names))
            self.assertLess(zf.getinfo("sparsetile/libsparsetile.so").file_size,
                            30 << 20, "libsparsetile.so carries no LLVM")

    def test_versions_agree(self):
        with zipfile.ZipFile(self.wheel) as zf:
            metadata = zf.read("sparsetile-0.1.0.dist-info/METADATA").decode()
        fields = dict(line.split(": ", 1) for line in metadata.splitlines()
                      if ": " in line and not line.startswith("Requires-Dist"))
        with open(os.path.join(REPO, "CMakeLists.txt")) as f:
            cmake = f.read()
        self.assertIn("project(sparsetile VERSION %s " % fields["Version"],
                      cmake)
        with open(os.path.join(PACKAGE, "sparsetile", "__init__.py")) as f:
            self.assertIn('__version__ = "%s"' % fields["Version"], f.read())
        try:
            import tomllib
        except ImportError:
            self.skipTest("no tomllib (Python < 3.11) to read pyproject.toml")
        with open(os.path.join(PACKAGE, "pyproject.toml"), "rb") as f:
            pyproject = tomllib.load(f)
        project = pyproject["project"]
        self.assertEqual(fields["Name"], project["name"])
        self.assertEqual(fields["Version"], project["version"])
        self.assertEqual(fields["Requires-Python"], project["requires-python"])
        self.assertEqual(pyproject["build-system"]["requires"], [])
        self.assertIn('Requires-Dist: torch>=2.4; extra == "torch"', metadata)


class InstalledWheel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.python = _state["python"]
        done = _run([cls.python, "-m", "pip", "install", "--no-index",
                     _state["wheel"]])
        if done.returncode:
            raise RuntimeError("pip install --no-index of the wheel failed:\n"
                               + done.stdout + done.stderr)
        cls.site = _site_packages(cls.python)
        cls.package = os.path.join(cls.site, "sparsetile")

    def test_venv_sees_no_system_packages(self):
        done = _run([self.python, "-c", "import sys; "
                     "print(sys.prefix != sys.base_prefix)"])
        self.assertEqual(done.stdout.strip(), "True", done.stderr)
        with open(os.path.join(os.path.dirname(os.path.dirname(
                self.python)), "pyvenv.cfg")) as f:
            self.assertIn("include-system-site-packages = false", f.read())

    def test_imports_and_compiles_with_the_bundled_library(self):
        done = _run([self.python, "-c", COMPILES, self.site, KERNEL],
                    cwd=_state["tmp"])
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("LIB " + os.path.join(self.package, "libsparsetile.so"),
                      done.stdout)

    def _copy_of_package(self, name):
        """The installed package copied elsewhere, to break a file in."""
        root = os.path.join(_state["tmp"], name)
        shutil.copytree(self.package, os.path.join(root, "sparsetile"))
        return root, os.path.join(root, "sparsetile")

    def test_compiler_reads_the_bundled_libdevice(self):
        root, package = self._copy_of_package("bad-libdevice")
        bad = os.path.join(package, "libdevice.10.bc")
        with open(bad, "wb") as f:
            f.write(b"not bitcode")
        done = _run([self.python, "-c", COMPILES, root, KERNEL],
                    env=_clean_env(PYTHONPATH=root))
        self.assertNotEqual(done.returncode, 0, done.stdout)
        self.assertIn("cannot parse libdevice at '%s'" % bad, done.stderr)

    def test_missing_library_says_where_and_what_to_do(self):
        root, package = self._copy_of_package("no-library")
        os.remove(os.path.join(package, "libsparsetile.so"))
        done = _run([self.python, "-c", COMPILES, root, KERNEL],
                    env=_clean_env(PYTHONPATH=root))
        self.assertNotEqual(done.returncode, 0, done.stdout)
        self.assertIn("LibraryNotFoundError", done.stderr)
        self.assertIn(os.path.join(package, "libsparsetile.so")
                      + " (no such file)", done.stderr)
        for advice in ("pip install", "--target wheel", "cmake --install",
                       "SPARSETILE_LIBRARY"):
            self.assertIn(advice, done.stderr)


class PipInstallSource(unittest.TestCase):
    def test_pip_install_of_the_source_builds_offline(self):
        tmp = _state["tmp"]
        source = os.path.join(tmp, "src")
        shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns(
            "build", "dist", "*.egg-info", "__pycache__"))
        target = os.path.join(tmp, "target")
        # Build isolation on (pip's default): the backend needs nothing
        # from an index. The copy is outside the repository, so the
        # backend is told where the library is.
        done = _run([_state["python"], "-m", "pip", "install", "--no-index",
                     "--target", target, source],
                    env=_clean_env(
                        SPARSETILE_LIBRARY=os.environ["SPARSETILE_LIBRARY"]))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertTrue(os.path.isfile(os.path.join(
            target, "sparsetile", "libsparsetile.so")))
        done = _run([_state["python"], "-c", COMPILES, target, KERNEL],
                    env=_clean_env(PYTHONPATH=target), cwd=tmp)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("LIB " + os.path.join(target, "sparsetile"),
                      done.stdout)


if __name__ == "__main__":
    unittest.main()
