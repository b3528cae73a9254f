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


def _compute_dtype(weight):
    """The dtype the kernels run in: torch.autocast's for CUDA when it is on
    (fp32 master weights), else the weight's own."""
    if _autocast_on():
        return torch.get_autocast_dtype("cuda") if _AUTOCAST_TAKES_DEVICE \
            else torch.get_autocast_gpu_dtype()
    return weight.dtype


try:
    torch.is_autocast_enabled("cuda")
    _AUTOCAST_TAKES_DEVICE = True
except TypeError:  # torch < 2.4
    _AUTOCAST_TAKES_DEVICE = False


def _check_input(layer, x, features, weight=None, name="x"):
    """x: a CUDA float tensor [..., features] on the weight's device. The
    kernels run in 16-bit (`_compute_dtype`); x is cast to it."""
    if not isinstance(x, torch.Tensor):
        raise ArgumentTypeError("%s: %s must be a torch.Tensor, got %s"
                                % (layer, name, type(x).__name__))
    if x.dim() == 0 or x.shape[-1] != features:
        raise ArgumentError("%s: expected %s of shape [..., %d], got %s"
                            % (layer, name, features, list(x.shape)))
    if not x.is_cuda:
        raise ArgumentTypeError("%s: %s must be a CUDA tensor, got one on %s"
                                % (layer, name, x.device))
    if not x.dtype.is_floating_point:
        raise ArgumentTypeError("%s: %s must be a float tensor, got %s"
                                % (layer, name, x.dtype))
    if weight is not None:
        if x.device != weight.device:
            raise ArgumentError("%s: %s is on %s but the weight on %s"
                                % (layer, name, x.device, weight.device))
        dtype = _compute_dtype(weight)
        if dtype not in _HALF:
            raise ArgumentTypeError(
                "%s: the kernels run in torch.bfloat16 or torch.float16: give"
                " the layer 16-bit weights, or run it under torch.autocast("
                "'cuda', dtype=torch.bfloat16) with fp32 weights (weight is "
                "%s)" % (layer, weight.dtype))
        if x.dtype != dtype and not _autocast_on():
            raise ArgumentTypeError("%s: %s is %s but the weight is %s"
                                    % (layer, name, x.dtype, weight.dtype))


def _glu_input(name, h):
    if not isinstance(h, torch.Tensor):
        raise ArgumentTypeError("%s: h must be a torch.Tensor, got %s"
                                % (name, type(h).__name__))
    if h.dtype not in _HALF:
        raise ArgumentTypeError("%s: h must be torch.bfloat16 or "
                                "torch.float16 (the kernels' dtypes), got %s"
                                % (name, h.dtype))


def _init_linear(weight, bias):
    """nn.Linear's initialization (kaiming-uniform weight, uniform bias)."""
    nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in = weight.shape[1]
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        nn.init.uniform_(bias, -bound, bound)


def _autocast_on():
    return torch.is_autocast_enabled("cuda") if _AUTOCAST_TAKES_DEVICE \
        else torch.is_autocast_enabled()


def _capturing():
    """Whether torch's current stream is being captured into a CUDA graph:
    then nothing may be skipped on the strength of host-side state, since
    the graph replays without the host."""
    return torch.cuda.is_available() and \
        torch.cuda.is_current_stream_capturing()


def _is_sharded(t):
    """Whether t is a DTensor (FSDP2's sharded parameters and gradients)."""
    return hasattr(t, "to_local") and hasattr(t, "placements")


