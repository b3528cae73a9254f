"""torch layers over sparsetile's kernels: SparseDropLinear, Sparse24Linear,
and the fused gated activations (swiglu, geglu).

Inputs are checked here, before any kernel, so that a wrong input names the
layer and the expectation ("SparseDropLinear: expected x of shape [..., 264],
got [300, 256]"). The kernels run through the custom ops of _custom_ops, so
the layers work under torch.compile without graph breaks.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from .. import ops as _ops
from .._errors import ArgumentError, ArgumentTypeError
from . import _custom_ops as C

__all__ = ["SparseDropLinear", "Sparse24Linear", "SwiGLU", "GEGLU", "swiglu",
           "geglu"]

_HALF = (torch.bfloat16, torch.float16)


def _is_compiling():
    compiler = getattr(torch, "compiler", None)
    if compiler is not None and hasattr(compiler, "is_compiling"):
        return compiler.is_compiling()
    dynamo = getattr(torch, "_dynamo", None)
    return bool(dynamo is not None and dynamo.is_compiling())


def _check_input(layer, x, features, weight=None, name="x"):
    """x: a CUDA tensor [..., features] of a 16-bit float dtype (weight's)."""
    if not isinstance(x, torch.Tensor):
        raise ArgumentTypeError("%s: %s must be a torch.Tensor, got %s"
                                % (layer, name, type(x).__name__))
    if x.dim() == 0 or x.shape[-1] != features:
        raise ArgumentError("%s: expected %s of shape [..., %d], got %s"
                            % (layer, name, features, list(x.shape)))
    if not x.is_cuda:
        raise ArgumentTypeError("%s: %s must be a CUDA tensor, got one on %s"
                                % (layer, name, x.device))
    if x.dtype not in _HALF:
        raise ArgumentTypeError("%s: %s must be torch.bfloat16 or "
                                "torch.float16 (the kernels' dtypes), got %s"
                                % (layer, name, x.dtype))
    if weight is not None:
        if x.dtype != weight.dtype:
            raise ArgumentTypeError("%s: %s is %s but the weight is %s"
                                    % (layer, name, x.dtype, weight.dtype))
        if x.device != weight.device:
            raise ArgumentError("%s: %s is on %s but the weight on %s"
                                % (layer, name, x.device, weight.device))


def _init_linear(weight, bias):
    """nn.Linear's initialization (kaiming-uniform weight, uniform bias)."""
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in = weight.shape[1]
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        nn.init.uniform_(bias, -bound, bound)


class SparseDropLinear(nn.Module):
    """A linear layer with SparseDrop: block-structured dropout on its input,
    fused into the GEMMs so that dropped blocks cost nothing.

    In training, each forward draws a fresh block mask over (tokens M,
    in_features K) with blocks of `block` = (bm, bk), on the GPU, from
    (seed, offset); the offset then advances by the mask's block count, so a
    run is reproducible from the seed. Y = s (X . mask) W^T + b with
    s = 1/(1-p), and dX, dW go through the SparseDrop kernels.
    backend="torch" draws the same masks but computes with plain torch ops
    on the expanded dense mask (the reference). In eval mode: a plain linear.
    The last mask drawn is kept in `last_mask` (eager mode only).
    Under data parallelism give each rank shard=(rank, world) and one seed:
    rank r, holding the r-th slice of the global batch, then draws exactly
    those rows of the mask a one-GPU run draws for the whole batch.
    x is [..., in_features] of the weight's dtype (bf16 or f16), on CUDA."""

    def __init__(self, in_features, out_features, p, block=(128, 128),
                 bias=True, seed=0, device=None, dtype=None,
                 backend="sparsetile", shard=(0, 1)):
        super().__init__()
        rank, world = (int(v) for v in shard)
        if world < 1 or not 0 <= rank < world:
            raise ArgumentError("SparseDropLinear: shard must be (rank, world)"
                                " with 0 <= rank < world, got %r" % (shard,))
        self.shard = (rank, world)
        if not 0.0 <= float(p) <= 1.0:
            raise ArgumentError("SparseDropLinear: p must be in [0, 1], got %r"
                                % (p,))
        if backend not in ("sparsetile", "torch"):
            raise ArgumentError("SparseDropLinear: backend must be "
                                "'sparsetile' or 'torch', got %r" % (backend,))
        bm, bk = (int(b) for b in block)
        if bm <= 0 or bk <= 0 or bm % 16 or bk % 16:
            raise ArgumentError("SparseDropLinear: block sizes must be "
                                "positive multiples of 16, got %r" % (block,))
        if not 0 <= int(seed) < 2 ** 63:
            raise ArgumentError("SparseDropLinear: seed must be in [0, 2^63)")
        self.in_features, self.out_features = in_features, out_features
        self.p, self.block, self.seed = float(p), (bm, bk), int(seed)
        self.backend = backend
        factory = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty((out_features, in_features),
                                               **factory))
        self.bias = nn.Parameter(torch.empty(out_features, **factory)) \
            if bias else None
        _init_linear(self.weight, self.bias)
        # The mask offset, on the CPU (see _custom_ops: state as a tensor).
        self._offset = torch.zeros((), dtype=torch.int64)
        self.last_mask = None

    @property
    def scale(self):
        """s = 1/(1-p), 0 when p == 1."""
        return 0.0 if self.p >= 1.0 else 1.0 / (1.0 - self.p)

    @property
    def offset(self):
        """The offset the next mask is drawn at."""
        return int(self._offset.item())

    @offset.setter
    def offset(self, value):
        self._offset.fill_(int(value))

    def get_extra_state(self):
        return {"offset": self.offset}

    def set_extra_state(self, state):
        self.offset = state["offset"]

    def extra_repr(self):
        return ("in_features=%d, out_features=%d, p=%g, block=%s, bias=%s, "
                "seed=%d, backend=%s" % (self.in_features, self.out_features,
                                         self.p, self.block,
                                         self.bias is not None, self.seed,
                                         self.backend))

    def forward(self, x):
        if not self.training:
            return F.linear(x, self.weight, self.bias)
        _check_input("SparseDropLinear", x, self.in_features, self.weight)
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features).contiguous()
        bm, bk = self.block
        rank, world = self.shard
        if world > 1 and x2.shape[0] % bm:
            raise ArgumentError(
                "SparseDropLinear: with shard=%r each rank's token count must "
                "be a multiple of block[0] = %d (so the shards' masks tile the "
                "global one), got %d" % (self.shard, bm, x2.shape[0]))
        mask = C.sparsedrop_next_mask(self._offset, x2.detach(), self.seed,
                                      self.p, bm, bk, rank, world)
        if self.backend == "sparsetile":
            y = C.sparsedrop_linear(x2, self.weight, mask, self.p, bm, bk)
        else:
            M, K = x2.shape
            dense = _ops.expand_sparsedrop_mask(mask, M, K, self.block)
            y = F.linear(x2 * dense.to(x2.dtype), self.weight) * self.scale
        if self.bias is not None:
            y = y + self.bias
        if not _is_compiling():
            self.last_mask = mask
        return y.reshape(tuple(lead) + (self.out_features,))


