"""The language features of issue 47 on a GPU: `while`, `break` and
`continue` (a spin lock over atomic_cas, searches that stop early, a tile
carried through a breaking while), the math library against float64
references, and the fp8 types (conversions against torch's, bit for bit;
`dot` of e4m3 tiles against float64). Outputs are NaN-poisoned (or filled
with a sentinel) first; inputs are random. Skips without torch or a CUDA
GPU (the fp8 tests also below sm_89)."""

import math
import unittest

from _gpu import rel_err, requires_gpu, sm, torch

import sparsetile

LOOPS = r"""
# Every program adds its id to *total under a lock.
kernel spin(lock: *i32, total: *i32) {
  while atomic_cas(lock, 0, 1) == 1 {}
  # Read at L2 (an atomic), so no SM sees a stale line of *total.
  store(total, atomic_add(total, 0) + program_id(0));
  atomic_xchg(lock, 0);
}

# Row r: the first i < n with x[r, i] > t (or n), and how many entries it
# read (the loop must stop at the break).
kernel first_above(x: *f32, out: *i32, reads: *i32, n: i32, t: f32) {
  let r = program_id(0);
  let found = n;
  let k = 0;
  for i in range(0, n) {
    k += 1;
    if load(x + r * n + i) > t {
      found = i;
      break;
    }
  }
  store(out + r, found);
  store(reads + r, k);
}

# Row r: the sum of the non-negative entries, one at a time, and the
# number of entries skipped.
kernel skip_negative(x: *f32, out: *f32, skipped: *i32, n: i32) {
  let r = program_id(0);
  let s = 0.0;
  let m = 0;
  for i in range(0, n) {
    let v = load(x + r * n + i);
    if v < 0.0 {
      m += 1;
      continue;
    }
    s += v;
  }
  store(out + r, s);
  store(skipped + r, m);
}

# Halves a tile until its maximum is at most `limit`, at most `cap` times.
kernel halve_until(x: *f32, out: *f32, count: *i32, limit: f32, cap: i32) {
  let offs = arange(0, 128);
  let v = load(x + offs);
  let k = 0;
  while max(v) > limit {
    if k == cap {
      break;
    }
    v = v * 0.5;
    k += 1;
  }
  store(out + offs, v);
  store(count, k);
}

# Nested loops: the inner break leaves the inner loop only; the outer
# continue skips odd rows.
kernel nested(x: *f32, out: *i32, rows: i32, n: i32, t: f32) {
  let total = 0;
  for r in range(0, rows) {
    if r % 2 == 1 {
      continue;
    }
    let j = 0;
    while j < n {
      if load(x + r * n + j) > t {
        break;
      }
      j += 1;
    }
    total += j;
  }
  store(out, total);
}
"""

MATH = r"""
kernel unary(x: *f32, out: *f32, n: i32, const OP: i32 = 0) {
  let offs = program_id(0) * 1024 + arange(0, 1024);
  let m = offs < n;
  let v = load(x + offs, mask=m, other=1.0);
  let y = v;
  if OP == 0 { y = exp2(v); }
  if OP == 1 { y = log2(abs(v) + 0.5); }
  if OP == 2 { y = sin(v); }
  if OP == 3 { y = cos(v); }
  if OP == 4 { y = floor(v); }
  if OP == 5 { y = ceil(v); }
  if OP == 6 { y = pow(abs(v) + 0.5, 1.7); }
  if OP == 7 { y = fma(v, 3.0, -1.0); }
  if OP == 8 { y = clamp(v, -0.5, 0.75); }
  if OP == 9 { y = abs(v); }
  if OP == 10 { y = v ** 2; }
  store(out + offs, y, mask=m);
}

# `/` (div.full.f32, Triton's) and div_rn (correctly rounded) of two tiles.
kernel divide(x: *f32, y: *f32, q: *f32, qrn: *f32, n: i32) {
  let offs = program_id(0) * 1024 + arange(0, 1024);
  let m = offs < n;
  let a = load(x + offs, mask=m, other=1.0);
  let b = load(y + offs, mask=m, other=1.0);
  store(q + offs, a / b, mask=m);
  store(qrn + offs, div_rn(a, b), mask=m);
}

kernel ints(a: *i32, b: *i32, hi: *i32, ab: *i32, cd: *i32, n: i32) {
  let offs = program_id(0) * 1024 + arange(0, 1024);
  let m = offs < n;
  let x = load(a + offs, mask=m, other=1);
  let y = load(b + offs, mask=m, other=1);
  store(hi + offs, umulhi(x, y), mask=m);
  store(ab + offs, abs(x), mask=m);
  store(cd + offs, cdiv(x, 7), mask=m);
}

kernel argmin_rows(x: *f32, out: *i32, const N: i32 = 256) {
  let r = program_id(0);
  store(out + r, argmin(load(x + r * N + arange(0, N)), axis=0));
}
"""