def _local_rows(t, name):
    """(local tensor, first global row) of a DTensor sharded on dim 0 over a
    1-D mesh, as FSDP2's fully_shard holds a parameter and its gradient
    between steps (torch.chunk's split: ceil(rows / world) rows a rank);
    (t, 0) for a plain tensor or a replicated DTensor."""
    if not _is_sharded(t):
        return t, 0
    local = t.to_local()
    if all(p.is_replicate() for p in t.placements):
        return local, 0
    if len(t.placements) != 1 or not t.placements[0].is_shard(0):
        raise ArgumentError(
            "Sparse24Linear: %s is a DTensor placed as %r; the masked decay "
            "supports FSDP2's layout (Shard(0) on a 1-D mesh) and replicated"
            " tensors" % (name, tuple(t.placements)))
    chunk = -(-t.shape[0] // t.device_mesh.size())
    return local, t.device_mesh.get_local_rank() * chunk


class _LinearState:
    """Loading an nn.Linear state_dict: what a plain Linear lacks (the
    extra state; Sparse24Linear's mask, then recomputed) is not missing."""

    def _load_from_state_dict(self, state_dict, prefix, local_metadata,
                              strict, missing_keys, unexpected_keys,
                              error_msgs):
        super()._load_from_state_dict(state_dict, prefix, local_metadata,
                                      strict, missing_keys, unexpected_keys,
                                      error_msgs)
        for key in self._optional_state():
            if prefix + key not in state_dict:
                if prefix + key in missing_keys:
                    missing_keys.remove(prefix + key)
                self._state_missing(key)
        self._state_loaded()

    def _optional_state(self):
        return ("_extra_state",)

    def _state_missing(self, key):
        pass

    def _state_loaded(self):
        pass


class SparseDropLinear(_LinearState, nn.Module):
    """A linear layer with SparseDrop: block-structured dropout on its input,
    fused into the GEMMs so that dropped blocks cost nothing.

    In training, each forward draws a fresh block mask over (tokens M,
    in_features K) with blocks of `block` = (bm, bk), on the GPU, from
    (seed, offset); the offset (a CUDA tensor, so that a captured CUDA graph
    draws a new mask at every replay) then advances by the mask's block
    count, so a run is reproducible from the seed. Y = s (X . mask) W^T + b
    with s = 1/(1-p), and dX, dW go through the SparseDrop kernels.
    backend="torch" draws the same masks but computes with plain torch ops
    on the expanded dense mask (the reference). In eval mode: a plain linear.
    The last mask drawn is kept in `last_mask` (eager mode only).
    Under data parallelism give each rank shard=(rank, world) and one seed:
    rank r, holding the r-th slice of the global batch, then draws exactly
    those rows of the mask a one-GPU run draws for the whole batch.
    Weights may be bf16/f16, or fp32 under torch.autocast (the kernels then
    run in the autocast dtype, and dW reaches the fp32 weight as F.linear's
    does). An nn.Linear state_dict loads (the offset starts at 0)."""

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
        # The mask offset: read by the mask kernel, advanced by a torch op
        # (see _custom_ops). Saved through the extra state, not as a buffer,
        # so that the state_dict keys are nn.Linear's.
        self.register_buffer("_offset", torch.zeros(
            1, dtype=torch.int64, device=device), persistent=False)
        self.last_mask = None

    @classmethod
    def from_dense(cls, linear, p, **kwargs):
        """A SparseDropLinear with `linear`'s weight and bias (shared, not
        copied), its device and dtype."""
        layer = cls(linear.in_features, linear.out_features, p,
                    bias=linear.bias is not None, device="meta", **kwargs)
        return _adopt(layer, linear)

    def to_dense(self):
        """An nn.Linear with this layer's weight and bias (shared)."""
        return _dense_linear(self, self.weight)

    @property
    def scale(self):
        """s = 1/(1-p), 0 when p == 1."""
        return 0.0 if self.p >= 1.0 else 1.0 / (1.0 - self.p)

    @property
    def offset(self):
        """The offset the next mask is drawn at (waits for the GPU)."""
        return int(self._offset.item())

    @offset.setter
    def offset(self, value):
        self._offset.fill_(int(value))

    def get_extra_state(self):
        return {"offset": self.offset}

    def set_extra_state(self, state):
        self.offset = state["offset"]

    def _state_missing(self, key):
        self.offset = 0

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
        dtype = _compute_dtype(self.weight)
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features).to(dtype).contiguous()
        w = self.weight.to(dtype)  # the weight itself when 16-bit
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
            y = C.sparsedrop_linear(x2, w, mask, self.p, bm, bk)
        else:
            M, K = x2.shape
            dense = _ops.expand_sparsedrop_mask(mask, M, K, self.block)
            y = F.linear(x2 * dense.to(x2.dtype), w) * self.scale
        if self.bias is not None:
            y = y + self.bias.to(dtype)
        if not _is_compiling():
            self.last_mask = mask
        return y.reshape(tuple(lead) + (self.out_features,))


