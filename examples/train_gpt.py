"""Train a small byte-level GPT whose FFNs use sparsetile's sparse-training layers.

Every FFN is Linear(d, F) -> GELU -> Linear(F, d); --variant picks the two linears:
  dense           torch.nn.Linear (cuBLAS), the baseline
  dense_dropout   nn.Dropout(p) + nn.Linear: SparseDrop's own baseline (element dropout on
                  the same inputs at the same p)
  sparsedrop      sparsetile.nn.SparseDropLinear(p), block dropout run by sparsetile's kernels
  sparsedrop_ref  the same layer with backend="torch": same masks, plain-PyTorch math
  sparse24        sparsetile.nn.Sparse24Linear, transposable 2:4 weights on sparse tensor cores,
                  driven by the optimizer (sparsetile.nn.attach: masked decay once per step,
                  mask refresh every --mask-interval steps): Sparse24Linear, F.gelu, Sparse24Linear
  sparse24_fused  the same layers and weights, the FFN through sparsetile.nn.sparse24_mlp:
                  fc's bias and the GELU in fc's GEMM, proj's bias in proj's, the GELU's
                  backward in proj's input-gradient GEMM (measured slower so far: bench/NOTES.md)
  all             the six, one after another (default)

The text is this Python's own standard library (every *.py below os.__file__'s
folder, site-packages excluded, sorted by path), read as bytes: 256 symbols, no
download, the last --val-frac of it held out. Every variant starts from the same
weights and sees the same batches in the same order, so the curves differ only
through the layers.

Under `torchrun --nproc_per_node=N` it trains with DistributedDataParallel: each
rank takes its 1/N slice of the same global batch, so the run is the 1-GPU run
up to bf16 rounding; rank 0 evaluates and writes train_<variant>_ddpN.json.

Writes to --out: train_<variant>[_ddpN].json, results.md, val_loss.png (if
matplotlib imports; examples/plot_train.py DIR draws it anywhere).
"""
import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)  # plot_train
sys.path.append(os.path.join(REPO, "python"))  # sparsetile, unless PYTHONPATH names another
import plot_train  # noqa: E402  (no torch inside)

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    _Module = nn.Module
except ImportError:  # --help and --compare need no torch; training checks in main()
    torch = nn = F = None
    _Module = object

VARIANTS = ("dense", "dense_dropout", "sparsedrop", "sparsedrop_ref", "sparse24",
            "sparse24_fused")
VOCAB = 256  # bytes


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variant", default="all", help=f"all, or a comma-separated list of {', '.join(VARIANTS)}")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--eval-batches", type=int, default=10, help="validation batches of --batch sequences")
    ap.add_argument("--batch", type=int, default=16, help="global batch in sequences (split across ranks)")
    ap.add_argument("--ctx", type=int, default=512, help="context length in bytes")
    ap.add_argument("--d-model", type=int, default=1024)
    ap.add_argument("--d-ff", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--untied-head", action="store_true", help="own output matrix instead of the embedding's")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--min-lr-frac", type=float, default=0.1, help="cosine decays to lr * this")
    ap.add_argument("--warmup", type=int, default=50, help="linear LR warm-up steps")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--p", type=float, default=0.1, help="SparseDrop block drop probability")
    ap.add_argument("--block", type=int, default=128, help="SparseDrop block edge (block=(B, B))")
    ap.add_argument("--mask-interval", type=int, default=100, help="Sparse24Linear mask refresh interval")
    ap.add_argument("--decay", type=float, default=2e-4, help="Sparse24Linear masked decay")
    ap.add_argument("--fp32-master", action="store_true",
                    help="fp32 parameters and AdamW state, the model run under bf16 autocast "
                         "(so the 2:4 masked decay lands on an fp32 gradient)")
    ap.add_argument("--dense-finetune", type=float, default=0.0,
                    help="sparse24 variants: train the last FRAC of the steps dense with the whole "
                         "W (sparsetile.nn.set_dense), as 2:4 pre-training's recipe ends")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--val-frac", type=float, default=0.05)
    ap.add_argument("--timing-skip", type=int, default=10, help="first steps left out of the median (warm-up, JIT)")
    ap.add_argument("--compile", action="store_true", help="wrap the model in torch.compile")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="capture the whole training step (forward, backward, clipping, AdamW) in a "
                         "CUDA graph after --graph-warmup eager steps, and replay it (1 GPU)")
    ap.add_argument("--graph-warmup", type=int, default=3, help="eager steps before the capture")
    ap.add_argument("--out", default=os.path.join(HERE, "out"), help="output folder (default examples/out)")
    ap.add_argument("--compare", nargs=2, metavar=("A.json", "B.json"),
                    help="compare two result files' validation curves and exit (no GPU needed)")
    ap.add_argument("--tol", type=float, default=0.03, help="--compare: relative tolerance on final val loss")
    return ap.parse_args(argv)


