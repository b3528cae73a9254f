"""The fused-attention port (kernels/attention.tile, f16) at other program
shapes than configs.ATTENTION_RING's (BM rows a program, BN keys a block,
warps), against Triton's autotuned kernel of the same design, in one
process, round-robin (parity.py's Timer: CUDA events, L2 flushed before
each run, medians). attention_tiles.py varies the keys and the ring depth at
BM 128 and 8 warps; this one asks whether another program shape suits a
head dim better (bench/NOTES.md, "Attention: P V asynchronous"). BM must
be a multiple of BN (the port's static_assert). Outputs are checked on one
head against float64.

Usage: attention_tilings.py [--n 1024,4096] [--json PATH]
Exits 3 without torch, Triton or a GPU."""
import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import configs  # noqa: E402
import parity  # noqa: E402

torch, tk, ports = parity.gpu_modules("attention_tilings")

# (BM, BN, warps) per head dim; the first is configs.ATTENTION_RING's.
TILINGS = {64: [(128, 64, 8), (64, 64, 4), (128, 128, 8), (128, 32, 8),
                (64, 32, 4)],
           128: [(128, 128, 8), (128, 64, 8), (64, 64, 4)]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="1024,4096")
    ap.add_argument("--json")
    args = ap.parse_args()
    timer = parity.sweep_timer(torch)
    rows = []
    z, h = 4, 32
    for n in (int(x) for x in args.n.split(",")):
        for d in (64, 128):
            for causal in (False, True):
                torch.manual_seed(0)
                q, k, v = (torch.randn(z, h, n, d, device="cuda",
                                       dtype=torch.float16) for _ in range(3))
                scale = 1.0 / math.sqrt(d)
                ref, _ = parity.attention_reference(
                    torch, q[0, 0], k[0, 0], v[0, 0], scale, causal)
                fns, outs = {}, {}
                for bm, bn, w in TILINGS[d]:
                    kern = ports.kernel("attention", "attn_fwd", w, D=d,
                                        BM=bm, BN=bn, CAUSAL=int(causal))
                    o = torch.full_like(q, float("nan"))
                    lse = torch.full((z, h, n), float("nan"), device="cuda")
                    key = "BM%d BN%d w%d" % (bm, bn, w)
                    outs[key] = o
                    grid = (configs.cdiv(n, bm), z * h)
                    fns[key] = (lambda kern=kern, o=o, lse=lse, grid=grid:
                                kern[grid](q, k, v, o, lse, float(scale), n))
                to = torch.empty_like(q)
                tl = torch.empty(z, h, n, device="cuda")
                fns["triton"] = lambda: tk.attention(q, k, v, to, tl, scale,
                                                     causal)
                outs["triton"] = to
                for fn in fns.values():
                    fn()
                torch.cuda.synchronize()
                ms = timer.run(fns)
                flops = 4.0 * z * h * n * n * d * (0.5 if causal else 1.0)
                for key, t in ms.items():
                    row = dict(n_ctx=n, d=d, causal=causal, tiling=key, ms=t,
                               tflops=flops / t / 1e9,
                               vs_triton=ms["triton"] / t,
                               err=parity.rel_err(outs[key][0, 0], ref))
                    rows.append(row)
                    print("N %5d D %3d %-6s %-16s %6.1f TFLOP/s %.2fx "
                          "err %.1e" % (n, d, "causal" if causal else "full",
                                        key, row["tflops"], row["vs_triton"],
                                        row["err"]), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"bench": "attention_tilings",
                       "revision": parity.revision(),
                       "gpu": torch.cuda.get_device_name(), "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
