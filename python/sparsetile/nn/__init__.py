"""torch layers over sparsetile's kernels (imports torch).

- SparseDropLinear: linear with block-structured input dropout fused into
  the GEMMs (backend="torch" is the pure-PyTorch reference on the same masks);
- Sparse24Linear: linear with a transposable 2:4 sparse weight, sparse
  tensor-core forward and input gradient, masked decay;
- Sparse24MLP (and sparse24_mlp(x, fc, proj), its functional form): fc ->
  GELU (tanh) -> proj on two Sparse24Linear layers, the biases and the GELU
  (forward and backward) fused into the 2:4 GEMMs;
- swiglu / geglu and SwiGLU / GEGLU: fused gated activations;
- sparsify_, attach, set_dense, flip_rates: converting a model and the
  once-per-optimizer-step work of 2:4 training (training.py).

The kernels are torch custom ops (namespace "sparsetile", torch >= 2.4), so
models using these layers compile with torch.compile without graph breaks.
"""

from .layers import (GEGLU, Sparse24Linear, Sparse24MLP, SparseDropLinear,
                     SwiGLU, geglu, sparse24_mlp, swiglu)
from ._custom_ops import HAS_CUSTOM_OP
from .training import attach, flip_rates, set_dense, sparsify_

__all__ = ["SparseDropLinear", "Sparse24Linear", "Sparse24MLP",
           "sparse24_mlp", "SwiGLU", "GEGLU", "swiglu", "geglu", "HAS_CUSTOM_OP", "sparsify_", "attach",
           "set_dense", "flip_rates"]
