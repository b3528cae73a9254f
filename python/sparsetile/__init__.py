"""sparsetile: a JIT compiler and runtime for sparse-training GPU kernels.

Pure Python over the C ABI of libsparsetile.so (sparsetile.h) through ctypes:
write kernels in the tile DSL and launch them on torch tensors or CuPy
arrays, call the SparseDrop / 2:4 / gated-activation ops, or use them as
torch layers::

    import torch, sparsetile
    add = sparsetile.compile("dsl_examples/vector_add.tile", "vector_add",
                             BLOCK=1024)
    x, y = torch.randn(2, 10000, device="cuda").unbind(0)
    out = torch.empty_like(x)
    add[lambda m: (sparsetile.cdiv(m["n"], m["BLOCK"]),)](x, y, out, x.numel())
    print(add.asm["ptx"][:200])              # also "tile", "mlir", "cubin", ...

    from sparsetile.nn import SparseDropLinear, Sparse24Linear, SwiGLU
    layer = SparseDropLinear(1024, 4096, p=0.5, device="cuda",
                             dtype=torch.bfloat16)

Importing sparsetile imports neither torch nor the library: the library is
loaded at first use (set SPARSETILE_LIBRARY to its path, or see
sparsetile._lib for where it is looked for) and torch only by `sparsetile.ops`
and `sparsetile.nn`, which are imported on first access.
"""

from ._errors import (ArgumentError, ArgumentTypeError, CompileError,
                      CudaError, LibraryNotFoundError, SparsetileError)
from .jit import Kernel, cdiv, compile  # noqa: A001 (Triton's name)

__version__ = "0.1.0"

__all__ = ["compile", "Kernel", "cdiv", "torch_op", "gpu_available",
           "library_path",
           "library_version", "set_allocator", "set_log_level",
           "SparsetileError", "CompileError",
           "ArgumentError", "ArgumentTypeError", "CudaError",
           "LibraryNotFoundError", "ops", "nn"]


def torch_op(name, fn=None, **kwargs):
    """Registers a function that launches sparsetile kernels on torch
    tensors as the torch.library custom op `name`, with a fake
    implementation, so torch.compile(fullgraph=True) runs through it; as
    torch.library.triton_op. See sparsetile._torch_op (imports torch)."""
    from ._torch_op import torch_op as make
    return make(name, fn, **kwargs)


def gpu_available():
    """(bool, reason): whether libsparsetile sees a usable GPU, and why not.
    Loads the library (raises LibraryNotFoundError without it)."""
    from . import _lib
    return _lib.gpu_available()


def set_log_level(level):
    """Sends the runtime's log (compiles and their times, cache hits,
    autotune choices) to logging.getLogger("sparsetile") up to `level`
    (logging.INFO or logging.DEBUG; None: off). See sparsetile._log."""
    from . import _log
    _log.set_log_level(level)


def set_allocator(fn, only_while_capturing=False):
    """Where the ops take temporary device memory, as triton.set_allocator:
    fn(size, alignment, stream) -> an object with data_ptr(). By default
    torch's caching allocator is used while a CUDA graph is captured
    (sparsetile._allocator)."""
    from . import _allocator
    _allocator.set_allocator(fn, only_while_capturing)


def library_path():
    """The path of the loaded libsparsetile.so (loads it)."""
    from . import _lib
    return _lib.lib().path


def library_version():
    """The library's version string (st_version)."""
    from . import _lib
    v = _lib.lib().st_version()
    return v.decode() if v else ""


def __getattr__(name):
    # PEP 562: `sparsetile.ops` and `sparsetile.nn` import torch, so they are
    # imported on first access rather than with the package.
    if name in ("ops", "nn"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'sparsetile' has no attribute %r" % name)