# --- data ---------------------------------------------------------------------------------------

def load_stdlib_bytes():
    """All of the standard library's .py sources, concatenated in sorted path order."""
    root = os.path.dirname(os.__file__)
    skip = {"site-packages", "dist-packages", "__pycache__"}  # installed packages differ per machine
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in skip]
        paths += [os.path.join(dirpath, f) for f in filenames if f.endswith(".py")]
    chunks = []
    for p in sorted(paths):
        with open(p, "rb") as f:
            chunks.append(f.read())
    return b"".join(chunks), root, len(paths)


def get_batch(data, gen, global_batch, ctx, rank, world, device):
    """This rank's slice of a global batch of random windows; gen advances identically on every rank."""
    starts = torch.randint(0, data.numel() - ctx, (global_batch,), generator=gen)
    per = global_batch // world
    starts = starts[rank * per:(rank + 1) * per].to(device)
    chunk = data[starts[:, None] + torch.arange(ctx + 1, device=device)].long()
    return chunk[:, :-1], chunk[:, 1:]


# --- model --------------------------------------------------------------------------------------

class Block(_Module):
    """Pre-LN transformer block; fc and proj (the FFN) come from make_linear."""

    def __init__(self, args, make_linear, layer, fk):
        super().__init__()
        d = args.d_model
        self.heads = args.heads
        self.ln1 = nn.LayerNorm(d, **fk)
        self.qkv = nn.Linear(d, 3 * d, **fk)
        self.attn_proj = nn.Linear(d, d, **fk)
        self.ln2 = nn.LayerNorm(d, **fk)
        self.fc = make_linear(d, args.d_ff, layer, 0)
        self.proj = make_linear(args.d_ff, d, layer, 1)
        # The fused FFN (fc -> GELU -> proj in the 2:4 GEMMs' epilogues), when the factory has
        # one; fc and proj stay this block's attributes, so names, init and state are the same.
        self.ffn = getattr(make_linear, "ffn", None)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(a.transpose(1, 2).reshape(B, T, C))
        if self.ffn is not None:
            return x + self.ffn(self.ln2(x), self.fc, self.proj)
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(_Module):
    def __init__(self, args, make_linear, fk):
        super().__init__()
        d = args.d_model
        self.tok_emb = nn.Embedding(VOCAB, d, **fk)
        self.pos_emb = nn.Embedding(args.ctx, d, **fk)
        self.blocks = nn.ModuleList(Block(args, make_linear, i, fk) for i in range(args.layers))
        self.ln_f = nn.LayerNorm(d, **fk)
        self.head = nn.Linear(d, VOCAB, bias=False, **fk)
        if not args.untied_head:
            self.head.weight = self.tok_emb.weight

    def forward(self, idx):
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class DropoutLinear(nn.Linear if nn is not None else object):
    """F.dropout on the input, then the linear: SparseDropLinear's dense counterpart, with
    nn.Linear's parameter names (so init_weights treats it alike)."""

    def __init__(self, i, o, p, **fk):
        super().__init__(i, o, **fk)
        self.p = p

    def forward(self, x):
        return super().forward(F.dropout(x, self.p, self.training))


def linear_factory(args, variant, rank, world, fk):
    """make_linear(in, out, layer, j) for the FFN's j-th linear (0: fc, 1: proj) of `layer`."""
    if variant == "dense":
        return lambda i, o, layer, j: nn.Linear(i, o, **fk)
    if variant == "dense_dropout":
        return lambda i, o, layer, j: DropoutLinear(i, o, args.p, **fk)
    import sparsetile.nn as stnn  # after SPARSETILE_CACHE_DIR is set (main)
    if variant in ("sparse24", "sparse24_fused"):
        def make24(i, o, layer, j):
            return stnn.Sparse24Linear(i, o, mask_interval=args.mask_interval, decay=args.decay,
                                       **fk)
        if variant == "sparse24_fused":
            make24.ffn = stnn.sparse24_mlp
        return make24
    backend = "sparsetile" if variant == "sparsedrop" else "torch"

    def make(i, o, layer, j):
        # One seed per layer, so layers drop different blocks. Under DDP every rank
        # uses the same seed and shard=(rank, world): rank r then draws rows r/world of
        # the mask the 1-GPU run draws for the whole batch, so both drop the same blocks.
        seed = args.seed * 1_000_000 + 2 * layer + j
        return stnn.SparseDropLinear(i, o, args.p, block=(args.block, args.block), seed=seed,
                                     backend=backend, shard=(rank, world), **fk)
    return make


