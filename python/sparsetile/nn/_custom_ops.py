"""The layers' kernels as torch custom ops (namespace "sparsetile").

With torch >= 2.4 every function here is a `torch.library.custom_op` with a
fake (shape) implementation, and the differentiable ones have their backward
registered with `register_autograd`. That is what lets `torch.compile` trace
a model calling the layers into one graph: Dynamo cannot look inside a
ctypes call, but it can treat a custom op as an opaque node whose output
shapes it gets from the fake implementation, and AOTAutograd traces the
registered backward (itself made of these ops and torch ops).

Each op is defined once as (eager implementation, fake, optional autograd
pair). `_define` makes both a custom op, for traced calls, and a plain
`torch.autograd.Function`, for eager ones, whose dispatch costs far less
host time; on older torch only the latter (no compile support).

State that changes every step (the SparseDrop offset) lives in a small CUDA
tensor that the ops read on the device and mutate (declared in
mutates_args), not in a Python int: an int would be baked into a compiled
graph as a constant (forcing a recompile every step) and into a captured
CUDA graph (drawing the same mask at every replay).
"""

from typing import Optional, Tuple

import torch
from torch import Tensor

from .. import ops as _ops
from .._reference import cdiv

HAS_CUSTOM_OP = (hasattr(torch.library, "custom_op") and
                 hasattr(torch.library, "register_autograd"))

_ACTIVATION_NAMES = ("silu", "gelu", "gelu_tanh")


def _eager(name, impl, autograd):
    """`impl` as a plain callable, or with its autograd pair as an
    autograd.Function: what runs outside torch.compile."""
    if autograd is None:
        return impl
    setup, backward = autograd

    class _Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            out = impl(*args)
            setup(ctx, args, out)
            return out

        @staticmethod
        def backward(ctx, *grads):
            return backward(ctx, *grads)

    _Function.__name__ = _Function.__qualname__ = name
    return _Function.apply


_PLAIN = (Tensor, torch.nn.Parameter)


def _traced(args):
    """Whether this call is being traced (Dynamo, or AOTAutograd's fake and
    functional tensors) rather than run."""
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and compiler.is_compiling():
        return True
    return any(isinstance(a, Tensor) and type(a) not in _PLAIN for a in args)


def _define(name, impl, fake=None, mutates=(), autograd=None):
    """`impl` as the custom op sparsetile::<name> for torch.compile, and as a
    plain autograd.Function when it simply runs.

    The custom op's Python dispatch (autograd_impl, redispatch, backend_impl)
    is slow: through it, SparseDropLinear's forward + backward at 8192 x 1024
    -> 4096 took 1070 us of host time on the H100 machine, through the
    autograd.Function 690 us (bench/NOTES.md, "Python layers"), against
    about 400 us of kernels, so the layer was host-bound. Only a traced call
    needs the custom op."""
    eager = _eager(name, impl, autograd)
    if not HAS_CUSTOM_OP:
        return eager
    op = torch.library.custom_op("sparsetile::" + name, impl,
                                 mutates_args=tuple(mutates))
    if fake is not None:
        op.register_fake(fake)
    if autograd is not None:
        setup, backward = autograd
        op.register_autograd(backward, setup_context=setup)

    def call(*args):
        return op(*args) if _traced(args) else eager(*args)

    call.__name__ = name
    call.custom_op = op
    return call


def _needs(ctx, i):
    needs = getattr(ctx, "needs_input_grad", None)
    return True if needs is None else bool(needs[i])


# --- SparseDrop -------------------------------------------------------------------
def _mask_words_shape(M, K, bm, bk):
    # Written with + and // only so that symbolic sizes (torch.compile's
    # dynamic shapes) go through.
    return (M + bm - 1) // bm, (cdiv(K, bk) + 63) // 64


def _next_mask(offset: Tensor, x: Tensor, seed: int, p: float, block_m: int,
               block_k: int, rank: int, world: int) -> Tensor:
    M, K = x.shape
    nmb, nkb = cdiv(M, block_m), cdiv(K, block_k)
    # Rank r of `world` data-parallel shards holds rows [r M, (r + 1) M) of
    # the global batch: it draws those rows of the global mask (block row
    # r * nmb onwards), and every rank advances by the global mask's size,
    # so a sharded run drops exactly the blocks a one-GPU run would. The
    # offset is a CUDA tensor read by the kernel and advanced by a torch op:
    # a captured CUDA graph draws a fresh mask at every replay.
    words = _ops.sparsedrop_mask_at(seed, offset, rank * nmb * nkb, p, M, K,
                                    (block_m, block_k))
    offset.add_(world * nmb * nkb)
    return words


