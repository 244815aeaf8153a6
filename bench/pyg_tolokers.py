#!/usr/bin/env python3
"""pyg_tolokers.py — Tolokers ROC-AUC: PyG's GCN against `offcore train --model gcn --metric
rocauc` with the same hyper-parameters and split, over several seeds; prints each run's test
ROC-AUC at the best validation ROC-AUC and both means (docs/RESULTS.md has the figures).

    python3 -m venv /tmp/pyg && /tmp/pyg/bin/pip install torch torch_geometric scikit-learn
    /tmp/pyg/bin/python bench/pyg_tolokers.py --offcore build/offcore [--seeds 5]
        [--split 0] [--hidden 64] [--layers 2] [--lr 0.01] [--weight-decay 5e-4]
        [--dropout 0.5] [--epochs 200] [--src ../shared/datasets/tolokers]

Both train full-batch on the same graph and split (the text source's splits/split_K.txt):
  offcore: `import text SRC DIR --split K`, then `train DIR --model gcn --metric rocauc
           --batch <n_train> --fanout -1,-1 --eval full`: one batch of every training node
           per epoch whose 2-hop neighbourhood is the graph, GraphConv norm='both' with
           self-loops on whole-graph degrees, so its gradient is the full-graph one, and exact
           full-neighbour inference for evaluation.
  PyG:     GCNConv (symmetric normalization with self-loops, as offcore) x layers on the
           whole graph (a sparse CSR adjacency: GCNConv's SpMM path), ReLU and dropout between layers, cross-entropy over the training
           nodes, Adam with the same L2 weight decay on every parameter.
Both evaluate after every epoch, score class 1 by logit[1] - logit[0] (PyG: sklearn's
roc_auc_score when installed, else offcore.metrics), keep the last epoch with the highest
validation ROC-AUC and report the test ROC-AUC there. They differ in the random numbers
(weight init, dropout masks), not in the data, model or schedule. torch runs one thread and
offcore --threads 1: the machine is shared.

Place: bench/ (never run by ctest; needs torch and torch_geometric).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--src", default=os.path.join(REPO, "..", "shared", "datasets", "tolokers"))
    p.add_argument("--split", type=int, default=0)
    p.add_argument("--offcore", help="the offcore binary (omit to run PyG only)")
    p.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "pyg-tolokers"),
                   help="where offcore's import and logs go")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--skip-pyg", action="store_true", help="run offcore only")
    return p.parse_args()


def load_text(src, split):
    """Edges (both directions), features, labels and the train/val/test ids of split K."""
    meta = dict(line.split() for line in open(os.path.join(src, "meta.txt")) if line.strip())
    n, f = int(meta["num_nodes"]), int(meta["num_features"])
    e = np.loadtxt(os.path.join(src, "edges.txt"), dtype=np.int64).reshape(-1, 2)
    e = e[e[:, 0] != e[:, 1]]
    edge_index = np.unique(np.concatenate([e, e[:, ::-1]]), axis=0).T  # symmetric, no dups
    x = np.zeros((n, f), dtype=np.float32)
    coo = np.loadtxt(os.path.join(src, "features.txt"), dtype=np.float64).reshape(-1, 3)
    x[coo[:, 0].astype(np.int64), coo[:, 1].astype(np.int64)] = coo[:, 2]
    y = np.loadtxt(os.path.join(src, "labels.txt"), dtype=np.int64)
    role = np.loadtxt(os.path.join(src, "splits", "split_%d.txt" % split), dtype=np.int64)
    ids = [np.flatnonzero(role == r) for r in range(3)]
    return edge_index, x, y, ids


def rocauc(y, score):
    try:
        from sklearn.metrics import roc_auc_score
        return float(roc_auc_score(y, score))
    except ImportError:
        sys.path.insert(0, os.path.join(REPO, "python"))
        from offcore import metrics  # numpy only: no liboffcore needed
        return metrics.roc_auc(y, score)


def run_pyg(a, data, seed):
    import warnings

    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv

    warnings.filterwarnings("ignore", message=".*[Ss]parse (CSR tensor support|invariant checks)")
    from torch_geometric.utils import to_torch_csr_tensor

    edge_index, x, y, (tr, va, te) = data
    torch.manual_seed(seed)
    np.random.seed(seed)
    # the adjacency as a sparse CSR matrix (GCNConv's sparse path: one SpMM per layer instead
    # of a 1M x hidden message tensor per layer; the same normalization and sums)
    ei = to_torch_csr_tensor(torch.from_numpy(edge_index), size=(x.shape[0], x.shape[0]))
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    dims = [x.shape[1]] + [a.hidden] * (a.layers - 1) + [int(y.max()) + 1]

    class GCN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList(GCNConv(dims[k], dims[k + 1], cached=True)
                                             for k in range(a.layers))

        def forward(self, h):
            for k, conv in enumerate(self.convs):
                h = conv(h, ei)
                if k + 1 < len(self.convs):
                    h = F.dropout(F.relu(h), a.dropout, self.training)
            return h

    model = GCN()
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    trt = torch.from_numpy(tr)
    best_val, test_at_best, best_epoch = -1.0, 0.0, -1
    for epoch in range(a.epochs):
        model.train()
        opt.zero_grad()
        loss = F.cross_entropy(model(xt)[trt], yt[trt])
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            out = model(xt).double()
        score = (out[:, 1] - out[:, 0]).numpy()
        val, test = rocauc(y[va], score[va]), rocauc(y[te], score[te])
        if val >= best_val:
            best_val, test_at_best, best_epoch = val, test, epoch
    return test_at_best, best_val, best_epoch


def run_offcore(a, n_train, seed):
    ds = os.path.join(a.work, "tolokers-split%d" % a.split)
    if not os.path.exists(ds):
        subprocess.run([a.offcore, "import", "text", a.src, ds, "--split", str(a.split),
                        "--quiet"], check=True)
    log = os.path.join(a.work, "offcore-seed%d.jsonl" % seed)
    cmd = [a.offcore, "train", ds, "--model", "gcn", "--metric", "rocauc", "--eval", "full",
           "--layers", str(a.layers), "--fanout", ",".join(["-1"] * a.layers),
           "--hidden", str(a.hidden), "--batch", str(n_train), "--epochs", str(a.epochs),
           "--lr", repr(a.lr), "--weight-decay", repr(a.weight_decay),
           "--dropout", repr(a.dropout), "--input-dropout", "0", "--seed", str(seed),
           "--threads", "1", "--quiet", "--log", log]
    if seed == 0:
        print("offcore:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    final = json.loads(open(log).read().splitlines()[-1])
    return final["test_rocauc_at_best_val"], final["best_val_rocauc"], final["best_epoch"]


def summary(name, runs):
    t = np.array([r[0] for r in runs]) * 100
    print("%-8s test ROC-AUC %.2f +- %.2f (np.std over %d seeds: %s)"
          % (name, t.mean(), t.std(), len(t), ", ".join("%.2f" % v for v in t)), flush=True)
    return t.mean()


def main():
    a = parse_args()
    os.makedirs(a.work, exist_ok=True)
    data = load_text(a.src, a.split)
    n_train = len(data[3][0])
    print("tolokers split %d: %d nodes, %d directed edges, train/val/test %d/%d/%d; GCN %d "
          "layers, hidden %d, lr %g, weight decay %g, dropout %g, %d epochs, full batch"
          % (a.split, data[1].shape[0], data[0].shape[1], *(len(i) for i in data[3]),
             a.layers, a.hidden, a.lr, a.weight_decay, a.dropout, a.epochs), flush=True)
    means = {}
    if a.offcore:
        runs = []
        for seed in range(a.seeds):
            t0 = time.time()
            runs.append(run_offcore(a, n_train, seed))
            print("  offcore seed %d: test %.4f at epoch %d (val %.4f), %.0fs"
                  % (seed, runs[-1][0], runs[-1][2], runs[-1][1], time.time() - t0), flush=True)
        means["offcore"] = summary("offcore", runs)
    if not a.skip_pyg:
        import torch
        import torch_geometric
        torch.set_num_threads(1)
        print("PyG %s, torch %s" % (torch_geometric.__version__, torch.__version__), flush=True)
        runs = []
        for seed in range(a.seeds):
            t0 = time.time()
            runs.append(run_pyg(a, data, seed))
            print("  PyG seed %d: test %.4f at epoch %d (val %.4f), %.0fs"
                  % (seed, runs[-1][0], runs[-1][2], runs[-1][1], time.time() - t0), flush=True)
        means["PyG"] = summary("PyG", runs)
    if len(means) == 2:
        print("difference of the means (offcore - PyG): %+.2f points"
              % (means["offcore"] - means["PyG"]))


if __name__ == "__main__":
    main()
