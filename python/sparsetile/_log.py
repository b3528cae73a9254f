"""The runtime's log through Python's `logging`: compiles with their times,
cache hits, autotune candidates and choices (sparsetile/runtime/Log.h).
`sparsetile.set_log_level(logging.INFO)` sends them to the logger named
"sparsetile"; without it the library logs to stderr only when SPARSETILE_LOG
is set (1/info, 2/debug)."""

import ctypes
import logging
import threading

LOGGER = logging.getLogger("sparsetile")

_lock = threading.Lock()
_callback = None  # The C side holds a pointer to it: keep it alive.


def _forward(level, message, _ctx):
    LOGGER.log(logging.DEBUG if level >= 2 else logging.INFO,
               message.decode("utf-8", "replace"))


def set_log_level(level):
    """Forwards the runtime's messages to logging.getLogger("sparsetile") up
    to `level` and sets that logger's level: logging.INFO gives compiles
    (kernel, variant, arch, milliseconds) and autotune choices,
    logging.DEBUG also cache hits and each autotune candidate's time; None
    (or WARNING and above) turns the runtime's log off."""
    global _callback
    from . import _lib
    if level is None or level > logging.INFO:
        c_level = 0
    elif level > logging.DEBUG:
        c_level = 1
    else:
        c_level = 2
    with _lock:
        if c_level == 0:
            _lib.check(_lib.lib().st_set_log_callback(None, None, 0))
            _callback = None
            return
        callback = _lib.LOG_FN(_forward)
        _lib.check(_lib.lib().st_set_log_callback(
            ctypes.cast(callback, ctypes.c_void_p), None, c_level))
        _callback = callback
        LOGGER.setLevel(level)