def _next_mask_fake(offset, x, seed, p, block_m, block_k, rank, world):
    M, K = x.shape
    return x.new_empty(_mask_words_shape(M, K, block_m, block_k),
                       dtype=torch.int64)


#: The block mask for x [M, K] (shard `rank` of `world`) at the offset held
#: in the CUDA int64 tensor `offset`, which then advances by the global
#: mask's block count.
sparsedrop_next_mask = _define("sparsedrop_next_mask", _next_mask,
                               _next_mask_fake, mutates=("offset",))


def _bx(dy: Tensor, w: Tensor, mask: Tensor, p: float, block_m: int,
        block_k: int) -> Tensor:
    return _ops.sparsedrop_backward_x(dy, w, mask, p, (block_m, block_k))


def _bw(dy: Tensor, x: Tensor, mask: Tensor, p: float, block_m: int,
        block_k: int) -> Tensor:
    return _ops.sparsedrop_backward_w(dy, x, mask, p, (block_m, block_k))


sparsedrop_backward_x = _define(
    "sparsedrop_backward_x", _bx,
    lambda dy, w, mask, p, bm, bk: dy.new_empty((dy.shape[0], w.shape[1])))
sparsedrop_backward_w = _define(
    "sparsedrop_backward_w", _bw,
    lambda dy, x, mask, p, bm, bk: dy.new_empty((dy.shape[1], x.shape[1])))


def _sd_forward(x: Tensor, w: Tensor, mask: Tensor, p: float, block_m: int,
                block_k: int) -> Tensor:
    return _ops.sparsedrop_forward(x, w, mask, p, (block_m, block_k))


def _sd_setup(ctx, inputs, output):
    x, w, mask, p, block_m, block_k = inputs
    ctx.save_for_backward(x, w, mask)
    ctx.args = (p, block_m, block_k)


def _sd_backward(ctx, dy):
    x, w, mask = ctx.saved_tensors
    dy = dy.contiguous()  # e.g. sum().backward() gives a stride-0 dy.
    dx = sparsedrop_backward_x(dy, w, mask, *ctx.args) if _needs(ctx, 0) \
        else None
    dw = sparsedrop_backward_w(dy, x, mask, *ctx.args) if _needs(ctx, 1) \
        else None
    return dx, dw, None, None, None, None


#: Y = s (X . mask) W^T, differentiable in x and w.
sparsedrop_linear = _define(
    "sparsedrop_linear", _sd_forward,
    lambda x, w, mask, p, bm, bk: x.new_empty((x.shape[0], w.shape[0])),
    autograd=(_sd_setup, _sd_backward))


# --- 2:4 sparsity -----------------------------------------------------------------
# The mask, its refresh and the masked decay are the layer's business, once
# per optimizer step (layers.py); the ops here only compute.
def _compress(w: Tensor, mask: Tensor) -> Tuple[Tensor, Tensor, Tensor,
                                                Tensor]:
    return _ops.compress24(w, mask)


