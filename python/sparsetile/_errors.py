"""The exceptions sparsetile raises.

Every error is a ``SparsetileError``; the more specific classes also derive
from the matching built-in (``TypeError``, ``ValueError``, ``ImportError``,
``RuntimeError``) so that code written against the built-ins catches them too.
"""


class SparsetileError(Exception):
    """Base class of every sparsetile error (also the C library's
    ST_ERROR_INTERNAL)."""


class CompileError(SparsetileError):
    """The DSL did not compile. The message is the compiler's diagnostic:
    ``file:line:col: error: ...``, the source line and a caret under the
    column."""


class ArgumentError(SparsetileError, ValueError):
    """A bad value: shape, range, layout, option (ST_ERROR_INVALID_ARGUMENT)."""


class ArgumentTypeError(SparsetileError, TypeError):
    """A value of the wrong kind: a scalar where a pointer is declared, a
    tensor of the wrong dtype, a CPU tensor where a GPU one is needed."""


class CudaError(SparsetileError, RuntimeError):
    """No GPU, a driver failure or a launch failure (ST_ERROR_CUDA)."""


class LibraryNotFoundError(SparsetileError, ImportError):
    """libsparsetile.so could not be loaded; the message lists where it was
    looked for and why each place failed."""