class Sparse24Linear(_LinearState, nn.Module):
    """A linear layer trained with a transposable 2:4 sparse weight
    (arXiv 2404.01847).

    The dense weight W is the parameter; the layer computes with W . mask,
    `mask` its transposable 2:4 mask (int8 0/1). As in the paper's recipe:
    - the mask is computed at the first forward, then refreshed every
      `mask_interval` *optimizer steps*;
    - the masked decay lambda * W * (1 - mask), which pulls pruned weights
      towards zero, is added once per optimizer step to W's gradient, after
      any GradScaler has unscaled it (so on the fp32 gradient of fp32
      master weights);
    - W is compressed into the sparse tensor-core operands of W and W^T once
      per optimizer step (when W or the mask changed), not at every forward;
    - `dense = True` (or sparsetile.nn.set_dense) switches to dense training
      with the whole W, the paper's final fine-tuning phase.
    The step-level work is driven by an optimizer hook: call
    `sparsetile.nn.attach(optimizer, model)` once (or call
    `apply_masked_decay_()` before and `optimizer_step_()` after each step
    yourself).
    Y = X (W . mask)^T + b and dX = dY (W . mask) run on sparse tensor
    cores; dW = dY^T X is dense with weight_grad="dense" (the default), or
    with weight_grad="mvue" on sparse tensor cores too, dY^T made 2:4 along
    the tokens by the unbiased MVUE sparsifier, seeded by `seed` and the
    optimizer step. Weights may be bf16/f16, or fp32 under torch.autocast
    (the kernels run in the autocast dtype). Eval mode runs the same sparse
    forward. in_features and out_features must be multiples of 64. An
    nn.Linear state_dict loads (the mask is then recomputed).
    Data parallel: under DDP every rank computes the same mask from the same
    W (pass broadcast_buffers=False: nothing needs broadcasting); under
    FSDP2 (fully_shard) the masked decay works on each rank's rows of the
    gradient, and a mask refresh gathers W."""

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
        # The fraction of mask entries the last refresh changed, on the
        # device (reading it needs no synchronization until printed).
        self.register_buffer("flip_rate_tensor", torch.zeros(
            (), dtype=torch.float32, device=device), persistent=False)
        self.dense = False
        self._steps = 0          # optimizer steps taken
        self._mask_valid = False
        self._mask_version = 0   # bumped whenever `mask` changes
        self._packed = None      # compressed operands of W . mask
        self._packed_key = None  # what they were computed from
        self._driven = False     # optimizer_step_ is called: W changes there

    @classmethod
    def from_dense(cls, linear, **kwargs):
        """A Sparse24Linear with `linear`'s weight and bias (shared, not
        copied); the mask is computed at the first forward."""
        layer = cls(linear.in_features, linear.out_features,
                    bias=linear.bias is not None, device="meta", **kwargs)
        return _adopt(layer, linear)

    def to_dense(self):
        """An nn.Linear computing what this layer computes: weight W . mask
        (W itself in dense mode), bias shared."""
        w = self.weight if self.dense or not self._mask_valid else \
            nn.Parameter(self.sparse_weight().detach())
        return _dense_linear(self, w)

    @property
    def flip_rate(self):
        """Fraction of mask entries that changed at the last refresh (waits
        for the GPU; `flip_rate_tensor` does not)."""
        return float(self.flip_rate_tensor.item())

    @property
    def step(self):
        """Optimizer steps taken (counted by optimizer_step_)."""
        return self._steps

    def get_extra_state(self):
        return {"steps": self._steps, "mask_valid": self._mask_valid,
                "dense": self.dense}

    def set_extra_state(self, state):
        self._steps = int(state.get("steps", 0))
        self._mask_valid = bool(state.get("mask_valid", True))
        self.dense = bool(state.get("dense", False))

    def _optional_state(self):
        return ("_extra_state", "mask")

    def _state_missing(self, key):
        if key == "mask":
            self._mask_valid = False

    def _state_loaded(self):
        self._mask_version += 1  # the mask buffer was overwritten in place

    def extra_repr(self):
        return ("in_features=%d, out_features=%d, mask_interval=%d, decay=%g, "
                "bias=%s, weight_grad=%s, dense=%s" % (
                    self.in_features, self.out_features, self.mask_interval,
                    self.decay, self.bias is not None, self.weight_grad,
                    self.dense))

    def sparse_weight(self):
        """W . mask (the weight the layer computes with)."""
        return self.weight * self.mask.to(self.weight.dtype)

    # --- the optimizer step's work ----------------------------------------
    def refresh_mask_(self):
        """Recomputes the mask from W; records the flip rate on the device."""
        w = self.weight.detach()
        if _is_sharded(w):
            # Between FSDP2 steps W is a shard; the transposable mask is
            # chosen over 4 x 4 blocks of the whole W, and every rank keeps
            # the whole mask (a buffer): gather W. Every rank refreshes at
            # the same step, so the collective matches up.
            w = w.full_tensor()
        if self._mask_valid and not _is_compiling():
            new = _ops.mask24_transposable(w)
            flips = _ops.mask_flip_count_async(self.mask, new)
            self.flip_rate_tensor.copy_(flips.float() / self.mask.numel())
            self.mask.copy_(new)
        else:
            C.sparse24_init_mask(self.mask, w)
        self._mask_valid = True
        self._mask_version += 1

    def apply_masked_decay_(self):
        """W.grad += decay * W * (1 - mask), in the gradient's dtype. Call
        once per optimizer step, after unscaling (attach() does it)."""
        g = self.weight.grad
        if g is None or not self.decay or self.dense or not self._mask_valid:
            return
        # Under FSDP2 the gradient and W are this rank's rows: decay them
        # with the same rows of the (whole, replicated) mask.
        g, row = _local_rows(g, "the weight gradient")
        w, _ = _local_rows(self.weight.detach(), "the weight")
        if not g.is_contiguous():
            raise ArgumentError("Sparse24Linear: the masked decay needs a "
                                "contiguous weight gradient")
        _ops.masked_decay_(g, w, self.mask[row:row + g.shape[0]], self.decay)

    def optimizer_step_(self):
        """Counts an optimizer step (W changed: compress it again at the next
        forward); refreshes the mask every mask_interval steps (in training
        mode, not in dense mode)."""
        self._driven = True
        self._steps += 1
        if self.training and not self.dense and \
                self._steps % self.mask_interval == 0:
            self.refresh_mask_()

    # --- forward ----------------------------------------------------------
    def _mvue_step(self):
        """The step that seeds MVUE's draws; 0 when dW is dense, where it is
        unused: a Python int that changes at every step would make
        torch.compile guard on it and recompile (and re-record its CUDA
        graphs) step after step."""
        return self._steps if self.weight_grad == "mvue" else 0

    def _operands(self, dtype):
        """(vals, meta, vals_t, meta_t) of W . mask in `dtype`. Driven by an
        optimizer (attach(), optimizer_step_()), they are computed once per
        optimizer step: the forwards of an accumulated step share them.
        Otherwise, at every forward: W's version counter cannot tell, since
        fused optimizers (AdamW(fused=True)) update W without bumping it.
        While a CUDA graph is captured, or under torch.compile, they are
        always recomputed (into the same tensors when captured), since a
        replay cannot consult the host's flags."""
        w = self.weight.detach()
        key = (w._version, w.data_ptr(), dtype, self._mask_version,
               self._steps)
        if _is_compiling():
            return C.compress24(w.to(dtype), self.mask)
        capturing = _capturing()
        if self._driven and key == self._packed_key and not capturing:
            return self._packed
        reuse = self._packed is not None and self._packed[0].dtype == dtype \
            and self._packed[0].device == w.device
        self._packed = _ops.compress24(w.to(dtype), self.mask,
                                       out=self._packed if reuse else None)
        # A captured compression reruns at every replay, after optimizer
        # steps the host never sees: the next eager forward recomputes.
        self._packed_key = None if capturing else key
        return self._packed

    def forward(self, x):
        if self.dense:
            return F.linear(x, self.weight, self.bias)
        _check_input("Sparse24Linear", x, self.in_features, self.weight)
        if not self._mask_valid:
            self.refresh_mask_()
        dtype = _compute_dtype(self.weight)
        vals, meta, vals_t, meta_t = self._operands(dtype)
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features).to(dtype).contiguous()
        y = C.sparse24_linear(x2, self.weight, vals, meta, vals_t, meta_t,
                              self.weight_grad == "mvue", self._mvue_step(),
                              self.seed)
        if self.bias is not None:
            y = y + self.bias.to(dtype)
        return y.reshape(tuple(lead) + (self.out_features,))


