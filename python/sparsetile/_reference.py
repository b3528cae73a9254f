"""Pure-Python references of sparsetile's documented formulas (no torch, no
GPU): the SparseDrop block-mask generator. Tests compare the GPU generator
against it; it is also a readable statement of the mask's bit layout."""

_M64 = (1 << 64) - 1


def _mix(z):
    """splitmix64's finalizer."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def drop_threshold(p):
    """round(p * 2^32), rounding halves away from zero (std::llround)."""
    return int(p * 4294967296.0 + 0.5)


def cdiv(a, b):
    return -(-a // b)


def sparsedrop_mask_shape(M, K, block_m, block_k):
    """(mask rows, words per row) of a SparseDrop mask: ceil(M/bm) rows of
    ceil(ceil(K/bk)/64) int64 words."""
    return cdiv(M, block_m), cdiv(cdiv(K, block_k), 64)


def sparsedrop_mask_reference(seed, offset, p, M, K, block_m, block_k):
    """The mask st_sparsedrop_generate_mask draws, as a list of rows of
    signed int64 words (torch.int64's view of the bits).

    Block (mb, kb) is kept iff (z >> 32) >= round(p * 2^32) with
    z = mix(mix(seed) + (offset + mb * nkb + kb) * 0x9E3779B97F4A7C15);
    it is bit kb % 64 of word kb // 64 of row mb. Bits past the last block of
    a row are 0."""
    nmb, wpr = sparsedrop_mask_shape(M, K, block_m, block_k)
    nkb = cdiv(K, block_k)
    threshold = drop_threshold(p)
    key = _mix(seed & _M64)
    rows = []
    for mb in range(nmb):
        words = [0] * wpr
        for kb in range(nkb):
            z = _mix((key + ((offset + mb * nkb + kb) & _M64) *
                      0x9E3779B97F4A7C15) & _M64)
            if (z >> 32) >= threshold:
                words[kb // 64] |= 1 << (kb % 64)
        rows.append([w - (1 << 64) if w >> 63 else w for w in words])
    return rows
