"""Kernels as torch custom ops.

* sparsetile.torch_op: a user's DSL kernel launch registered as a
  torch.library custom op passes torch.library.opcheck (schema, fake
  tensors, autograd registration, AOT dispatch with dynamic shapes), out of
  place with a registered backward and in place (mutates_args); its fake
  implementation (the function run with launches skipped) gives the shapes
  under FakeTensorMode without launching; torch.compile(fullgraph=True) of
  functions calling it matches eager, forward and backward, also with
  dynamic shapes.
* Every custom op of sparsetile.nn._custom_ops (the layers' ops) passes
  opcheck on representative inputs; a new op without a case here fails.

Skips without torch (>= 2.4) or a CUDA GPU."""

import unittest

from _gpu import HAVE_GPU, requires_gpu, torch

import sparsetile

HAS_CUSTOM_OP = HAVE_GPU and hasattr(torch.library, "custom_op") and \
    hasattr(torch.library, "opcheck")

SCALE = """
kernel scale(x: *f32, out: *f32, s: f32, n: i32, const BLOCK: i32 = 256) {
  let offs = program_id(0) * BLOCK + arange(0, BLOCK);
  let m = offs < n;
  store(out + offs, load(x + offs, mask=m, other=0.0) * s, mask=m);
}
"""

_user_ops = {}


def _user_op_definitions():
    """The user ops, registered once per process (torch.library names are
    global)."""
    if _user_ops:
        return _user_ops
    kernel = sparsetile.compile(SCALE, "scale")

    def grid(meta):
        return (sparsetile.cdiv(meta["n"], meta["BLOCK"]),)

    @sparsetile.torch_op("sparsetile_test::scale", mutates_args=())
    def scale(x: torch.Tensor, s: float) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        kernel[grid](x, out, s, x.numel())
        return out

    def setup(ctx, inputs, output):
        ctx.s = inputs[1]

    def backward(ctx, dy):
        return scale(dy, ctx.s), None

    scale.register_autograd(backward, setup_context=setup)

    def scale_into(x: torch.Tensor, out: torch.Tensor, s: float) -> None:
        kernel[grid](x, out, s, x.numel())

    scale_into = sparsetile.torch_op("sparsetile_test::scale_into",
                                     scale_into, mutates_args=("out",))
    _user_ops.update(scale=scale, scale_into=scale_into)
    return _user_ops


def _skip_without_custom_op(test):
    if not HAS_CUSTOM_OP:
        test.skipTest("torch.library.custom_op and opcheck need torch >= 2.4")


