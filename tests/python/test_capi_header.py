"""The ctypes table of python/sparsetile/_lib.py against the C header it
mirrors (runtime/include/sparsetile/sparsetile.h), without the library, a GPU
or torch.

The two are written by hand, so an argument added to one and not the other
would let ctypes pass a 32-bit int where the C side reads a 64-bit pointer:
silently wrong results, not an error. This test parses every `ST_API`
declaration, every `typedef struct` and every `typedef enum` of the header
and holds them against `_PROTOTYPES`, the ctypes Structures and the Python
constants, argument by argument and field by field."""

import ctypes
import os
import re
import unittest

from sparsetile import _lib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HEADER = os.path.join(REPO, "runtime", "include", "sparsetile", "sparsetile.h")

# C scalar types -> ctypes. Enums are passed as int by the ABI's convention.
_SCALARS = {
    "int": ctypes.c_int, "unsigned": ctypes.c_uint, "float": ctypes.c_float,
    "double": ctypes.c_double, "size_t": ctypes.c_size_t,
    "int64_t": ctypes.c_int64, "uint64_t": ctypes.c_uint64,
    "uint32_t": ctypes.c_uint32, "st_status": ctypes.c_int,
}


def _source():
    with open(HEADER) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _split_decl(decl):
    """'const unsigned grid[3]' -> ('unsigned', 1 pointer level, 'grid')."""
    decl = " ".join(decl.replace("*", " * ").split())
    array = re.search(r"\[\s*\d*\s*\]\s*$", decl)
    if array:
        decl = decl[:array.start()].strip()
    words = [w for w in decl.split() if w not in ("const", "struct")]
    name = None
    if len(words) > 1 and re.match(r"^[A-Za-z_]\w*$", words[-1]):
        name = words.pop()
    stars = words.count("*") + (1 if array else 0)
    base = " ".join(w for w in words if w != "*")
    return base, stars, name


class Header(object):
    def __init__(self):
        text = _source()
        self.opaque = set(re.findall(r"typedef\s+struct\s+(\w+)\s+\1\s*;", text))
        self.fnptr = set(re.findall(r"typedef\s+[^;]*?\(\s*\*\s*(\w+)\s*\)", text))
        self.structs = {}
        for name, body in re.findall(
                r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*\1\s*;", text, re.S):
            fields = []
            for decl in body.split(";"):
                if not decl.strip():
                    continue
                base_decl, _, rest = decl.partition(",")
                base, stars, first = _split_decl(base_decl)
                fields.append((first, base, stars))
                for extra in filter(None, (r.strip() for r in rest.split(","))):
                    fields.append((extra, base, stars))
            self.structs[name] = fields
        self.enums = {}
        for body, name in re.findall(r"typedef\s+enum\s+\w*\s*\{(.*?)\}\s*(\w+)\s*;",
                                     text, re.S):
            values, nxt = {}, 0
            for item in filter(None, (i.strip() for i in body.split(","))):
                key, _, val = item.partition("=")
                nxt = int(val, 0) if val.strip() else nxt
                values[key.strip()] = nxt
                nxt += 1
            self.enums[name] = values
        self.functions = {}
        for decl in re.findall(r"ST_API\s+([^;]*?\))\s*;", text, re.S):
            m = re.match(r"^(.*?)\b(st_\w+)\s*\((.*)\)$", " ".join(decl.split()), re.S)
            ret, name, params = m.group(1), m.group(2), m.group(3).strip()
            args = [] if params in ("", "void") else [
                _split_decl(p)[:2] for p in params.split(",")]
            self.functions[name] = (_split_decl(ret + " x")[:2], args)
        version = re.search(r"#define\s+ST_ABI_VERSION\s+(\d+)", text)
        self.abi_version = int(version.group(1))

    def ctype(self, base, stars, result=False):
        """The ctypes type the table must use for C type (base, stars)."""
        if stars == 0:
            if base == "void" and result:
                return None
            if base in self.fnptr:
                return ctypes.c_void_p
            return _SCALARS[base]
        if stars == 1 and base == "char":
            return ctypes.c_char_p
        if stars == 1 and (base == "void" or base in self.opaque):
            return ctypes.c_void_p
        if stars == 1 and base in self.structs:
            return ctypes.POINTER(getattr(_lib, base))
        return ctypes.POINTER(self.ctype(base, stars - 1))


# The same ABI read another way, on purpose: a `char **` out-parameter that
# the library fills with a malloc'd buffer is declared `void **` in the table,
# since ctypes turns a c_char_p into bytes and loses the pointer st_free needs.
_SAME_ABI = {(ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_void_p))}


