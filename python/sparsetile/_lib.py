"""Loading libsparsetile.so and declaring its C ABI (sparsetile.h) to ctypes.

The library is loaded on first use, not at import, so that ``import
sparsetile`` works on a machine without it (documentation builds, CPU-only
tooling); the first call that needs it raises LibraryNotFoundError listing
every place that was tried and what to do. Search order:

1. ``$SPARSETILE_LIBRARY`` (a path to the .so); when set it is the only
   candidate, so a wrong value is reported rather than silently bypassed;
2. ``sparsetile/libsparsetile.so`` next to this file (the wheel of
   python/build_wheel.py, or ``pip install ./python``, bundles it there);
3. ``<prefix>/lib/libsparsetile.so`` for a package installed by ``cmake
   --install`` at ``<prefix>/lib/python/sparsetile``;
4. ``<repo>/build/runtime/libsparsetile.so`` for a source checkout used
   through ``PYTHONPATH=<repo>/python``;
5. the dynamic loader's default search (``LD_LIBRARY_PATH``, ldconfig).
"""

import ctypes
import ctypes.util
import os
import threading

from ._errors import (ArgumentError, ArgumentTypeError, CompileError,
                      CudaError, LibraryNotFoundError, SparsetileError)

#: The C ABI version this package was written against (ST_ABI_VERSION).
ABI_VERSION = 2

LIBRARY_ENV = "SPARSETILE_LIBRARY"
LIBRARY_NAME = "libsparsetile.so"

# st_status codes.
ST_OK = 0
ST_ERROR_INVALID_ARGUMENT = 1
ST_ERROR_COMPILE = 2
ST_ERROR_CUDA = 3
ST_ERROR_INTERNAL = 4

_STATUS_ERRORS = {
    ST_ERROR_INVALID_ARGUMENT: ArgumentError,
    ST_ERROR_COMPILE: CompileError,
    ST_ERROR_CUDA: CudaError,
    ST_ERROR_INTERNAL: SparsetileError,
}

# st_arg_kind.
ST_ARG_SCALAR = 0
ST_ARG_POINTER = 1
ST_ARG_TENSOR2D = 2

# st_activation: the epilogues of the 2:4 layer GEMMs.
ST_ACT_NONE = 0
ST_ACT_GELU_TANH = 1


class st_options(ctypes.Structure):
    _fields_ = [("arch", ctypes.c_char_p), ("ptx_version", ctypes.c_int),
                ("num_warps", ctypes.c_int), ("num_stages", ctypes.c_int),
                ("no_specialize", ctypes.c_int), ("debug", ctypes.c_int)]


class st_arg(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("dtype", ctypes.c_int),
                ("bits", ctypes.c_uint64), ("rows", ctypes.c_int64),
                ("cols", ctypes.c_int64), ("ld", ctypes.c_int64)]


class st_sparsedrop_problem(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("M", ctypes.c_int64),
                ("N", ctypes.c_int64), ("K", ctypes.c_int64),
                ("block_m", ctypes.c_int64), ("block_k", ctypes.c_int64),
                ("p", ctypes.c_double)]


class st_glu_problem(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("M", ctypes.c_int64),
                ("F", ctypes.c_int64), ("activation", ctypes.c_int),
                ("layout", ctypes.c_int), ("interleave_width", ctypes.c_int64)]


class st_sparse_linear_tiles(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int) for name in (
        "tile_i", "tile_m", "warps", "prefetch", "tma", "stages",
        "warp_specialize", "persistent")]


_c_int_p = ctypes.POINTER(ctypes.c_int)
_c_str_p = ctypes.POINTER(ctypes.c_char_p)
_c_void_pp = ctypes.POINTER(ctypes.c_void_p)
_u64, _i64, _int = ctypes.c_uint64, ctypes.c_int64, ctypes.c_int
_vp, _cp = ctypes.c_void_p, ctypes.c_char_p
_status = ctypes.c_int
_kernel_p = ctypes.c_void_p  # st_kernel * (opaque)
_opts_p = ctypes.POINTER(st_options)

