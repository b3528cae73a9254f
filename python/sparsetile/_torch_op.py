"""A function launching sparsetile kernels as a torch custom op.

torch.compile cannot trace into a ctypes call, so a function that launches
DSL kernels breaks a compiled graph unless torch sees it as an opaque
operator: a ``torch.library`` custom op with a fake (shape) implementation.
``sparsetile.torch_op`` makes one, as ``torch.library.triton_op`` does for
Triton kernels::

    scale = sparsetile.compile(SRC, "scale", BLOCK=1024)

    @sparsetile.torch_op("mylib::scale", mutates_args=())
    def scaled(x: torch.Tensor, s: float) -> torch.Tensor:
        out = torch.empty_like(x)
        scale[(sparsetile.cdiv(x.numel(), 1024),)](x, out, s, x.numel())
        return out

    torch.compile(lambda x: scaled(x, 2.0).relu(), fullgraph=True)(x)

Like triton_op, the default fake implementation is the function itself run
on FakeTensors with every ``Kernel`` launch skipped: the outputs it makes
with torch (``torch.empty_like`` above) carry the shapes, dtypes and strides
torch.compile needs. A function whose outputs depend on data (``.item()``)
or that calls ``sparsetile.ops`` (which read device pointers) needs a
``fake=`` function instead.
"""

import functools

import torch

from ._errors import SparsetileError
from .jit import tracing


def _launches_skipped(fn):
    """fn, run with Kernel launches skipped (its fake implementation)."""
    @functools.wraps(fn)
    def fake(*args, **kwargs):
        before = tracing.skip_launches
        tracing.skip_launches = True
        try:
            return fn(*args, **kwargs)
        finally:
            tracing.skip_launches = before
    return fake


def torch_op(name, fn=None, *, mutates_args, schema=None, device_types=None,
             fake="trace"):
    """Registers `fn`, a function of torch tensors that launches sparsetile
    kernels, as the custom op `name` ("namespace::op_name"), like
    ``torch.library.triton_op`` (and with ``torch.library.custom_op``'s
    arguments: `mutates_args` names the tensor arguments fn writes, () for
    none; `schema` and `device_types` as there). Use it as a decorator or
    call it with fn.

    fake: "trace" (the default): fn itself on FakeTensors, with sparsetile
    Kernel launches skipped; a function: that fake implementation; None:
    none yet (add one with ``op.register_fake``).

    Returns the ``torch.library.CustomOpDef``: call it like fn (in eager
    mode it runs fn; under torch.compile it is one node of the graph), and
    give it a backward with ``op.register_autograd(backward,
    setup_context=...)``. Needs torch >= 2.4."""
    if fn is None:
        return lambda f: torch_op(name, f, mutates_args=mutates_args,
                                  schema=schema, device_types=device_types,
                                  fake=fake)
    if not hasattr(torch.library, "custom_op"):
        raise SparsetileError("sparsetile.torch_op needs torch >= 2.4 "
                              "(torch.library.custom_op); this is torch %s"
                              % torch.__version__)
    op = torch.library.custom_op(name, fn, mutates_args=mutates_args,
                                 device_types=device_types, schema=schema)
    if fake == "trace":
        op.register_fake(_launches_skipped(fn))
    elif fake is not None:
        op.register_fake(fake)
    return op