class Sparse24MLP(nn.Module):
    """fc (in_features -> hidden_features) -> GELU, tanh form -> proj
    (hidden_features -> out_features, default in_features): a transformer's
    FFN on two Sparse24Linear layers (`fc` and `proj`, which keep every
    behaviour of that layer: masks, optimizer-step work through attach(),
    dense mode, state dicts). With fused=True the GELU is fused into the
    2:4 GEMMs; that is off by default because it measured slower than the
    unfused layers (0.84-0.91x of them at d = 1024 and 2048, 16384 tokens,
    H200, run of 78be670: bench/NOTES.md, "The bias and GELU in the 2:4
    GEMMs' epilogues"), until its kernels keep 128 x 128 tiles without
    spilling. Fused:
    - forward: fc's GEMM adds its bias and applies the GELU in its epilogue,
      storing the pre-activation h and g = gelu_tanh(h); proj's adds its
      bias. No separate bias or activation pass runs.
    - backward: proj's input-gradient GEMM multiplies by gelu_tanh'(h) in
      its epilogue, so it gives fc's dH directly; the biases' gradients are
      column sums of dY and dH.
    It computes what proj(F.gelu(fc(x), approximate="tanh")) computes, to
    rounding (h is rounded to the compute dtype once, where the unfused path
    rounds the GEMM's output and then the sum with the bias). `fused=False`,
    or either layer in dense mode (set_dense), runs exactly that unfused
    composition. Only activation="gelu_tanh" is fused. CUDA-graph capture
    and torch.compile work as for Sparse24Linear (one custom op,
    sparsetile::sparse24_mlp). Other keyword arguments go to both layers;
    proj's seed is seed + 1."""

    def __init__(self, in_features, hidden_features, out_features=None,
                 activation="gelu_tanh", fused=False, bias=True, **kwargs):
        super().__init__()
        if activation != "gelu_tanh":
            raise ArgumentError("Sparse24MLP: activation must be 'gelu_tanh' "
                                "(the one fused), got %r" % (activation,))
        out_features = in_features if out_features is None else out_features
        seed = int(kwargs.pop("seed", 0))
        self.activation, self.fused = activation, bool(fused)
        self.fc = Sparse24Linear(in_features, hidden_features, bias=bias,
                                 seed=seed, **kwargs)
        self.proj = Sparse24Linear(hidden_features, out_features, bias=bias,
                                   seed=seed + 1, **kwargs)

    @property
    def in_features(self):
        return self.fc.in_features

    @property
    def out_features(self):
        return self.proj.out_features

    def extra_repr(self):
        return "activation=%r, fused=%s" % (self.activation, self.fused)

    def forward(self, x):
        if not self.fused:
            return self.proj(F.gelu(self.fc(x), approximate="tanh"))
        return sparse24_mlp(x, self.fc, self.proj)


