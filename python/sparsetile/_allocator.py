"""Where the library's ops take temporary device memory (the SparseDrop
kept-block lists), as `triton.set_allocator` does for Triton.

While a CUDA graph is captured the library may not call cuMemAlloc, so it
asks the allocator set here; by default that is torch's caching allocator
(`torch.empty` on the capturing stream: inside `torch.cuda.graph` the memory
comes from the graph's private pool and stays valid for its replays).
Eager calls keep the library's own per-stream buffers, which cost no Python
call-back on the hot path.
"""

import ctypes
import threading

from . import _lib

installed = False
_lock = threading.Lock()
_live = {}        # pointer -> the object that owns the memory
_callbacks = ()   # the ctypes call-backs, kept alive while set


def _make_callbacks(fn):
    def alloc(size, stream, _ctx):
        try:
            buf = fn(int(size), 16, stream or 0)
            ptr = int(buf.data_ptr())
        except Exception:  # noqa: BLE001 - a C call-back must not raise
            return 0
        _live[ptr] = buf
        return ptr

    def release(ptr, _size, _stream, _ctx):
        # Dropping the tensor hands its block back to torch's allocator in
        # the order of the stream it was taken on (torch's own rule).
        _live.pop(int(ptr), None)

    return _lib.ALLOC_FN(alloc), _lib.RELEASE_FN(release)


def _torch_alloc(size, alignment, stream):
    import torch
    # torch's blocks are 512-byte aligned; the stream is torch's current one
    # (ops launch on it), so the block is ordered with the launches.
    del alignment, stream
    return torch.empty(size, dtype=torch.uint8, device="cuda")


def set_allocator(fn, only_while_capturing=False):
    """Sets fn(size, alignment, stream) -> an object with data_ptr() (a torch
    tensor, say) as the source of the ops' scratch memory; the object is
    kept until the launches using it are enqueued. None: the library's own
    buffers (which cannot grow while a graph is captured)."""
    global installed, _callbacks
    with _lock:
        if fn is None:
            _lib.check(_lib.lib().st_set_allocator(None, None, None, 0))
            _callbacks = ()
        else:
            cbs = _make_callbacks(fn)
            _lib.check(_lib.lib().st_set_allocator(
                ctypes.cast(cbs[0], ctypes.c_void_p),
                ctypes.cast(cbs[1], ctypes.c_void_p), None,
                1 if only_while_capturing else 0))
            _callbacks = cbs
        installed = True


def install_torch_default():
    """torch's caching allocator while capturing, unless one was set."""
    global installed
    with _lock:
        if installed:
            return
    set_allocator(_torch_alloc, only_while_capturing=True)
