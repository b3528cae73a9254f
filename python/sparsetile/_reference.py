"""Pure-Python references of sparsetile's documented formulas (no torch, no
GPU): the DSL's Philox stream and the SparseDrop block-mask generator. Tests
compare the GPU generator against it; it is also a readable statement of the
mask's bit layout."""

_M64 = (1 << 64) - 1
_M32 = (1 << 32) - 1


def philox4x32(counter, key, rounds=10):
    """Philox-4x32 (Random123's philox4x32_R) of four 32-bit counter words
    under two key words; the DSL's random stream (Language.md, "Random
    numbers") and sparsetile/runtime/Random.h's rt::philox4x32."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(rounds):
        p0 = 0xD2511F53 * c0
        p2 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p2 >> 32) ^ c1 ^ k0, p2 & _M32,
                          (p0 >> 32) ^ c3 ^ k1, p0 & _M32)
        k0 = (k0 + 0x9E3779B9) & _M32
        k1 = (k1 + 0xBB67AE85) & _M32
    return c0, c1, c2, c3


def randint(seed, offset):
    """The DSL's randint(seed, offset) for a 64-bit seed and offset (a
    32-bit DSL offset o is offset o & 0xffffffff): word 0 of Philox-4x32-10
    with key (seed lo, seed hi) and counter (offset lo, offset hi, 0, 0)."""
    seed &= _M64
    offset &= _M64
    return philox4x32((offset & _M32, offset >> 32, 0, 0),
                      (seed & _M32, seed >> 32))[0]


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

    Block (mb, kb) is kept iff randint(seed, offset + mb * nkb + kb) >=
    round(p * 2^32); it is bit kb % 64 of word kb // 64 of row mb. Bits past
    the last block of a row are 0."""
    nmb, wpr = sparsedrop_mask_shape(M, K, block_m, block_k)
    nkb = cdiv(K, block_k)
    threshold = drop_threshold(p)
    rows = []
    for mb in range(nmb):
        words = [0] * wpr
        for kb in range(nkb):
            if randint(seed, offset + mb * nkb + kb) >= threshold:
                words[kb // 64] |= 1 << (kb % 64)
        rows.append([w - (1 << 64) if w >> 63 else w for w in words])
    return rows