def sparse24_mlp(x, fc, proj):
    """proj(F.gelu(fc(x), approximate="tanh")) for two Sparse24Linear layers
    fc (d -> F) and proj (F -> d'), through Sparse24MLP's fused kernels: the
    functional form, for models that keep fc and proj as attributes of their
    own (their parameter names, initialization and state dicts unchanged).
    With either layer in dense mode it runs that unfused composition."""
    if not (isinstance(fc, Sparse24Linear) and isinstance(proj, Sparse24Linear)):
        raise ArgumentTypeError("sparse24_mlp: fc and proj must be "
                                "Sparse24Linear, got %s and %s" % (
                                    type(fc).__name__, type(proj).__name__))
    if fc.out_features != proj.in_features:
        raise ArgumentError("sparse24_mlp: fc gives %d features, proj takes "
                            "%d" % (fc.out_features, proj.in_features))
    if fc.dense or proj.dense:
        return proj(F.gelu(fc(x), approximate="tanh"))
    _check_input("sparse24_mlp", x, fc.in_features, fc.weight)
    for layer in (fc, proj):
        if not layer._mask_valid:
            layer.refresh_mask_()
    dtype = _compute_dtype(fc.weight)
    if _compute_dtype(proj.weight) != dtype:
        raise ArgumentTypeError("sparse24_mlp: fc and proj compute in %s "
                                "and %s; they must share one dtype" % (
                                    dtype, _compute_dtype(proj.weight)))
    p1 = fc._operands(dtype)
    p2 = proj._operands(dtype)
    lead = x.shape[:-1]
    x2 = x.reshape(-1, fc.in_features).to(dtype).contiguous()
    y, _, _ = C.sparse24_mlp(
        x2, fc.weight, fc.bias, *p1, proj.weight, proj.bias, *p2,
        fc.weight_grad == "mvue", proj.weight_grad == "mvue", fc._mvue_step(),
        proj._mvue_step(), fc.seed, proj.seed)
    return y.reshape(tuple(lead) + (proj.out_features,))


def _adopt(layer, linear):
    """Gives `layer` (built on the meta device) linear's parameters and
    moves its buffers to their device."""
    device = linear.weight.device
    layer.weight = linear.weight
    layer.bias = linear.bias
    for name, buf in list(layer.named_buffers(recurse=False)):
        setattr(layer, name, torch.zeros_like(buf, device=device)
                if name != "mask" else torch.ones_like(buf, device=device))
    layer.train(linear.training)
    return layer


def _dense_linear(layer, weight):
    out = nn.Linear(layer.in_features, layer.out_features,
                    bias=layer.bias is not None, device="meta")
    out.weight = weight
    out.bias = layer.bias
    out.train(layer.training)
    return out


def _glu(name, h, activation):
    if not isinstance(h, torch.Tensor):
        raise ArgumentTypeError("%s: h must be a torch.Tensor, got %s"
                                % (name, type(h).__name__))
    if h.dim() == 0 or h.shape[-1] % 2:
        raise ArgumentError("%s: expected h of shape [..., 2F] (halves "
                            "[gate | up]), got %s" % (name, list(h.shape)))
    _glu_input(name, h)
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
