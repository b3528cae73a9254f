"""The DSL's counter-based random numbers against Triton's on the same GPU:
`randint` and `rand` must equal `tl.randint` / `tl.rand` bit for bit for
32-bit offsets (Language.md, "Random numbers", says the stream is Triton's),
`randn` to a few ulp (log/cos differ between libdevice and Triton's
lowering), and all three must equal the runtime's host stream
(`sparsetile.random_*` through the C API) where it is exposed. Skips without
torch, Triton or a CUDA GPU."""

import os
import tempfile
import unittest

from _gpu import requires_gpu, torch

import sparsetile
import sparsetile.random

try:
    import triton
    import triton.language as tl
except ImportError:  # Only the GPU machine has Triton.
    triton = None

KERNEL = """
kernel draw(out_i: *i32, out_f: *f32, out_n: *f32, seed: i64, n: i32,
            const BLOCK: i32 = 1024) {
  let o = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = o < n;
  store(out_i + o, randint(seed, o).bitcast(i32), mask=m);
  store(out_f + o, rand(seed, o), mask=m);
  store(out_n + o, randn(seed, o), mask=m);
}
"""

if triton is not None:
    @triton.jit
    def _triton_draw(out_i, out_f, out_n, seed, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = o < n
        tl.store(out_i + o, tl.randint(seed, o).to(tl.int32, bitcast=True),
                 mask=m)
        tl.store(out_f + o, tl.rand(seed, o), mask=m)
        tl.store(out_n + o, tl.randn(seed, o), mask=m)


@requires_gpu
@unittest.skipIf(triton is None, "Triton is not installed")
class AgainstTriton(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        path = os.path.join(self.dir, "draw.tile")
        with open(path, "w") as f:
            f.write(KERNEL)
        self.k = sparsetile.compile(path, "draw")

    def draw(self, fn, seed, n):
        out = (torch.full((n,), -7, dtype=torch.int32, device="cuda"),
               torch.full((n,), float("nan"), device="cuda"),
               torch.full((n,), float("nan"), device="cuda"))
        fn(out, seed, n)
        torch.cuda.synchronize()
        return out

    def ours(self, out, seed, n):
        self.k[(sparsetile.cdiv(n, 1024),)](*out, seed, n)

    def theirs(self, out, seed, n):
        _triton_draw[(triton.cdiv(n, 1024),)](*out, seed, n, BLOCK=1024)

    def test_streams_equal(self):
        n = 1 << 20
        # Seeds of 32 and 64 bits, a negative one (sign-extended by both).
        for seed in (0, 42, 2**31 - 1, -5, 0x1234_5678_9ABC_DEF0 - 2**63):
            a = self.draw(self.ours, seed, n)
            b = self.draw(self.theirs, seed, n)
            self.assertTrue(torch.equal(a[0], b[0]),
                            "randint differs from tl.randint, seed %d: %d of "
                            "%d" % (seed, int((a[0] != b[0]).sum()), n))
            self.assertTrue(torch.equal(a[1], b[1]),
                            "rand differs from tl.rand, seed %d" % seed)
            self.assertGreaterEqual(float(a[1].min()), 0.0)
            self.assertLess(float(a[1].max()), 1.0)
            torch.testing.assert_close(a[2], b[2], rtol=2e-6, atol=2e-6)
            # The host stream (sparsetile.random, the runtime's Philox).
            host = [sparsetile.random.randint(seed, o) for o in range(256)]
            dev = [v & 0xFFFFFFFF for v in a[0][:256].tolist()]
            self.assertEqual(dev, host, "seed %d" % seed)


if __name__ == "__main__":
    unittest.main()