@requires_gpu
class Loops(unittest.TestCase):
    def kernel(self, name):
        return sparsetile.compile(LOOPS, name)

    def test_spin_lock_serializes_the_programs(self):
        lock = torch.zeros(1, dtype=torch.int32, device="cuda")
        total = torch.zeros(1, dtype=torch.int32, device="cuda")
        programs = 2048
        self.kernel("spin")[(programs,)](lock, total)
        torch.cuda.synchronize()
        self.assertEqual(int(total), programs * (programs - 1) // 2)
        self.assertEqual(int(lock), 0)

    def test_break_stops_the_search(self):
        torch.manual_seed(1)
        rows, n, t = 300, 517, 2.5
        x = torch.randn(rows, n, device="cuda")
        out = torch.full((rows,), -7, dtype=torch.int32, device="cuda")
        reads = torch.full((rows,), -7, dtype=torch.int32, device="cuda")
        self.kernel("first_above")[(rows,)](x, out, reads, n, t)
        above = (x > t).cpu()
        want = [int(row.nonzero()[0]) if row.any() else n for row in above]
        self.assertEqual(out.cpu().tolist(), want)
        # Entries read: up to and including the hit, or all n.
        self.assertEqual(reads.cpu().tolist(),
                         [w + 1 if w < n else n for w in want])
        self.assertTrue(any(w == n for w in want) and any(w < n for w in want),
                        "the data must exercise both ways out")

    def test_continue_skips_the_rest_of_the_iteration(self):
        torch.manual_seed(2)
        rows, n = 64, 333
        x = torch.randn(rows, n, device="cuda")
        out = torch.full((rows,), float("nan"), device="cuda")
        skipped = torch.full((rows,), -7, dtype=torch.int32, device="cuda")
        self.kernel("skip_negative")[(rows,)](x, out, skipped, n)
        ref = x.double().clamp_min(0).sum(1)
        torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-4)
        self.assertEqual(skipped.cpu().tolist(), (x < 0).sum(1).tolist())

    def test_tile_carried_through_a_breaking_while(self):
        torch.manual_seed(3)
        x = torch.rand(128, device="cuda") * 1000 + 1
        for limit, cap in ((1.0, 100), (1.0, 3), (5000.0, 10)):
            out = torch.full_like(x, float("nan"))
            count = torch.full((1,), -7, dtype=torch.int32, device="cuda")
            self.kernel("halve_until")[(1,)](x, out, count, limit, cap)
            k, v = 0, x.double()
            while float(v.max()) > limit and k < cap:
                v, k = v * 0.5, k + 1
            self.assertEqual(int(count), k, (limit, cap))
            torch.testing.assert_close(out.double(), v, rtol=0, atol=0)

    def test_nested_loops_leave_only_their_own(self):
        torch.manual_seed(4)
        rows, n, t = 9, 200, 2.0
        x = torch.randn(rows, n, device="cuda")
        out = torch.full((1,), -7, dtype=torch.int32, device="cuda")
        self.kernel("nested")[(1,)](x, out, rows, n, t)
        total = 0
        for r in range(0, rows, 2):
            hits = (x[r] > t).nonzero()
            total += int(hits[0]) if len(hits) else n
        self.assertEqual(int(out), total)


LOOP_STAGES = r"""
@num_warps(8)
kernel mm(a: desc<bf16>, b: desc<bf16>, c: *f32, M: i32, N: i32, K: i32) {
  let m0 = program_id(0) * 128;
  let n0 = program_id(1) * 128;
  let acc = zeros([128, 128], f32);
  for k in range(0, K, 64, num_stages=STAGES) {
    acc = dot(load_block(a, [m0, k], [128, 64]),
              load_block(b, [k, n0], [64, 128]), acc);
  }
  let rm = m0 + arange(0, 128);
  let rn = n0 + arange(0, 128);
  store(c + rm[:, None] * N + rn[None, :], acc,
        mask=(rm[:, None] < M) && (rn[None, :] < N));
}
"""


