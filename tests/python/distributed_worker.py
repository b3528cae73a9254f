"""One rank of test_distributed_gpu.py's training runs, started by torchrun.

    torchrun --standalone --nproc_per_node=N distributed_worker.py MODE OUT

MODE is `single` (one rank: the reference), `ddp` (DistributedDataParallel)
or `fsdp2` (fully_shard on every layer and the root). Every mode trains the
same small model from the same initial weights on the same global batch of
each step, rank r taking rows [r B/N, (r + 1) B/N): fp32 master weights under
bf16 autocast, AdamW, the 2:4 layer driven by sparsetile.nn.attach (masked
decay once per step, mask refreshed every 3 steps), SparseDrop with
shard=(rank, world). Rank 0 writes the global loss of each step (the mean
over ranks, which is the mean over the global batch) and the flip rates as
JSON to OUT, and the final 2:4 mask to OUT.mask.pt.
"""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

import sparsetile.nn as stnn
from sparsetile.nn import Sparse24Linear, SparseDropLinear, SwiGLU

D, HIDDEN, TOKENS, STEPS = 256, 512, 512, 8


class Net(nn.Module):
    """A transformer MLP block between two dense layers: fc (SparseDrop on
    its input) -> SwiGLU -> proj (2:4), with a residual."""

    def __init__(self, rank, world):
        super().__init__()
        self.inp = nn.Linear(D, D, device="cuda")
        self.fc = SparseDropLinear(D, 2 * HIDDEN, p=0.2, block=(64, 64),
                                   seed=3, shard=(rank, world), device="cuda")
        self.act = SwiGLU()
        self.proj = Sparse24Linear(HIDDEN, D, mask_interval=3, decay=1e-2,
                                   device="cuda")
        self.head = nn.Linear(D, D, device="cuda")

    def forward(self, x):
        h = self.inp(x)
        return self.head(h + self.proj(self.act(self.fc(h))))


def batch(step):
    """The global batch of `step`, the same on every rank."""
    g = torch.Generator(device="cuda").manual_seed(1000 + step)
    x = torch.randn(TOKENS, D, device="cuda", generator=g)
    target = torch.randn(TOKENS, D, device="cuda", generator=g)
    return x, target


def main(mode, out):
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.manual_seed(0)  # the same initial weights on every rank
    net = Net(rank, world)
    layers = net
    if mode == "ddp":
        net = nn.parallel.DistributedDataParallel(net, broadcast_buffers=False)
        layers = net.module
    elif mode == "fsdp2":
        try:
            from torch.distributed.fsdp import fully_shard
        except ImportError:  # torch < 2.6
            from torch.distributed._composable.fsdp import fully_shard
        for m in (layers.inp, layers.fc, layers.proj, layers.head):
            fully_shard(m)
        fully_shard(layers)
    elif mode != "single":
        raise SystemExit("unknown mode " + mode)
    opt = torch.optim.AdamW(net.parameters(), lr=2e-3, weight_decay=0.0)
    stnn.attach(opt, layers)
    rows = TOKENS // world
    losses, flips = [], []
    for step in range(STEPS):
        x, target = batch(step)
        x, target = (t[rank * rows:(rank + 1) * rows] for t in (x, target))
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = net(x)
        loss = F.mse_loss(y.float(), target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        total = loss.detach().clone()
        dist.all_reduce(total)
        losses.append(float(total) / world)
        flips.append(float(layers.proj.flip_rate_tensor))
    result = {"mode": mode, "world": world, "losses": losses,
              "flip_rates": flips, "proj_steps": layers.proj.step}
    if rank == 0:
        with open(out, "w") as f:
            json.dump(result, f)
        torch.save(layers.proj.mask.cpu(), out + ".mask.pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
