"""The runtime's ops on torch tensors: SparseDrop, 2:4 sparsity helpers and
GEMMs, fused gated activations.

Each function checks its tensors here (CUDA, dtype, layout, shapes; errors
name the argument), allocates its outputs, and launches on torch's current
stream of the tensors' device, so it orders with surrounding torch work like
any torch op. The C library checks everything again. Matrices are row-major
with a unit column stride; their row stride may exceed the width (views),
except where "contiguous" is said. See runtime/include/sparsetile/ops/*.h for
the exact semantics; this module follows them argument by argument.
"""

import ctypes
import functools

import torch

from . import _allocator
from . import _dtypes as dt
from . import _lib
from ._errors import ArgumentError, ArgumentTypeError
from ._reference import cdiv, sparsedrop_mask_shape

__all__ = ["sparsedrop_mask", "sparsedrop_mask_at", "expand_sparsedrop_mask",
           "sparsedrop_forward", "sparsedrop_backward_x",
           "sparsedrop_backward_w", "mask24_transposable", "mask24_rowwise",
           "mask_flip_count", "mask_flip_rate", "mask_flip_count_async",
           "masked_decay_", "mvue24", "compress24", "compressed24_meta_cols",
           "sparse24_linear_forward", "sparse24_linear_backward_x",
           "mask24_update", "mvue24_compress_t", "sparse24_linear_backward_w",
           "sparse24_linear_forward_act", "sparse24_linear_backward_x_act",
           "glu_forward", "glu_backward", "ACTIVATIONS", "LINEAR_ACTIVATIONS"]

_HALF = (torch.bfloat16, torch.float16)
_FLOAT = (torch.bfloat16, torch.float16, torch.float32)
_MASK8 = (torch.int8, torch.uint8, torch.bool)

#: Activation names -> st_glu_problem.activation.
ACTIVATIONS = {"silu": 0, "swiglu": 0, "gelu": 1, "geglu": 1,
               "gelu_tanh": 2, "tanh": 2}
_LAYOUTS = {"halves": 0, "interleaved": 1}
#: The activations the 2:4 layer GEMMs fuse into their epilogue ->
#: st_activation (sparsetile.h).
LINEAR_ACTIVATIONS = {"none": 0, "gelu_tanh": 1}


# --- argument checks ----------------------------------------------------------
def _tensor(op, name, t, dtypes=None, dim=None):
    """Checks a tensor argument: a torch.Tensor on CUDA of one of `dtypes`
    with `dim` dimensions."""
    if not isinstance(t, torch.Tensor):
        raise ArgumentTypeError("%s: '%s' must be a torch.Tensor, got %s"
                                % (op, name, type(t).__name__))
    if not t.is_cuda:
        raise ArgumentTypeError("%s: '%s' must be a CUDA tensor, got one on "
                                "%s" % (op, name, t.device))
    if dtypes is not None and t.dtype not in dtypes:
        raise ArgumentTypeError("%s: '%s' must be %s, got %s" % (
            op, name, " or ".join(str(d) for d in dtypes), t.dtype))
    if dim is not None and t.dim() != dim:
        raise ArgumentError("%s: '%s' must be %d-D, got shape %s"
                            % (op, name, dim, list(t.shape)))
    return t


def _matrix(op, name, t, dtypes, shape=None):
    """A 2-D row-major matrix (unit column stride, row stride >= width)."""
    _tensor(op, name, t, dtypes, 2)
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ArgumentError("%s: '%s' must have shape %s, got %s"
                            % (op, name, list(shape), list(t.shape)))
    rows, cols = t.shape
    if cols > 1 and rows > 0 and t.stride(1) != 1:
        raise ArgumentError("%s: '%s' must have unit column stride (row-major"
                            "), got strides %s" % (op, name, list(t.stride())))
    return t


def _ld(t):
    """A row-major matrix's row stride in elements."""
    return t.stride(0) if t.shape[0] > 1 else max(t.stride(0), t.shape[1], 1)


def _contiguous(op, name, t, dtypes, numel=None):
    _tensor(op, name, t, dtypes)
    if not t.is_contiguous():
        raise ArgumentError("%s: '%s' must be contiguous" % (op, name))
    if numel is not None and t.numel() != numel:
        raise ArgumentError("%s: '%s' must have %d elements, got %d (shape %s)"
                            % (op, name, numel, t.numel(), list(t.shape)))
    return t


def _same(op, names, tensors):
    """All tensors share the first one's device and (for values) dtype."""
    first = tensors[0]
    for n, t in zip(names[1:], tensors[1:]):
        if t.device != first.device:
            raise ArgumentError("%s: '%s' is on %s but '%s' on %s" % (
                op, n, t.device, names[0], first.device))