def _compress_fake(w, mask):
    # The meta width comes from the library (one definition of it), which
    # takes ints: a symbolic size (dynamic shapes, opcheck) is specialized.
    R, C = int(w.shape[0]), int(w.shape[1])
    return (w.new_empty((R, C // 2)),
            w.new_empty((R, _ops.compressed24_meta_cols(C)), dtype=torch.int16),
            w.new_empty((C, R // 2)),
            w.new_empty((C, _ops.compressed24_meta_cols(R)), dtype=torch.int16))


#: (vals, meta, vals_t, meta_t) of w pruned by mask.
compress24 = _define("compress24", _compress, _compress_fake)


def _init_mask(mask: Tensor, weight: Tensor) -> None:
    mask.copy_(_ops.mask24_transposable(weight))


#: mask <- the transposable 2:4 mask of weight (a layer's first forward,
#: which may be inside torch.compile).
sparse24_init_mask = _define("sparse24_init_mask", _init_mask,
                             lambda mask, weight: None, mutates=("mask",))


def _s24_bx(dy: Tensor, vals_t: Tensor, meta_t: Tensor) -> Tensor:
    return _ops.sparse24_linear_backward_x(dy, vals_t, meta_t)


sparse24_linear_backward_x = _define(
    "sparse24_linear_backward_x", _s24_bx,
    lambda dy, vals_t, meta_t: dy.new_empty((dy.shape[0], vals_t.shape[0])))


def _s24_grad_w(dy: Tensor, x: Tensor, step: int, seed: int) -> Tensor:
    # Each step draws its own Philox stream: counter offsets step * 2^32
    # apart (a step uses R * ceil(M/4) / 4 counters, under 2^32 for any
    # layer that fits a GPU).
    vals, meta = _ops.mvue24_compress_t(dy, seed, step << 32)
    return _ops.sparse24_linear_backward_w(x, vals, meta, out_dtype=x.dtype)


#: dW = S(dY^T) X in x's dtype, S the MVUE 2:4 sparsifier along tokens.
sparse24_grad_w = _define(
    "sparse24_grad_w", _s24_grad_w,
    lambda dy, x, step, seed: x.new_empty((dy.shape[1], x.shape[1])))


def _s24_forward(x: Tensor, weight: Tensor, vals: Tensor, meta: Tensor,
                 vals_t: Tensor, meta_t: Tensor, mvue: bool, step: int,
                 seed: int) -> Tensor:
    return _ops.sparse24_linear_forward(x, vals, meta)


def _s24_setup(ctx, inputs, output):
    x, weight, vals, meta, vals_t, meta_t, mvue, step, seed = inputs
    ctx.save_for_backward(x, vals_t, meta_t)
    ctx.mvue, ctx.step, ctx.seed = mvue, step, seed


def _s24_backward(ctx, dy):
    x, vals_t, meta_t = ctx.saved_tensors
    dy = dy.contiguous()
    dx = sparse24_linear_backward_x(dy, vals_t, meta_t) if _needs(ctx, 0) \
        else None
    dw = None
    if _needs(ctx, 1):
        # dW = dY^T X (the straight-through gradient of W . mask): dense, or
        # on sparse tensor cores with dY^T made 2:4 by the unbiased MVUE
        # sparsifier (arXiv 2404.01847). In the compute dtype; autograd
        # casts it to an fp32 parameter's dtype, as it does for F.linear
        # under autocast. The masked decay is added once per optimizer step
        # (Sparse24Linear.apply_masked_decay_), not here.
        dw = sparse24_grad_w(dy, x, ctx.step, ctx.seed) if ctx.mvue else \
            torch.matmul(dy.t(), x)
    return dx, dw, None, None, None, None, None, None, None


#: Y = X (W . mask)^T from W's compressed operand; dX from W^T's, dW dense
#: or (mvue) MVUE-sparsified on sparse tensor cores. `weight` (in the
#: compute dtype) is an input so that it receives dW.
sparse24_linear = _define(
    "sparse24_linear", _s24_forward,
    lambda x, weight, vals, meta, vals_t, meta_t, mvue, step, seed:
    x.new_empty((x.shape[0], vals.shape[0])),
    autograd=(_s24_setup, _s24_backward))


# --- the fused 2:4 MLP --------------------------------------------------------------
def _s24_bx_act(dy: Tensor, vals_t: Tensor, meta_t: Tensor,
                h: Tensor) -> Tensor:
    return _ops.sparse24_linear_backward_x_act(dy, vals_t, meta_t, h)


#: dH = (dY W) * gelu_tanh'(h): proj's input gradient carried through the
#: GELU in the GEMM's epilogue.
sparse24_linear_backward_x_gelu = _define(
    "sparse24_linear_backward_x_gelu", _s24_bx_act,
    lambda dy, vals_t, meta_t, h: dy.new_empty((dy.shape[0],
                                                vals_t.shape[0])))


def _mlp_forward(x: Tensor, w1: Tensor, b1: Optional[Tensor], vals1: Tensor,
                 meta1: Tensor, vals1_t: Tensor, meta1_t: Tensor, w2: Tensor,
                 b2: Optional[Tensor], vals2: Tensor, meta2: Tensor,
                 vals2_t: Tensor, meta2_t: Tensor, mvue1: bool, mvue2: bool,
                 step1: int, step2: int, seed1: int,
                 seed2: int) -> Tuple[Tensor, Tensor, Tensor]:
    # Biases may be fp32 master parameters under autocast: the kernels add
    # them in the compute dtype, as the unfused layer's y + bias.to(dtype).
    b1 = None if b1 is None else b1.to(x.dtype)
    h, g = _ops.sparse24_linear_forward_act(x, vals1, meta1, b1, "gelu_tanh")
    if b2 is None:
        y = _ops.sparse24_linear_forward(g, vals2, meta2)
    else:
        y = _ops.sparse24_linear_forward_act(g, vals2, meta2,
                                             b2.to(x.dtype), None)
    return y, h, g


def _mlp_fake(x, w1, b1, vals1, meta1, vals1_t, meta1_t, w2, b2, vals2,
              meta2, vals2_t, meta2_t, mvue1, mvue2, step1, step2, seed1,
              seed2):
    hidden = x.new_empty((x.shape[0], vals1.shape[0]))
    return (x.new_empty((x.shape[0], vals2.shape[0])), hidden,
            torch.empty_like(hidden))


def _mlp_setup(ctx, inputs, output):
    (x, w1, b1, vals1, meta1, vals1_t, meta1_t, w2, b2, vals2, meta2,
     vals2_t, meta2_t, mvue1, mvue2, step1, step2, seed1, seed2) = inputs
    y, h, g = output
    # h and g are returned only to be saved here: no gradient flows into
    # them, and autograd must not fill zero tensors of their size ([M, F]
    # each) to pass as one.
    ctx.mark_non_differentiable(h, g)
    ctx.set_materialize_grads(False)
    ctx.save_for_backward(x, h, g, vals1_t, meta1_t, vals2_t, meta2_t)
    ctx.has_b1, ctx.has_b2 = b1 is not None, b2 is not None
    ctx.mvue = (mvue1, mvue2)
    ctx.step = (step1, step2)
    ctx.seed = (seed1, seed2)


def _mlp_backward(ctx, dy, dh_unused=None, dg_unused=None):
    x, h, g, vals1_t, meta1_t, vals2_t, meta2_t = ctx.saved_tensors
    grads = [None] * 19
    if dy is None:  # y did not reach the loss (grads are not materialized)
        return tuple(grads)
    dy = dy.contiguous()

    def grad_w(layer, d, inp):
        # As _s24_backward: dense dW, or MVUE-sparsified on sparse tensor
        # cores; in the compute dtype (autograd casts to the parameter's).
        if ctx.mvue[layer]:
            return sparse24_grad_w(d, inp, ctx.step[layer], ctx.seed[layer])
        return torch.matmul(d.t(), inp)

    if _needs(ctx, 7):
        grads[7] = grad_w(1, dy, g)
    # Bias gradients: summed in fp32 and rounded once to the compute dtype,
    # by the same kernel whatever the parameter's dtype (autocast would
    # otherwise pick the sum's output type), so an fp32 master bias gets
    # exactly the bf16 layer's gradient.
    def grad_b(d):
        return torch.sum(d, 0, dtype=torch.float32).to(d.dtype)

    if ctx.has_b2 and _needs(ctx, 8):
        grads[8] = grad_b(dy)
    if _needs(ctx, 0) or _needs(ctx, 1) or (ctx.has_b1 and _needs(ctx, 2)):
        # dH = dG * gelu_tanh'(h), with dG = dY W2 never stored.
        dh = sparse24_linear_backward_x_gelu(dy, vals2_t, meta2_t, h)
        if _needs(ctx, 1):
            grads[1] = grad_w(0, dh, x)
        if ctx.has_b1 and _needs(ctx, 2):
            grads[2] = grad_b(dh)
        if _needs(ctx, 0):
            grads[0] = sparse24_linear_backward_x(dh, vals1_t, meta1_t)
    return tuple(grads)


#: The 2:4 MLP fc -> GELU (tanh) -> proj in two 2:4 GEMMs forward (fc with
#: its bias and the GELU in the epilogue, proj with its bias) and the GELU's
#: backward in proj's dX GEMM. Returns (y, h, g): y the output (proj's
#: bias added), h fc's pre-activation and g = gelu_tanh(h), returned to be
#: saved for the backward (not differentiable).
sparse24_mlp = _define("sparse24_mlp", _mlp_forward, _mlp_fake,
                       autograd=(_mlp_setup, _mlp_backward))


# --- gated activations --------------------------------------------------------------
def _glu_fwd(h: Tensor, activation: int) -> Tensor:
    return _ops.glu_forward(h, _ACTIVATION_NAMES[activation])


def _glu_bwd(h: Tensor, dy: Tensor, activation: int) -> Tensor:
    return _ops.glu_backward(h, dy, _ACTIVATION_NAMES[activation])


glu_backward = _define("glu_backward", _glu_bwd,
                       lambda h, dy, activation: h.new_empty(h.shape))


def _glu_setup(ctx, inputs, output):
    h, activation = inputs
    ctx.save_for_backward(h)
    ctx.activation = activation


def _glu_backward(ctx, dy):
    (h,) = ctx.saved_tensors
    return glu_backward(h, dy.contiguous(), ctx.activation), None


#: y [M, F] = act(g) * u for h [M, 2F] = [g | u]; activation 0 SiLU,
#: 1 GELU (erf), 2 GELU (tanh).
glu = _define("glu", _glu_fwd,
              lambda h, activation: h.new_empty((h.shape[0],
                                                 h.shape[1] // 2)),
              autograd=(_glu_setup, _glu_backward))