class Sparse24Linear(nn.Module):
    """A linear layer trained with a transposable 2:4 sparse weight
    (arXiv 2404.01847).

    The dense weight is the parameter. Its transposable 2:4 mask (`mask`,
    int8 0/1) is recomputed at the first training step and then every
    `mask_interval` training steps (`flip_rate`: the fraction of entries
    that changed at the last recompute). Every forward compresses W . mask
    into the sparse tensor-core operands of W and W^T, and computes
    Y = X (W . mask)^T + b on sparse tensor cores; dX = dY (W . mask) likewise.
    dW = dY^T X is dense with weight_grad="dense" (the default), or with
    weight_grad="mvue" on sparse tensor cores too: dY^T made 2:4 along the
    tokens by the unbiased MVUE sparsifier, as the paper does, seeded by
    `seed` and the step counter (reproducible; E[dW] is the dense dW). Both
    add the masked decay lambda * W * (1 - mask) that pulls pruned weights
    towards zero, and give dW in the weight's dtype. Eval mode runs the same
    sparse forward. in_features and out_features must be multiples of 64; x
    is [..., in_features] of the weight's dtype (bf16 or f16), on CUDA."""

    def __init__(self, in_features, out_features, mask_interval=100,
                 decay=2e-4, bias=True, device=None, dtype=None,
                 weight_grad="dense", seed=0):
        super().__init__()
        if weight_grad not in ("dense", "mvue"):
            raise ArgumentError("Sparse24Linear: weight_grad must be 'dense' "
                                "or 'mvue', got %r" % (weight_grad,))
        self.weight_grad, self.seed = weight_grad, int(seed)
        if in_features % 64 or out_features % 64 or in_features <= 0 or \
                out_features <= 0:
            raise ArgumentError(
                "Sparse24Linear: in_features and out_features must be positive"
                " multiples of 64 (the 2:4 GEMMs reduce over both in steps of "
                "64), got %d and %d" % (in_features, out_features))
        if int(mask_interval) <= 0:
            raise ArgumentError("Sparse24Linear: mask_interval must be >= 1")
        self.in_features, self.out_features = in_features, out_features
        self.mask_interval, self.decay = int(mask_interval), float(decay)
        factory = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty((out_features, in_features),
                                               **factory))
        self.bias = nn.Parameter(torch.empty(out_features, **factory)) \
            if bias else None
        _init_linear(self.weight, self.bias)
        self.register_buffer("mask", torch.ones(
            (out_features, in_features), dtype=torch.int8, device=device))
        # [step, mask valid, last flip rate], on the CPU (see _custom_ops).
        self._state = torch.zeros(3, dtype=torch.float64)

    @property
    def flip_rate(self):
        """Fraction of mask entries that changed at the last recompute."""
        return float(self._state[2].item())

    @property
    def step(self):
        """Training forwards so far."""
        return int(self._state[0].item())

    def get_extra_state(self):
        return {"state": self._state.tolist()}

    def set_extra_state(self, state):
        self._state.copy_(torch.tensor(state["state"], dtype=torch.float64))

    def extra_repr(self):
        return ("in_features=%d, out_features=%d, mask_interval=%d, decay=%g, "
                "bias=%s, weight_grad=%s" % (
                    self.in_features, self.out_features, self.mask_interval,
                    self.decay, self.bias is not None, self.weight_grad))

    def sparse_weight(self):
        """W . mask (the weight the layer computes with)."""
        return self.weight * self.mask.to(self.weight.dtype)

    def forward(self, x):
        _check_input("Sparse24Linear", x, self.in_features, self.weight)
        w = self.weight.detach()
        C.sparse24_refresh_mask(self.mask, self._state, w, self.mask_interval,
                                self.training)
        vals, meta, vals_t, meta_t = C.compress24(w, self.mask)
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features).contiguous()
        mvue = self.weight_grad == "mvue"
        # The step as of this forward, for the backward's MVUE seed: a copy,
        # so that more forwards before the backward (a layer used twice)
        # change neither it nor what autograd saved.
        step = self._state[:1].clone() if mvue else self._state
        y = C.sparse24_linear(x2, self.weight, self.mask, vals, meta, vals_t,
                              meta_t, self.decay, step, mvue, self.seed)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(tuple(lead) + (self.out_features,))


