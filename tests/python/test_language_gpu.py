"""The language features of issue 47 on a GPU: `while`, `break` and
`continue` (a spin lock over atomic_cas, searches that stop early, a tile
carried through a breaking while), and the math library against float64
references. Outputs are NaN-poisoned (or filled with a sentinel) first;
inputs are random. Skips without torch or a CUDA GPU."""

import math
import unittest

from _gpu import requires_gpu, torch

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


if __name__ == "__main__":
    unittest.main()