def _same_dtype(op, a_name, a, b_name, b):
    if a.dtype != b.dtype:
        raise ArgumentTypeError("%s: '%s' is %s but '%s' is %s (one dtype)"
                                % (op, b_name, b.dtype, a_name, a.dtype))


def _out(op, out, shape, dtype, device, name="out"):
    """`out` checked, or a new tensor."""
    if out is None:
        return torch.empty(shape, dtype=dtype, device=device)
    if len(shape) == 2:
        _matrix(op, name, out, (dtype,), shape)
    else:
        _contiguous(op, name, out, (dtype,))
        if tuple(out.shape) != tuple(shape):
            raise ArgumentError("%s: '%s' must have shape %s, got %s"
                                % (op, name, list(shape), list(out.shape)))
    return out


def _code(t):
    return dt.from_torch(t.dtype)


def _stream_of(device):
    """(device index, torch's current CUstream on it as an int). The raw
    getter is the cheap path (no Stream object, no device switch): every
    launch pays for this on the host."""
    index = device.index if device.index is not None else \
        torch.cuda.current_device()
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    stream = raw(index) if raw is not None else \
        torch.cuda.current_stream(index).cuda_stream
    return index, stream


def _call(device, fn, *args):
    """Runs C function `fn` with torch's current stream of `device` as its
    last argument and raises on failure. The library launches in its own
    context on that stream, so torch's current device need not change."""
    index, stream = _stream_of(torch.device(device))
    _lib.bind_device(index)
    if not _allocator.installed:
        _allocator.install_torch_default()
    _lib.check(fn(*(args + (stream or None,))))


def _block(op, block):
    try:
        bm, bk = (int(b) for b in block)
    except (TypeError, ValueError):
        raise ArgumentTypeError("%s: block must be a pair (block_m, block_k), "
                                "got %r" % (op, block))
    return bm, bk


def _p(op, p):
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ArgumentError("%s: p must be in [0, 1], got %r" % (op, p))
    return p


# --- SparseDrop ---------------------------------------------------------------
def _mask_out(op, seed, p, M, K, block, device, out):
    """The checked arguments of a mask draw and its output (allocated on
    `device` unless given): (bm, bk, p, out)."""
    bm, bk = _block(op, block)
    p = _p(op, p)
    if not 0 <= seed < 2 ** 64:
        raise ArgumentError("%s: seed must be in [0, 2^64), got %r"
                            % (op, seed))
    if bm <= 0 or bk <= 0 or M < 0 or K < 0:
        raise ArgumentError("%s: need M, K >= 0 and positive blocks, got M=%d"
                            " K=%d block=(%d, %d)" % (op, M, K, bm, bk))
    shape = sparsedrop_mask_shape(M, K, bm, bk)
    if out is None:
        out = torch.empty(shape, dtype=torch.int64, device=device)
    else:
        _contiguous(op, "out", out, (torch.int64,), shape[0] * shape[1])
    if out.device.type != "cuda":
        raise ArgumentTypeError("%s: the mask is drawn on a CUDA device, got "
                                "device %s" % (op, out.device))
    return bm, bk, p, out


def sparsedrop_mask(seed, offset, p, M, K, block=(128, 128), device=None,
                    out=None):
    """A SparseDrop block mask drawn on the GPU from (seed, offset): int64
    [ceil(M/bm), ceil(ceil(K/bk)/64)], block (mb, kb) kept iff bit kb % 64 of
    word [mb, kb // 64] is 1. Reproducible: the same arguments give the same
    mask; draw each step's mask at a fresh offset (offset += nmb * nkb)."""
    bm, bk, p, out = _mask_out("sparsedrop_mask", seed, p, M, K, block,
                               device if device is not None else "cuda", out)
    if out.numel():
        _call(out.device, _lib.lib().st_sparsedrop_generate_mask, int(seed),
              int(offset), p, int(M), int(K), bm, bk, out.data_ptr())
    return out


def sparsedrop_mask_at(seed, offset, base, p, M, K, block=(128, 128),
                       out=None):
    """sparsedrop_mask at the offset offset[0] + base, where `offset` is a
    CUDA int64 tensor read when the kernel runs (not now): a CUDA graph that
    captures the call draws each replay's mask at the offset reached by then.
    Advance `offset` yourself (offset += the mask's block count)."""
    op = "sparsedrop_mask_at"
    _contiguous(op, "offset", offset, (torch.int64,), 1)
    if not offset.is_cuda:
        raise ArgumentTypeError("%s: 'offset' must be a CUDA tensor" % (op,))
    bm, bk, p, out = _mask_out(op, seed, p, M, K, block, offset.device, out)
    if out.numel():
        _call(out.device, _lib.lib().st_sparsedrop_generate_mask_at,
              int(seed), offset.data_ptr(), int(base), p, int(M), int(K), bm,
              bk, out.data_ptr())
    return out


