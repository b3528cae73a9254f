"""Run by tests/cmake/InstallConsumer.cmake with PYTHONPATH=<prefix>/lib/python
and no SPARSETILE_LIBRARY: the package `cmake --install` put there imports
from there, loads the library installed beside it (found relative to itself)
and compiles a kernel to PTX. No GPU or torch needed.

    python3 import_installed.py PREFIX
"""
import os
import sys

prefix = os.path.realpath(sys.argv[1])
import sparsetile  # noqa: E402

where = os.path.realpath(sparsetile.__file__)
assert where.startswith(prefix + os.sep), "imported from " + where
library = os.path.realpath(sparsetile.library_path())
assert library.startswith(prefix + os.sep), "loaded " + library
assert os.path.dirname(library) == os.path.dirname(
    os.path.dirname(os.path.dirname(where))), (library, where)
k = sparsetile.compile(
    "kernel k(x: *f32, n: i32) {\n"
    "  let i = arange(0, 128);\n"
    "  store(x + i, exp(load(x + i, mask=i < n)), mask=i < n);\n"
    "}\n", "k", arch="sm_90")
assert ".entry k" in k.asm["ptx"]
print("installed package: ok (%s)" % library)