def init_weights(model, seed, layers):
    """GPT-2 style init drawn per parameter name, so it is identical whatever class holds it
    (nn.Linear or a sparsetile layer) and whatever order the layers draw random numbers in."""
    with torch.no_grad():
        _init_weights(model, seed, layers)


def _init_weights(model, seed, layers):
    for name, p in model.named_parameters():
        if not name.endswith(("weight", "bias")):
            continue  # a layer's own state (masks, ...) is its business
        if p.dim() >= 2:
            # Residual-branch outputs scaled down so the residual stream does not grow with depth.
            std = 0.02 / math.sqrt(2 * layers) if name.endswith("proj.weight") else 0.02
            g = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
            p.copy_(torch.randn(p.shape, generator=g) * std)
        elif ".ln" in name or name.startswith("ln"):
            p.fill_(1.0 if name.endswith("weight") else 0.0)
        else:
            p.zero_()
    # Assumes Sparse24Linear takes its first 2:4 mask in the first training forward (it refreshes
    # every mask_interval steps), i.e. from these weights; one taken at construction would follow
    # the layer's own init until the first refresh.


def loss_fn(logits, y):
    return F.cross_entropy(logits.float().flatten(0, 1), y.flatten())


def autocast(args):
    """bf16 autocast for --fp32-master (no cast cache: a CUDA graph may capture it)."""
    return torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.fp32_master,
                          cache_enabled=False)


def evaluate(model, val, args, device):
    """Mean loss over fixed validation batches (same generator seed every call), eval mode:
    SparseDrop is a plain linear there, so every variant is scored on the same footing."""
    model.eval()
    gen = torch.Generator().manual_seed(args.seed + 1)
    losses = []
    with torch.no_grad():
        for _ in range(args.eval_batches):
            x, y = get_batch(val, gen, args.batch, args.ctx, 0, 1, device)
            with autocast(args):
                losses.append(loss_fn(model(x), y))
    model.train()
    return torch.stack(losses).mean().item()


