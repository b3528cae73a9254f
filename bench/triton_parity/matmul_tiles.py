"""The pointer-style matmul port (kernels/matmul.tile, f16, leaky ReLU) at a
few tile shapes and ring depths, against Triton's autotuned kernel of the
same design and torch (cuBLAS, no epilogue), in one process, round-robin
(parity.py's Timer: CUDA events, L2 flushed before each run, medians).
What configs.MATMUL should be now that the K loop runs on the cp.async /
wgmma ring (bench/NOTES.md, "Pointer loads into the wgmma ring").

With --arch sm_80 the DSL variants are compiled for that target (the
cp.async ring read by ldmatrix + mma.sync on sm_80) and run as PTX the
driver compiles for this GPU (SPARSETILE_ASSEMBLER=driver, which the script
requires then); Triton and torch run as themselves, as the anchors.

Usage: matmul_tiles.py [--sizes 4096,8192] [--arch sm_80] [--json PATH]
Exits 3 without torch, Triton or a GPU, 2 for --arch without the driver's
assembler."""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import configs  # noqa: E402
import parity  # noqa: E402

torch, tk, ports = parity.gpu_modules("matmul_tiles")

# (kernel, BN, ring depth: 0 = as many as fit, @warp_specialize: None =
# the kernel's default, 0 = the block's threads copy, 1 = a producer
# warpgroup copies); BM 128, BK 64, 8 warps. By default a pointer ring gets
# the producer where the copying ring would hold one block an SM (BN 256).
VARIANTS = [("matmul_kofs", 128, 0, None), ("matmul_kofs", 256, 0, None),
            ("matmul", 128, 0, None), ("matmul", 256, 0, None),
            ("matmul", 256, 0, 0), ("matmul", 256, 3, 0),
            ("matmul", 256, 3, 1), ("matmul", 128, 0, 1)]


def specialized_source(ws):
    """kernels/matmul.tile with its import inlined and every kernel marked
    @warp_specialize(ws) (no launch option sets it yet)."""
    def text(name):
        with open(configs.kernel_path(name)) as f:
            return f.read()
    src = text("matmul").replace('import "common.tile";', text("common"))
    return src.replace("\nkernel ", "\n@warp_specialize(%d)\nkernel " % ws)


def launcher(name, bn, stages, ws, a, b, c, arch=None):
    m, k = a.shape
    n = b.shape[1]
    consts = dict(configs.MATMUL, BN=bn, T="f16", LEAKY=1)
    warps = consts.pop("num_warps")
    if ws is not None:
        import sparsetile
        kern = sparsetile.compile(specialized_source(ws), name,
                                  num_warps=warps, **consts)
    else:
        kern = ports.kernel("matmul", name, warps, **consts)
    if stages:
        kern = kern.specialize(num_stages=stages)
    if arch:
        kern = kern.specialize(arch=arch)
    grid = (configs.cdiv(m, consts["BM"]) * configs.cdiv(n, bn),)
    return lambda: kern[grid](a, b, c, m, n, k, a.stride(0), b.stride(0),
                              c.stride(0))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--arch", help="compile the DSL variants for this target")
    ap.add_argument("--json")
    args = ap.parse_args()
    parity.require_driver_assembler(args.arch, "matmul_tiles.py")
    timer = parity.sweep_timer(torch)
    rows = []
    for s in (int(x) for x in args.sizes.split(",")):
        torch.manual_seed(0)
        a = torch.randn(s, s, device="cuda", dtype=torch.float16)
        b = torch.randn(s, s, device="cuda", dtype=torch.float16)
        ref = torch.nn.functional.leaky_relu(a.float() @ b.float(), 0.01)
        fns, outs = {}, {}
        for name, bn, stages, ws in VARIANTS:
            key = "%s BN=%d stages=%s%s" % (
                name, bn, stages or "fit",
                "" if ws is None else " ws=%d" % ws)
            outs[key] = torch.full((s, s), float("nan"), device="cuda",
                                   dtype=torch.float16)
            fns[key] = launcher(name, bn, stages, ws, a, b, outs[key],
                                args.arch)
        outs["triton"] = torch.empty(s, s, device="cuda",
                                     dtype=torch.float16)
        fns["triton"] = lambda: tk.matmul(a, b, outs["triton"])
        tout = torch.empty(s, s, device="cuda", dtype=torch.float16)
        fns["torch"] = lambda: torch.matmul(a, b, out=tout)
        for key, fn in fns.items():
            fn()
        torch.cuda.synchronize()
        errs = {k: parity.rel_err(o, ref) for k, o in outs.items()}
        ms = timer.run(fns)
        flops = 2.0 * s ** 3
        for key, t in ms.items():
            row = dict(size=s, variant=key, ms=t,
                       tflops=flops / t / 1e9,
                       vs_triton=ms["triton"] / t, vs_torch=ms["torch"] / t,
                       err=errs.get(key))
            rows.append(row)
            print("%5d %-32s %8.1f TFLOP/s  %.2fx Triton  %.2fx torch  err %s"
                  % (s, key, row["tflops"], row["vs_triton"],
                     row["vs_torch"], "-" if row["err"] is None else
                     "%.1e" % row["err"]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bench": "matmul_tiles", "revision": parity.revision(),
                       "arch": args.arch or "native",
                       "gpu": torch.cuda.get_device_name(), "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