@requires_gpu
class LoopStages(unittest.TestCase):
    """range(..., num_stages=N) sets the TMA ring's depth of that loop
    (sm_90), and the product stays right at every depth."""

    def test_ring_depth_follows_the_loop(self):
        if sm() < 90:
            self.skipTest("the TMA ring needs sm_90")
        torch.manual_seed(4)
        M, N, K = 300, 200, 1024
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
        ref = a.double() @ b.double()
        for stages in (2, 3):
            k = sparsetile.compile(LOOP_STAGES.replace("STAGES", str(stages)))
            self.assertIn("stages = %d," % stages, k.asm["pipelined"])
            c = torch.full((M, N), float("nan"), device="cuda")
            k[(3, 2)](a, b, c, M, N, K)
            self.assertLess(rel_err(c, ref), 1e-2, stages)


@requires_gpu
class MathLibrary(unittest.TestCase):
    """Each function against torch in float64 on the same f32 inputs."""

    REFS = [
        ("exp2", lambda v: torch.exp2(v), 2e-6),
        ("log2", lambda v: torch.log2(v.abs() + 0.5), 2e-6),
        ("sin", lambda v: torch.sin(v), 2e-6),
        ("cos", lambda v: torch.cos(v), 2e-6),
        ("floor", lambda v: torch.floor(v), 0),
        ("ceil", lambda v: torch.ceil(v), 0),
        ("pow", lambda v: torch.pow(v.abs() + 0.5, 1.7), 2e-6),
        ("fma", lambda v: v * 3.0 - 1.0, 1e-7),
        ("clamp", lambda v: v.clamp(-0.5, 0.75), 0),
        ("abs", lambda v: torch.abs(v), 0),
        ("square", lambda v: v * v, 1e-7),
    ]

    def test_float_functions(self):
        torch.manual_seed(5)
        n = 10007
        x = torch.randn(n, device="cuda") * 4
        for op, (name, ref, tol) in enumerate(self.REFS):
            out = torch.full_like(x, float("nan"))
            sparsetile.compile(MATH, "unary", OP=op)[
                (sparsetile.cdiv(n, 1024),)](x, out, n)
            want = ref(x.double())
            err = float(((out.double() - want).abs() /
                         want.abs().clamp_min(1.0)).max())
            self.assertLessEqual(err, tol, name)

    def test_division(self):
        # Quotients over the whole exponent range, divisors beyond 2^126
        # among them (where div.approx.f32 flushes to zero): `/` within
        # 2 ulp of the float64 quotient, div_rn equal to torch's f32 `/`
        # (IEEE, correctly rounded) bit for bit.
        torch.manual_seed(8)
        n = 20011
        x = torch.randn(n, device="cuda") * torch.exp2(
            torch.randint(-60, 60, (n,), device="cuda").float())
        y = torch.randn(n, device="cuda") * torch.exp2(
            torch.randint(-60, 60, (n,), device="cuda").float())
        y[:64] = torch.randn(64, device="cuda").sign() * 2.0 ** 127
        x[:64] = torch.randn(64, device="cuda") * 2.0 ** 100
        q, qrn = (torch.full_like(x, float("nan")) for _ in range(2))
        sparsetile.compile(MATH, "divide")[(sparsetile.cdiv(n, 1024),)](
            x, y, q, qrn, n)
        want = x.double() / y.double()
        ulp = (want.float().abs() * 2.0 ** -23).double().clamp_min(2.0 ** -149)
        self.assertLessEqual(float(((q.double() - want).abs() / ulp).max()), 2)
        self.assertTrue(bool((q[:64] != 0).all()))
        self.assertTrue(torch.equal(qrn, x / y))

    def test_integer_functions(self):
        torch.manual_seed(6)
        n = 5000
        a = torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int32,
                          device="cuda")
        b = torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int32,
                          device="cuda")
        a[:4] = torch.tensor([-7, 7, 0, -2**31], dtype=torch.int32)
        hi, ab, cd = (torch.full_like(a, -123) for _ in range(3))
        sparsetile.compile(MATH, "ints")[(sparsetile.cdiv(n, 1024),)](
            a, b, hi, ab, cd, n)
        ua = a.cpu().long() & 0xFFFFFFFF
        ub = b.cpu().long() & 0xFFFFFFFF
        want_hi = [((x * y) >> 32) for x, y in zip(ua.tolist(), ub.tolist())]
        got_hi = [v & 0xFFFFFFFF for v in hi.cpu().long().tolist()]
        self.assertEqual(got_hi, want_hi)
        # abs wraps at INT_MIN as the hardware does.
        want_abs = [abs(v) if v != -2**31 else -2**31 for v in a.tolist()]
        self.assertEqual(ab.cpu().tolist(), want_abs)
        self.assertEqual(cd.cpu().tolist(),
                         [-((-v) // 7) for v in a.tolist()])

    def test_argmin_takes_the_first_minimum(self):
        torch.manual_seed(7)
        x = torch.randint(0, 20, (64, 256), device="cuda").float()
        out = torch.full((64,), -7, dtype=torch.int32, device="cuda")
        sparsetile.compile(MATH, "argmin_rows")[(64,)](x, out)
        want = [int((row == row.min()).nonzero()[0]) for row in x.cpu()]
        self.assertEqual(out.cpu().tolist(), want)


FP8_KERNELS = r"""
# f32 -> fp8 (stored as its bits) and fp8 -> f32, one kernel each, so the
# second reads what torch wrote as well as what the first did.
kernel to_fp8(x: *f32, q: *T, n: i32, const T: dtype = f8e4m3) {
  let o = program_id(0) * 1024 + arange(0, 1024);
  store(q + o, load(x + o, mask=o < n).to(T), mask=o < n);
}

kernel from_fp8(q: *T, y: *f32, n: i32, const T: dtype = f8e4m3) {
  let o = program_id(0) * 1024 + arange(0, 1024);
  store(y + o, load(q + o, mask=o < n, other=0.0).to(f32), mask=o < n);
}

# f16 and bf16 sources and destinations: x -> T -> f16 and x -> T -> bf16.
kernel via_16(x: *f32, h: *f16, bh: *bf16, n: i32, const T: dtype = f8e4m3) {
  let o = program_id(0) * 1024 + arange(0, 1024);
  let v = load(x + o, mask=o < n);
  store(h + o, v.to(f16).to(T).to(f16), mask=o < n);
  store(bh + o, v.to(bf16).to(T).to(bf16), mask=o < n);
}

# C = A @ B for row-major A [M, K] and B [K, N] of fp8, f32 accumulation;
# ragged edges are masked.
kernel dot8(a: *f8e4m3, b: *f8e4m3, c: *f32, M: i32, N: i32, K: i32,
            const BM: i32 = 64, const BN: i32 = 64, const BK: i32 = 32) {
  let rm = program_id(0) * BM + arange(0, BM);
  let rn = program_id(1) * BN + arange(0, BN);
  let rk = arange(0, BK);
  let acc = zeros([BM, BN], f32);
  for k0 in range(0, K, BK) {
    let ka = k0 + rk;
    let ta = load(a + rm[:, None] * K + ka[None, :],
                  mask=(rm[:, None] < M) && (ka[None, :] < K), other=0.0);
    let tb = load(b + ka[:, None] * N + rn[None, :],
                  mask=(ka[:, None] < K) && (rn[None, :] < N), other=0.0);
    acc = dot(ta, tb, acc);
  }
  store(c + rm[:, None] * N + rn[None, :], acc,
        mask=(rm[:, None] < M) && (rn[None, :] < N));
}
"""


@requires_gpu
class FP8(unittest.TestCase):
    """f8e4m3 and f8e5m2 against torch.float8_e4m3fn / torch.float8_e5m2.

    torch's conversion does not saturate (e4m3 overflows to NaN, e5m2 to
    inf); the DSL's does (cvt.rn.satfinite), so out-of-range inputs are
    compared with torch's conversion of the input clamped to the largest
    finite value."""

    TYPES = (("f8e4m3", "float8_e4m3fn", 448.0),
             ("f8e5m2", "float8_e5m2", 57344.0))

    def setUp(self):
        if sm() < 89:
            self.skipTest("fp8 needs sm_89 or newer")

    @staticmethod
    def inputs(largest):
        torch.manual_seed(47)
        n = 40000 + 37  # several programs and a ragged end
        # Every binade from the subnormals to past the largest value.
        scale = torch.exp2(torch.randint(-20, 18, (n,), device="cuda").float())
        x = torch.randn(n, device="cuda") * scale
        ties = torch.tensor([1.0625, 1.1875, -1.0625, 2.0 ** -10 * 1.5,
                             0.0, -0.0, 1.0, -1.0], device="cuda")
        special = torch.tensor([largest, -largest, largest * 1.03,
                                -largest * 1.07, largest * 4, 1e30, -1e30,
                                float("inf"), float("-inf")], device="cuda")
        x[:len(ties)] = ties
        x[len(ties):len(ties) + len(special)] = special
        return x

    def test_round_trip_matches_torch(self):
        for name, tname, largest in self.TYPES:
            tdtype = getattr(torch, tname)
            x = self.inputs(largest)
            n = x.numel()
            grid = (sparsetile.cdiv(n, 1024),)
            q = torch.full((n,), 0x55, dtype=torch.uint8,
                           device="cuda").view(tdtype)
            sparsetile.compile(FP8_KERNELS, "to_fp8", T=name)[grid](x, q, n)
            want = x.clamp(-largest, largest).to(tdtype)
            got_bits = q.view(torch.uint8).cpu()
            want_bits = want.view(torch.uint8).cpu()
            bad = (got_bits != want_bits).nonzero().flatten()[:5].tolist()
            self.assertEqual(bad, [], "%s: x %s -> bits %s, torch %s" % (
                name, x.cpu()[bad].tolist(), got_bits[bad].tolist(),
                want_bits[bad].tolist()))
            # Back to f32 from torch's bits (every value, NaN-free here).
            y = torch.full((n,), float("nan"), device="cuda")
            sparsetile.compile(FP8_KERNELS, "from_fp8", T=name)[grid](want, y, n)
            self.assertTrue(torch.equal(y, want.float()), name)

    def test_nan_stays_nan(self):
        for name, tname, _ in self.TYPES:
            x = torch.tensor([float("nan"), 1.0], device="cuda")
            q = torch.zeros(2, dtype=getattr(torch, tname), device="cuda")
            sparsetile.compile(FP8_KERNELS, "to_fp8", T=name)[(1,)](x, q, 2)
            y = torch.zeros(2, device="cuda")
            sparsetile.compile(FP8_KERNELS, "from_fp8", T=name)[(1,)](q, y, 2)
            self.assertTrue(bool(torch.isnan(y[0])), name)
            self.assertEqual(float(y[1]), 1.0, name)

    def test_f16_and_bf16_sources(self):
        for name, tname, largest in self.TYPES:
            tdtype = getattr(torch, tname)
            x = self.inputs(largest)
            x = x[x.abs() < 60000]  # finite in f16
            n = x.numel()
            h = torch.full((n,), float("nan"), dtype=torch.float16,
                           device="cuda")
            bh = torch.full((n,), float("nan"), dtype=torch.bfloat16,
                            device="cuda")
            sparsetile.compile(FP8_KERNELS, "via_16", T=name)[
                (sparsetile.cdiv(n, 1024),)](x, h, bh, n)
            for src, got in ((x.half(), h), (x.bfloat16(), bh)):
                want = src.float().clamp(-largest, largest).to(tdtype)
                self.assertTrue(torch.equal(got.float(), want.float()),
                                "%s from %s" % (name, src.dtype))

    def dot_case(self, M, N, K):
        torch.manual_seed(M * 1000 + N + K)
        e4m3 = torch.float8_e4m3fn
        a = (torch.randn(M, K, device="cuda") * 2).to(e4m3)
        b = (torch.randn(K, N, device="cuda") * 2).to(e4m3)
        c = torch.full((M, N), float("nan"), device="cuda")
        sparsetile.compile(FP8_KERNELS, "dot8")[
            (sparsetile.cdiv(M, 64), sparsetile.cdiv(N, 64))](a, b, c, M, N, K)
        ref = a.double() @ b.double()
        self.assertFalse(bool(torch.isnan(c).any()), (M, N, K))
        # Exact products of fp8 values, summed in f32.
        self.assertLessEqual(rel_err(c, ref), 1e-6, (M, N, K))

    def test_dot_e4m3(self):
        self.dot_case(64, 64, 64)

    def test_dot_e4m3_ragged(self):
        self.dot_case(50, 72, 96)


if __name__ == "__main__":
    unittest.main()