def lr_at(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    t = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (args.min_lr_frac + (1 - args.min_lr_frac) * 0.5 * (1 + math.cos(math.pi * t)))


def flip_rate(model):
    """Mean flip rate of the 2:4 layers' last mask refresh (share of mask entries changed),
    read from the device only here, at evaluation."""
    import sparsetile.nn as stnn
    rates = stnn.flip_rates(model)
    return float(rates.mean()) if rates.numel() else None


# --- one training run ---------------------------------------------------------------------------

def train_variant(variant, args, env, train, val):
    rank, world, device = env["rank"], env["world"], env["device"]
    torch.manual_seed(args.seed)
    torch.cuda.reset_peak_memory_stats(device)
    # By default the whole model in bf16 (AdamW states too): simple, and the FFN layers see the
    # dtype their kernels take. With bf16 gradients the 2:4 masked decay (2e-4 * W) mostly rounds
    # away; --fp32-master keeps fp32 weights and runs the model under autocast instead.
    fk = dict(device=device, dtype=torch.float32 if args.fp32_master else torch.bfloat16)
    raw = GPT(args, linear_factory(args, variant, rank, world, fk), fk)
    init_weights(raw, args.seed, args.layers)
    model = raw
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP
        # No buffers need syncing: 2:4 masks follow from weights that DDP keeps identical.
        model = DDP(raw, device_ids=[device.index], broadcast_buffers=False)
    if args.compile:
        model = torch.compile(model)  # training only: evaluate() runs `raw` eagerly, once per eval
    params = list(raw.parameters())
    graphed = args.cuda_graph and world == 1
    # A replayed graph reads the learning rate from a tensor (capturable AdamW), set each step.
    lr = torch.tensor(args.lr, device=device) if graphed else args.lr
    opt = torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() >= 2], "weight_decay": args.weight_decay},
         {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.95), fused=True, capturable=graphed)
    if variant.startswith("sparse24"):
        import sparsetile.nn as stnn
        stnn.attach(opt, raw)  # masked decay before, mask refresh after each optimizer step
    n_params = sum(p.numel() for p in params)
    gen = torch.Generator().manual_seed(args.seed)  # same batches, same order, every variant
    tokens_per_step = args.batch * args.ctx
    if rank == 0:
        print(f"\n=== {variant} (world {world}): {n_params / 1e6:.1f}M parameters, "
              f"{tokens_per_step} tokens/step, {args.steps} steps")

    val_log, train_loss, step_ms = [], [], []
    t_start = time.perf_counter()

    def maybe_eval(step):
        if step % args.eval_every and step != args.steps:
            return
        if rank == 0:  # the others wait at the barrier; their next all-reduce would wait anyway
            entry = {"step": step, "loss": evaluate(raw, val, args, device)}
            if variant.startswith("sparse24"):
                entry["flip_rate"] = flip_rate(raw)
            val_log.append(entry)
            recent = train_loss[-args.eval_every:]
            timed = step_ms[args.timing_skip:] or step_ms
            line = f"step {step:5d}  val {entry['loss']:.4f}"
            if recent:
                line += f"  train {sum(recent) / len(recent):.4f}  lr {lr_at(step - 1, args):.2e}"
            if timed:
                line += f"  step {statistics.median(timed):.2f} ms"
            if entry.get("flip_rate") is not None:
                line += f"  2:4 flips {entry['flip_rate']:.4f}"
            print(line, flush=True)
        if world > 1:
            env["dist"].barrier()

    def train_step(x, y):
        with autocast(args):
            loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=not graphed)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, args.grad_clip)
        opt.step()
        return loss

    # The paper's recipe ends dense: from this step on the 2:4 layers run F.linear with W.
    dense_from = args.steps - int(round(args.dense_finetune * args.steps)) \
        if variant.startswith("sparse24") and args.dense_finetune > 0 else None
    graph = static = None
    for step in range(args.steps):
        if step == dense_from:
            import sparsetile.nn as stnn
            stnn.set_dense(raw, True)
            graph = None  # a new graph, captured after one eager step of the dense layers
        maybe_eval(step)
        for group in opt.param_groups:
            if graphed:
                group["lr"].fill_(lr_at(step, args))
            else:
                group["lr"] = lr_at(step, args)
        x, y = get_batch(train, gen, args.batch, args.ctx, rank, world, device)
        if graphed and variant.startswith("sparse24") and step and step % args.mask_interval == 0 \
                and (dense_from is None or step < dense_from):
            # The host's step hook runs only at the capture: refresh the masks here, in place
            # (the graph reads the same mask tensors).
            for m in raw.modules():
                if hasattr(m, "refresh_mask_"):
                    m.refresh_mask_()
        torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        if not graphed or step < args.graph_warmup or step == dense_from:
            loss = train_step(x, y)
        else:
            if graph is None:  # capture once, on torch's capture stream, from static inputs
                static = (x.clone(), y.clone())
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    static_loss = train_step(*static)
            static[0].copy_(x)
            static[1].copy_(y)
            graph.replay()
            loss = static_loss
        torch.cuda.synchronize(device)
        step_ms.append(1e3 * (time.perf_counter() - t0))
        loss = loss.detach().clone()
        if world > 1:  # for the log only, after the clock stopped
            env["dist"].all_reduce(loss, op=env["dist"].ReduceOp.AVG)
        train_loss.append(loss.item())
    maybe_eval(args.steps)

    result = None
    if rank == 0:
        timed = step_ms[args.timing_skip:] if len(step_ms) > args.timing_skip else step_ms
        median_ms = statistics.median(timed)
        result = {
            "variant": variant, "world_size": world, "args": vars(args), **env["info"],
            "cuda_graph": graphed, "dense_from_step": dense_from,
            "params": n_params, "tokens_per_step": tokens_per_step,
            "val": val_log, "final_val_loss": val_log[-1]["loss"], "train_loss": train_loss,
            "step_ms": step_ms, "first_step_ms": step_ms[0], "median_step_ms": median_ms,
            "mean_step_ms": statistics.fmean(timed), "tokens_per_s": tokens_per_step / (median_ms / 1e3),
            "peak_mem_gib": torch.cuda.max_memory_allocated(device) / 2**30,
            "wall_s": time.perf_counter() - t_start,
        }
        path = os.path.join(args.out, f"train_{plot_train.run_label(result)}.json")
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print(f"{variant}: final val {result['final_val_loss']:.4f}, median step {median_ms:.2f} ms "
              f"(first {step_ms[0]:.0f} ms), {result['tokens_per_s']:,.0f} tokens/s -> {path}")

    # Free this variant's model, optimizer state and compiled graphs before the next one.
    del model, raw, opt, params
    if args.compile:
        torch._dynamo.reset()
    gc.collect()
    torch.cuda.empty_cache()
    return result


