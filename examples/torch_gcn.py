"""torch_gcn.py — GCN (Kipf & Welling; DGL's GraphConv norm='both' with self-loops, whole-
graph degrees) written in plain PyTorch, trained on offcore's loader: features from the
chosen strategy under a memory budget, batches from offcore's sampler, zero-copy. Defaults
follow `offcore train --model gcn` (fanout -1,-1, lr 0.01, weight decay 5e-4, 200 epochs):

    python examples/torch_gcn.py /tmp/cora-py --from ../shared/datasets/cora

Place: examples/ (common.py: options, loaders, the epoch loop).
"""
import torch

import common


class GraphConv(torch.nn.Module):
    """out_i = W sum_{j in N(i) + i} h_j / sqrt((d_j + 1)(d_i + 1)) + b, d = graph degree."""

    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = torch.nn.Linear(d_in, d_out)

    def forward(self, h, block, norm):
        src, dst = common.edges(block)
        n_dst = block["n_dst"]
        hs = h * norm[:h.shape[0]].unsqueeze(1)  # sources scaled by 1/sqrt(d_j + 1)
        agg = hs[:n_dst].clone().index_add_(0, dst, hs[src])  # self-loop + neighbors
        return self.lin(agg * norm[:n_dst].unsqueeze(1))


class GCN(torch.nn.Module):
    def __init__(self, d_in, hidden, n_classes, n_layers, dropout, input_dropout, degrees):
        super().__init__()
        dims = [d_in] + [hidden] * (n_layers - 1) + [n_classes]
        self.layers = torch.nn.ModuleList(GraphConv(dims[k], dims[k + 1])
                                          for k in range(n_layers))
        self.dropout, self.input_dropout = dropout, input_dropout
        self.inv_sqrt = (degrees + 1).rsqrt()

    def forward(self, x, blocks, ids):
        norm = self.inv_sqrt[ids]  # per input row, in the batch's order
        h = common.dropout(x, self.input_dropout, self.training)
        for k, (layer, block) in enumerate(zip(self.layers, blocks)):
            h = layer(h, block, norm)
            if k + 1 < len(self.layers):
                h = common.dropout(torch.relu(h), self.dropout, self.training)
        return h


def main():
    a = common.parse_args("GCN in PyTorch on offcore's loader", {"batch": 1024})
    ds = common.open_dataset(a)
    torch.manual_seed(a.seed)
    model = GCN(ds.feat_dim, a.hidden, ds.n_classes, len(a.fanout), a.dropout,
                a.input_dropout, common.graph_degrees(ds))
    print("%s: GCN, %d layers, strategy %s, budget %s" % (ds.name, len(a.fanout), a.strategy,
                                                          a.mem_budget))
    common.train(model, ds, a)


if __name__ == "__main__":
    main()
