"""The Python package over the C ABI, without a GPU or torch: library
lookup, compiling to every stage, constants, diagnostics, signatures and the
Python-side argument checks that run before a launch reaches the C side.
Runs anywhere the library builds; the launch test expects no GPU and skips
when one is present (test_kernels_gpu.py covers launches)."""

import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

import sparsetile
from sparsetile import _dtypes, _reference

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
VECTOR_ADD = os.path.join(REPO, "dsl_examples", "vector_add.tile")
MATMUL = os.path.join(REPO, "dsl_examples", "matmul.tile")
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(
    sparsetile.__file__)))


def _python(code, **env):
    """Runs `code` in a fresh interpreter (the library and torch state are
    per-process) with the package importable; returns (rc, output)."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(
        [PACKAGE_DIR] + [p for p in [e.get("PYTHONPATH")] if p])
    e.update(env)
    p = subprocess.run([sys.executable, "-c", code], env=e,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=300)
    return p.returncode, p.stdout


class FakeDeviceArray(object):
    """An object with __cuda_array_interface__ at a made-up device address:
    enough for the argument checks, which never dereference it."""

    def __init__(self, typestr="<f4", shape=(1024,), ptr=0x7F0000000000,
                 strides=None):
        self.__cuda_array_interface__ = {
            "shape": shape, "typestr": typestr, "data": (ptr, False),
            "strides": strides, "version": 3}


class ImportAndLibrary(unittest.TestCase):
    def test_import_does_not_import_torch(self):
        rc, out = _python("import sys, sparsetile\n"
                          "assert 'torch' not in sys.modules, 'torch'\n"
                          "sparsetile.compile(%r, 'vector_add', arch='sm_90')"
                          "\nassert 'torch' not in sys.modules, 'torch 2'\n"
                          "print('ok')" % VECTOR_ADD)
        self.assertEqual(rc, 0, out)
        self.assertIn("ok", out)

    def test_missing_library_is_reported_at_first_use(self):
        missing = os.path.join(HERE, "no-such-dir", "libsparsetile.so")
        rc, out = _python(
            "import sparsetile\n"
            "try:\n"
            "    sparsetile.compile('kernel k(x: *f32) {}')\n"
            "except ImportError as e:\n"
            "    assert isinstance(e, sparsetile.LibraryNotFoundError)\n"
            "    print('MSG', e)\n", SPARSETILE_LIBRARY=missing)
        self.assertEqual(rc, 0, out)
        self.assertIn("MSG", out)
        self.assertIn(missing, out)
        self.assertIn("SPARSETILE_LIBRARY", out)
        self.assertIn("no such file", out)

    def test_library_loads(self):
        self.assertTrue(os.path.exists(sparsetile.library_path()))
        self.assertTrue(sparsetile.library_version())
        ok, why = sparsetile.gpu_available()
        self.assertTrue(ok or why)


class Compile(unittest.TestCase):
    def test_vector_add_stages(self):
        k = sparsetile.compile(VECTOR_ADD, "vector_add", arch="sm_90")
        self.assertEqual(k.name, "vector_add")
        self.assertIn(".entry vector_add", k.asm["ptx"])
        self.assertIn("vector_add", k.asm["tile"])
        for stage in ("ast", "pipelined", "layouts", "mlir", "llvm"):
            self.assertTrue(k.asm[stage].strip(), stage)
        # Every tile's type names the threads that hold it.
        self.assertIn("#blocked = #tile.blocked<vec = 4, threads = 128>",
                      k.asm["layouts"])
        self.assertIn("ptx", k.asm)
        with self.assertRaises(KeyError):
            k.asm["sass"]

    def test_cubin_is_bytes(self):
        k = sparsetile.compile(VECTOR_ADD, "vector_add", arch="sm_90")
        try:
            cubin = k.asm["cubin"]
        except sparsetile.SparsetileError as e:  # No nvJitLink here.
            self.skipTest("no cubin on this machine: %s" % e)
        self.assertIsInstance(cubin, bytes)
        if cubin:
            self.assertEqual(cubin[:4], b"\x7fELF")

    def test_remarks(self):
        # A load indexed `% n` is issued element by element: the remark
        # names its line; a masked load says nothing (Language.md,
        # "Performance remarks").
        src = ("kernel wrapped(x: *f32, y: *f32, n: i32) {\n"
               "  let pid = program_id(0);\n"
               "  let v = load(x + (pid * 512 + arange(0, 512)) % n);\n"
               "  store(y + pid * 512 + arange(0, 512), v);\n"
               "}\n")
        try:
            remarks = sparsetile.compile(src, arch="sm_90").remarks
            quiet = sparsetile.compile(VECTOR_ADD, "vector_add",
                                       arch="sm_90").remarks
        except sparsetile.SparsetileError as e:  # No nvJitLink here.
            self.skipTest("no JIT compile on this machine: %s" % e)
        self.assertEqual(len(remarks), 1, remarks)
        self.assertIn(":3:11: remark: [scalar-access]", remarks[0])
        self.assertIn("\n    let v = load(", remarks[0])
        self.assertEqual(quiet, [])

    def test_text_and_path_agree(self):
        with open(VECTOR_ADD) as f:
            text = f.read()
        a = sparsetile.compile(text, "vector_add", arch="sm_90")
        b = sparsetile.compile(VECTOR_ADD, "vector_add", arch="sm_90")
        self.assertEqual(a.asm["ptx"], b.asm["ptx"])
        self.assertIs(b, sparsetile.compile(VECTOR_ADD, "vector_add",
                                            arch="sm_90"))

    def test_constants_change_the_code(self):
        small = sparsetile.compile(VECTOR_ADD, "vector_add", BLOCK=128,
                                   arch="sm_90")
        big = sparsetile.compile(VECTOR_ADD, "vector_add", BLOCK=2048,
                                 arch="sm_90")
        self.assertNotEqual(small.asm["ptx"], big.asm["ptx"])
        self.assertEqual(small.meta["BLOCK"], 128)
        self.assertEqual(sparsetile.compile(VECTOR_ADD, "vector_add",
                                            arch="sm_90").meta["BLOCK"], 1024)

    def test_dtype_constant(self):
        bf16 = sparsetile.compile(MATMUL, "matmul", T="bf16", arch="sm_90")
        f16 = sparsetile.compile(MATMUL, "matmul", T="float16", arch="sm_90")
        self.assertEqual([p.dtype for p in bf16.params][:2], ["bf16", "bf16"])
        self.assertEqual([p.dtype for p in f16.params][:2], ["f16", "f16"])
        self.assertNotEqual(bf16.asm["ptx"], f16.asm["ptx"])

    def test_const_text(self):
        from sparsetile.jit import _const_text
        self.assertEqual(_const_text("A", True), "true")
        self.assertEqual(_const_text("A", False), "false")
        self.assertEqual(_const_text("A", 7), "7")
        self.assertEqual(_const_text("A", 0.5), "0.5")
        self.assertEqual(_const_text("A", "bfloat16"), "bf16")
        with self.assertRaises(sparsetile.ArgumentError):
            _const_text("A", float("inf"))

    def test_options(self):
        k4 = sparsetile.compile(VECTOR_ADD, "vector_add", arch="sm_90",
                                num_warps=4)
        k8 = sparsetile.compile(VECTOR_ADD, "vector_add", arch="sm_90",
                                num_warps=8)
        self.assertNotEqual(k4.asm["ptx"], k8.asm["ptx"])
        with self.assertRaises(sparsetile.SparsetileError):
            sparsetile.compile(VECTOR_ADD, "vector_add",
                               arch="sm_12").asm["ptx"]

    def test_syntax_error_has_location_and_caret(self):
        src = "kernel k(x: *f32 n: i32) {\n}\n"
        with self.assertRaises(sparsetile.CompileError) as cm:
            sparsetile.compile(src, "k", arch="sm_90")
        msg = str(cm.exception)
        self.assertRegex(msg, r"<source>:1:\d+: error:")
        self.assertIn("kernel k(x: *f32 n: i32)", msg)
        self.assertRegex(msg, r"\n *\^")

    def test_semantic_error_from_a_file(self):
        src = ("kernel k(x: *f32, n: i32) {\n"
               "  let r = arange(0, n);\n"
               "}\n")
        k = sparsetile.compile(src, "k", arch="sm_90")
        with self.assertRaises(sparsetile.CompileError) as cm:
            k.asm["ptx"]
        msg = str(cm.exception)
        self.assertRegex(msg, r"<source>:2:\d+: error: arange")
        caret = [l for l in msg.splitlines() if l.strip() == "^"]
        self.assertEqual(len(caret), 1, msg)

    def test_one_bad_kernel_leaves_the_others(self):
        src = ("kernel bad(x: *f32) {\n  let y = load(x) *;\n}\n"
               "kernel good(x: *f32) {\n  store(x, 1.0);\n}\n")
        self.assertIn(".entry good", sparsetile.compile(
            src, "good", arch="sm_90").asm["ptx"])
        with self.assertRaises(sparsetile.CompileError) as cm:
            sparsetile.compile(src, "bad", arch="sm_90")
        self.assertIn("<source>:2:20: error: expected an expression",
                      str(cm.exception))

    def test_device_assert_under_sparsetile_debug(self):
        src = ("kernel k(x: *i32) {\n"
               "  device_assert(load(x) > 0, \"positive\");\n"
               "}\n")
        off = sparsetile.compile(src, "k", arch="sm_90").asm["ptx"]
        self.assertNotIn("__assertfail", off)
        os.environ["SPARSETILE_DEBUG"] = "1"
        try:  # Another text: the Kernel (and its asm) is cached per text.
            on = sparsetile.compile(src + "# debug\n", "k",
                                    arch="sm_90").asm["ptx"]
        finally:
            del os.environ["SPARSETILE_DEBUG"]
        self.assertIn("call.uni __assertfail", on)

    def test_debug_keyword(self):
        # Triton's compile-time spelling, per kernel: debug=True.
        src = ("kernel k(x: *i32) {\n"
               "  device_assert(load(x) > 1, \"above one\");\n"
               "}\n")
        off = sparsetile.compile(src, "k", arch="sm_90").asm["ptx"]
        on = sparsetile.compile(src, "k", arch="sm_90",
                                debug=True).asm["ptx"]
        self.assertNotIn("__assertfail", off)
        self.assertIn("call.uni __assertfail", on)
        with self.assertRaises(TypeError) as cm:
            sparsetile.compile(src, "k", debug=2)
        self.assertIn("debug expects True or False", str(cm.exception))

    def test_unknown_kernel(self):
        with self.assertRaises(sparsetile.SparsetileError) as cm:
            sparsetile.compile(VECTOR_ADD, "no_such_kernel")
        self.assertIn("no_such_kernel", str(cm.exception))
        self.assertIn("vector_add", str(cm.exception))

    def test_unreadable_path(self):
        with self.assertRaises(sparsetile.ArgumentError):
            sparsetile.compile(os.path.join(HERE, "missing.tile"), "k")


class Logging(unittest.TestCase):
    def tearDown(self):
        sparsetile.set_log_level(None)

    def test_compiles_and_cache_hits_reach_python_logging(self):
        import logging
        import uuid
        # A source no cache has seen: its first compile is a miss.
        src = ("# %s\nkernel fill(x: *f32) { store(x + arange(0, 128), 1.0); }\n"
               % uuid.uuid4())
        k = sparsetile.compile(src, "fill", arch="sm_90")
        sparsetile.set_log_level(logging.DEBUG)
        with self.assertLogs("sparsetile", logging.DEBUG) as cm:
            k.remarks_for(())   # compiles through the JIT
            k.remarks_for(())   # the same variant again: a cache hit
        text = "\n".join(cm.output)
        self.assertRegex(text, r"INFO:sparsetile:compiled fill of <source> "
                               r"for sm_90 in [0-9.]+ ms")
        self.assertIn("DEBUG:sparsetile:cache hit (memory) fill", text)
        sparsetile.set_log_level(logging.INFO)
        with self.assertRaises(AssertionError):  # debug messages are off
            with self.assertLogs("sparsetile", logging.DEBUG):
                k.remarks_for(())
        sparsetile.set_log_level(None)
        with self.assertRaises(AssertionError):  # everything is off
            with self.assertLogs("sparsetile", logging.DEBUG):
                sparsetile.compile(src + "\n", "fill",
                                   arch="sm_90").remarks_for(())


class Signatures(unittest.TestCase):
    def test_autotune_config_text(self):
        # What kernel[grid]'s meta gets from st_autotuned_choice's text.
        from sparsetile.jit import _config_values
        self.assertEqual(_config_values("BM=128 T=bf16 F=true num_warps=8 "
                                        "eps=0.5"),
                         {"BM": 128, "T": "bf16", "F": True, "num_warps": 8,
                          "eps": 0.5})
        self.assertEqual(_config_values("(defaults)"), {})

    def test_params(self):
        k = sparsetile.compile(VECTOR_ADD, "vector_add", arch="sm_90")
        self.assertEqual(k.params, [("x", "pointer", "f32"),
                                    ("y", "pointer", "f32"),
                                    ("out", "pointer", "f32"),
                                    ("n", "scalar", "i32")])
        self.assertEqual(k.params[0].name, "x")
        self.assertIn("vector_add", repr(k))

    def test_descriptor_params(self):
        k = sparsetile.compile(MATMUL, "matmul_blocks", arch="sm_90",
                               T="f16")
        self.assertEqual(k.params[0], ("a", "tensor", "f16"))
        self.assertEqual(k.params[2], ("c", "pointer", "f32"))
        self.assertEqual(k.params[-1], ("alpha", "scalar", "f32"))
        self.assertEqual(k.meta["BM"], 128)
        self.assertEqual(k.meta["T"], "f16")

    CONSTANTS = (
        "const FILE_C = 3;\n"
        "kernel k(x: *f32, # a comment, (parens), <brackets>\n"
        "         const BLOCK: i32 = 0x80, const TWICE: i32 = BLOCK * 2,\n"
        "         const F3: i32 = FILE_C + cdiv(BLOCK, 3),\n"
        "         const SCALE: f32 = 0.5, const TENTH: f32 = 0.1,\n"
        "         const FLIP: bool = false, const BIG: bool = BLOCK > 64,\n"
        "         const T: dtype = bf16, const U: u32 = 4294967295,\n"
        "         const NONE: i32) {\n"
        "  store(x + arange(0, TWICE), zeros([TWICE], f32));\n"
        "}\n")

    def test_meta_holds_the_compilers_typed_values(self):
        # From the library (st_kernel_constant), not read from the text:
        # expressions evaluated, hex read, types kept (bool is not int).
        k = sparsetile.compile(self.CONSTANTS, "k", arch="sm_90", NONE=1)
        meta = k.meta
        self.assertEqual(meta["BLOCK"], 128)
        self.assertEqual(meta["TWICE"], 256)
        self.assertEqual(meta["F3"], 3 + 43)
        self.assertIs(meta["FLIP"], False)
        self.assertIs(meta["BIG"], True)
        self.assertIsInstance(meta["SCALE"], float)
        self.assertEqual(meta["SCALE"], 0.5)
        # An f32 constant: the f32 nearest 0.1, as the kernel computes with.
        self.assertEqual(meta["TENTH"],
                         struct.unpack("f", struct.pack("f", 0.1))[0])
        self.assertEqual(meta["T"], "bf16")
        self.assertEqual(meta["U"], 2 ** 32 - 1)
        self.assertEqual(meta["NONE"], 1)  # given
        for name in ("BLOCK", "TWICE", "F3", "U", "NONE"):
            self.assertIs(type(meta[name]), int, name)

    def test_given_values_change_dependent_defaults(self):
        k = sparsetile.compile(self.CONSTANTS, "k", arch="sm_90", BLOCK=32,
                               T="f16", NONE=0)
        self.assertEqual(k.meta["BLOCK"], 32)
        self.assertEqual(k.meta["TWICE"], 64)  # its default, from BLOCK = 32
        self.assertIs(k.meta["BIG"], False)
        self.assertEqual(k.meta["T"], "f16")
        # The compiled code agrees: arange(0, TWICE) is 64 wide.
        self.assertIn("tile.arange 0, 64", k.asm["tile"])

    def test_meta_without_a_value(self):
        # NONE has no default and was not given: absent, not guessed (the
        # compile itself reports it when the kernel is built).
        k = sparsetile.compile(self.CONSTANTS, "k", arch="sm_90")
        self.assertNotIn("NONE", k.meta)
        self.assertEqual(k.meta["TWICE"], 256)
        self.assertEqual(k.constant_names, [
            "BLOCK", "TWICE", "F3", "SCALE", "TENTH", "FLIP", "BIG", "T", "U",
            "NONE"])
        # A launch (or specialize) may still give it.
        self.assertEqual(k.specialize(NONE=3).meta["NONE"], 3)
        self.assertEqual(k._launch_variant({"NONE": 4}).meta["NONE"], 4)
        with self.assertRaises(TypeError):
            k._launch_variant({"NOPE": 4})

    def test_no_regular_expressions_left_in_jit(self):
        with open(sparsetile.jit.__file__) as f:
            text = f.read()
        self.assertNotIn("import re", text)
        self.assertFalse(hasattr(sparsetile.jit, "const_defaults"))


AUTOTUNED = '''
@autotune(key=[n], grid=[cdiv(n, BLOCK)],
          configs=[{BLOCK: 128}, {BLOCK: 512, num_warps: 8}])
kernel copy(x: *f32, out: *f32, n: i32, const BLOCK: i32 = 256) {
  let i = program_id(0) * BLOCK + arange(0, BLOCK);
  store(out + i, load(x + i, mask=i < n), mask=i < n);
}
'''


class Autotuned(unittest.TestCase):
    """A kernel that declares @autotune launches as kernel(*args), or as
    kernel[grid](*args) (test_kernels_gpu.py launches both)."""

    def test_declared_kernel_is_autotuned(self):
        k = sparsetile.compile(AUTOTUNED, arch="sm_90")
        self.assertTrue(k.autotuned)
        self.assertFalse(sparsetile.compile(VECTOR_ADD, "vector_add",
                                            arch="sm_90").autotuned)
        f32 = FakeDeviceArray("<f4")
        # Arguments are checked before anything is tuned or launched.
        with self.assertRaises(TypeError):
            k(f32, f32)
        with self.assertRaises(TypeError):
            k[(1,)](f32, f32)
        with self.assertRaises(TypeError):
            k[(1,)](f32, 1.5, 10)

    def test_plain_kernel_is_not_callable(self):
        k = sparsetile.compile(VECTOR_ADD, "vector_add", arch="sm_90")
        with self.assertRaises(sparsetile.ArgumentError):
            k(1, 2, 3, 4)


class Arguments(unittest.TestCase):
    """Checks that happen in Python before the C call, GPU or not."""

    def setUp(self):
        self.k = sparsetile.compile(VECTOR_ADD, "vector_add", arch="sm_90")
        self.f32 = FakeDeviceArray("<f4")

    def test_argument_count(self):
        with self.assertRaises(TypeError) as cm:
            self.k[(1,)](self.f32, self.f32, 10)
        self.assertIn("takes 4 arguments", str(cm.exception))
        self.assertIn("missing 'n'", str(cm.exception))
        with self.assertRaises(TypeError):
            self.k[(1,)](self.f32, self.f32, self.f32, 10, 11)

    def test_pointer_dtype(self):
        with self.assertRaises(sparsetile.ArgumentTypeError) as cm:
            self.k[(1,)](FakeDeviceArray("<f2"), self.f32, self.f32, 10)
        self.assertIn("vector_add: parameter 'x' expects a pointer to f32",
                      str(cm.exception))
        self.assertIn("'<f2'", str(cm.exception))

    def test_scalar_for_pointer_and_array_for_scalar(self):
        with self.assertRaises(TypeError) as cm:
            self.k[(1,)](self.f32, 12345, self.f32, 10)
        self.assertIn("parameter 'y' expects a pointer to f32, got int",
                      str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            self.k[(1,)](self.f32, self.f32, self.f32, self.f32)
        self.assertIn("parameter 'n' expects an i32 scalar",
                      str(cm.exception))

    def test_scalar_range_and_type(self):
        with self.assertRaises(ValueError) as cm:
            self.k[(1,)](self.f32, self.f32, self.f32, 2 ** 31)
        self.assertIn("parameter 'n'", str(cm.exception))
        self.assertIn("out of range", str(cm.exception))
        with self.assertRaises(TypeError):
            self.k[(1,)](self.f32, self.f32, self.f32, 10.0)

    def test_keywords_and_grid_callable(self):
        seen = {}

        def grid(meta):
            seen.update(meta)
            return (0,)  # An empty grid: checked, but nothing launched.
        self.k[grid](self.f32, self.f32, out=self.f32, n=77)
        self.assertEqual(seen["BLOCK"], 1024)
        self.assertEqual(seen["n"], 77)
        with self.assertRaises(TypeError):
            self.k[grid](self.f32, self.f32, self.f32, nn=77)
        with self.assertRaises(ValueError):
            self.k[(1, 1, 1, 1)](self.f32, self.f32, self.f32, 7)

    def test_launch_time_constants_and_options(self):
        # Triton's habit: constexprs and num_warps given at the launch.
        seen = {}

        def grid(meta):
            seen.update(meta)
            return (0,)
        self.k[grid](self.f32, self.f32, self.f32, 77, BLOCK=256, num_warps=8)
        self.assertEqual((seen["BLOCK"], seen["n"]), (256, 77))
        k256 = self.k.specialize(BLOCK=256, num_warps=8)
        self.assertIs(k256, sparsetile.compile(VECTOR_ADD, "vector_add",
                                               arch="sm_90", BLOCK=256,
                                               num_warps=8))
        self.assertIsNot(k256, self.k)
        self.assertEqual(k256.meta["BLOCK"], 256)
        self.assertIn(".maxntid 256", k256.asm["ptx"])
        self.assertIn(".maxntid 128", self.k.asm["ptx"])
        self.assertIs(self.k.specialize(), self.k)
        with self.assertRaises(TypeError) as cm:
            self.k[grid](self.f32, self.f32, self.f32, 7, BLOK=256)
        self.assertIn("no parameter named 'BLOK'", str(cm.exception))
        self.assertIn("constants: BLOCK", str(cm.exception))

    def test_launch_without_gpu(self):
        ok, _ = sparsetile.gpu_available()
        if ok:
            self.skipTest("a GPU is present (test_kernels_gpu launches)")
        with self.assertRaises(sparsetile.SparsetileError) as cm:
            self.k[(4,)](self.f32, self.f32, self.f32, 4096)
        self.assertIsInstance(cm.exception, sparsetile.CudaError)
        msg = str(cm.exception)
        self.assertIn("vector_add", msg)
        self.assertIn("GPU", msg)


class Helpers(unittest.TestCase):
    def test_scalar_bits(self):
        self.assertEqual(_dtypes.scalar_bits(1.0, _dtypes.BF16, "p"), 0x3F80)
        self.assertEqual(_dtypes.scalar_bits(1.0, _dtypes.F16, "p"), 0x3C00)
        self.assertEqual(_dtypes.scalar_bits(1.0, _dtypes.F32, "p"),
                         0x3F800000)
        self.assertEqual(_dtypes.scalar_bits(-1, _dtypes.I64, "p"),
                         2 ** 64 - 1)
        self.assertEqual(_dtypes.scalar_bits(-1, _dtypes.I32, "p"),
                         2 ** 32 - 1)
        self.assertEqual(_dtypes.scalar_bits(True, _dtypes.I1, "p"), 1)
        # Round to nearest even: 1 + 2^-8 is halfway between bf16 values.
        self.assertEqual(_dtypes.scalar_bits(1 + 2 ** -8, _dtypes.BF16, "p"),
                         0x3F80)
        with self.assertRaises(ValueError):
            _dtypes.scalar_bits(1e6, _dtypes.F16, "p")

    def test_unsigned_scalars(self):
        self.assertEqual(_dtypes.scalar_bits(2 ** 32 - 1, _dtypes.U32, "p"),
                         2 ** 32 - 1)
        self.assertEqual(_dtypes.scalar_bits(2 ** 64 - 1, _dtypes.U64, "p"),
                         2 ** 64 - 1)
        with self.assertRaises(ValueError):
            _dtypes.scalar_bits(-1, _dtypes.U32, "p")
        with self.assertRaises(ValueError):
            _dtypes.scalar_bits(2 ** 32, _dtypes.U32, "p")
        self.assertEqual(_dtypes.NAMES[_dtypes.U16], "u16")
        # Either signedness stands for the other at one width.
        self.assertTrue(_dtypes.compatible(_dtypes.I32, _dtypes.U32))
        self.assertFalse(_dtypes.compatible(_dtypes.I32, _dtypes.U64))
        self.assertFalse(_dtypes.compatible(_dtypes.I8, _dtypes.I1))

    def test_fp8_dtypes(self):
        # torch's dtypes by their string form, DSL and Triton names.
        self.assertEqual(_dtypes.from_torch("torch.float8_e4m3fn"),
                         _dtypes.F8E4M3)
        self.assertEqual(_dtypes.from_torch("torch.float8_e5m2"),
                         _dtypes.F8E5M2)
        self.assertEqual(_dtypes.dsl_name("float8e4nv"), "f8e4m3")
        self.assertEqual(_dtypes.dsl_name("float8e5"), "f8e5m2")
        self.assertEqual(_dtypes.SIZES[_dtypes.F8E5M2], 1)
        self.assertFalse(_dtypes.compatible(_dtypes.F8E4M3, _dtypes.I8))
        self.assertFalse(_dtypes.compatible(_dtypes.F8E4M3, _dtypes.F8E5M2))
        # No fp8 scalars: an fp8 is a pointer element type.
        with self.assertRaises(TypeError):
            _dtypes.scalar_bits(1.0, _dtypes.F8E4M3, "p")

    def test_philox_reference_and_c_api(self):
        # Random123's known answers for philox4x32 with 10 rounds.
        self.assertEqual(_reference.philox4x32((0, 0, 0, 0), (0, 0)),
                         (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8))
        self.assertEqual(
            _reference.philox4x32((0x243f6a88, 0x85a308d3, 0x13198a2e,
                                   0x03707344), (0xa4093822, 0x299f31d0)),
            (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))
        # The library's host stream (sparsetile.random) is the same one.
        from sparsetile import random
        for seed, offset in ((0, 0), (2 ** 64 - 1, 5), (12345, 2 ** 40 + 7),
                             (7, -1)):
            words = random.randint4x(seed, offset)
            self.assertEqual(words[0], _reference.randint(seed, offset))
            self.assertEqual(words, _reference.philox4x32(
                (offset & 0xffffffff, (offset >> 32) & 0xffffffff, 0, 0),
                (seed & 0xffffffff, (seed >> 32) & 0xffffffff)))
            self.assertEqual(random.randint(seed, offset), words[0])
            self.assertTrue(0.0 <= random.rand(seed, offset) < 1.0)
            self.assertTrue(abs(random.randn(seed, offset)) < 6.0)

    def test_sparsedrop_reference_mask(self):
        ref = _reference.sparsedrop_mask_reference
        # p = 0 keeps every block and no bit past the last one.
        full = ref(1, 0, 0.0, 256, 100 * 16, 128, 16)
        self.assertEqual(len(full), 2)
        self.assertEqual(full[0], [-1, (1 << 36) - 1])
        self.assertEqual(ref(1, 0, 1.0, 256, 512, 128, 128), [[0], [0]])
        # The counter is offset + mb * nkb + kb: row 1 at offset 0 is row 0
        # at offset nkb.
        two = ref(7, 5, 0.5, 2, 64 * 70, 1, 64)
        one = ref(7, 5 + 70, 0.5, 1, 64 * 70, 1, 64)
        self.assertEqual(two[1], one[0])
        bits = sum(bin(w & (2 ** 64 - 1)).count("1") for w in two[0] + two[1])
        self.assertTrue(40 <= bits <= 100, bits)


class Validation(unittest.TestCase):
    """Counts, ranges and strings are checked before the C side acts on
    them (issue 46): nothing wraps, nothing is cut short."""

    SRC = ("kernel k(x: *f32, n: i32) {\n"
           "  let i = arange(0, 128);\n"
           "  store(x + i, load(x + i, mask=i < n), mask=i < n);\n"
           "}\n")

    def test_nul_in_the_source_is_an_error(self):
        # The C string used to end at the NUL: the kernel compiled, and
        # whatever followed was silently dropped.
        with self.assertRaises(sparsetile.ArgumentError) as cm:
            sparsetile.compile(self.SRC + "\0kernel hidden() {}\n", "k",
                               arch="sm_90")
        msg = str(cm.exception)
        self.assertIn("source text contains a NUL character", msg)
        self.assertIn("line 5, column 1", msg)
        fd, path = tempfile.mkstemp(suffix=".tile")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(self.SRC.replace("mask=i < n)", "mask=i <\0 n)", 1))
            with self.assertRaises(sparsetile.ArgumentError) as cm:
                sparsetile.compile(path, "k", arch="sm_90")
            self.assertIn("line 3", str(cm.exception))
        finally:
            os.remove(path)

    def test_nul_in_other_strings_is_an_error(self):
        cases = [({"name": "k\0x"}, "kernel name"),
                 ({"BLOCK": "12\08"}, "constant values"),
                 ({"arch": "sm_90\0junk"}, "arch")]
        for kwargs, what in cases:
            kwargs = dict(kwargs)
            name = kwargs.pop("name", "k")
            kwargs.setdefault("arch", "sm_90")
            with self.assertRaises(sparsetile.ArgumentError) as cm:
                sparsetile.compile(self.SRC, name, **kwargs)
            self.assertIn(what, str(cm.exception))
            self.assertIn("NUL", str(cm.exception))

    def test_options_do_not_wrap(self):
        # 2**32 + 4 used to reach C as 4.
        for key, value in (("num_warps", 2 ** 32 + 4), ("num_warps", -4),
                           ("num_warps", 4096), ("num_stages", 99),
                           ("num_stages", -1000), ("num_stages", 2 ** 32),
                           ("ptx_version", 1000), ("ptx_version", -85)):
            with self.assertRaises(sparsetile.ArgumentError) as cm:
                sparsetile.compile(self.SRC, "k", arch="sm_90",
                                   **{key: value})
            self.assertIn("%s = %d is out of range" % (key, value),
                          str(cm.exception))
        for key, value in (("num_warps", 4.0), ("num_stages", "2"),
                           ("num_warps", True)):
            with self.assertRaises(sparsetile.ArgumentTypeError) as cm:
                sparsetile.compile(self.SRC, "k", arch="sm_90",
                                   **{key: value})
            self.assertIn(key, str(cm.exception))
        k = sparsetile.compile(self.SRC, "k", arch="sm_90", num_warps=8,
                               num_stages=8, ptx_version=85)
        self.assertIn(".entry k", k.asm["ptx"])

    def test_c_abi_checks_its_own_ranges(self):
        # The same ranges, checked by the library itself for C callers.
        import ctypes
        from sparsetile import _lib
        L = _lib.lib()
        opts = _lib.st_options(b"sm_90", 0, 0, 99, 0)
        handle = ctypes.c_void_p()
        status = L.st_kernel_get(self.SRC.encode(), b"k.tile", b"k", None,
                                 None, 0, ctypes.byref(opts),
                                 ctypes.byref(handle))
        self.assertEqual(status, _lib.ST_ERROR_INVALID_ARGUMENT)
        self.assertIn("st_options.num_stages = 99", _lib.last_error())
        self.assertEqual(L.st_mask_flip_partials(2 ** 63 - 1),
                         (2 ** 63 - 1) // 4096 + 1)
        self.assertEqual(L.st_mask_flip_partials(-1), -1)
        self.assertEqual(L.st_compressed24_meta(7, 1600), 7 * 104)
        self.assertEqual(L.st_compressed24_meta(7, 2048), 7 * 128)
        self.assertEqual(L.st_compressed24_meta(-1, 64), -1)


if __name__ == "__main__":
    unittest.main()
