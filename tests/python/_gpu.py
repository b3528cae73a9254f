"""Shared setup of the GPU test files: whether torch and a CUDA GPU (as
both torch and libsparsetile see it) are present, and why not."""

import unittest

try:
    import torch
except ImportError:  # The CPU-only machines.
    torch = None


def _probe():
    if torch is None:
        return False, "torch is not installed"
    if not torch.cuda.is_available():
        return False, "no CUDA GPU (torch.cuda.is_available() is False)"
    import sparsetile
    ok, why = sparsetile.gpu_available()
    if not ok:
        return False, "libsparsetile sees no usable GPU: " + why
    return True, ""


HAVE_GPU, WHY_NOT = _probe()

#: Class decorator: skip unless torch and a GPU are there, saying why.
requires_gpu = unittest.skipUnless(HAVE_GPU, WHY_NOT)


def sm():
    """The GPU's compute capability as an int (90 for sm_90)."""
    major, minor = torch.cuda.get_device_capability()
    return major * 10 + minor


def rel_err(actual, reference):
    """max |actual - reference| / max |reference| (in float64)."""
    a, r = actual.double(), reference.double()
    return float((a - r).abs().max() / r.abs().max().clamp_min(1e-30))
