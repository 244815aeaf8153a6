"""bench/peers/peers.py: one training epoch of a peer system (DGL or PyG) on an offcore dataset,
timed per stage the way `offcore train --log` times its own epochs.

Run by bench/peers/run.sh inside the virtualenv that bench/peers/setup.sh builds; prints one JSON
object (stage seconds, sampled edges). With --sample-only it only iterates the loader over one
epoch (its sample seconds, sampled edges and batches), for the sampler-only comparison.

The dataset is read straight from offcore's .npy files through numpy (no conversion step on disk):
indptr/indices are the CSC in-neighbour lists, features.npy is loaded whole into RAM (as offcore's
`--strategy memory` does), labels and train_idx as they are.

Models follow DGL's and PyG's own examples and offcore's layer semantics (README, `offcore train`):
SAGE = SAGEConv('mean'), ReLU + dropout on hidden features; GCN = GraphConv(norm='both') with
self-loops (added to the graph before sampling, as DGL's GCN example does; PyG's GCNConv adds them
itself), ReLU + dropout; GAT = GATConv with `heads` heads in hidden layers (concatenated, ELU), one
head at the output, feature and attention dropout 0.6. Adam with the same learning rate.
Stages: sample (the loader's next batch), gather (feature rows of the input nodes), forward (model
and loss), backward, optimizer (Adam step).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def load(dirpath):
    def npy(name, mmap=None):
        return np.load(os.path.join(dirpath, name + ".npy"), mmap_mode=mmap)

    indptr = torch.from_numpy(npy("indptr").astype(np.int64))
    indices = torch.from_numpy(npy("indices").astype(np.int64))
    feats = torch.from_numpy(np.ascontiguousarray(npy("features")))
    labels = torch.from_numpy(npy("labels").astype(np.int64))
    train_idx = torch.from_numpy(npy("train_idx").astype(np.int64))
    return indptr, indices, feats, labels, train_idx


class Timer:
    def __init__(self):
        self.t = {k: 0.0 for k in ("sample_s", "gather_s", "forward_s", "backward_s", "optimizer_s")}

    def add(self, k, t0):
        t1 = time.perf_counter()
        self.t[k] += t1 - t0
        return t1


def sample_only(loader, count_edges):
    """The loader's epoch, sampling only: its batches' seconds and sampled edges."""
    tm, edges, batches = Timer(), 0, 0
    it = iter(loader)
    while True:
        t = time.perf_counter()
        try:
            b = next(it)
        except StopIteration:
            break
        tm.add("sample_s", t)
        edges += count_edges(b)
        batches += 1
    return tm.t, edges, batches


def run_dgl(a, data):
    import dgl
    import dgl.nn as dglnn

    indptr, indices, feats, labels, train_idx = data
    n = indptr.numel() - 1
    g = dgl.graph(("csc", (indptr, indices, torch.tensor([], dtype=torch.int64))), num_nodes=n)
    if a.model in ("gcn", "gat"):
        g = dgl.add_self_loop(dgl.remove_self_loop(g))
    sampler = dgl.dataloading.NeighborSampler(a.fanouts)
    loader = dgl.dataloading.DataLoader(g, train_idx, sampler, batch_size=a.batch, shuffle=True,
                                        drop_last=False, num_workers=0)
    if a.sample_only:
        return sample_only(loader, lambda b: sum(blk.num_edges() for blk in b[2]))
    n_cls = int(labels.max()) + 1
    dims = layer_dims(a, feats.shape[1], n_cls)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList()
            for i, (din, dout) in enumerate(dims):
                last = i == len(dims) - 1
                if a.model == "sage":
                    self.layers.append(dglnn.SAGEConv(din, dout, "mean"))
                elif a.model == "gcn":
                    self.layers.append(dglnn.GraphConv(din, dout, norm="both", allow_zero_in_degree=True))
                else:
                    h = 1 if last else a.heads
                    self.layers.append(dglnn.GATConv(din, dout // h, h, feat_drop=a.dropout,
                                                     attn_drop=a.dropout, allow_zero_in_degree=True))

        def forward(self, blocks, h):
            for i, (layer, block) in enumerate(zip(self.layers, blocks)):
                last = i == len(self.layers) - 1
                h = layer(block, h)
                if a.model == "gat":
                    h = h.mean(1) if last else F.elu(h.flatten(1))
                elif not last:
                    h = F.dropout(F.relu(h), a.dropout, self.training)
            return h

    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    tm, edges = Timer(), 0
    it = iter(loader)
    model.train()
    while True:
        t = time.perf_counter()
        try:
            input_nodes, seeds, blocks = next(it)
        except StopIteration:
            break
        t = tm.add("sample_s", t)
        edges += sum(b.num_edges() for b in blocks)
        x = feats[input_nodes]
        y = labels[seeds]
        t = tm.add("gather_s", t)
        loss = F.cross_entropy(model(blocks, x), y)
        t = tm.add("forward_s", t)
        opt.zero_grad()
        loss.backward()
        t = tm.add("backward_s", t)
        opt.step()
        tm.add("optimizer_s", t)
    return tm.t, edges, None


def run_pyg(a, data):
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader
    import torch_geometric.nn as pygnn

    indptr, indices, feats, labels, train_idx = data
    n = indptr.numel() - 1
    dst = torch.repeat_interleave(torch.arange(n), indptr[1:] - indptr[:-1])
    graph = Data(edge_index=torch.stack([indices, dst]), num_nodes=n)
    # PyG lists fanouts from the seeds outwards: offcore's (input layer first) reversed
    loader = NeighborLoader(graph, num_neighbors=list(reversed(a.fanouts)), input_nodes=train_idx,
                            batch_size=a.batch, shuffle=True)
    if a.sample_only:
        return sample_only(loader, lambda b: int(b.edge_index.shape[1]))
    n_cls = int(labels.max()) + 1
    dims = layer_dims(a, feats.shape[1], n_cls)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList()
            for i, (din, dout) in enumerate(dims):
                last = i == len(dims) - 1
                if a.model == "sage":
                    self.layers.append(pygnn.SAGEConv(din, dout, aggr="mean"))
                elif a.model == "gcn":
                    self.layers.append(pygnn.GCNConv(din, dout))
                else:
                    h = 1 if last else a.heads
                    self.layers.append(pygnn.GATConv(din, dout // h, heads=h, dropout=a.dropout))

        def forward(self, x, edge_index):
            for i, layer in enumerate(self.layers):
                last = i == len(self.layers) - 1
                if a.model == "gat":
                    x = F.dropout(x, a.dropout, self.training)
                x = layer(x, edge_index)
                if not last:
                    x = F.elu(x) if a.model == "gat" else F.dropout(F.relu(x), a.dropout, self.training)
            return x

    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    tm, edges = Timer(), 0
    it = iter(loader)
    model.train()
    while True:
        t = time.perf_counter()
        try:
            batch = next(it)
        except StopIteration:
            break
        t = tm.add("sample_s", t)
        edges += int(batch.edge_index.shape[1])
        x = feats[batch.n_id]
        y = labels[batch.n_id[: batch.batch_size]]
        t = tm.add("gather_s", t)
        out = model(x, batch.edge_index)[: batch.batch_size]
        loss = F.cross_entropy(out, y)
        t = tm.add("forward_s", t)
        opt.zero_grad()
        loss.backward()
        t = tm.add("backward_s", t)
        opt.step()
        tm.add("optimizer_s", t)
    return tm.t, edges, None


def layer_dims(a, feat_dim, n_cls):
    dims, din = [], feat_dim
    for i in range(len(a.fanouts)):
        last = i == len(a.fanouts) - 1
        dout = n_cls if last else (a.hidden * a.heads if a.model == "gat" else a.hidden)
        dims.append((din, dout))
        din = dout
    return dims


def main():
    p = argparse.ArgumentParser()
    p.add_argument("system", choices=["dgl", "pyg"])
    p.add_argument("dir")
    p.add_argument("--model", choices=["sage", "gcn", "gat"], required=True)
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--fanout", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--dropout", type=float, required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sample-only", action="store_true",
                   help="time the loader's sampling over one epoch, nothing else")
    a = p.parse_args()
    a.fanouts = [int(f) for f in a.fanout.split(",")]
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    data = load(a.dir)
    t0 = time.perf_counter()
    stages, edges, batches = (run_dgl if a.system == "dgl" else run_pyg)(a, data)
    out = {"system": a.system, "stages": stages, "sampled_edges": edges,
           "wall_s": time.perf_counter() - t0, "version": version(a.system)}
    if batches is not None:
        out["batches"] = batches
    json.dump(out, sys.stdout)
    print()


def version(system):
    if system == "dgl":
        import dgl
        return "dgl " + dgl.__version__ + ", torch " + torch.__version__
    import torch_geometric
    return "pyg " + torch_geometric.__version__ + ", torch " + torch.__version__


if __name__ == "__main__":
    main()