def expand_sparsedrop_mask(words, M, K, block=(128, 128)):
    """The dense [M, K] bool mask of a bit-packed SparseDrop mask (torch ops
    only, any device): the reference layers and tests compute with."""
    bm, bk = _block("expand_sparsedrop_mask", block)
    nmb, wpr = sparsedrop_mask_shape(M, K, bm, bk)
    nkb = cdiv(K, bk)
    words = words.reshape(nmb, wpr)
    kb = torch.arange(nkb, device=words.device)
    bits = (words[:, kb // 64] >> (kb % 64)) & 1  # [nmb, nkb]
    dense = bits.repeat_interleave(bm, dim=0)[:M]
    return dense.repeat_interleave(bk, dim=1)[:, :K].bool()


def _sparsedrop_mask_arg(op, mask, M, K, block):
    bm, bk = _block(op, block)
    rows, wpr = sparsedrop_mask_shape(M, K, bm, bk) if bm > 0 and bk > 0 \
        else (0, 0)
    return _contiguous(op, "mask", mask, (torch.int64,), rows * wpr)


def _sparsedrop_gemm(op, fn, spec, a, b, mask, p, block, out):
    """One SparseDrop GEMM. spec = (a's name, its dims, b's name, its dims,
    the output's dims), dims as letters over M, N, K (e.g. "x", "MK", "w",
    "NK", "MN" for the forward): the operands' shapes bind the letters, a
    letter bound twice must agree, and the output is allocated from them."""
    a_name, a_dims, b_name, b_dims, out_dims = spec
    _matrix(op, a_name, a, _HALF)
    _matrix(op, b_name, b, _HALF)
    _same_dtype(op, a_name, a, b_name, b)
    size = dict(zip(a_dims, a.shape))
    for letter, extent in zip(b_dims, b.shape):
        if size.setdefault(letter, extent) != extent:
            raise ArgumentError(
                "%s: '%s' must be [%s] (%s is %s), got %s" % (
                    op, b_name, ", ".join(str(size.get(d, d)) for d in b_dims),
                    a_name, list(a.shape), list(b.shape)))
    M, N, K = size["M"], size["N"], size["K"]
    _sparsedrop_mask_arg(op, mask, M, K, block)
    _same(op, (a_name, b_name, "mask"), (a, b, mask))
    y = _out(op, out, tuple(size[d] for d in out_dims), a.dtype, a.device)
    if y.numel() == 0:
        return y
    reduced = (set(a_dims) & set(b_dims)) - set(out_dims)
    if size[reduced.pop()] == 0:
        return y.zero_()
    bm, bk = _block(op, block)
    prob = _lib.st_sparsedrop_problem(dt.from_torch(a.dtype), M, N, K, bm, bk,
                                      _p(op, p))
    _call(a.device, fn, ctypes.byref(prob), a.data_ptr(), _ld(a), b.data_ptr(),
          _ld(b), mask.data_ptr(), y.data_ptr(), _ld(y))
    return y


def sparsedrop_forward(x, w, mask, p, block=(128, 128), out=None):
    """Y [M, N] = s (X . mask) W^T with s = 1/(1-p) (0 for p == 1).
    x [M, K] and w [N, K] bf16 or f16 (one dtype); mask from
    sparsedrop_mask(..., M, K, block)."""
    return _sparsedrop_gemm("sparsedrop_forward",
                            _lib.lib().st_sparsedrop_forward,
                            ("x", "MK", "w", "NK", "MN"), x, w, mask, p, block,
                            out)


def sparsedrop_backward_x(dy, w, mask, p, block=(128, 128), out=None):
    """dX [M, K] = s (dY W) . mask; dropped blocks are exact zeros.
    dy [M, N], w [N, K]."""
    return _sparsedrop_gemm("sparsedrop_backward_x",
                            _lib.lib().st_sparsedrop_backward_x,
                            ("dy", "MN", "w", "NK", "MK"), dy, w, mask, p,
                            block, out)


def sparsedrop_backward_w(dy, x, mask, p, block=(128, 128), out=None):
    """dW [N, K] = s dY^T (X . mask). dy [M, N], x [M, K]."""
    return _sparsedrop_gemm("sparsedrop_backward_w",
                            _lib.lib().st_sparsedrop_backward_w,
                            ("dy", "MN", "x", "MK", "NK"), dy, x, mask, p,
                            block, out)


# --- 2:4 sparsity -------------------------------------------------------------
def _mask24(op, fn, w, prune, out, need_rows4):
    _matrix(op, "w", w, _FLOAT)
    R, C = w.shape
    if C % 4 or (need_rows4 and R % 4):
        raise ArgumentError("%s: 'w' must be [R, C] with %s a multiple of 4, "
                            "got %s" % (op, "R and C" if need_rows4 else "C",
                                        list(w.shape)))
    mask = torch.empty((R, C), dtype=torch.int8, device=w.device)
    pruned = None
    if prune:
        pruned = _out(op, out, (R, C), w.dtype, w.device)
    if R and C:
        _call(w.device, fn, _code(w), R, C, w.data_ptr(), _ld(w),
              mask.data_ptr(), _ld(mask),
              pruned.data_ptr() if prune else 0, _ld(pruned) if prune else 0)
    return (mask, pruned) if prune else mask


def mask24_transposable(w, prune=False, out=None):
    """The transposable 2:4 mask of w [R, C] (bf16/f16/f32, R and C multiples
    of 4) as int8 0/1 [R, C]: in each 4x4 block the pattern with two kept
    entries per row and per column maximizing sum |w|. With prune=True
    returns (mask, w * mask) (into `out`, which may be w itself)."""
    return _mask24("mask24_transposable", _lib.lib().st_mask24_transposable,
                   w, prune, out, True)


def mask24_rowwise(w, prune=False, out=None):
    """Row-wise 2:4 mask of w [R, C] (C a multiple of 4): the two largest |w|
    of every four consecutive entries. prune as in mask24_transposable."""
    return _mask24("mask24_rowwise", _lib.lib().st_mask24_rowwise, w, prune,
                   out, False)


def mask_flip_count(a, b):
    """The number of entries where two int8 masks (same numel, contiguous)
    differ, kept vs pruned. Synchronizes with the current stream."""
    op = "mask_flip_count"
    _contiguous(op, "a", a, _MASK8)
    _contiguous(op, "b", b, _MASK8, a.numel())
    _same(op, ("a", "b"), (a, b))
    count = ctypes.c_int64()
    if a.numel():
        index, stream = _stream_of(a.device)
        _lib.bind_device(index)
        _lib.check(_lib.lib().st_mask_flip_count(
            a.data_ptr(), b.data_ptr(), a.numel(), stream or None,
            ctypes.byref(count)))
    return count.value


def mask_flip_count_async(a, b):
    """mask_flip_count as a 0-d int64 CUDA tensor, without waiting for the
    GPU (graph-safe): per-program partial counts, then a torch sum."""
    op = "mask_flip_count_async"
    _contiguous(op, "a", a, _MASK8)
    _contiguous(op, "b", b, _MASK8, a.numel())
    _same(op, ("a", "b"), (a, b))
    n = a.numel()
    parts = torch.zeros(max(int(_lib.lib().st_mask_flip_partials(n)), 1),
                        dtype=torch.int32, device=a.device)
    if n:
        _call(a.device, _lib.lib().st_mask_flip_count_partials, a.data_ptr(),
              b.data_ptr(), n, parts.data_ptr())
    return parts.sum(dtype=torch.int64)


def mask_flip_rate(a, b):
    """mask_flip_count(a, b) / numel (0 for empty masks)."""
    n = a.numel() if isinstance(a, torch.Tensor) else 0
    count = mask_flip_count(a, b)
    return count / n if n else 0.0


def masked_decay_(g, w, mask, lam):
    """In place: g <- g + lam * w * (1 - mask), the masked decay of 2:4
    training (pruned weights decay towards 0, kept ones are untouched).
    g, w: one dtype (bf16/f16/f32), mask int8; all contiguous, same numel.
    Returns g."""
    op = "masked_decay_"
    _contiguous(op, "g", g, _FLOAT)
    _contiguous(op, "w", w, (g.dtype,), g.numel())
    _contiguous(op, "mask", mask, _MASK8, g.numel())
    _same(op, ("g", "w", "mask"), (g, w, mask))
    if g.numel():
        _call(g.device, _lib.lib().st_masked_decay, _code(g), g.data_ptr(),
              w.data_ptr(), mask.data_ptr(), g.numel(), float(lam))
    return g


def mvue24(x, seed, offset, out=None):
    """The MVUE 2:4 sparsifier (unbiased: E[y] = x) of contiguous x
    (numel a multiple of 4): two entries of every group of four, rescaled.
    Reproducible from (seed, offset): group g uses word g % 4 of
    sparsetile.random.randint4x(seed, offset + g // 4), so a tensor uses
    ceil(numel / 16) counters from offset; `out` may be x."""
    op = "mvue24"
    _contiguous(op, "x", x, _FLOAT)
    if x.numel() % 4:
        raise ArgumentError("%s: 'x' must have a multiple of 4 elements, got "
                            "%d" % (op, x.numel()))
    y = torch.empty_like(x) if out is None else _contiguous(
        op, "out", out, (x.dtype,), x.numel())
    if x.numel():
        _call(x.device, _lib.lib().st_mvue24, _code(x), x.data_ptr(),
              y.data_ptr(), x.numel(), int(seed) & (2 ** 64 - 1), int(offset))
    return y


def _weight16(op, w):
    """W [R, C], bf16/f16, R and C multiples of 16. Returns (R, C)."""
    _matrix(op, "w", w, _HALF)
    R, C = w.shape
    if R % 16 or C % 16:
        raise ArgumentError("%s: 'w' must be [R, C] with R and C multiples of "
                            "16, got %s" % (op, list(w.shape)))
    return R, C


@functools.lru_cache(maxsize=None)
def compressed24_meta_cols(cols):
    """Columns of the int16 meta tensor [rows, n] of a compressed 2:4 operand
    with `cols` (a multiple of 16) columns: n = 8 ceil(cols / 128), cols / 16
    words a row blocked by 128 columns, a last partial block padded to 8
    words (K = 1600: 104). The C ABI's st_compressed24_meta(1, cols), which
    is ops/Sparse24.h's metaCols: the one definition of the size."""
    n = int(_lib.lib().st_compressed24_meta(1, int(cols)))
    if n < 0:
        raise ArgumentError(_lib.last_error())
    return n


def _compressed_shapes(w):
    R, C = w.shape
    return (((R, C // 2), w.dtype),
            ((R, compressed24_meta_cols(C)), torch.int16),
            ((C, R // 2), w.dtype),
            ((C, compressed24_meta_cols(R)), torch.int16))


def _compressed(w):
    """New (vals, meta, vals_t, meta_t) for W [R, C] and W^T, contiguous."""
    return tuple(torch.empty(shape, dtype=dtype, device=w.device)
                 for shape, dtype in _compressed_shapes(w))


def compress24(w, mask, out=None):
    """W [R, C] (bf16/f16; R, C multiples of 16) pruned by its transposable
    int8 mask, compressed for the sparse GEMMs: returns (vals [R, C/2],
    meta [R, compressed24_meta_cols(C)] int16) for W and (vals_t [C, R/2],
    meta_t [C, compressed24_meta_cols(R)]) for W^T, all contiguous (meta is
    [R, C/16] when C % 128 == 0; else its last block of words is padded).
    `out`: the four tensors to write instead (as a
    previous call returned them), so their addresses stay fixed."""
    op = "compress24"
    R, C = _weight16(op, w)
    _matrix(op, "mask", mask, _MASK8, (R, C))
    _same(op, ("w", "mask"), (w, mask))
    if out is None:
        vals, meta, vals_t, meta_t = _compressed(w)
    else:
        vals, meta, vals_t, meta_t = out
        for name, t, like in zip(("vals", "meta", "vals_t", "meta_t"), out,
                                 _compressed_shapes(w)):
            _contiguous(op, name, t, (like[1],))
            if tuple(t.shape) != like[0]:
                raise ArgumentError("%s: out '%s' must have shape %s, got %s"
                                    % (op, name, list(like[0]),
                                       list(t.shape)))
    if R and C:
        _call(w.device, _lib.lib().st_compress24, _code(w), R, C, w.data_ptr(),
              _ld(w), mask.data_ptr(), _ld(mask), vals.data_ptr(),
              meta.data_ptr(), vals_t.data_ptr(), meta_t.data_ptr())
    return vals, meta, vals_t, meta_t


def _operand(op, vals_name, vals, meta_name, meta, dtype):
    """A compressed 2:4 operand: vals [I, K/2] of `dtype`, meta
    [I, compressed24_meta_cols(K)] int16 ([I, K/16] when K % 128 == 0),
    both contiguous. Returns (I, K). meta's words are blocked by K steps of
    128, not row-major (ops/Sparse24.h, metaIndex), a last partial block
    padded: a tensor only to pass between these ops."""
    _contiguous(op, vals_name, vals, (dtype,))
    if vals.dim() != 2:
        raise ArgumentError("%s: '%s' must be 2-D, got shape %s"
                            % (op, vals_name, list(vals.shape)))
    I, K = vals.shape[0], vals.shape[1] * 2
    _contiguous(op, meta_name, meta, (torch.int16,))
    mc = compressed24_meta_cols(K)
    if tuple(meta.shape) != (I, mc):
        raise ArgumentError("%s: '%s' must be [%d, %d] to match '%s' %s, got "
                            "%s" % (op, meta_name, I, mc, vals_name,
                                    list(vals.shape), list(meta.shape)))
    return I, K


def _sparse24_gemm(op, fn, a_name, a, names, vals, meta, out, of_wt):
    """out [M, I] = a [M, K] A^T for the compressed operand (vals, meta) of
    A [I, K]: A = W (forward) or W^T (of_wt, dX); K a multiple of 64 (the
    sparse GEMMs' reduction step)."""
    _matrix(op, a_name, a, _HALF)
    I, K = _operand(op, names[0], vals, names[1], meta, a.dtype)
    M = a.shape[0]
    if a.shape[1] != K or K % 64:
        raise ArgumentError("%s: '%s' must be [M, %d] (2 * %s.shape[1], a "
                            "multiple of 64), got %s" % (
                                op, a_name, K, names[0], list(a.shape)))
    _same(op, (a_name,) + names, (a, vals, meta))
    y = _out(op, out, (M, I), a.dtype, a.device)
    if M and I:
        # Both C functions take (dtype, M, R, C, ...) with R, C W's shape.
        R, C = (K, I) if of_wt else (I, K)
        _call(a.device, fn, _code(a), M, R, C, vals.data_ptr(),
              meta.data_ptr(), a.data_ptr(), _ld(a), y.data_ptr(), _ld(y))
    return y


def sparse24_linear_forward(x, vals, meta, out=None):
    """Y [M, R] = X [M, C] W^T on sparse tensor cores, W's operand (vals
    [R, C/2], meta [R, C/16]) from compress24; C a multiple of 64."""
    return _sparse24_gemm("sparse24_linear_forward",
                          _lib.lib().st_sparse24_linear_forward, "x", x,
                          ("vals", "meta"), vals, meta, out, False)


def sparse24_linear_backward_x(dy, vals_t, meta_t, out=None):
    """dX [M, C] = dY [M, R] W, W^T's operand (vals_t [C, R/2], meta_t
    [C, R/16]) from compress24; R a multiple of 64."""
    return _sparse24_gemm("sparse24_linear_backward_x",
                          _lib.lib().st_sparse24_linear_backward_x, "dy", dy,
                          ("vals_t", "meta_t"), vals_t, meta_t, out, True)


def _linear_activation(op, activation):
    code = LINEAR_ACTIVATIONS.get("none" if activation is None else activation)
    if code is None:
        raise ArgumentError("%s: activation must be None, 'none' or "
                            "'gelu_tanh', got %r" % (op, activation))
    return code


def _epilogue_gemm(op, a_name, a, vals_name, vals, meta_name, meta):
    """(M, I, K) of out [M, I] = a [M, K] A^T for the compressed operand of
    A [I, K], all checked; K a multiple of 64."""
    _matrix(op, a_name, a, _HALF)
    I, K = _operand(op, vals_name, vals, meta_name, meta, a.dtype)
    if a.shape[1] != K or K % 64:
        raise ArgumentError("%s: '%s' must be [M, %d] (2 * %s.shape[1], a "
                            "multiple of 64), got %s" % (
                                op, a_name, K, vals_name, list(a.shape)))
    _same(op, (a_name, vals_name, meta_name), (a, vals, meta))
    return a.shape[0], I, K


def sparse24_linear_forward_act(x, vals, meta, bias=None,
                                activation="gelu_tanh"):
    """act(X [M, C] W^T + bias) in one kernel (the GEMM's epilogue adds the
    bias [R] and applies the activation): the fc GEMM of an MLP. With
    activation "gelu_tanh" returns (h, y): the pre-activation h = X W^T +
    bias in x's dtype, which the backward needs, and y = F.gelu(h,
    approximate="tanh"); with None (or "none") returns y = X W^T + bias."""
    op = "sparse24_linear_forward_act"
    act = _linear_activation(op, activation)
    M, R, C = _epilogue_gemm(op, "x", x, "vals", vals, "meta", meta)
    if bias is not None:
        _contiguous(op, "bias", bias, (x.dtype,), R)
        _same(op, ("x", "bias"), (x, bias))
    y = torch.empty((M, R), dtype=x.dtype, device=x.device)
    h = torch.empty_like(y) if act else None
    if M and R:
        _call(x.device, _lib.lib().st_sparse24_linear_forward_act, _code(x),
              M, R, C, vals.data_ptr(), meta.data_ptr(), x.data_ptr(), _ld(x),
              0 if bias is None else bias.data_ptr(), act,
              0 if h is None else h.data_ptr(), y.data_ptr(), _ld(y))
    return (h, y) if act else y


def sparse24_linear_backward_x_act(dy, vals_t, meta_t, h,
                                   activation="gelu_tanh"):
    """dX [M, C] = (dY [M, R] W) * act'(h) in one kernel: the input gradient
    of an MLP's proj layer, whose input was act(h), carried through the
    activation (h [M, C] the pre-activation, contiguous, as
    sparse24_linear_forward_act returns it). Only "gelu_tanh"."""
    op = "sparse24_linear_backward_x_act"
    act = _linear_activation(op, activation)
    if not act:
        raise ArgumentError("%s: needs an activation ('gelu_tanh'); without "
                            "one, call sparse24_linear_backward_x" % op)
    M, C, R = _epilogue_gemm(op, "dy", dy, "vals_t", vals_t, "meta_t",
                             meta_t)
    # h shares the output's row stride (one ld in the C call): contiguous.
    _contiguous(op, "h", h, (dy.dtype,))
    if tuple(h.shape) != (M, C):
        raise ArgumentError("%s: 'h' must be [%d, %d], got %s"
                            % (op, M, C, list(h.shape)))
    _same(op, ("dy", "vals_t", "meta_t", "h"), (dy, vals_t, meta_t, h))
    dx = torch.empty((M, C), dtype=dy.dtype, device=dy.device)
    if M and C:
        _call(dy.device, _lib.lib().st_sparse24_linear_backward_x_act,
              _code(dy), M, R, C, vals_t.data_ptr(), meta_t.data_ptr(),
              dy.data_ptr(), _ld(dy), act, h.data_ptr(), dx.data_ptr(), C)
    return dx


def mask24_update(w):
    """One pass of a mask update of W [R, C] (bf16/f16; R, C multiples of
    16): returns (mask, W * mask, vals, meta, vals_t, meta_t), bit for bit
    mask24_transposable(w, prune=True) and compress24(w, mask)."""
    op = "mask24_update"
    R, C = _weight16(op, w)
    mask = torch.empty((R, C), dtype=torch.int8, device=w.device)
    out = torch.empty((R, C), dtype=w.dtype, device=w.device)
    vals, meta, vals_t, meta_t = _compressed(w)
    if R and C:
        _call(w.device, _lib.lib().st_mask24_update, _code(w), R, C,
              w.data_ptr(), _ld(w), mask.data_ptr(), C, out.data_ptr(), C,
              vals.data_ptr(), meta.data_ptr(), vals_t.data_ptr(),
              meta_t.data_ptr())
    return mask, out, vals, meta, vals_t, meta_t


def mvue24_compress_t(dy, seed, offset):
    """The MVUE 2:4 sparsifier of dY^T (groups of four tokens), compressed in
    one kernel: dY [M, R] (bf16/f16) -> (vals [R, Kp/2], meta [R, Kp/16]
    int16) with Kp = M rounded up to a multiple of 128 (zero tokens). Bit for
    bit mvue24(dY^T) then compress24; reproducible from (seed, offset)."""
    op = "mvue24_compress_t"
    _matrix(op, "dy", dy, _HALF)
    M, R = dy.shape
    kp = (M + 127) // 128 * 128
    vals = torch.empty((R, kp // 2), dtype=dy.dtype, device=dy.device)
    meta = torch.empty((R, compressed24_meta_cols(kp)), dtype=torch.int16,
                       device=dy.device)
    if M and R:
        _call(dy.device, _lib.lib().st_mvue24_compress_t, _code(dy), M, R,
              dy.data_ptr(), _ld(dy), vals.data_ptr(), meta.data_ptr(),
              int(seed) & (2 ** 64 - 1), int(offset))
    return vals, meta


def sparse24_linear_backward_w(x, vals, meta, out=None, out_dtype=None):
    """dW [R, C] = S(dY^T) X [M, C] on sparse tensor cores, from
    mvue24_compress_t's (vals, meta), accumulated in f32. Stored as
    `out_dtype`: torch.float32 (the default) or x's dtype, which is what
    torch gives a bf16/f16 parameter's gradient (the f32 result rounded to
    nearest even, in half the bytes). With `out`, its dtype decides and
    `out_dtype` must be None or equal to it."""
    op = "sparse24_linear_backward_w"
    if out is not None and out_dtype is not None and out.dtype != out_dtype:
        raise ArgumentError("%s: out is %s but out_dtype is %s" % (
            op, out.dtype, out_dtype))
    dw_dtype = out.dtype if out is not None else (out_dtype or torch.float32)
    if dw_dtype not in (torch.float32, x.dtype):
        raise ArgumentError("%s: dW must be torch.float32 or x's dtype %s, "
                            "got %s" % (op, x.dtype, dw_dtype))
    _matrix(op, "x", x, _HALF)
    R, kp = _operand(op, "vals", vals, "meta", meta, x.dtype)
    M, C = x.shape
    if kp != (M + 127) // 128 * 128:
        raise ArgumentError("%s: 'vals' must be [R, %d] for %d tokens (M "
                            "rounded up to 128, halved), got %s" % (
                                op, (M + 127) // 128 * 64, M,
                                list(vals.shape)))
    _same(op, ("x", "vals", "meta"), (x, vals, meta))
    dw = _out(op, out, (R, C), dw_dtype, x.device)
    if R and C:
        _call(x.device, _lib.lib().st_sparse24_linear_backward_w_ex, _code(x),
              M, R, C, vals.data_ptr(), meta.data_ptr(), x.data_ptr(), _ld(x),
              dw.data_ptr(), _code(dw), _ld(dw))
    return dw


def sparse_linear(x, vals, meta, tile_i=256, tile_m=128, warps=8,
                  prefetch=True, tma=-1, stages=0, warp_specialize=-1,
                  persistent=-1, out=None):
    """out [M, I] = x [M, K] A^T, A [I, K] compressed (vals [I, K/2], meta
    [I, K/16]): the GEMM under both 2:4 layer GEMMs, with its tiling exposed
    (ops::SparseLinearTiles; -1 picks the default where that struct does)."""
    op = "sparse_linear"
    _matrix(op, "x", x, _HALF)
    I, K = _operand(op, "vals", vals, "meta", meta, x.dtype)
    if x.shape[1] != K:
        raise ArgumentError("%s: 'x' must be [M, %d], got %s"
                            % (op, K, list(x.shape)))
    _same(op, ("x", "vals", "meta"), (x, vals, meta))
    y = _out(op, out, (x.shape[0], I), x.dtype, x.device)
    tiles = _lib.st_sparse_linear_tiles(tile_i, tile_m, warps, int(prefetch),
                                        tma, stages, warp_specialize,
                                        persistent)
    if y.numel():
        # The stream comes before the tiling here, so not through _call.
        index, stream = _stream_of(x.device)
        _lib.bind_device(index)
        _lib.check(_lib.lib().st_sparse_linear(
            _code(x), x.shape[0], I, K, vals.data_ptr(), meta.data_ptr(),
            x.data_ptr(), _ld(x), y.data_ptr(), _ld(y), stream or None,
            ctypes.byref(tiles)))
    return y


# --- gated activations --------------------------------------------------------
def _glu_problem(op, h, activation, layout, interleave_width):
    if activation not in ACTIVATIONS:
        raise ArgumentError("%s: activation must be one of %s, got %r"
                            % (op, ", ".join(sorted(ACTIVATIONS)), activation))
    if layout not in _LAYOUTS:
        raise ArgumentError("%s: layout must be 'halves' or 'interleaved', got"
                            " %r" % (op, layout))
    _matrix(op, "h", h, _HALF)
    M, F2 = h.shape
    if F2 % 2:
        raise ArgumentError("%s: 'h' must be [M, 2F] (an even width), got %s"
                            % (op, list(h.shape)))
    return _lib.st_glu_problem(_code(h), M, F2 // 2, ACTIVATIONS[activation],
                               _LAYOUTS[layout], int(interleave_width or 0))


def glu_forward(h, activation="silu", layout="halves", interleave_width=64,
                out=None):
    """y [M, F] = act(g) * u for h [M, 2F] (bf16/f16) = [g | u] ("halves")
    or g and u in alternating column blocks ("interleaved"). activation:
    "silu" (SwiGLU), "gelu" (erf GEGLU) or "gelu_tanh"."""
    op = "glu_forward"
    prob = _glu_problem(op, h, activation, layout, interleave_width)
    y = _out(op, out, (prob.M, prob.F), h.dtype, h.device)
    if prob.M and prob.F:
        _call(h.device, _lib.lib().st_glu_forward, ctypes.byref(prob),
              h.data_ptr(), _ld(h), y.data_ptr(), _ld(y))
    return y


def glu_backward(h, dy, activation="silu", layout="halves",
                 interleave_width=64, out=None):
    """dh [M, 2F] (in h's layout) = [dy u act'(g), dy act(g)]."""
    op = "glu_backward"
    prob = _glu_problem(op, h, activation, layout, interleave_width)
    _matrix(op, "dy", dy, (h.dtype,), (prob.M, prob.F))
    _same(op, ("h", "dy"), (h, dy))
    dh = _out(op, out, (prob.M, 2 * prob.F), h.dtype, h.device)
    if prob.M and prob.F:
        _call(h.device, _lib.lib().st_glu_backward, ctypes.byref(prob),
              h.data_ptr(), _ld(h), dy.data_ptr(), _ld(dy), dh.data_ptr(),
              _ld(dh))
    return dh