def _glu(name, h, activation):
    if not isinstance(h, torch.Tensor):
        raise ArgumentTypeError("%s: h must be a torch.Tensor, got %s"
                                % (name, type(h).__name__))
    if h.dim() == 0 or h.shape[-1] % 2:
        raise ArgumentError("%s: expected h of shape [..., 2F] (halves "
                            "[gate | up]), got %s" % (name, list(h.shape)))
    _check_input(name, h, h.shape[-1], name="h")
    lead, width = h.shape[:-1], h.shape[-1]
    y = C.glu(h.reshape(-1, width).contiguous(), activation)
    return y.reshape(tuple(lead) + (width // 2,))


def swiglu(h):
    """SwiGLU: silu(g) * u for h [..., 2F] = [g | u] (bf16/f16, CUDA), fused
    forward and backward."""
    return _glu("swiglu", h, 0)


def geglu(h, approximate="none"):
    """GEGLU: gelu(g) * u for h [..., 2F] = [g | u]; approximate "none"
    (erf) or "tanh", as in torch.nn.functional.gelu."""
    if approximate not in ("none", "tanh"):
        raise ArgumentError("geglu: approximate must be 'none' or 'tanh', got "
                            "%r" % (approximate,))
    return _glu("geglu", h, 1 if approximate == "none" else 2)


class SwiGLU(nn.Module):
    """The module form of swiglu: [..., 2F] -> [..., F]."""

    def forward(self, h):
        return swiglu(h)


class GEGLU(nn.Module):
    """The module form of geglu: [..., 2F] -> [..., F]."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ArgumentError("GEGLU: approximate must be 'none' or 'tanh'")
        self.approximate = approximate

    def forward(self, h):
        return geglu(h, self.approximate)

    def extra_repr(self):
        return "approximate=%r" % (self.approximate,)
