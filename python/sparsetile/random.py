"""The DSL's random stream on the host, through the library's C API
(st_random_*; sparsetile/runtime/Random.h): rebuild on the CPU any number a
kernel drew with randint/rand/randn (Language.md, "Random numbers").

Seeds and offsets are Python ints taken modulo 2^64, so a negative i64
offset is its two's complement. A 32-bit DSL offset ``o`` is the offset
``o & 0xffffffff``; a 32-bit DSL seed is widened by its signedness first.
"""

import ctypes

from . import _lib

_M64 = (1 << 64) - 1


def randint4x(seed, offset):
    """The four 32-bit words of Philox-4x32-10 with key (seed lo, seed hi)
    and counter (offset lo, offset hi, 0, 0)."""
    words = (ctypes.c_uint32 * 4)()
    _lib.lib().st_random_randint4x(seed & _M64, offset & _M64, words)
    return tuple(words)


def randint(seed, offset):
    """The DSL's randint(seed, offset): word 0 of randint4x."""
    return randint4x(seed, offset)[0]


def rand(seed, offset):
    """The DSL's rand(seed, offset), bit for bit (an f32 as a Python float)."""
    return _lib.lib().st_random_rand(seed & _M64, offset & _M64)


def randn(seed, offset):
    """The DSL's randn(seed, offset), to a few ulp of the device's."""
    return _lib.lib().st_random_randn(seed & _M64, offset & _M64)
