"""The launch path a training loop takes thousands of times a second.

`kernel[grid](x, y, out, n)` with CUDA torch tensors of the declared dtypes,
Python ints and floats for the scalars and a tuple (or a `meta -> tuple`
function) for the grid needs none of the general path's work: no argument
records, no descriptions for error messages, no ctypes structures built
per call. A `Plan`, made once per Kernel, knows where each argument's bits
go in a prefilled st_arg array; a launch checks each argument with a few
identity and range tests, writes the bits and calls st_kernel_launch.

Anything the plan does not recognise (a CuPy array, None for a pointer, an
f16 scalar, a desc<T> parameter, a tensor on another device, a grid that is
not ints) returns False, and the caller takes the checked path, which
raises the precise error or handles the case. The C side checks the
arguments again in either case (st_kernel_launch), so the fast path can be
wrong only by being slower, never by launching something the general path
would refuse: every test here is one the general path makes too.

The buffers are per thread: ctypes releases the GIL during the call, and
the C side reads the array while another thread may be filling its own.
"""

import ctypes
import struct
import sys
import threading

from . import _dtypes as dt
from . import _lib

_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_WORDS = 5  # sizeof(st_arg) / 8: kind|dtype, bits, rows, cols, ld

_POINTER, _INT, _FLOAT32, _FLOAT64 = range(4)


def _layout_ok():
    return (ctypes.sizeof(_lib.st_arg) == 8 * _WORDS and
            _lib.st_arg.bits.offset == 8)


def _torch_dtypes(torch, code):
    """The torch dtypes the general path accepts for a pointer to `code`."""
    out = set()
    for name, c in dt._TORCH.items():
        if dt.compatible(code, c):
            t = getattr(torch, name.split(".", 1)[1], None)
            if t is not None:
                out.add(t)
    return frozenset(out)


def _current_stream(torch):
    """torch's current raw CUstream of a device index, the fastest way this
    torch offers (the private getter Triton's launcher also uses)."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda index: torch.cuda.current_stream(index).cuda_stream


class Plan(object):
    """What a fast launch of one Kernel needs; None from `make` when the
    kernel has a parameter the fast path does not take."""

    __slots__ = ("steps", "count", "template", "tensor", "stream_of",
                 "launch", "handle", "names", "meta", "local")

    @staticmethod
    def make(kernel):
        torch = sys.modules.get("torch")
        if torch is None or not hasattr(torch, "_C") or not _layout_ok() \
                or not kernel._params:
            return None  # No torch, or a stand-in for it (tests).
        steps = []
        template = (_lib.st_arg * len(kernel._params))()
        for i, (_, kind, code) in enumerate(kernel._params):
            a = template[i]
            a.dtype = code
            slot = _WORDS * i + 1
            if kind == "pointer":
                a.kind = _lib.ST_ARG_POINTER
                steps.append((slot, _POINTER, _torch_dtypes(torch, code)))
            elif kind == "scalar" and code in dt._INT_BITS:
                a.kind = _lib.ST_ARG_SCALAR
                lo, hi = dt.int_range(code)
                steps.append((slot, _INT, (lo, hi,
                                           (1 << dt._INT_BITS[code]) - 1)))
            elif kind == "scalar" and code in (dt.F32, dt.F64):
                a.kind = _lib.ST_ARG_SCALAR
                steps.append((slot, _FLOAT32 if code == dt.F32 else
                              _FLOAT64, None))
            else:
                return None  # desc<T>, f16/bf16 scalars: the general path.
        plan = Plan()
        plan.steps = tuple(steps)
        plan.count = len(steps)
        plan.template = bytes(template)
        plan.tensor = torch.Tensor
        plan.stream_of = _current_stream(torch)
        plan.launch = _lib.lib().st_kernel_launch
        plan.handle = kernel._handle
        plan.names = tuple(p[0] for p in kernel._params)
        plan.meta = kernel.meta
        plan.local = threading.local()
        return plan

    def _buffers(self):
        local = self.local
        try:
            return local.args, local.words, local.grid
        except AttributeError:
            args = (_lib.st_arg * self.count).from_buffer_copy(self.template)
            local.args = args
            local.words = (ctypes.c_uint64 * (_WORDS * self.count)
                           ).from_buffer(args)
            local.grid = (ctypes.c_uint * 3)()
            return local.args, local.words, local.grid

    def run(self, args, grid, stream, name):
        """Launches and returns True, or returns False having done nothing
        (the caller then takes the checked path)."""
        if len(args) != self.count:
            return False
        c_args, words, dims = self._buffers()
        tensor = self.tensor
        device = -1
        for (slot, kind, accept), v in zip(self.steps, args):
            if kind == _POINTER:
                if not isinstance(v, tensor) or v.dtype not in accept or \
                        not v.is_cuda:
                    return False
                d = v.get_device()
                if d != device:
                    if device != -1:
                        return False
                    device = d
                words[slot] = v.data_ptr()
            elif kind == _INT:
                if v.__class__ is not int and v.__class__ is not bool:
                    return False
                lo, hi, mask = accept
                if not lo <= v <= hi:
                    return False
                words[slot] = v & mask
            else:
                if v.__class__ is not float and v.__class__ is not int:
                    return False
                try:
                    words[slot] = (_U32.unpack(_F32.pack(v))[0]
                                   if kind == _FLOAT32 else
                                   _U64.unpack(_F64.pack(v))[0])
                except OverflowError:
                    return False
        if device == -1:
            return False  # No tensor says which stream: the general path.
        if device != _lib._bound_device:
            _lib.bind_device(device)
        if grid.__class__ is not tuple:
            if not callable(grid):
                return False
            meta = dict(self.meta)
            meta.update(zip(self.names, args))
            grid = grid(meta)
            if grid.__class__ is list:
                grid = tuple(grid)
            elif grid.__class__ is not tuple:
                return False
        if not 1 <= len(grid) <= 3:
            return False
        i = 0
        for g in grid:
            if g.__class__ is not int or not 0 < g < 2 ** 31:
                return False  # 0 (nothing to launch) and errors: checked path.
            dims[i] = g
            i += 1
        while i < 3:
            dims[i] = 1
            i += 1
        if stream is None:
            stream = self.stream_of(device)
        elif stream.__class__ is not int:
            stream = getattr(stream, "cuda_stream", None)
            if stream.__class__ is not int:
                return False
        status = self.launch(self.handle, dims, None, 0, stream or None,
                             c_args, self.count)
        if status:
            _lib.check(status, name)
        return True