# name -> (restype, argtypes). Declared once so that ctypes converts and
# checks every argument (a Python int silently truncated to a C int would
# otherwise corrupt a 64-bit device pointer).
_PROTOTYPES = {
    "st_abi_version": (_int, []),
    "st_version": (_cp, []),
    "st_last_error": (_cp, []),
    "st_free": (None, [_vp]),
    "st_gpu_available": (_int, [_c_str_p]),
    "st_kernel_get": (_status, [_cp, _cp, _cp, _c_str_p, _c_str_p, _int,
                                _opts_p, ctypes.POINTER(_kernel_p)]),
    "st_kernel_name": (_status, [_kernel_p, _c_str_p]),
    "st_kernel_num_params": (_status, [_kernel_p, _c_int_p]),
    "st_kernel_param": (_status, [_kernel_p, _int, _c_str_p, _c_int_p,
                                  _c_int_p, _c_int_p]),
    "st_kernel_num_constants": (_status, [_kernel_p, _c_int_p]),
    "st_kernel_constant": (_status, [_kernel_p, _int, _c_str_p, _c_int_p,
                                     _c_int_p, _c_str_p]),
    "st_kernel_launch": (_status, [_kernel_p, ctypes.POINTER(ctypes.c_uint),
                                   ctypes.POINTER(ctypes.c_uint),
                                   ctypes.c_uint, _vp,
                                   ctypes.POINTER(st_arg), _int]),
    "st_autotuned_get": (_status, [_cp, _cp, _cp, _c_str_p, _c_str_p, _int,
                                   _opts_p, ctypes.POINTER(_vp)]),
    "st_autotuned_launch": (_status, [_vp, _vp, ctypes.POINTER(st_arg),
                                      _int]),
    "st_autotuned_choice": (_status, [_vp, _vp, ctypes.POINTER(st_arg), _int,
                                      _c_int_p, _c_str_p]),
    "st_autotuned_launch_config": (_status, [_vp, _int,
                                             ctypes.POINTER(ctypes.c_uint),
                                             _vp, ctypes.POINTER(st_arg),
                                             _int]),
    "st_compile_stage": (_status, [_cp, _cp, _cp, _c_str_p, _c_str_p, _int,
                                   _opts_p, _c_str_p, _int, _cp, _c_void_pp]),
    "st_compile_artifacts": (_status, [_cp, _cp, _cp, _c_str_p, _c_str_p,
                                       _int, _opts_p, _c_str_p, _int,
                                       _c_void_pp, _c_void_pp,
                                       ctypes.POINTER(ctypes.c_size_t)]),
    "st_random_randint4x": (None, [_u64, _u64,
                                   ctypes.POINTER(ctypes.c_uint32)]),
    "st_random_rand": (ctypes.c_float, [_u64, _u64]),
    "st_random_randn": (ctypes.c_float, [_u64, _u64]),
    "st_sparsedrop_mask_words": (_i64, [_i64, _i64, _i64, _i64]),
    "st_sparsedrop_generate_mask": (_status, [_u64, _i64, ctypes.c_double,
                                              _i64, _i64, _i64, _i64, _u64,
                                              _vp]),
    "st_sparsedrop_forward": (_status, [
        ctypes.POINTER(st_sparsedrop_problem), _u64, _i64, _u64, _i64, _u64,
        _u64, _i64, _vp]),
    "st_sparsedrop_backward_x": (_status, [
        ctypes.POINTER(st_sparsedrop_problem), _u64, _i64, _u64, _i64, _u64,
        _u64, _i64, _vp]),
    "st_sparsedrop_backward_w": (_status, [
        ctypes.POINTER(st_sparsedrop_problem), _u64, _i64, _u64, _i64, _u64,
        _u64, _i64, _vp]),
    "st_mask24_transposable": (_status, [_int, _i64, _i64, _u64, _i64, _u64,
                                         _i64, _u64, _i64, _vp]),
    "st_mask24_rowwise": (_status, [_int, _i64, _i64, _u64, _i64, _u64, _i64,
                                    _u64, _i64, _vp]),
    "st_mask_flip_count": (_status, [_u64, _u64, _i64, _vp,
                                     ctypes.POINTER(_i64)]),
    "st_masked_decay": (_status, [_int, _u64, _u64, _u64, _i64,
                                  ctypes.c_float, _vp]),
    "st_mvue24": (_status, [_int, _u64, _u64, _i64, _u64, _i64, _vp]),
    "st_compress24": (_status, [_int, _i64, _i64, _u64, _i64, _u64, _i64,
                                _u64, _u64, _u64, _u64, _vp]),
    "st_sparse24_linear_forward": (_status, [_int, _i64, _i64, _i64, _u64,
                                             _u64, _u64, _i64, _u64, _i64,
                                             _vp]),
    "st_sparse24_linear_backward_x": (_status, [_int, _i64, _i64, _i64, _u64,
                                                _u64, _u64, _i64, _u64, _i64,
                                                _vp]),
    "st_sparse24_linear_forward_act": (_status, [
        _int, _i64, _i64, _i64, _u64, _u64, _u64, _i64, _u64, _int, _u64,
        _u64, _i64, _vp]),
    "st_sparse24_linear_backward_x_act": (_status, [
        _int, _i64, _i64, _i64, _u64, _u64, _u64, _i64, _int, _u64, _u64,
        _i64, _vp]),
    "st_mask24_update": (_status, [_int, _i64, _i64, _u64, _i64, _u64, _i64,
                                   _u64, _i64, _u64, _u64, _u64, _u64, _vp]),
    "st_mvue24_compress_t": (_status, [_int, _i64, _i64, _u64, _i64, _u64,
                                       _u64, _u64, _i64, _vp]),
    "st_sparse24_linear_backward_w": (_status, [_int, _i64, _i64, _i64, _u64,
                                                _u64, _u64, _i64, _u64, _i64,
                                                _vp]),
    "st_sparse24_linear_backward_w_ex": (_status, [
        _int, _i64, _i64, _i64, _u64, _u64, _u64, _i64, _u64, _int, _i64,
        _vp]),
    "st_sparse_linear": (_status, [_int, _i64, _i64, _i64, _u64, _u64, _u64,
                                   _i64, _u64, _i64, _vp,
                                   ctypes.POINTER(st_sparse_linear_tiles)]),
    "st_mask_flip_partials": (_i64, [_i64]),
    "st_compressed24_meta": (_i64, [_i64, _i64]),
    "st_mask_flip_count_partials": (_status, [_u64, _u64, _i64, _u64, _vp]),
    "st_glu_forward": (_status, [ctypes.POINTER(st_glu_problem), _u64, _i64,
                                 _u64, _i64, _vp]),
    "st_glu_backward": (_status, [ctypes.POINTER(st_glu_problem), _u64, _i64,
                                  _u64, _i64, _u64, _i64, _vp]),
    # Graph capture (sparsetile/runtime/LaunchMemory.h).
    "st_sparsedrop_generate_mask_at": (_status, [
        _u64, _u64, _i64, ctypes.c_double, _i64, _i64, _i64, _i64, _u64,
        _vp]),
    "st_set_allocator": (_status, [_vp, _vp, _vp, _int]),
    "st_launch_memory_stats": (_status, [ctypes.POINTER(_i64)]),
    "st_set_log_callback": (_status, [_vp, _vp, _int]),
}

