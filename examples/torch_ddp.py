"""torch_ddp.py — GraphSAGE (pyg_sage.py's plain-torch layers) trained data-parallel with
torch.distributed (gloo, CPU) and DistributedDataParallel on offcore's loader. Each of the
N processes opens offcore.Loader(..., rank=r, world_size=N) and gets its share of the same
global batches one process would draw (same seed, same order). The N processes follow the
loss curve of one process (--world-size 1) up to float rounding, for two reasons:

- The loss is scaled so that DDP's gradient (the mean over the ranks) is one process's
  gradient on the whole batch: a rank's loss is its share's summed cross-entropy x N / C,
  C the global batch's labelled seeds (an all-reduce of the shares' counts), so the mean over
  the ranks is the sum of the shares' cross-entropies / C, the batch's mean cross-entropy.
- Dropout masks are drawn per (seed, epoch, batch, layer, node, column), not per row: a node
  held by two shares (or by the global batch) is dropped alike in each.

One command starts the N processes (torch.multiprocessing.spawn, a file rendezvous in a
temporary directory, so no port is needed); rank 0 prints the loss of each epoch over all
ranks' seeds and evaluates (exact, full-neighbor) on the validation and test splits:

    build/offcore generate /tmp/gen20k --nodes 20000 --feat-dim 64 --classes 8 --quiet
    python examples/torch_ddp.py /tmp/gen20k --world-size 2 --epochs 10

Every process samples and gathers the whole batch under its own --mem-budget (features
replicated: API.md, "Data-parallel shares"); the ranks exchange only gradients and counts.

Place: examples/ (common.py: options, the dataset, evaluation; pyg_sage.py: the layer).
"""
import os
import shutil
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import common
import offcore
from pyg_sage import TorchSAGEConv

MASK64 = (1 << 64) - 1


def signed64(v):
    """v mod 2^64 as a signed int64 (torch's integer ops wrap around)."""
    v &= MASK64
    return v - (1 << 64) if v >> 63 else v


def mix(z):
    """splitmix64's finalizer on an int64 tensor (logical shifts, wrapping products)."""
    z = z ^ ((z >> 30) & ((1 << 34) - 1))
    z = z * signed64(0xBF58476D1CE4E5B9)
    z = z ^ ((z >> 27) & ((1 << 37) - 1))
    z = z * signed64(0x94D049BB133111EB)
    return z ^ ((z >> 31) & ((1 << 33) - 1))


def node_dropout(h, ids, p, key):
    """Dropout of h's rows (global node ids `ids`) whose mask is a function of (key, node,
    column), not of the row's place: every share holding a node drops its row alike."""
    if p <= 0:
        return h
    cols = torch.arange(h.shape[1], dtype=torch.int64)
    z = mix(ids[:h.shape[0]].unsqueeze(1) * signed64(0x9E3779B97F4A7C15) + key)
    z = mix(z + cols * signed64(0xD1B54A32D192ED03))
    u = ((z >> 40) & ((1 << 24) - 1)).to(torch.float32) / float(1 << 24)  # uniform [0, 1)
    return h * (u >= p).to(h.dtype) / (1.0 - p)


def dropout_key(seed, epoch, index, layer):
    """The stream of one layer of one batch (signed int64)."""
    k = 0
    for v in (seed, epoch, index, layer):
        k = (k * 0x100000001B3 + v + 1) & MASK64
    return signed64(k)


class SAGE(torch.nn.Module):
    """pyg_sage.py's plain-torch GraphSAGE with node-keyed dropout (node_dropout)."""

    def __init__(self, d_in, hidden, n_classes, n_layers, dropout, input_dropout, seed):
        super().__init__()
        dims = [d_in] + [hidden] * (n_layers - 1) + [n_classes]
        self.layers = torch.nn.ModuleList(TorchSAGEConv(dims[k], dims[k + 1])
                                          for k in range(n_layers))
        self.dropout, self.input_dropout, self.seed = dropout, input_dropout, seed

    def forward(self, x, blocks, ids, epoch=0, index=0):
        drop = self.training
        h = node_dropout(x, ids, self.input_dropout if drop else 0.0,
                         dropout_key(self.seed, epoch, index, 0))
        for k, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(h, block)
            if k + 1 < len(self.layers):
                h = node_dropout(torch.relu(h), ids, self.dropout if drop else 0.0,
                                 dropout_key(self.seed, epoch, index, k + 1))
        return h


def all_sum(values):
    """The sum over the ranks of a list of floats (float64, every rank gets it)."""
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t)
    return t.tolist()