def _name(t):
    return "None" if t is None else getattr(t, "__name__", repr(t))


class CtypesTableMatchesHeader(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.h = Header()

    def test_the_parser_sees_the_whole_header(self):
        # A parser that silently read nothing would pass every test below.
        self.assertGreater(len(self.h.functions), 40)
        self.assertIn("st_kernel_launch", self.h.functions)
        # A kernel's constants (jit.py's Kernel.meta comes from them).
        self.assertIn("st_kernel_num_constants", self.h.functions)
        self.assertIn("st_kernel_constant", self.h.functions)
        self.assertIn("st_options", self.h.structs)
        self.assertIn("st_dtype", self.h.enums)

    def test_every_declared_function_has_a_prototype_and_no_more(self):
        declared, table = set(self.h.functions), set(_lib._PROTOTYPES)
        self.assertEqual(sorted(declared - table), [],
                         "declared in sparsetile.h, missing in _PROTOTYPES")
        self.assertEqual(sorted(table - declared), [],
                         "in _PROTOTYPES, not declared in sparsetile.h")

    def test_every_argument_and_result_type_matches(self):
        wrong = []
        for name, ((rbase, rstars), args) in sorted(self.h.functions.items()):
            if name not in _lib._PROTOTYPES:
                continue
            restype, argtypes = _lib._PROTOTYPES[name]
            want = self.h.ctype(rbase, rstars, result=True)
            if restype is not want:
                wrong.append("%s: result %s, header says %s" % (
                    name, _name(restype), _name(want)))
            if len(argtypes) != len(args):
                wrong.append("%s: %d arguments, header says %d" % (
                    name, len(argtypes), len(args)))
                continue
            for i, ((base, stars), got) in enumerate(zip(args, argtypes)):
                want = self.h.ctype(base, stars)
                if got is not want and (want, got) not in _SAME_ABI:
                    wrong.append("%s: argument %d is %s, header says %s (%s%s)" % (
                        name, i, _name(got), _name(want), base, "*" * stars))
        self.assertEqual(wrong, [])

    def test_structs_match_field_by_field(self):
        wrong = []
        for name, fields in sorted(self.h.structs.items()):
            cls = getattr(_lib, name, None)
            if cls is None:
                wrong.append("%s: no ctypes Structure in _lib" % name)
                continue
            got = [(f[0], f[1]) for f in cls._fields_]
            want = [(f, self.h.ctype(b, s)) for f, b, s in fields]
            if [g[0] for g in got] != [w[0] for w in want]:
                wrong.append("%s: fields %s, header says %s" % (
                    name, [g[0] for g in got], [w[0] for w in want]))
                continue
            for (field, gt), (_, wt) in zip(got, want):
                if gt is not wt:
                    wrong.append("%s.%s: %s, header says %s" % (
                        name, field, _name(gt), _name(wt)))
        self.assertEqual(wrong, [])

    def test_status_arg_kind_and_activation_codes_match(self):
        for enum in ("st_status", "st_arg_kind", "st_activation"):
            for key, value in self.h.enums[enum].items():
                self.assertEqual(getattr(_lib, key), value, key)

    def test_dtype_codes_match(self):
        from sparsetile import _dtypes
        codes = self.h.enums["st_dtype"]
        for key, value in codes.items():
            self.assertEqual(_dtypes.NAMES[value], key[len("ST_"):].lower(),
                             key)
        self.assertEqual(len(_dtypes.NAMES), len(codes))

    def test_abi_version_matches(self):
        self.assertEqual(_lib.ABI_VERSION, self.h.abi_version)


if __name__ == "__main__":
    unittest.main()
