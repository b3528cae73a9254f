#!/usr/bin/env python3
"""Builds the sparsetile wheel with the standard library alone.

Two ways in, one implementation:

* the PEP 517 build backend of python/pyproject.toml (``backend-path``), so
  ``pip install ./python`` works offline: pip's isolated build environment
  needs nothing from an index (``requires = []``);
* a command line, e.g. ``cmake --build build --target wheel`` or::

      python3 python/build_wheel.py --library build/runtime/libsparsetile.so \\
          --out-dir dist

The wheel (PEP 427) holds the pure-Python package and, inside it,
``sparsetile/libsparsetile.so`` with the compiler library it loads
(``libsparsetile_compiler.so.N``, the one copy of LLVM; both stripped when
``strip`` is on PATH) and
CUDA's ``libdevice.10.bc`` when one is found, so the installed package loads
the library next to itself and the compiler links libdevice from beside the
library on a machine without the CUDA Toolkit. It is tagged
``py3-none-<platform>`` (ctypes, no extension module: any CPython 3.8+ of
this platform).

Where the library comes from, first found: the ``library`` config setting
(``pip install --config-settings library=PATH``), ``$SPARSETILE_LIBRARY``,
``../build/runtime/libsparsetile.so`` beside this directory. libdevice: the
``libdevice`` setting, ``$SPARSETILE_LIBDEVICE``,
``$CUDA_HOME/nvvm/libdevice/``, ``/usr/local/cuda/nvvm/libdevice/``.
"""

import argparse
import base64
import hashlib
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile

NAME = "sparsetile"
# Keep in step with pyproject.toml's [project] table, sparsetile.__version__
# and CMake's project(VERSION) (tests/python/test_packaging.py checks them).
VERSION = "0.1.0"
SUMMARY = ("Python bindings of sparsetile: a tile-DSL JIT compiler and "
           "runtime for sparse-training GPU kernels")
REQUIRES_PYTHON = ">=3.8"
EXTRAS = {"torch": ["torch>=2.4"]}

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.join(HERE, NAME)
LIBRARY_NAME = "libsparsetile.so"
LIBDEVICE_NAME = "libdevice.10.bc"

# A fixed timestamp (or SOURCE_DATE_EPOCH) keeps the wheel reproducible.
_EPOCH_1980 = (1980, 1, 1, 0, 0, 0)


class BuildError(Exception):
    pass


def platform_tag():
    """This interpreter's platform as a wheel tag, e.g. linux_x86_64. Not
    manylinux: the library needs libzstd, which manylinux does not allow."""
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def wheel_name():
    return "%s-%s-py3-none-%s.whl" % (NAME, VERSION, platform_tag())


def _first_file(candidates, what, hint):
    for how, path in candidates:
        if path and os.path.isfile(path):
            return os.path.abspath(path)
    looked = "\n".join("  %s: %s" % (how, path or "(not set)")
                       for how, path in candidates)
    raise BuildError("build_wheel: no %s found. Looked at:\n%s\n%s"
                     % (what, looked, hint))


def find_library(setting=None):
    return _first_file([
        ("config setting 'library'", setting),
        ("$SPARSETILE_LIBRARY", os.environ.get("SPARSETILE_LIBRARY")),
        ("the source tree's build",
         os.path.join(HERE, os.pardir, "build", "runtime", LIBRARY_NAME)),
    ], LIBRARY_NAME, "Build it first (bash scripts/build.sh), or name it with "
       "SPARSETILE_LIBRARY=PATH or --config-settings library=PATH.")


def find_libdevice(setting=None):
    """libdevice.10.bc, or None: the wheel then relies on the machine's
    CUDA Toolkit (or $SPARSETILE_LIBDEVICE) for kernels using math calls."""
    cuda_home = os.environ.get("CUDA_HOME")
    try:
        return _first_file([
            ("config setting 'libdevice'", setting),
            ("$SPARSETILE_LIBDEVICE", os.environ.get("SPARSETILE_LIBDEVICE")),
            ("$CUDA_HOME", cuda_home and os.path.join(
                cuda_home, "nvvm", "libdevice", LIBDEVICE_NAME)),
            ("/usr/local/cuda", "/usr/local/cuda/nvvm/libdevice/"
             + LIBDEVICE_NAME),
        ], LIBDEVICE_NAME, "")
    except BuildError as e:
        sys.stderr.write("%s\nbuild_wheel: the wheel will not bundle "
                         "libdevice\n" % e)
        return None


def _package_files():
    """(archive name, path) of every source file of the package."""
    files = []
    for root, dirs, names in os.walk(PACKAGE_DIR):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                files.append((os.path.relpath(path, HERE).replace(os.sep, "/"),
                              path))
    return files


def _metadata():
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + VERSION,
             "Summary: " + SUMMARY, "Requires-Python: " + REQUIRES_PYTHON]
    for extra, requirements in sorted(EXTRAS.items()):
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s; extra == "%s"' % (r, extra)
                  for r in requirements]
    return "\n".join(lines) + "\n"