#: C type of st_log_fn (sparsetile.h).
LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, _vp)

#: C types of st_alloc_fn and st_release_fn (sparsetile.h).
ALLOC_FN = ctypes.CFUNCTYPE(_u64, ctypes.c_size_t, _vp, _vp)
RELEASE_FN = ctypes.CFUNCTYPE(None, _u64, ctypes.c_size_t, _vp, _vp)

_lock = threading.Lock()
_lib = None


def candidate_paths():
    """The paths tried, in order, as (description, path-or-name) pairs."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        return [("$" + LIBRARY_ENV, env)]
    here = os.path.dirname(os.path.abspath(__file__))
    found = ctypes.util.find_library("sparsetile")
    return [
        ("next to the package (a wheel)", os.path.join(here, LIBRARY_NAME)),
        ("an install prefix (cmake --install puts the package in "
         "<prefix>/lib/python)",
         os.path.normpath(os.path.join(here, os.pardir, os.pardir,
                                       LIBRARY_NAME))),
        ("a source checkout's build directory (PYTHONPATH=<repo>/python)",
         os.path.normpath(os.path.join(here, os.pardir, os.pardir, "build",
                                       "runtime", LIBRARY_NAME))),
        ("the dynamic loader's search path", found or LIBRARY_NAME),
    ]


def _open():
    tried = []
    for what, path in candidate_paths():
        is_file_path = os.sep in path
        if is_file_path and not os.path.exists(path):
            tried.append("  %s: %s (no such file)" % (what, path))
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("  %s: %s (%s)" % (what, path, e))
    raise LibraryNotFoundError(
        "sparsetile: cannot load %s. Looked for it:\n%s\n"
        "To fix it, do one of:\n"
        "  - install the wheel, which carries the library: build the library "
        "(bash scripts/build.sh), then `cmake --build build --target wheel` "
        "and `pip install build/python/dist/sparsetile-*.whl`, or `pip "
        "install ./python` from the repository;\n"
        "  - use the package of `cmake --install build --prefix PREFIX` with "
        "PYTHONPATH=PREFIX/lib/python;\n"
        "  - from a source checkout, build the library (bash "
        "scripts/build.sh) and set PYTHONPATH=<repo>/python;\n"
        "  - set %s to the path of %s."
        % (LIBRARY_NAME, "\n".join(tried), LIBRARY_ENV, LIBRARY_NAME))


def _declare(lib):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name, None)
        if fn is None:  # Reported when called: see Lib.__getattr__.
            continue
        fn.restype = restype
        fn.argtypes = argtypes


class Lib(object):
    """The loaded library: attribute access gives the declared C functions."""

    def __init__(self, cdll):
        self.cdll = cdll
        self.path = getattr(cdll, "_name", "?")

    def __getattr__(self, name):
        fn = getattr(self.cdll, name, None)
        if fn is None or name not in _PROTOTYPES:
            raise SparsetileError(
                "sparsetile: %s has no function %s (is it older than this "
                "package?)" % (self.path, name))
        return fn


def lib():
    """The library, loaded and checked on the first call."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            cdll = _open()
            _declare(cdll)
            loaded = Lib(cdll)
            version = loaded.st_abi_version()
            if version != ABI_VERSION:
                raise LibraryNotFoundError(
                    "sparsetile: %s has C ABI version %d; this package needs "
                    "%d" % (loaded.path, version, ABI_VERSION))
            _lib = loaded
    return _lib


