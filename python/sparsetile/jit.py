"""Compiling and launching tile kernels from Python, Triton-style.

    k = sparsetile.compile("dsl_examples/vector_add.tile", "vector_add",
                           BLOCK=1024)
    k[lambda meta: (sparsetile.cdiv(meta["n"], meta["BLOCK"]),)](x, y, out, n)

`compile` returns a `Kernel` bound to one set of constants and options; the
C library's JIT compiles a variant at its first launch (or loads it from the
on-disk cache). Arguments are checked here against the kernel's signature
before anything reaches the C side, so that errors name the Python-visible
problem ("got a torch.bfloat16 tensor"); the C side checks them again.
"""

import ctypes
import os
import struct
import sys
import threading

from . import _dtypes as dt
from . import _fastlaunch
from . import _lib
from ._errors import ArgumentError, ArgumentTypeError

# Keyword arguments of `compile` that are options, not `const` values.
_OPTION_NAMES = ("num_warps", "num_stages", "arch", "ptx_version",
                 "specialize", "debug")

STAGES = ("ast", "tile", "pipelined", "layouts", "mlir", "llvm", "ptx", "cubin")

#: The arch `asm` uses when none was given and no GPU is present.
DEFAULT_ASM_ARCH = "sm_90"


class _Tracing(threading.local):
    #: True while a torch_op's fake implementation runs on this thread
    #: (sparsetile._torch_op): Kernel launches then return at once, before
    #: touching their (fake) tensors.
    skip_launches = False


tracing = _Tracing()