@requires_gpu
class UserOp(unittest.TestCase):
    def setUp(self):
        _skip_without_custom_op(self)
        ops = _user_op_definitions()
        self.scale, self.scale_into = ops["scale"], ops["scale_into"]
        torch._dynamo.reset()

    def test_eager_call_runs_the_kernel(self):
        x = torch.randn(1000, device="cuda")
        torch.testing.assert_close(self.scale(x, 2.5), x * 2.5)
        out = torch.full_like(x, float("nan"))
        self.scale_into(x, out, -1.5)
        torch.testing.assert_close(out, x * -1.5)

    def test_opcheck(self):
        x = torch.randn(3000, device="cuda", requires_grad=True)
        torch.library.opcheck(self.scale, (x, 2.5))
        torch.library.opcheck(self.scale, (x.detach()[:77], -3.0))
        out = torch.empty(3000, device="cuda")
        torch.library.opcheck(self.scale_into, (x.detach(), out, 0.5))

    def test_fake_implementation_launches_nothing(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        from sparsetile import jit
        with FakeTensorMode():
            x = torch.empty(5, 300, device="cuda")
            y = self.scale(x, 2.0)
        self.assertEqual(tuple(y.shape), (5, 300))
        self.assertEqual(y.dtype, torch.float32)
        self.assertFalse(jit.tracing.skip_launches)

    def test_compile_fullgraph_matches_eager(self):
        scale, scale_into = self.scale, self.scale_into

        def f(x, y):
            a = scale(x.sin(), 3.0) + y
            out = torch.empty_like(a)
            # Not differentiable (no autograd formula): given no grad.
            scale_into(a.detach(), out, 0.5)
            return out.relu() * 2 + scale(a, -1.0)

        x = torch.randn(4096, device="cuda", requires_grad=True)
        y = torch.randn(4096, device="cuda")
        expected = f(x, y)
        expected.sum().backward()
        expected_grad, x.grad = x.grad, None
        torch.testing.assert_close(expected_grad, -3.0 * x.detach().cos())
        got = torch.compile(f, fullgraph=True)(x, y)
        torch.testing.assert_close(got, expected)
        got.sum().backward()
        torch.testing.assert_close(x.grad, expected_grad)

    def test_compile_dynamic_shapes(self):
        scale = self.scale
        compiled = torch.compile(lambda x: scale(x, 1.5) - x, fullgraph=True,
                                 dynamic=True)
        for n in (1000, 1537, 8192):
            x = torch.randn(n, device="cuda")
            torch.testing.assert_close(compiled(x), x * 0.5)


def _builtin_cases():
    """{op name: [(args, note)]}: representative inputs of every custom op
    of sparsetile.nn._custom_ops, in bf16 (shapes the layers use: multiples
    of 16 for 2:4, ragged tokens)."""
    from sparsetile import ops
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    g = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape, grad=False, scale=1.0):
        t = torch.randn(*shape, generator=g, **bf16) * scale
        return t.requires_grad_(grad)

    cases = {}
    # SparseDrop: x [M, K], w [N, K], mask blocks 64 x 64.
    M, K, N, p, bm, bk = 200, 256, 192, 0.3, 64, 64
    mask = ops.sparsedrop_mask(5, 0, p, M, K, (bm, bk))
    offset = torch.zeros(1, dtype=torch.int64, device="cuda")
    cases["sparsedrop_next_mask"] = [
        ((offset, randn(M, K), 5, p, bm, bk, 0, 1), "one rank"),
        ((offset.clone(), randn(128, K), 5, p, bm, bk, 1, 2), "rank 1 of 2")]
    cases["sparsedrop_linear"] = [
        ((randn(M, K, grad=True), randn(N, K, grad=True, scale=0.1), mask, p,
          bm, bk), "x, w need grad")]
    cases["sparsedrop_backward_x"] = [
        ((randn(M, N), randn(N, K), mask, p, bm, bk), "")]
    cases["sparsedrop_backward_w"] = [
        ((randn(M, N), randn(M, K), mask, p, bm, bk), "")]
    # 2:4: W [R, C] with its transposable mask and compressed operands.
    R, C, T = 128, 256, 192
    w = randn(R, C)
    mask24 = ops.mask24_transposable(w)
    vals, meta, vals_t, meta_t = ops.compress24(w, mask24)
    cases["compress24"] = [((w, mask24), "")]
    cases["sparse24_init_mask"] = [
        ((torch.zeros(R, C, dtype=torch.int8, device="cuda"), w), "")]
    cases["sparse24_linear_backward_x"] = [((randn(T, R), vals_t, meta_t), "")]
    cases["sparse24_grad_w"] = [((randn(T, R), randn(T, C), 3, 11), "")]
    cases["sparse24_linear"] = [
        ((randn(T, C, grad=True), w.detach().clone().requires_grad_(True),
          vals, meta, vals_t, meta_t, mvue, 2, 7), "mvue=%s" % mvue)
        for mvue in (False, True)]
    cases["sparse24_linear_backward_x_gelu"] = [
        ((randn(T, R), vals_t, meta_t, randn(T, C)), "")]
    # The fused MLP: fc [F, D] -> GELU -> proj [D2, F].
    D, F, D2 = 128, 256, 128
    w1, w2 = randn(F, D, scale=0.1), randn(D2, F, scale=0.1)
    p1 = ops.compress24(w1, ops.mask24_transposable(w1))
    p2 = ops.compress24(w2, ops.mask24_transposable(w2))
    for bias in (True, False):
        b1 = randn(F, grad=True, scale=0.1) if bias else None
        b2 = randn(D2, grad=True, scale=0.1) if bias else None
        cases.setdefault("sparse24_mlp", []).append(
            ((randn(T, D, grad=True), w1.clone().requires_grad_(True), b1)
             + p1 + (w2.clone().requires_grad_(True), b2) + p2
             + (False, bias, 0, 1, 3, 4), "biases=%s" % bias))
    # Gated activations: h [M, 2F] = [g | u].
    for activation in (0, 1, 2):
        cases.setdefault("glu", []).append(
            ((randn(M, 2 * 96, grad=True), activation),
             "activation %d" % activation))
        cases.setdefault("glu_backward", []).append(
            ((randn(M, 2 * 96), randn(M, 96), activation),
             "activation %d" % activation))
    return cases


@requires_gpu
class BuiltinOps(unittest.TestCase):
    def setUp(self):
        _skip_without_custom_op(self)
        from sparsetile.nn import _custom_ops
        # _define's wrappers carry their torch.library.CustomOpDef.
        self.ops = {name: value.custom_op for name, value in
                    vars(_custom_ops).items()
                    if type(getattr(value, "custom_op", None)).__name__
                    == "CustomOpDef"}
        torch._dynamo.reset()

    def test_every_builtin_op_has_a_case(self):
        cases = _builtin_cases()
        self.assertTrue(self.ops)
        self.assertEqual(sorted(self.ops), sorted(cases))

    def test_opcheck_every_builtin_op(self):
        failures = []
        for name, runs in sorted(_builtin_cases().items()):
            for args, note in runs:
                try:
                    torch.library.opcheck(self.ops[name], args)
                except Exception as e:  # Collected: report every op at once.
                    failures.append("%s (%s): %s: %s" % (
                        name, note, type(e).__name__, str(e)[:1500]))
        self.assertFalse(failures, "\n\n".join(failures))


if __name__ == "__main__":
    unittest.main()
