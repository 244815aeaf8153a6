"""common.py — what the examples share: options (named and defaulted as `offcore train`'s),
the dataset (an offcore dataset directory, imported first from a text source with --from),
the loaders (training batches, a model called as model(x, blocks, input_ids) from the chosen strategy under the memory budget; exact
full-neighbor evaluation batches of the validation and test splits), the epoch loop with
Adam and the test accuracy (or --metric: rocauc, f1-macro, scored by offcore.metrics as
`offcore train --metric` scores them) at the best validation epoch (ties go to the later
epoch, as `offcore train` reports it).

Place: examples/ (pyg_sage.py, torch_gcn.py, torch_ddp.py import it); uses the offcore package
and torch.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))  # a checkout's package

import numpy as np  # noqa: E402
import torch  # noqa: E402

import offcore  # noqa: E402


def parse_args(description, defaults, add_options=None):
    """The options every example takes (defaults: a dict overriding some); add_options(p)
    adds an example's own."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("dataset", help="offcore dataset directory (imported there with --from)")
    p.add_argument("--from", dest="src", help="text dataset to import first (as `offcore "
                   "import text SRC DIR --row-normalize`), e.g. ../shared/datasets/cora")
    p.add_argument("--fanout", default=defaults.get("fanout", "-1,-1"),
                   help="neighbors per layer, input layer first; -1 = all")
    p.add_argument("--batch", type=int, default=defaults.get("batch", 1000))
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--input-dropout", type=float, default=defaults.get("input_dropout", 0.0))
    p.add_argument("--strategy", default="static", help="feature strategy: " +
                   ", ".join(offcore.strategies()))
    p.add_argument("--mem-budget", default="128M",
                   help="offcore's memory budget (features, topology, batches in flight)")
    p.add_argument("--store-bytes", default="8M",
                   help="cap on each loader's feature cache (three loaders share the budget)")
    p.add_argument("--eval-batch", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--metric", choices=offcore.metrics.METRICS, default="acc",
                   help="what is reported on val/test and maximized on val (as offcore "
                   "train --metric; rocauc: two classes only)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--quiet", action="store_true")
    if add_options:
        add_options(p)
    a = p.parse_args()
    a.fanout = [int(f) for f in a.fanout.split(",")]
    return a


def open_dataset(a):
    if a.src and not os.path.exists(a.dataset):
        return offcore.import_dataset(a.src, a.dataset, format="text", row_normalize=True)
    return offcore.Dataset(a.dataset)


def open_loaders(ds, a):
    """Exact evaluation (all neighbors) of the validation and test splits, then training
    batches: three loaders under one budget, each strategy caching at most --store-bytes
    (a strategy sizes its cache from what is left when it opens, and the loaders opened
    before still grow their sampling buffers)."""
    layers = len(a.fanout)
    evals = {s: offcore.Loader(ds, fanouts=[-1] * layers, batch_size=a.eval_batch,
                               strategy=a.strategy, mem_budget=a.mem_budget,
                               store_bytes=a.store_bytes, shuffle=False, split=s, depth=1,
                               epochs=a.epochs, threads=a.threads) for s in ("val", "test")}
    train = offcore.Loader(ds, fanouts=a.fanout, batch_size=a.batch, strategy=a.strategy,
                           mem_budget=a.mem_budget, store_bytes=a.store_bytes, seed=a.seed,
                           epochs=a.epochs, threads=a.threads)
    return train, evals


def evaluate(model, loader, metric):
    """The metric of the model's logits over the loader's (labelled) nodes."""
    model.eval()
    ys, outs = [], []
    with torch.no_grad():
        for b in loader:
            x, y, blocks = b.to_torch()
            keep = y >= 0
            ys.append(y[keep].numpy())
            outs.append(model(x, blocks, input_ids(b))[keep].numpy())
    if not ys:
        return 0.0
    return offcore.metrics.score(metric, np.concatenate(ys), np.concatenate(outs))


def train(model, ds, a):
    """Trains; returns the test --metric at the best validation --metric."""
    torch.manual_seed(a.seed)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    train_loader, evals = open_loaders(ds, a)
    best_val, test_at_best = -1.0, 0.0
    for epoch in range(a.epochs):
        t0 = time.time()
        model.train()
        loss_sum = n = 0
        for b in train_loader:
            x, y, blocks = b.to_torch()
            loss = torch.nn.functional.cross_entropy(model(x, blocks, input_ids(b)), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            loss_sum += float(loss) * len(y)
            n += len(y)
        t1 = time.time()
        val, test = evaluate(model, evals["val"], a.metric), evaluate(model, evals["test"],
                                                                     a.metric)
        if val >= best_val:
            best_val, test_at_best = val, test
        if not a.quiet:
            label = offcore.metrics.LABELS[a.metric]
            print("Epoch %05d | Loss %.4f | Val %s %.4f | Test %s %.4f | Time %.2fs"
                  % (epoch, loss_sum / max(n, 1), label, val, label, test, t1 - t0))
    st = train_loader.stats()
    print("test %s at best val: %.4f (val %.4f); offcore: %d batches, %s requested, "
          "%s read from disk, peak %s" % ("accuracy" if a.metric == "acc" else a.metric,
                                          test_at_best, best_val, st["n_fetched"],
                                          size(st["requested_bytes"]), size(st["read_bytes"]),
                                          size(st["mem_peak_bytes"])))
    for lo in (train_loader, *evals.values()):
        lo.close()
    return test_at_best


def input_ids(batch):
    """The batch's input node ids as an int64 tensor (a copy)."""
    return torch.from_numpy(batch.input_ids.astype(np.int64))


def size(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return "%.1f %s" % (n, unit)
        n /= 1024.0


def dropout(h, p, training):
    return torch.nn.functional.dropout(h, p, training) if p > 0 else h


def edges(block):
    """Local (source, destination) ids of a block's edges."""
    return block["edge_index"][0], block["edge_index"][1]


def mean_neighbors(h, block):
    """Mean of each destination's sampled in-neighbors' rows (0 without neighbors)."""
    src, dst = edges(block)
    agg = torch.zeros(block["n_dst"], h.shape[1], dtype=h.dtype).index_add_(0, dst, h[src])
    deg = torch.bincount(dst, minlength=block["n_dst"]).clamp(min=1).unsqueeze(1)
    return agg / deg.to(h.dtype)


def graph_degrees(ds):
    """Whole-graph in-degrees (indptr differences) as a float tensor, for GCN's norm."""
    indptr = np.load(os.path.join(ds.path, "indptr.npy"), mmap_mode="r")
    return torch.from_numpy(np.diff(indptr).astype(np.float32))