def _wheel_file():
    return ("Wheel-Version: 1.0\nGenerator: sparsetile build_wheel.py\n"
            "Root-Is-Purelib: false\nTag: py3-none-%s\n" % platform_tag())


def _stripped_copy(path, scratch):
    """A copy of the library without debug symbols and local symbols (what
    scripts/pack_gpu_build.sh ships), or the file itself without `strip`."""
    strip = shutil.which("strip")
    if not strip:
        return path
    out = os.path.join(scratch, os.path.basename(path))
    done = subprocess.run([strip, "--strip-unneeded", "-o", out, path],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write("build_wheel: strip failed, bundling the library "
                         "unstripped: %s\n" % done.stderr.strip())
        return path
    return out


def bundled_dependencies(library):
    """The sparsetile libraries `library` loads (libsparsetile_compiler.so.N,
    which holds the compiler and the one copy of LLVM), as (the name it asks
    for, the file the loader finds). The wheel carries them beside it, where
    its RUNPATH ($ORIGIN) finds them."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return []
    lines = subprocess.run([ldd, library], capture_output=True,
                           text=True).stdout.splitlines()
    deps = []
    for words in (line.split() for line in lines):
        if len(words) >= 3 and words[0].startswith("libsparsetile") and \
                words[1] == "=>":
            if not os.path.isfile(words[2]):
                raise FileNotFoundError(
                    "build_wheel: %s needs %s, which the loader does not find"
                    % (library, words[0]))
            deps.append((words[0], words[2]))
    return deps


def _zip_info(name, executable=False):
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    stamp = _EPOCH_1980
    if epoch:
        stamp = max(_EPOCH_1980, time.gmtime(int(epoch))[:6])
    info = zipfile.ZipInfo(name, date_time=stamp)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o755 if executable else 0o644) << 16
    return info


def write_wheel(out_dir, library, libdevice=None, strip=True):
    """Writes the wheel into out_dir and returns its file name."""
    dist_info = "%s-%s.dist-info" % (NAME, VERSION)
    entries = []  # (archive name, bytes, executable)
    for name, path in _package_files():
        with open(path, "rb") as f:
            entries.append((name, f.read(), False))
    with tempfile.TemporaryDirectory() as scratch:
        for name, path in ([(LIBRARY_NAME, library)] +
                           bundled_dependencies(library)):
            shipped = _stripped_copy(path, scratch) if strip else path
            with open(shipped, "rb") as f:
                entries.append((NAME + "/" + name, f.read(), True))
    if libdevice:
        with open(libdevice, "rb") as f:
            entries.append((NAME + "/" + LIBDEVICE_NAME, f.read(), False))
    entries.append((dist_info + "/METADATA", _metadata().encode(), False))
    entries.append((dist_info + "/WHEEL", _wheel_file().encode(), False))

    record = io.StringIO()
    for name, data, _ in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
        record.write("%s,sha256=%s,%d\n" % (name, digest.rstrip(b"=").decode(),
                                           len(data)))
    record.write(dist_info + "/RECORD,,\n")
    entries.append((dist_info + "/RECORD", record.getvalue().encode(), False))

    os.makedirs(out_dir, exist_ok=True)
    filename = wheel_name()
    partial = os.path.join(out_dir, filename + ".part")
    with zipfile.ZipFile(partial, "w") as zf:
        for name, data, executable in entries:
            zf.writestr(_zip_info(name, executable), data)
    os.replace(partial, os.path.join(out_dir, filename))
    return filename


# --- PEP 517 hooks --------------------------------------------------------


def _setting(config_settings, key):
    value = (config_settings or {}).get(key)
    return value[-1] if isinstance(value, list) else value


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    return write_wheel(
        wheel_directory, find_library(_setting(config_settings, "library")),
        find_libdevice(_setting(config_settings, "libdevice")))


def build_sdist(sdist_directory, config_settings=None):
    """The package's sources and this backend; building a wheel from it
    needs a built library (SPARSETILE_LIBRARY)."""
    base = "%s-%s" % (NAME, VERSION)
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tf:
        for name, path in _package_files() + [
                ("pyproject.toml", os.path.join(HERE, "pyproject.toml")),
                ("build_wheel.py", os.path.abspath(__file__))]:
            tf.add(path, arcname=base + "/" + name)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", help="libsparsetile.so to bundle")
    parser.add_argument("--libdevice", help="libdevice.10.bc to bundle")
    parser.add_argument("--no-libdevice", action="store_true",
                        help="do not bundle libdevice")
    parser.add_argument("--no-strip", action="store_true",
                        help="bundle the library as it is")
    parser.add_argument("--out-dir", default="dist")
    args = parser.parse_args(argv)
    try:
        library = find_library(args.library)
        libdevice = None if args.no_libdevice else find_libdevice(
            args.libdevice)
        name = write_wheel(args.out_dir, library, libdevice,
                           strip=not args.no_strip)
    except BuildError as e:
        sys.stderr.write("%s\n" % e)
        return 1
    print(os.path.join(args.out_dir, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