def last_error():
    msg = lib().st_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def check(status, context=None):
    """Raises the exception matching a failed st_status, with the library's
    message (prefixed by `context` when the message would not say which
    call failed)."""
    if status == ST_OK:
        return
    msg = last_error() or "unknown error (status %d)" % status
    if context and not msg.startswith(context):
        msg = "%s: %s" % (context, msg)
    raise _STATUS_ERRORS.get(status, SparsetileError)(msg)


_bound_device = None


def bind_device(index):
    """Ties the library to CUDA device `index` before its first GPU use.

    libsparsetile uses one GPU per process (the device of $SPARSETILE_DEVICE,
    default 0), bound at its first GPU call. torch code picks its GPU with
    torch.cuda.set_device (one per rank under torchrun), so the first tensor
    launched on decides it, unless SPARSETILE_DEVICE was set explicitly; a
    later tensor on another GPU is an error rather than a silent cross-device
    launch."""
    global _bound_device
    if index is None:
        return
    index = int(index)
    with _lock:
        if _bound_device is None:
            _bound_device = int(os.environ.setdefault("SPARSETILE_DEVICE",
                                                      str(index)))
        bound = _bound_device
    if bound != index:
        raise ArgumentError(
            "sparsetile runs on one GPU per process (cuda:%d here, from "
            "SPARSETILE_DEVICE or the first tensor it was given); got a "
            "tensor on cuda:%d" % (bound, index))


def take_string(ptr):
    """A malloc'd char * from the library as str; frees it."""
    if not ptr:
        return ""
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib().st_free(ptr)


def take_bytes(ptr, size):
    """A malloc'd buffer of `size` bytes as bytes; frees it."""
    if not ptr:
        return b""
    try:
        return ctypes.string_at(ptr, size)
    finally:
        lib().st_free(ptr)


def gpu_available():
    """(available, reason): whether the library sees a usable GPU."""
    why = ctypes.c_char_p()
    ok = bool(lib().st_gpu_available(ctypes.byref(why)))
    return ok, (why.value.decode("utf-8", "replace") if why.value else "")


def c_string(value, what):
    """`value` (str) as UTF-8 for a char * argument. A NUL would end the C
    string there and silently drop the rest (of a kernel's source, say), so
    it is an error naming `what` and where the NUL is."""
    if not isinstance(value, str):
        raise ArgumentTypeError("%s: expected a str, got %s"
                                % (what, type(value).__name__))
    at = value.find("\0")
    if at >= 0:
        line = value.count("\n", 0, at) + 1
        column = at - (value.rfind("\n", 0, at) + 1) + 1
        raise ArgumentError(
            "%s contains a NUL character at offset %d (line %d, column %d); "
            "the C library would ignore everything after it"
            % (what, at, line, column))
    return value.encode("utf-8")


def c_strings(values, what="string list"):
    """A char *[] for a list of str (None, i.e. NULL, for an empty list); the
    array keeps the encoded strings alive."""
    if not values:
        return None
    encoded = [c_string(v, "%s [%d]" % (what, i)) for i, v in
               enumerate(values)]
    return (ctypes.c_char_p * len(encoded))(*encoded)


def c_int_option(value, what, lo, hi, meaning):
    """An int option checked against [lo, hi] before it becomes a C int
    (ctypes wraps 2**32 + 4 to 4 without a word)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ArgumentTypeError("%s: expected an int, got %r" % (what, value))
    value = value.__index__()
    if not lo <= value <= hi:
        raise ArgumentError("%s = %d is out of range: %s" % (what, value,
                                                             meaning))
    return value