def train_batch(ddp, opt, b, world_size):
    """One step on this rank's share of a global batch; returns (summed loss, labelled
    seeds) of the share."""
    x, y, blocks = b.to_torch()
    out = ddp(x, blocks, common.input_ids(b), b.epoch, b.index)
    n_share = int((y >= 0).sum())
    n_global = all_sum([n_share])[0]  # C: the global batch's labelled seeds
    loss_sum = torch.nn.functional.cross_entropy(out, y, ignore_index=-1, reduction="sum")
    opt.zero_grad()
    # DDP averages the ranks' gradients: x world_size / C makes the mean sum / C
    (loss_sum * (world_size / max(n_global, 1.0))).backward()
    opt.step()
    return float(loss_sum.detach()), n_share


def open_eval_loaders(ds, a):
    """Exact (all-neighbor) evaluation of the validation and test splits (rank 0 only)."""
    return {s: offcore.Loader(ds, fanouts=[-1] * len(a.fanout), batch_size=a.eval_batch,
                              strategy=a.strategy, mem_budget=a.mem_budget,
                              store_bytes=a.store_bytes, shuffle=False, split=s, depth=1,
                              epochs=a.epochs, threads=a.threads) for s in ("val", "test")}


def run(rank, a, rendezvous):
    """One rank: joins the group, trains --epochs on its shares, rank 0 reports."""
    dist.init_process_group("gloo", init_method="file://" + rendezvous, rank=rank,
                            world_size=a.world_size)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // a.world_size))
    ds = common.open_dataset(a) if rank == 0 else None  # rank 0 imports --from
    dist.barrier()
    ds = ds if ds is not None else offcore.Dataset(a.dataset)
    torch.manual_seed(a.seed)
    model = SAGE(ds.feat_dim, a.hidden, ds.n_classes, len(a.fanout), a.dropout,
                 a.input_dropout, a.seed)
    ddp = torch.nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's weights
    opt = torch.optim.Adam(ddp.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    evals = open_eval_loaders(ds, a) if rank == 0 and not a.no_eval else {}
    loader = offcore.Loader(ds, fanouts=a.fanout, batch_size=a.batch, strategy=a.strategy,
                            mem_budget=a.mem_budget, store_bytes=a.store_bytes, seed=a.seed,
                            epochs=a.epochs, threads=a.threads, rank=rank,
                            world_size=a.world_size)
    if rank == 0:
        print("%s: GraphSAGE, %d layers, %d ranks (gloo), strategy %s, budget %s per rank"
              % (ds.name, len(a.fanout), a.world_size, a.strategy, a.mem_budget), flush=True)
    best_val, test_at_best = -1.0, 0.0
    for epoch in range(a.epochs):
        t0 = time.time()
        ddp.train()
        loss_sum = n = 0
        for b in loader:
            s, c = train_batch(ddp, opt, b, a.world_size)
            loss_sum, n = loss_sum + s, n + c
        loss_sum, n = all_sum([loss_sum, n])
        if rank == 0:
            line = "Epoch %05d | Loss %.8f" % (epoch, loss_sum / max(n, 1))
            if evals:
                val = common.evaluate(model, evals["val"], a.metric)
                test = common.evaluate(model, evals["test"], a.metric)
                if val >= best_val:
                    best_val, test_at_best = val, test
                label = offcore.metrics.LABELS[a.metric]
                line += " | Val %s %.4f | Test %s %.4f" % (label, val, label, test)
            print(line + " | Time %.2fs" % (time.time() - t0), flush=True)
    if rank == 0 and evals:
        print("test %s at best val: %.4f (val %.4f)" % (
            "accuracy" if a.metric == "acc" else a.metric, test_at_best, best_val))
    for lo in (loader, *evals.values()):
        lo.close()
    dist.destroy_process_group()


def add_options(p):
    p.add_argument("--world-size", type=int, default=2,
                   help="processes (ranks) to start on this machine, each its own share")
    p.add_argument("--no-eval", action="store_true",
                   help="no validation/test evaluation (the loss curve only)")


def main():
    a = common.parse_args("GraphSAGE, data-parallel (torch.distributed gloo + DDP) on "
                          "offcore's loader", {"fanout": "10,25", "batch": 1000},
                          add_options)
    if a.world_size < 1:
        raise SystemExit("torch_ddp.py: --world-size must be 1 or more, not %d" % a.world_size)
    if not dist.is_available() or not dist.is_gloo_available():
        raise SystemExit("torch_ddp.py: this torch has no torch.distributed gloo backend")
    tmp = tempfile.mkdtemp(prefix="offcore-ddp-")
    try:
        mp.spawn(run, args=(a, os.path.join(tmp, "rendezvous")), nprocs=a.world_size)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
