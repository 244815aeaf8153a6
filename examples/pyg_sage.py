"""pyg_sage.py — GraphSAGE (mean aggregator, DGL's SAGEConv / PyG's SAGEConv) written in
PyTorch, trained on offcore's loader: features come from the chosen strategy under a memory
budget, batches from offcore's sampler and pipeline, zero-copy. With torch_geometric
installed the layers are PyG's SAGEConv over each hop's edge_index; without it, the same
math in plain torch. Defaults follow `offcore train --model sage --fanout -1,-1 --lr 0.01
--weight-decay 5e-4 --epochs 200 --input-dropout 0.5` (docs/CLI.md's Planetoid recipe):

    python examples/pyg_sage.py /tmp/cora-py --from ../shared/datasets/cora

Place: examples/ (common.py: options, loaders, the epoch loop).
"""
import torch

import common

try:
    from torch_geometric.nn import SAGEConv
except ImportError:
    SAGEConv = None


class TorchSAGEConv(torch.nn.Module):
    """out = W_self x_dst + W_neigh mean(x_src over in-neighbors) + b."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc_self = torch.nn.Linear(d_in, d_out)
        self.fc_neigh = torch.nn.Linear(d_in, d_out, bias=False)

    def forward(self, h, block):
        return self.fc_self(h[:block["n_dst"]]) + self.fc_neigh(common.mean_neighbors(h, block))


class SAGE(torch.nn.Module):
    def __init__(self, d_in, hidden, n_classes, n_layers, dropout, input_dropout):
        super().__init__()
        dims = [d_in] + [hidden] * (n_layers - 1) + [n_classes]
        conv = (lambda i, o: SAGEConv((i, i), o, aggr="mean")) if SAGEConv else TorchSAGEConv
        self.layers = torch.nn.ModuleList(conv(dims[k], dims[k + 1]) for k in range(n_layers))
        self.dropout, self.input_dropout = dropout, input_dropout

    def forward(self, x, blocks, ids):
        h = common.dropout(x, self.input_dropout, self.training)
        for k, (layer, block) in enumerate(zip(self.layers, blocks)):
            if SAGEConv:
                h = layer((h, h[:block["n_dst"]]), block["edge_index"])
            else:
                h = layer(h, block)
            if k + 1 < len(self.layers):
                h = common.dropout(torch.relu(h), self.dropout, self.training)
        return h


def main():
    a = common.parse_args("GraphSAGE in PyTorch on offcore's loader",
                          {"fanout": "-1,-1", "input_dropout": 0.5})
    ds = common.open_dataset(a)
    torch.manual_seed(a.seed)
    model = SAGE(ds.feat_dim, a.hidden, ds.n_classes, len(a.fanout), a.dropout,
                 a.input_dropout)
    print("%s: %s layers, %s, strategy %s, budget %s" % (
        ds.name, len(a.fanout), "PyG SAGEConv" if SAGEConv else "plain-torch SAGEConv",
        a.strategy, a.mem_budget))
    common.train(model, ds, a)


if __name__ == "__main__":
    main()