def cdiv(a, b):
    """ceil(a / b) for non-negative ints (grid sizes)."""
    return -(-a // b)


def _const_text(key, value):
    """A const value as DSL source text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if dt.is_dtype_like(value):
        return dt.dsl_name(value)
    if isinstance(value, int) or (hasattr(value, "__index__") and
                                  not isinstance(value, float)):
        return str(int(value.__index__()))
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ArgumentError("const %s: %r has no DSL literal" % (key,
                                                                     value))
        return repr(value)
    if isinstance(value, str):
        return value  # Raw DSL text, e.g. an expression or a dtype name.
    raise ArgumentTypeError("const %s: cannot pass a %s as a constant"
                            % (key, type(value).__name__))


def _constant_value(dtype, is_type, text):
    """A constant's value from st_kernel_constant's text, typed by the
    declared type the library reports: a dtype name (str) for `const T:
    dtype`, bool for bool (i1), float for f32 (the f32 the kernel computes
    with: the text is its shortest round-trip form), int otherwise."""
    if is_type:
        return text
    name = dt.name(dtype)
    if name == "i1":
        return text == "true"
    if name.startswith("f") or name == "bf16":
        return struct.unpack("<f", struct.pack("<f", float(text)))[0]
    return int(text)


def _records(count_fn, item_fn, handle, *types):
    """What a count/item pair of C functions (st_kernel_num_params and
    st_kernel_param, ...) reports about a kernel: a tuple of the out
    parameters' values (of ctypes `types`) per index."""
    count = ctypes.c_int()
    _lib.check(count_fn(handle, ctypes.byref(count)))
    records = []
    for i in range(count.value):
        outs = [t() for t in types]
        _lib.check(item_fn(handle, i, *[ctypes.byref(o) for o in outs]))
        records.append(tuple(o.value for o in outs))
    return records


def _constants(L, handle):
    """(names, values): the names of the kernel's `const` parameters, and
    {name: value} of those that have one: the value it was given, else its
    default as the compiler evaluates it."""
    records = _records(L.st_kernel_num_constants, L.st_kernel_constant,
                       handle, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                       ctypes.c_char_p)
    names = [name.decode("utf-8") for name, _, _, _ in records]
    values = {name: _constant_value(dtype, is_type, text.decode("utf-8"))
              for name, (_, dtype, is_type, text) in zip(names, records)
              if text is not None}
    return names, values


def _read_source(src_or_path):
    """(text, filename) from DSL text or a path to a .tile file."""
    if isinstance(src_or_path, bytes):
        src_or_path = src_or_path.decode("utf-8")
    path = os.fspath(src_or_path) if hasattr(src_or_path, "__fspath__") \
        else src_or_path
    if not isinstance(path, str):
        raise ArgumentTypeError("compile: expected DSL text or a path, got %s"
                                % type(src_or_path).__name__)
    looks_like_path = "\n" not in path and (path.endswith(".tile") or
                                            os.path.isfile(path))
    if hasattr(src_or_path, "__fspath__") or looks_like_path:
        try:
            with open(path, "r") as f:
                return f.read(), path
        except (IOError, OSError) as e:
            raise ArgumentError("compile: cannot read %s: %s" % (path, e))
    return path, "<source>"


class _Options(object):
    """An st_options plus the bytes its arch pointer refers to."""

    def __init__(self, arch=None, num_warps=None, num_stages=None,
                 ptx_version=None, specialize=True, debug=False):
        # Checked here, before ctypes sees them: a C int silently wraps
        # (num_warps=2**32 + 4 became 4). The ranges are the C ABI's
        # (st_options in sparsetile.h), which checks them again.
        num_warps = _lib.c_int_option(
            num_warps or 0, "compile: num_warps", 0, 1024,
            "a number of warps, or 0/None for the kernel's @num_warps")
        num_stages = _lib.c_int_option(
            num_stages or 0, "compile: num_stages", 0, 8,
            "a ring depth from 1 to 8, or 0/None for as many as fit")
        ptx_version = _lib.c_int_option(
            ptx_version or 0, "compile: ptx_version", 0, 999,
            "major*10+minor, e.g. 85, or 0/None for the arch's default")
        self.arch = arch
        self._arch_bytes = (_lib.c_string(arch, "compile: arch") if arch
                            else None)
        if not isinstance(debug, (bool, int)) or debug not in (0, 1):
            raise ArgumentTypeError("compile: debug expects True or False, "
                                    "got %r" % (debug,))
        self.struct = _lib.st_options(self._arch_bytes, ptx_version,
                                      num_warps, num_stages,
                                      0 if specialize else 1,
                                      1 if debug else 0)

    def fields(self):
        """The keyword arguments that make this _Options again."""
        s = self.struct
        return dict(arch=self.arch, num_warps=s.num_warps or None,
                    num_stages=s.num_stages or None,
                    ptx_version=s.ptx_version or None,
                    specialize=not s.no_specialize, debug=bool(s.debug))

    def with_arch(self, arch):
        s = self.struct
        return _Options(arch, s.num_warps, s.num_stages, s.ptx_version,
                        not s.no_specialize, bool(s.debug))

    def key(self):
        s = self.struct
        return (self.arch, s.ptx_version, s.num_warps, s.num_stages,
                s.no_specialize, s.debug)


def _config_values(text):
    """st_autotuned_choice's "BM=128 num_warps=8" -> {"BM": 128, ...}:
    ints, floats and true/false typed, anything else (a dtype) as text."""
    out = {}
    for item in text.split():
        if "=" not in item:
            continue  # "(defaults)"
        key, value = item.split("=", 1)
        for convert in (int, float):
            try:
                out[key] = convert(value)
                break
            except ValueError:
                pass
        else:
            out[key] = {"true": True, "false": False}.get(value, value)
    return out


def _split_remarks(text):
    """The remarks in st_compile_stage's "remarks" text: each starts with
    its "file:line:col: remark: [kind]" line; the source line and the caret
    under it are indented."""
    out = []
    for line in text.splitlines(True):
        if out and line.startswith("  "):
            out[-1] += line
        else:
            out.append(line)
    return out


class Param(tuple):
    """(name, kind, dtype): kind "pointer", "tensor" (a `desc<T>`) or
    "scalar"; dtype the DSL name of the pointee or scalar type."""
    __slots__ = ()

    def __new__(cls, name, kind, dtype):
        return tuple.__new__(cls, (name, kind, dtype))

    name = property(lambda self: self[0])
    kind = property(lambda self: self[1])
    dtype = property(lambda self: self[2])


class Asm(object):
    """Lazily compiled stages of a kernel, like Triton's `kernel.asm`:
    asm["ptx"], asm["tile"], ..., asm["cubin"] (bytes; b"" when the driver
    JIT-compiles the PTX instead). Computed with the kernel's constants and
    options; the arch is the one given to `compile`, else the current GPU's,
    else (no GPU) DEFAULT_ASM_ARCH."""

    def __init__(self, kernel):
        self._kernel = kernel
        self._cache = {}

    def keys(self):
        return list(STAGES)

    def __contains__(self, stage):
        return stage in STAGES

    def __iter__(self):
        return iter(STAGES)

    def __getitem__(self, stage):
        if stage not in STAGES:
            raise KeyError("%r: stages are %s" % (stage, ", ".join(STAGES)))
        if stage not in self._cache:
            self._cache[stage] = self._kernel.compile_stage(stage)
        return self._cache[stage]


class Kernel(object):
    """One kernel of a DSL source with fixed constants and options.

    Launch with `kernel[grid](*args, stream=None)`. `params` lists the
    run-time parameters, `constants` the given const values and `meta` those
    plus the defaults declared in the source, as the compiler evaluates them
    (st_kernel_constant): int, bool, float, or a dtype name for `const T:
    dtype`. `constant_names` lists every `const` parameter, with a value or
    not."""

    def __init__(self, source, filename, name, constants, options):
        self.source, self.filename = source, filename
        self.constants = dict(constants)
        self._options = options
        self._const_names = list(self.constants)
        self._const_texts = [_const_text(k, v) for k, v in
                             self.constants.items()]
        # Every string is checked (a NUL would cut it short in C) before
        # the library sees any of them.
        self._c_source = _lib.c_string(source, "compile: the source text")
        self._c_filename = _lib.c_string(filename, "compile: the file name")
        c_name = _lib.c_string(name, "compile: the kernel name") if name \
            else None
        self._c_consts = (
            _lib.c_strings(self._const_names, "compile: constant names"),
            _lib.c_strings(self._const_texts, "compile: constant values"))
        handle = ctypes.c_void_p()
        L = _lib.lib()
        _lib.check(L.st_kernel_get(
            self._c_source, self._c_filename, c_name, self._c_consts[0],
            self._c_consts[1], len(self._const_names),
            ctypes.byref(options.struct), ctypes.byref(handle)))
        self._handle = handle
        cname = ctypes.c_char_p()
        _lib.check(L.st_kernel_name(handle, ctypes.byref(cname)))
        self.name = cname.value.decode("utf-8")
        params = []
        for pname, is_ptr, is_desc, dtype in _records(
                L.st_kernel_num_params, L.st_kernel_param, handle,
                ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int):
            kind = "tensor" if is_desc else "pointer" if is_ptr else "scalar"
            params.append((pname.decode("utf-8"), kind, dtype))
        self._params = params
        self.params = [Param(n, k, dt.name(d)) for n, k, d in params]
        self._index = {p[0]: i for i, p in enumerate(params)}
        # The values the compiler reports (typed), then the given Python
        # objects (a torch dtype stays one).
        self.constant_names, self.meta = _constants(L, handle)
        self.meta.update(self.constants)
        self.asm = Asm(self)
        self._variants = {}  # _launch_variant's
        # The fast launch path's plan (_fastlaunch.py): None until the first
        # launch with torch loaded, False when this kernel cannot take it.
        self._plan = None
        # A kernel that declares @autotune launches through its tuner.
        tuned = ctypes.c_void_p()
        _lib.check(L.st_autotuned_get(
            self._c_source, self._c_filename, self.name.encode("utf-8"),
            self._c_consts[0], self._c_consts[1], len(self._const_names),
            ctypes.byref(options.struct), ctypes.byref(tuned)))
        self.autotuned = bool(tuned.value)
        self._tuned = tuned

    def __repr__(self):
        consts = "".join(", %s=%r" % kv for kv in self.constants.items())
        return "<sparsetile.Kernel %s(%s)%s>" % (
            self.name, ", ".join("%s: %s%s" % (
                n, {"pointer": "*", "tensor": "desc "}.get(k, ""), d)
                for n, k, d in self.params), consts)

    # --- compiling stages -------------------------------------------------
    def _asm_options(self):
        if self._options.arch:
            return self._options
        ok, _ = _lib.gpu_available()
        return self._options if ok else self._options.with_arch(
            DEFAULT_ASM_ARCH)

    def compile_stage(self, stage, div16=()):
        """One stage's text ("ast", "tile", "pipelined", "layouts", "mlir",
        "llvm", "ptx") or the cubin ("cubin", bytes) of the variant whose integer
        parameters named in `div16` are promised multiples of 16."""
        L = _lib.lib()
        opts = self._asm_options()
        common = (self._c_source, self._c_filename, self.name.encode("utf-8"),
                  self._c_consts[0], self._c_consts[1],
                  len(self._const_names), ctypes.byref(opts.struct),
                  _lib.c_strings(list(div16), "compile_stage: div16"),
                  len(div16))
        if stage == "cubin":
            ptx, cubin, size = (ctypes.c_void_p(), ctypes.c_void_p(),
                                ctypes.c_size_t())
            _lib.check(L.st_compile_artifacts(*(common + (
                ctypes.byref(ptx), ctypes.byref(cubin), ctypes.byref(size)))))
            _lib.take_string(ptx.value)
            return _lib.take_bytes(cubin.value, size.value)
        text = ctypes.c_void_p()
        _lib.check(L.st_compile_stage(*(common + (stage.encode(),
                                                  ctypes.byref(text)))))
        return _lib.take_string(text.value)

    @property
    def remarks(self):
        """The performance remarks on this kernel (Language.md, "Performance
        remarks") as launches with integer arguments that are all multiples
        of 16 compile it: a list of texts, "file:line:col: remark: [kind]
        ..." with the source line and a caret; [] when nothing took a slow
        path. SPARSETILE_WERROR_PERF=1 makes them a CompileError instead."""
        ints = [n for n, kind, d in self._params
                if kind == "scalar" and dt.name(d)[0] in "iu"
                and dt.name(d) != "i1"]
        return self.remarks_for(ints)

    def remarks_for(self, div16=()):
        """The remarks of the variant whose integer parameters named in
        `div16` are multiples of 16 (the others: any value)."""
        return _split_remarks(self.compile_stage("remarks", div16))

    def specialize(self, **kwargs):
        """This kernel with some `const` values or options (num_warps,
        num_stages, ...) changed, as Triton takes constexprs and num_warps
        at launch: `k.specialize(BLOCK=256, num_warps=8)`, and `k[grid](*args,
        BLOCK=256, num_warps=8)` launches that. The same Kernel that
        sparsetile.compile with the merged values returns (one compile per
        combination, cached)."""
        if not kwargs:
            return self
        options = self._options.fields()
        constants = dict(self.constants)
        for key, value in kwargs.items():
            (options if key in _OPTION_NAMES else constants)[key] = value
        return _kernel(self.source, self.filename, self.name, constants,
                       options)

    def _launch_variant(self, launch):
        """specialize(**launch), remembered per Kernel: a loop that passes
        BLOCK= at every launch looks it up instead of rebuilding its key."""
        key = tuple(sorted((k, type(v).__name__, str(v))
                           for k, v in launch.items()))
        kernel = self._variants.get(key)
        if kernel is None:
            for name in launch:
                if name not in _OPTION_NAMES and \
                        name not in self.constant_names:
                    raise ArgumentTypeError(
                        "%s: no parameter named %r (run-time parameters: %s; "
                        "constants: %s)" % (
                            self.name, name,
                            ", ".join(p[0] for p in self._params),
                            ", ".join(self.constant_names) or "none"))
            kernel = self._variants[key] = self.specialize(**launch)
        return kernel

    # --- launching ----------------------------------------------------------
    def __getitem__(self, grid):
        if self.autotuned:
            return lambda *args, **kwargs: self._run_tuned(grid, args,
                                                           kwargs)
        return _Launcher(self, grid)

    def _run_tuned(self, grid, args, kwargs):
        """`kernel[grid](*args)` on an @autotune kernel, as Triton's: the
        configuration is chosen for the arguments (tuning a new key with the
        declared grid), then launched on `grid`; a grid function sees the
        chosen configuration's constants in its `meta`."""
        if tracing.skip_launches:
            return
        index, text, values, c_args, count, c_stream = self._choose(args,
                                                                    kwargs)
        dims = self._grid(grid, values, _config_values(text))
        _lib.check(_lib.lib().st_autotuned_launch_config(
            self._tuned, index, (ctypes.c_uint * 3)(*dims), c_stream, c_args,
            count), self.name)

    def __call__(self, *args, **kwargs):
        """Launches an @autotune kernel: `kernel(*args, stream=None)`. The
        first launch of a new key compiles and times the candidates."""
        if not self.autotuned:
            raise ArgumentError("%s declares no @autotune: launch it as "
                                "kernel[grid](*args)" % self.name)
        if tracing.skip_launches:
            return
        stream = kwargs.pop("stream", None)
        c_args, count, torch_device = self._c_args(self._bind(args, kwargs))
        _lib.check(_lib.lib().st_autotuned_launch(
            self._tuned, _stream_handle(stream, torch_device), c_args, count),
            self.name)

    def autotune_choice(self, *args, **kwargs):
        """(index, "BM=128 num_warps=8"): the configuration an @autotune
        kernel runs for these arguments, tuning now if their key is new."""
        if not self.autotuned:
            raise ArgumentError("%s declares no @autotune" % self.name)
        return self._choose(args, kwargs)[:2]

    def _choose(self, args, kwargs):
        """Checks the arguments and asks the tuner for their configuration:
        (index, text, checked values, st_arg array, count, CUstream)."""
        stream = kwargs.pop("stream", None)
        values = self._bind(args, kwargs)
        c_args, count, torch_device = self._c_args(values)
        c_stream = _stream_handle(stream, torch_device)
        index, text = ctypes.c_int(), ctypes.c_char_p()
        _lib.check(_lib.lib().st_autotuned_choice(
            self._tuned, c_stream, c_args, count, ctypes.byref(index),
            ctypes.byref(text)), self.name)
        return (index.value, text.value.decode("utf-8"), values, c_args,
                count, c_stream)

    def _bind(self, args, kwargs):
        """Positional and by-name arguments -> one list in parameter order."""
        n = len(self._params)
        if len(args) > n:
            raise ArgumentTypeError(
                "%s: takes %d arguments (%s), got %d" % (
                    self.name, n, ", ".join(p[0] for p in self._params),
                    len(args)))
        values = list(args) + [_MISSING] * (n - len(args))
        for key, value in kwargs.items():
            i = self._index.get(key)
            if i is None:
                raise ArgumentTypeError("%s: no parameter named %r (run-time "
                                        "parameters: %s)" % (
                                            self.name, key, ", ".join(
                                                p[0] for p in self._params)))
            if values[i] is not _MISSING:
                raise ArgumentTypeError("%s: parameter %r given twice"
                                        % (self.name, key))
            values[i] = value
        missing = [p[0] for p, v in zip(self._params, values)
                   if v is _MISSING]
        if missing:
            raise ArgumentTypeError(
                "%s: takes %d arguments (%s), got %d; missing %s" % (
                    self.name, n, ", ".join(p[0] for p in self._params),
                    n - len(missing), ", ".join(repr(m) for m in missing)))
        return values

    def run(self, *args, **kwargs):
        """Checks and launches: `kernel.run(*args, grid=g, stream=s)`."""
        if tracing.skip_launches:
            return
        grid = kwargs.pop("grid")
        stream = kwargs.pop("stream", None)
        # Names that are not run-time parameters are launch-time constants
        # or options (Triton's habit), checked against the kernel's names.
        launch = {k: kwargs.pop(k) for k in list(kwargs)
                  if k not in self._index}
        if launch:
            return self._launch_variant(launch).run(*args, grid=grid,
                                                    stream=stream, **kwargs)
        if not kwargs and self._fast_run(args, grid, stream):
            return
        values = self._bind(args, kwargs)
        c_args, count, torch_device = self._c_args(values)
        dims = self._grid(grid, values)
        if 0 in dims:
            return  # An empty grid launches nothing (CUDA would reject it).
        c_stream = _stream_handle(stream, torch_device)
        _lib.check(_lib.lib().st_kernel_launch(
            self._handle, (ctypes.c_uint * 3)(*dims),
            (ctypes.c_uint * 3)(0, 1, 1), 0, c_stream, c_args, count),
            self.name)

    def _fast_run(self, args, grid, stream):
        """The launch without conversions (_fastlaunch.py); False when
        these arguments need the checked path."""
        plan = self._plan
        if plan is None:
            if "torch" not in sys.modules:
                return False
            plan = self._plan = _fastlaunch.Plan.make(self) or False
        return bool(plan) and plan.run(args, grid, stream, self.name)

    def _c_args(self, values):
        """Checked C arguments: (st_arg array, count, torch device or None)."""
        c_args = (_lib.st_arg * max(1, len(values)))()
        torch_device = None
        for i, ((pname, kind, dtype), value) in enumerate(zip(self._params,
                                                              values)):
            what = "%s: parameter '%s'" % (self.name, pname)
            a = c_args[i]
            if kind == "scalar":
                if _array_info(value) is not None:
                    raise ArgumentTypeError(
                        "%s expects %s, got %s" % (
                            what, dt.scalar_phrase(dtype),
                            _array_info(value).describe))
                a.kind, a.dtype = _lib.ST_ARG_SCALAR, dtype
                a.bits = dt.scalar_bits(value, dtype, what)
                continue
            if value is None and kind == "pointer":
                a.kind, a.dtype, a.bits = _lib.ST_ARG_POINTER, dtype, 0
                continue
            info = _array_info(value)
            expects = ("a 2-D tensor of %s (desc<%s>)" % (dt.name(dtype),
                                                           dt.name(dtype))
                       if kind == "tensor" else
                       "a pointer to %s" % dt.name(dtype))
            if info is None:
                raise ArgumentTypeError("%s expects %s, got %s" % (
                    what, expects, dt._describe(value)))
            if not info.on_cuda:
                raise ArgumentTypeError("%s expects %s on a CUDA device, got "
                                        "%s on %s" % (what, expects,
                                                      info.describe,
                                                      info.device))
            code = info.dtype
            if code == dt.ANY16 and dt.SIZES.get(dtype) == 2:
                code = dtype
            if not dt.compatible(dtype, code):
                raise ArgumentTypeError("%s expects %s, got %s" % (
                    what, expects, info.describe))
            if info.is_torch and torch_device is None:
                torch_device = info.torch_device
            a.dtype, a.bits = dtype, info.ptr
            if kind == "pointer":
                a.kind = _lib.ST_ARG_POINTER
                continue
            if len(info.shape) != 2 or (info.shape[1] > 1 and
                                        info.strides[1] != 1):
                raise ArgumentError(
                    "%s expects a 2-D tensor with unit column stride, got "
                    "shape %s, strides %s" % (what, list(info.shape),
                                              list(info.strides)))
            a.kind = _lib.ST_ARG_TENSOR2D
            a.rows, a.cols = info.shape
            a.ld = info.strides[0] if info.shape[0] > 1 else max(
                info.strides[0], info.shape[1])
        return c_args, len(values), torch_device

    def _grid(self, grid, values, config=None):
        """The launch's 3 grid sizes; a grid function gets `meta`: the
        constants, an autotuned choice's `config` over them, the arguments."""
        if callable(grid):
            meta = dict(self.meta)
            meta.update(config or {})
            meta.update((p[0], v) for p, v in zip(self._params, values))
            grid = grid(meta)
        if not isinstance(grid, (tuple, list)):
            grid = (grid,)
        if not 1 <= len(grid) <= 3:
            raise ArgumentError("%s: a grid has 1 to 3 dimensions, got %r"
                                % (self.name, grid))
        dims = []
        for g in grid:
            if isinstance(g, float) or not hasattr(g, "__index__"):
                raise ArgumentTypeError("%s: grid sizes are ints, got %r"
                                        % (self.name, grid))
            g = int(g.__index__())
            if not 0 <= g < 2 ** 31:
                raise ArgumentError("%s: grid size %d out of range"
                                    % (self.name, g))
            dims.append(g)
        return dims + [1] * (3 - len(dims))


_MISSING = object()


class _Launcher(object):
    """`kernel[grid]`: launches with `(*args, stream=None, **constants)`."""

    __slots__ = ("kernel", "grid")

    def __init__(self, kernel, grid):
        self.kernel, self.grid = kernel, grid

    def __call__(self, *args, **kwargs):
        k = self.kernel
        if not tracing.skip_launches and (
                not kwargs or (len(kwargs) == 1 and "stream" in kwargs)) \
                and k._fast_run(args, self.grid, kwargs.get("stream")):
            return None
        return k.run(*args, grid=self.grid, **kwargs)


class _ArrayInfo(object):
    __slots__ = ("ptr", "dtype", "shape", "strides", "on_cuda", "device",
                 "describe", "is_torch", "torch_device")


def _array_info(value):
    """What a launch needs of a device array: a torch tensor or an object
    with __cuda_array_interface__ (CuPy, Numba, ...). None for anything else.
    Strides are in elements."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.Tensor):
        info = _ArrayInfo()
        info.is_torch = True
        info.ptr = value.data_ptr()
        code = dt.from_torch(value.dtype)
        info.dtype = -3 if code is None else code
        info.shape, info.strides = tuple(value.shape), tuple(value.stride())
        info.on_cuda = value.is_cuda
        info.device = str(value.device)
        info.torch_device = value.device
        info.describe = "a %s tensor" % value.dtype
        return info
    cai = getattr(value, "__cuda_array_interface__", None)
    if cai is None:
        if hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__"):
            # A DLPack array (JAX, ...): viewed through torch, zero-copy.
            # Objects, not raw capsules: a capsule can be consumed only once.
            import torch as torch_module
            return _array_info(torch_module.from_dlpack(value))
        return None
    info = _ArrayInfo()
    info.is_torch, info.torch_device = False, None
    info.ptr = int(cai["data"][0] or 0)
    code = dt.from_typestr(cai["typestr"])
    info.dtype = -3 if code is None else code
    info.shape = tuple(cai["shape"])
    size = int(cai["typestr"].lstrip("<>|=")[1:] or 1)
    strides = cai.get("strides")
    if strides is None:  # C-contiguous.
        strides, acc = [], 1
        for extent in reversed(info.shape):
            strides.insert(0, acc)
            acc *= extent
        info.strides = tuple(strides)
    else:
        info.strides = tuple(s // size for s in strides)
    info.on_cuda, info.device = True, "cuda"
    info.describe = "a %s array of typestr %r" % (type(value).__name__,
                                                 cai["typestr"])
    return info


def _stream_handle(stream, torch_device):
    """The CUstream for a `stream=` argument: None -> torch's current stream
    when a torch tensor was passed (so launches order with torch's work),
    else the legacy default stream; an int; or an object with `cuda_stream`
    (torch.cuda.Stream) or `ptr` (cupy.cuda.Stream)."""
    if torch_device is not None:
        _lib.bind_device(torch_device if isinstance(torch_device, int)
                         else getattr(torch_device, "index", None))
    if stream is None:
        if torch_device is None:
            return None
        torch = sys.modules["torch"]
        return torch.cuda.current_stream(torch_device).cuda_stream or None
    for attr in ("cuda_stream", "ptr", "handle"):
        if hasattr(stream, attr) and not isinstance(stream, int):
            stream = getattr(stream, attr)
            break
    if not isinstance(stream, int):
        raise ArgumentTypeError("stream: expected an int CUstream, a "
                                "torch.cuda.Stream or a cupy Stream, got %r"
                                % (stream,))
    return stream or None


_kernels = {}


def compile(src_or_path, name=None, **kwargs):
    """The kernel `name` (None: the file's only kernel) of DSL text or a
    .tile file, with `const` parameter values from the keyword arguments.

    Options (not constants): num_warps, num_stages, arch ("sm_90"; None: the
    current GPU's), ptx_version (e.g. 85), specialize (variants for integer
    arguments that are multiples of 16 or equal to 1, default True), debug
    (device_assert compiled in, as Triton's debug=True; SPARSETILE_DEBUG=1
    turns it on for every kernel).
    Constants: bool -> true/false, int, float, a torch dtype or a dtype name
    ("bf16") for `const T: dtype`, or a str taken as DSL text.
    Parse errors raise CompileError; code generation errors raise at the
    first launch or asm access. Repeated calls return the same Kernel."""
    options = {k: kwargs.pop(k) for k in _OPTION_NAMES if k in kwargs}
    source, filename = _read_source(src_or_path)
    return _kernel(source, filename, name, kwargs, options)


def _kernel(source, filename, name, constants, options):
    """The cached Kernel of `source` with these constants and options."""
    opts = _Options(**options)
    key = (source, filename, name, tuple((k, type(v).__name__, str(v))
                                         for k, v in sorted(constants.items())),
           opts.key())
    kernel = _kernels.get(key)
    if kernel is None:
        kernel = Kernel(source, filename, name, constants, opts)
        _kernels[key] = kernel
    return kernel
