"""Element types: st_dtype codes, their DSL names, and the conversions from
torch dtypes, ``__cuda_array_interface__`` typestrs and Python scalars.

Nothing here imports torch: torch dtypes are recognized by their string form
("torch.bfloat16"), so this module works with or without torch installed.
"""

import math
import struct

from ._errors import ArgumentError, ArgumentTypeError

# st_dtype codes (sparsetile::DType's order; the unsigned types, then the
# fp8 types, were added last, so the older codes keep their values).
(I1, I8, I16, I32, I64, F16, BF16, F32, F64, U8, U16, U32, U64, F8E4M3,
 F8E5M2) = range(15)

NAMES = ("i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64",
         "u8", "u16", "u32", "u64", "f8e4m3", "f8e5m2")
_BY_NAME = {n: i for i, n in enumerate(NAMES)}
_BY_NAME.update({"bool": I1, "int8": I8, "int16": I16, "int32": I32,
                 "int64": I64, "float16": F16, "half": F16,
                 "bfloat16": BF16, "float32": F32, "float": F32,
                 "float64": F64, "double": F64, "uint8": U8,
                 "uint16": U16, "uint32": U32, "uint64": U64,
                 # Triton's and torch's names for the fp8 types.
                 "float8e4nv": F8E4M3, "float8e5": F8E5M2,
                 "float8_e4m3fn": F8E4M3, "float8_e5m2": F8E5M2})

# torch dtypes by str(dtype). An integer tensor of either signedness may be
# passed for a pointer of the other (see compatible()).
_TORCH = {
    "torch.bool": I1, "torch.int8": I8, "torch.uint8": U8,
    "torch.int16": I16, "torch.uint16": U16, "torch.int32": I32,
    "torch.uint32": U32, "torch.int64": I64, "torch.uint64": U64,
    "torch.float16": F16, "torch.bfloat16": BF16, "torch.float32": F32,
    "torch.float64": F64, "torch.float8_e4m3fn": F8E4M3,
    "torch.float8_e5m2": F8E5M2,
}

# __cuda_array_interface__ typestrs (byte order stripped). 'V2' is an opaque
# 16-bit type (ml_dtypes' bfloat16 has it): it matches any 16-bit parameter.
_TYPESTR = {
    "b1": I1, "i1": I8, "u1": U8, "i2": I16, "u2": U16, "i4": I32, "u4": U32,
    "i8": I64, "u8": U64, "f2": F16, "f4": F32, "f8": F64,
}
ANY16 = -2  # Sentinel: a 16-bit element of unknown interpretation ('V2').

_INT_BITS = {I1: 1, I8: 8, I16: 16, I32: 32, I64: 64, U8: 8, U16: 16,
             U32: 32, U64: 64}
_UNSIGNED = (U8, U16, U32, U64)
SIZES = {I1: 1, I8: 1, I16: 2, I32: 4, I64: 8, F16: 2, BF16: 2, F32: 4,
         F64: 8, U8: 1, U16: 2, U32: 4, U64: 8, F8E4M3: 1, F8E5M2: 1}


def compatible(param, arg):
    """Whether data of dtype `arg` may be passed where `param` is declared:
    the same type, or integers of one width differing only in signedness
    (as rt::argTypeMatches)."""
    if param == arg:
        return True
    return (param in _INT_BITS and arg in _INT_BITS and I1 not in (param, arg)
            and _INT_BITS[param] == _INT_BITS[arg])


def name(code):
    """The DSL spelling of a dtype code ("f32")."""
    if 0 <= code < len(NAMES):
        return NAMES[code]
    return "untyped" if code == -1 else "dtype %d" % code


def scalar_phrase(code):
    """"an f32 scalar", "a bf16 scalar": for error messages."""
    n = name(code)
    return ("a " if n[0] in "bu" else "an ") + n + " scalar"


def is_torch_dtype(value):
    return type(value).__module__ == "torch" and type(value).__name__ == "dtype"


def from_torch(dtype):
    """The st_dtype code of a torch dtype, or None."""
    return _TORCH.get(str(dtype))


def from_typestr(typestr):
    """The st_dtype code of a CUDA-array-interface typestr, ANY16 for 'V2',
    or None."""
    t = typestr.lstrip("<>|=")
    if t == "V2":
        return ANY16
    return _TYPESTR.get(t)


def dsl_name(value):
    """A dtype given as a torch dtype, an st_dtype name or alias ("bf16",
    "bfloat16") -> its DSL name, for `const T: dtype` values."""
    if is_torch_dtype(value):
        code = from_torch(value)
        if code is None:
            raise ArgumentTypeError("%s has no sparsetile dtype" % value)
        return NAMES[code]
    if isinstance(value, str) and value in _BY_NAME:
        return NAMES[_BY_NAME[value]]
    raise ArgumentTypeError("not a dtype: %r" % (value,))


def is_dtype_like(value):
    """Whether `value` reads as a dtype (a torch dtype or a dtype name)."""
    return is_torch_dtype(value) or (isinstance(value, str) and
                                     value in _BY_NAME)


def _bf16_bits(x):
    """Round-to-nearest-even f32 -> bf16 bit pattern (what torch does)."""
    (u,) = struct.unpack("<I", struct.pack("<f", x))
    if math.isnan(x):
        return 0x7FC0
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def int_range(code):
    """(lo, hi) of integer dtype `code`: signed, [0, 2^bits) for u8 ...
    u64, [0, 1] for i1."""
    bits = _INT_BITS[code]
    if bits == 1:
        return 0, 1
    if code in _UNSIGNED:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def scalar_bits(value, code, what):
    """The little-endian bits of Python scalar `value` as dtype `code`.

    Ints must fit the declared integer type's range (signed, or [0, 2^bits)
    for u8 ... u64; so a value that would wrap is an error, not a silent
    different number); floats are not
    accepted for integer parameters. `what` names the parameter in errors."""
    if code in _INT_BITS:
        if isinstance(value, float) or not hasattr(value, "__index__"):
            raise ArgumentTypeError("%s expects %s, got %s"
                                    % (what, scalar_phrase(code),
                                       _describe(value)))
        v = int(value.__index__())
        bits = _INT_BITS[code]
        lo, hi = int_range(code)
        if not lo <= v <= hi:
            raise ArgumentError("%s expects %s; %d is out of range [%d, %d]"
                                % (what, scalar_phrase(code), v, lo, hi))
        return v & ((1 << 64) - 1) if bits == 64 else v & ((1 << bits) - 1)
    if code in (F16, BF16, F32, F64):
        if not (isinstance(value, (int, float)) or hasattr(value, "__float__")):
            raise ArgumentTypeError("%s expects %s, got %s"
                                    % (what, scalar_phrase(code),
                                       _describe(value)))
        x = float(value)
        if code == F64:
            return struct.unpack("<Q", struct.pack("<d", x))[0]
        if code == F32:
            try:
                return struct.unpack("<I", struct.pack("<f", x))[0]
            except OverflowError:
                raise ArgumentError("%s: %r does not fit in f32" % (what, x))
        if code == F16:
            try:
                return struct.unpack("<H", struct.pack("<e", x))[0]
            except OverflowError:
                raise ArgumentError("%s: %r does not fit in f16" % (what, x))
        try:
            return _bf16_bits(x)
        except OverflowError:
            raise ArgumentError("%s: %r does not fit in bf16" % (what, x))
    raise ArgumentTypeError("%s: unsupported scalar type %s"
                            % (what, name(code)))


def _describe(value):
    t = type(value)
    return "%s.%s" % (t.__module__, t.__name__) if t.__module__ not in (
        "builtins", "__builtin__") else t.__name__
