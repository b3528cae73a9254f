"""The Python launch path without conversions (sparsetile/_fastlaunch.py),
on any machine: a stand-in torch module (tensors that only report their
dtype, device and address) and a launch function that records what it was
handed instead of calling st_kernel_launch. What it checks is what the GPU
tests cannot see: the bits written into each st_arg, the grid, the stream,
and that every argument the plan does not recognise goes back to the
checked path untouched. Needs the library (to compile), no GPU or torch."""

import ctypes
import os
import struct
import sys
import threading
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                "python"))

import sparsetile  # noqa: E402
from sparsetile import _fastlaunch, _lib  # noqa: E402

SRC = """
kernel k(x: *f32, y: *bf16, n: i32, u: u8, a: f32, b: f64,
         const BLOCK: i32 = 128) {
  let i = program_id(0) * BLOCK + arange(0, BLOCK);
  store(x + i, load(x + i, mask=i < n) * a, mask=i < n);
}
"""


class FakeDtype(object):
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


class FakeTensor(object):
    def __init__(self, dtype, ptr, device=0):
        self.dtype, self._ptr, self._device = dtype, ptr, device
        self.is_cuda = device >= 0

    def get_device(self):
        return self._device

    def data_ptr(self):
        return self._ptr


def fake_torch():
    t = types.ModuleType("torch")
    t.Tensor = FakeTensor
    for name in ("float32", "bfloat16", "float16", "int32", "uint8"):
        setattr(t, name, FakeDtype(name))
    t._C = types.SimpleNamespace(
        _cuda_getCurrentRawStream=lambda device: 0x5000 + device)
    return t


class FastLaunch(unittest.TestCase):
    def setUp(self):
        self.saved = sys.modules.get("torch")
        self.torch = sys.modules["torch"] = fake_torch()
        self.saved_bound = _lib._bound_device
        _lib._bound_device = 0
        self.k = sparsetile.compile(SRC, arch="sm_90")
        self.k._plan = None
        self.calls = []
        calls = self.calls

        def launch(handle, dims, block, smem, stream, args, count):
            words = (ctypes.c_uint64 * (5 * count)).from_buffer(args)
            calls.append(dict(dims=tuple(dims), block=block, smem=smem,
                              stream=stream, count=count,
                              kinds=[args[i].kind for i in range(count)],
                              dtypes=[args[i].dtype for i in range(count)],
                              bits=[words[5 * i + 1] for i in range(count)]))
            return 0
        self.plan = _fastlaunch.Plan.make(self.k)
        self.assertIsNotNone(self.plan)
        self.plan.launch = launch
        self.k._plan = self.plan

    def tearDown(self):
        if self.saved is None:
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self.saved
        _lib._bound_device = self.saved_bound

    def args(self, **change):
        t = self.torch
        a = dict(x=FakeTensor(t.float32, 0x1000), y=FakeTensor(t.bfloat16,
                                                                0x2000),
                 n=-7, u=255, a=1.5, b=-0.25)
        a.update(change)
        return tuple(a[k] for k in ("x", "y", "n", "u", "a", "b"))

    def test_bits_grid_and_stream(self):
        self.k[(3, 2)](*self.args())
        (c,) = self.calls
        self.assertEqual(c["dims"], (3, 2, 1))
        self.assertEqual(c["stream"], 0x5000)  # torch's current stream
        self.assertEqual(c["count"], 6)
        self.assertEqual(c["kinds"], [_lib.ST_ARG_POINTER] * 2 +
                         [_lib.ST_ARG_SCALAR] * 4)
        f32 = struct.unpack("<I", struct.pack("<f", 1.5))[0]
        f64 = struct.unpack("<Q", struct.pack("<d", -0.25))[0]
        self.assertEqual(c["bits"], [0x1000, 0x2000, (-7) & 0xFFFFFFFF, 255,
                                     f32, f64])

    def test_grid_function_sees_constants_and_arguments(self):
        seen = []

        def grid(meta):
            seen.append((meta["BLOCK"], meta["n"]))
            return [4]
        self.k[grid](*self.args(n=500))
        self.assertEqual(seen, [(128, 500)])
        self.assertEqual(self.calls[0]["dims"], (4, 1, 1))

    def test_explicit_stream(self):
        self.k[(1,)](*self.args(), stream=types.SimpleNamespace(
            cuda_stream=0x77))
        self.assertEqual(self.calls[0]["stream"], 0x77)

    def test_what_goes_back_to_the_checked_path(self):
        t = self.torch
        refused = [
            (self.args(x=FakeTensor(t.float16, 0x1000)), (1,)),  # dtype
            (self.args(x=FakeTensor(t.float32, 0x1000, device=-1)), (1,)),
            (self.args(y=FakeTensor(t.bfloat16, 0x2000, device=1)), (1,)),
            (self.args(x=None), (1,)),
            (self.args(n=2 ** 31), (1,)),       # out of i32's range
            (self.args(u=256), (1,)),           # out of u8's range
            (self.args(u=-1), (1,)),
            (self.args(n=3.0), (1,)),           # a float for an int
            (self.args(a="1"), (1,)),
            (self.args(a=1e300), (1,)),         # does not fit in f32
            (self.args(), (0,)),                # nothing to launch
            (self.args(), (2.0,)),
            (self.args(), (1, 1, 1, 1)),
            (self.args()[:5], (1,)),
        ]
        for args, grid in refused:
            self.assertFalse(self.plan.run(args, grid, None, "k"),
                             (args, grid))
        self.assertEqual(self.calls, [])

    def test_threads_have_their_own_buffers(self):
        bufs = []

        def grab():
            bufs.append(self.plan._buffers()[0])
        threads = [threading.Thread(target=grab) for _ in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        grab()
        self.assertEqual(len(set(id(b) for b in bufs)), 4)


if __name__ == "__main__":
    unittest.main()
