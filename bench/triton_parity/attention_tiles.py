"""The fused-attention port (kernels/attention.tile, f16) at a few key-block
sizes and ring depths, against Triton's autotuned kernel of the same design
and torch's SDPA, in one process, round-robin (parity.py's Timer: CUDA
events, L2 flushed before each run, medians). What configs.ATTENTION should
be now that the key loop runs on sm_90's cp.async / wgmma ring (bench/
NOTES.md, "Attention on the wgmma ring"). Outputs are checked on two heads
against float64.

With --tilings it compares program shapes instead (BM rows a program, BN
keys a block, warps; BM a multiple of BN, the port's static_assert), each
at as many stages as fit: whether another shape suits a head dim better
than configs.ATTENTION_RING's (bench/NOTES.md, "Attention: P V
asynchronous").

With --arch sm_80 the DSL variants are compiled for that target (the
chained ring read by mma.sync) and run as PTX the driver compiles for this
GPU (SPARSETILE_ASSEMBLER=driver, required then); Triton and torch run as
themselves, as the anchors.

Usage: attention_tiles.py [--n 4096] [--d 64,128] [--tilings] [--arch sm_80]
                          [--json PATH]
Exits 3 without torch, Triton or a GPU, 2 for --arch without the driver's
assembler."""
import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import configs  # noqa: E402
import parity  # noqa: E402

torch, tk, ports = parity.gpu_modules("attention_tiles")

# (BM, BN, warps, ring depth: 0 = as many as fit), named as printed.
VARIANTS = [(128, bn, 8, st) for bn, st in ((64, 0), (64, 2), (128, 0),
                                            (128, 3))]
# --tilings: per head dim, configs.ATTENTION_RING's shape first.
TILINGS = {64: [(128, 64, 8, 0), (64, 64, 4, 0), (128, 128, 8, 0),
                (128, 32, 8, 0), (64, 32, 4, 0)],
           128: [(128, 128, 8, 0), (128, 64, 8, 0), (64, 64, 4, 0)]}


def variant_name(bm, bn, warps, stages, tilings):
    if tilings:
        return "BM%d BN%d w%d" % (bm, bn, warps)
    return "BN=%d stages=%s" % (bn, stages or "fit")


def launcher(d, bm, bn, warps, stages, causal, q, k, v, o, lse, scale,
             arch=None):
    z, h, n_ctx, _ = q.shape
    kern = ports.kernel("attention", "attn_fwd", warps, D=d, BM=bm, BN=bn,
                        CAUSAL=int(causal))
    if stages:
        kern = kern.specialize(num_stages=stages)
    if arch:
        kern = kern.specialize(arch=arch)
    grid = (configs.cdiv(n_ctx, bm), z * h)
    return lambda: kern[grid](q, k, v, o, lse, float(scale), n_ctx)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="4096")
    ap.add_argument("--d", default="64,128")
    ap.add_argument("--tilings", action="store_true")
    ap.add_argument("--arch", help="compile the DSL variants for this target")
    ap.add_argument("--json")
    args = ap.parse_args()
    parity.require_driver_assembler(args.arch, "attention_tiles.py")
    timer = parity.sweep_timer(torch)
    rows = []
    z, h = 4, 32
    for n_ctx in (int(x) for x in args.n.split(",")):
        for d in (int(x) for x in args.d.split(",")):
            for causal in (False, True):
                torch.manual_seed(0)
                q, k, v = (torch.randn(z, h, n_ctx, d, device="cuda",
                                       dtype=torch.float16)
                           for _ in range(3))
                scale = 1.0 / math.sqrt(d)
                refs = [parity.attention_reference(
                    torch, q[zi, hi], k[zi, hi], v[zi, hi], scale, causal)
                    for zi, hi in ((0, 0), (z - 1, h - 1))]
                fns, outs = {}, {}
                for bm, bn, warps, stages in (TILINGS[d] if args.tilings
                                              else VARIANTS):
                    key = variant_name(bm, bn, warps, stages, args.tilings)
                    o = torch.full_like(q, float("nan"))
                    lse = torch.full((z, h, n_ctx), float("nan"),
                                     device="cuda")
                    outs[key] = o
                    fns[key] = launcher(d, bm, bn, warps, stages, causal, q,
                                        k, v, o, lse, scale, args.arch)
                to = torch.empty_like(q)
                tl = torch.empty(z, h, n_ctx, device="cuda")
                fns["triton"] = lambda: tk.attention(q, k, v, to, tl, scale,
                                                     causal)
                outs["triton"] = to
                fns["torch"] = lambda: torch.nn.functional.\
                    scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                 scale=scale)
                for fn in fns.values():
                    fn()
                torch.cuda.synchronize()
                errs = {key: max(parity.rel_err(o[zi, hi], ref)
                                 for (zi, hi), (ref, _) in
                                 zip(((0, 0), (z - 1, h - 1)), refs))
                        for key, o in outs.items()}
                ms = timer.run(fns)
                flops = 4.0 * z * h * n_ctx * n_ctx * d * (
                    0.5 if causal else 1.0)
                for key, t in ms.items():
                    row = dict(n_ctx=n_ctx, d=d, causal=causal, variant=key,
                               ms=t, tflops=flops / t / 1e9,
                               vs_triton=ms["triton"] / t,
                               vs_torch=ms["torch"] / t, err=errs.get(key))
                    rows.append(row)
                    print("N %5d D %3d %-6s %-18s %7.1f TFLOP/s  %.2fx "
                          "Triton  %.2fx torch  err %s"
                          % (n_ctx, d, "causal" if causal else "full", key,
                             row["tflops"], row["vs_triton"],
                             row["vs_torch"], "-" if row["err"] is None
                             else "%.1e" % row["err"]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bench": "attention_tiles",
                       "revision": parity.revision(),
                       "arch": args.arch or "native",
                       "gpu": torch.cuda.get_device_name(), "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
