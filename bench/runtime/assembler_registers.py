"""Registers a kernel gets from the two ways the runtime can assemble its
PTX: nvJitLink (relocatable code, the default) and ptxas on the whole
program (what the driver does under SPARSETILE_ASSEMBLER=driver). Runs on
the build machine, no GPU:

    python3 bench/runtime/assembler_registers.py [--arch sm_90] [STC] [PTXAS]

compiles every kernel of dsl_examples/ and bench/triton_parity/kernels/
with `stc --div16 all` (default constants), assembles each both ways, and
prints one row a kernel: its threads, nvJitLink's registers, ptxas's, and
the blocks of those threads an SM holds by registers either way."""

import ctypes
import glob
import os
import re
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def entry_registers(cubin):
    """The register counts in a cubin's .nv.info (EIATTR_REGCOUNT), last
    one the kernel's (earlier ones: internal functions)."""
    shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3a)
    secs = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize)
            for i in range(shnum)]
    names = secs[shstrndx][4]
    out = []
    for s in secs:
        name = cubin[names + s[0]:cubin.index(b"\0", names + s[0])]
        if name != b".nv.info":
            continue
        p, end = s[4], s[4] + s[5]
        while p < end:
            fmt, attr = cubin[p], cubin[p + 1]
            if fmt == 4:  # EIFMT_SVAL: u16 size, then the value
                size = struct.unpack_from("<H", cubin, p + 2)[0]
                if attr == 0x2f:  # EIATTR_REGCOUNT: symbol, count
                    out.append(struct.unpack_from("<I", cubin, p + 8)[0])
                p += 4 + size
            elif fmt in (2, 3):
                p += 4
            elif fmt == 1:
                p += 2
            else:
                break
    return out


class NvJitLink(object):
    def __init__(self):
        cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
        self.lib = ctypes.CDLL(os.path.join(cuda, "lib64",
                                            "libnvJitLink.so.13"))

    def fn(self, name):
        # getattr: a name with two leading underscores would be mangled in
        # a method.
        return getattr(self.lib, "__nvJitLink%s_13_0" % name)

    def cubin(self, ptx, arch):
        h = ctypes.c_void_p()
        opts = (ctypes.c_char_p * 1)(("-arch=" + arch).encode())
        if self.fn("Create")(ctypes.byref(h), 1, opts):
            raise RuntimeError("nvJitLinkCreate failed")
        data = ptx.encode() + b"\0"
        if (self.fn("AddData")(h, 2, data, len(data), b"k.ptx") or
                self.fn("Complete")(h)):
            raise RuntimeError("nvJitLink could not assemble the PTX")
        n = ctypes.c_size_t()
        self.fn("GetLinkedCubinSize")(h, ctypes.byref(n))
        buf = ctypes.create_string_buffer(n.value)
        self.fn("GetLinkedCubin")(h, buf)
        self.fn("Destroy")(ctypes.byref(h))
        return buf.raw


def blocks(regs, threads):
    """Blocks of `threads` an SM's 64 K registers hold (allocated in units
    of 8 a thread), at most 2048 threads."""
    per = (regs + 7) // 8 * 8 * threads
    return min(65536 // per if per else 0, 2048 // threads)


def main(argv):
    arch = "sm_90"
    if argv[:1] == ["--arch"]:
        arch, argv = argv[1], argv[2:]
    stc = argv[0] if argv else os.path.join(ROOT, "build/compiler/stc")
    ptxas = argv[1] if len(argv) > 1 else "/usr/local/cuda/bin/ptxas"
    target = arch + "a" if arch == "sm_90" else arch
    jl = NvJitLink()
    files = sorted(glob.glob(os.path.join(ROOT, "dsl_examples/*.tile")) +
                   glob.glob(os.path.join(ROOT,
                                          "bench/triton_parity/kernels/*.tile")))
    print("| kernel | threads | nvJitLink regs | ptxas regs | blocks/SM "
          "nvJitLink | blocks/SM ptxas |")
    print("|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            listing = subprocess.run([stc, f, "--list"], capture_output=True,
                                     text=True).stdout
            for name in re.findall(r"^([a-z_0-9]+)\(", listing, re.M):
                ptx = subprocess.run(
                    [stc, f, "--kernel", name, "--arch", arch, "--div16",
                     "all", "--emit=ptx"], capture_output=True, text=True)
                if ptx.returncode or ".entry" not in ptx.stdout:
                    continue
                path = os.path.join(tmp, name + ".ptx")
                with open(path, "w") as out:
                    out.write(ptx.stdout)
                m = re.search(r"\.maxntid (\d+)", ptx.stdout)
                threads = int(m.group(1)) if m else 0
                linked = entry_registers(jl.cubin(ptx.stdout, target))[-1]
                log = subprocess.run([ptxas, "-arch=" + target, "-v", path,
                                      "-o", os.devnull],
                                     capture_output=True, text=True).stderr
                whole = int(re.findall(r"Used (\d+) registers", log)[-1])
                print("| %s.%s | %d | %d | %d | %d | %d |" % (
                    os.path.basename(f)[:-5], name, threads, linked, whole,
                    blocks(linked, threads), blocks(whole, threads)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
