"""Model-level training helpers for the sparse layers: swapping nn.Linear
modules in, the once-per-optimizer-step work of 2:4 training, dense
fine-tuning, and flip-rate logging without a host synchronization.

    model = GPT(...)
    sparsetile.nn.sparsify_(model, "sparse24",
                            filter_fn=lambda name, m: "mlp" in name)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4)
    sparsetile.nn.attach(opt, model)   # masked decay + mask refresh per step
    ...
    sparsetile.nn.set_dense(model, True)   # the recipe's dense fine-tuning
"""

import torch
from torch import nn

from .._errors import ArgumentError
from .layers import Sparse24Linear, SparseDropLinear

__all__ = ["sparsify_", "attach", "set_dense", "flip_rates"]

_KINDS = {"sparse24": Sparse24Linear, "sparsedrop": SparseDropLinear}


def sparsify_(model, kind="sparse24", filter_fn=None, **kwargs):
    """Replaces, in place, the nn.Linear modules of `model` for which
    filter_fn(qualified_name, module) is true (all by default) by `kind`
    ("sparse24" or "sparsedrop") layers sharing their weight and bias;
    kwargs go to the layer (SparseDropLinear needs p=). Linears a 2:4 layer
    cannot take (a dimension not a multiple of 64) are left dense unless
    filter_fn chose them explicitly, then it is an error. Returns the model
    (torchao's quantize_ convention)."""
    if kind not in _KINDS:
        raise ArgumentError("sparsify_: kind must be one of %s, got %r"
                            % (sorted(_KINDS), kind))
    cls = _KINDS[kind]
    if kind == "sparsedrop" and "p" not in kwargs:
        raise ArgumentError("sparsify_: kind='sparsedrop' needs p=")

    def fits(m):
        return kind != "sparse24" or (m.in_features % 64 == 0 and
                                      m.out_features % 64 == 0)

    swaps = []
    for name, module in model.named_modules():
        for child_name, child in module.named_children():
            if type(child) is not nn.Linear:
                continue
            full = "%s.%s" % (name, child_name) if name else child_name
            if filter_fn is not None:
                if not filter_fn(full, child):
                    continue
                if not fits(child):
                    raise ArgumentError(
                        "sparsify_: %s is %d -> %d; a 2:4 layer needs both "
                        "multiples of 64" % (full, child.in_features,
                                             child.out_features))
            elif not fits(child):
                continue
            swaps.append((module, child_name, child))
    for module, child_name, child in swaps:
        setattr(module, child_name, cls.from_dense(child, **kwargs))
    return model


def _layers(model, cls=Sparse24Linear):
    return [m for m in model.modules() if isinstance(m, cls)]


class _Attached:
    """The hook handles attach() made; remove() undoes it."""

    def __init__(self, handles):
        self._handles = handles

    def remove(self):
        for h in self._handles:
            h.remove()


def attach(optimizer, model):
    """Drives the Sparse24Linear layers of `model` from `optimizer`'s steps:
    before each step, the masked decay on their gradients (which a GradScaler
    has unscaled by then: scaler.step unscales before stepping, and skips
    steps with inf gradients, which then count nowhere); after each step,
    the step count and the mask refresh every mask_interval steps. With
    gradient accumulation the decay is added once per step, not once per
    backward. Returns a handle with remove()."""
    layers = _layers(model)
    owned = {id(p) for g in optimizer.param_groups for p in g["params"]}
    layers = [m for m in layers if id(m.weight) in owned]
    for m in layers:
        m._driven = True  # W changes only at steps: compress once per step

    def before(_opt, _args, _kwargs):
        for m in layers:
            m.apply_masked_decay_()

    def after(_opt, _args, _kwargs):
        for m in layers:
            m.optimizer_step_()

    return _Attached([optimizer.register_step_pre_hook(before),
                      optimizer.register_step_post_hook(after)])


def set_dense(model, dense=True):
    """Switches every Sparse24Linear of `model` to dense training with its
    whole weight (dense=True), or back to 2:4 (the mask is kept)."""
    for m in _layers(model):
        m.dense = bool(dense)
    return model


def flip_rates(model):
    """The flip rate of every Sparse24Linear's last mask refresh, as one
    CUDA tensor (no host synchronization; log it with .tolist() when it
    suits). Empty when the model has none."""
    rates = [m.flip_rate_tensor for m in _layers(model)]
    if not rates:
        return torch.zeros(0)
    return torch.stack(rates)