def run_info(torch_device):
    def git_rev():
        # A copied working tree (the GPU machine's) may carry a stale .git;
        # scripts/gpu_run.sh passes the packed build's revision instead.
        if os.environ.get("SPARSETILE_REVISION"):
            return os.environ["SPARSETILE_REVISION"]
        try:
            return subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                  text=True, timeout=10).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            return None
    try:  # a dense-only run needs neither the package nor the library
        import sparsetile
        st_version = f"{sparsetile.__version__} ({sparsetile.library_path()})"
    except Exception:
        st_version = None
    return {"device": torch.cuda.get_device_name(torch_device), "torch": torch.__version__,
            "cuda": torch.version.cuda, "python": sys.version.split()[0], "git": git_rev(),
            "sparsetile": st_version, "sparsetile_cache_dir": os.environ.get("SPARSETILE_CACHE_DIR")}


def main(argv=None):
    args = parse_args(argv)
    if args.compare:
        return plot_train.compare(*args.compare, args.tol)
    variants = list(VARIANTS) if args.variant == "all" else [v.strip() for v in args.variant.split(",")]
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        sys.exit(f"train_gpt.py: unknown variant(s) {bad}; choose from all, {', '.join(VARIANTS)}")
    if args.steps < 1 or args.eval_every < 1 or not 0 < args.val_frac < 1:
        sys.exit("train_gpt.py: needs --steps >= 1, --eval-every >= 1 and 0 < --val-frac < 1")
    if torch is None:
        sys.exit("train_gpt.py: training needs PyTorch (pip install torch); --help and --compare do not")
    if not torch.cuda.is_available():
        sys.exit("train_gpt.py: needs a CUDA GPU")

    args.out = os.path.abspath(args.out)
    os.makedirs(args.out, exist_ok=True)
    # One kernel cache for every rank (and every later run): a kernel is compiled once and the
    # other processes load it. Must be set before sparsetile is imported.
    os.environ.setdefault("SPARSETILE_CACHE_DIR", os.path.join(args.out, "sparsetile-cache"))
    if any(v != "dense" for v in variants):
        import sparsetile.nn  # noqa: F401  fail now, not after the dense run

    world = int(os.environ.get("WORLD_SIZE", "1"))
    env = {"rank": 0, "world": world, "dist": None}
    if world > 1:
        import torch.distributed as dist
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        # sparsetile binds one GPU per process at its first launch; this
        # rank's, like torch's (the package would also take it from the
        # first tensor it sees).
        os.environ.setdefault("SPARSETILE_DEVICE", str(local_rank))
        env["device"] = torch.device("cuda", local_rank)
        dist.init_process_group("nccl", device_id=env["device"])
        env.update(rank=dist.get_rank(), dist=dist)
        if args.batch % world:
            sys.exit(f"train_gpt.py: --batch {args.batch} is not divisible by {world} ranks")
    else:
        env["device"] = torch.device("cuda", torch.cuda.current_device())
    env["info"] = run_info(env["device"])

    data, root, n_files = load_stdlib_bytes()
    n_val = int(len(data) * args.val_frac)
    all_bytes = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(env["device"])
    train, val = all_bytes[:-n_val], all_bytes[-n_val:]
    env["info"]["corpus"] = {"root": root, "files": n_files, "train_bytes": train.numel(), "val_bytes": n_val}
    if env["rank"] == 0:
        print(f"corpus: {n_files} files under {root}, {len(data) / 1e6:.1f} MB "
              f"({train.numel()} train / {n_val} val bytes); device {env['info']['device']}, "
              f"world {world}; SPARSETILE_CACHE_DIR={os.environ['SPARSETILE_CACHE_DIR']}")

    for variant in variants:
        train_variant(variant, args, env, train, val)

    if env["rank"] == 0:
        print()
        table = plot_train.write_all(args.out)  # every run in --out, earlier ones too
        print(table)
    if world > 1:
        env["dist"].destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
