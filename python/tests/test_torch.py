"""test_torch.py — torch interop (skipped when torch is not installed: CI does not install
it, its PyPI wheels pull gigabytes of CUDA libraries): to_torch shares offcore's buffer,
and a small GraphSAGE trains on the loader's batches (the loss falls).
"""
import numpy as np
import pytest

import offcore

torch = pytest.importorskip("torch", reason="torch is not installed: torch interop untested")


def test_to_torch_shares_memory(gen_ds):
    with offcore.Loader(gen_ds, fanouts=[3, 3], batch_size=64) as loader:
        b = next(iter(loader))
        x, y, blocks = b.to_torch()
        assert x.data_ptr() == b.x.ctypes.data and x.dtype == torch.float32
        assert y.dtype == torch.int64 and y.shape[0] == b.n_seeds
        assert blocks[0]["edge_index"].shape == (2, b.blocks[0].n_edges)
        assert torch.equal(torch.from_numpy(b.x.copy()), x)


def test_a_model_trains(gen_ds):
    torch.manual_seed(0)
    lins = torch.nn.ModuleList([torch.nn.Linear(2 * gen_ds.feat_dim, 32),
                                torch.nn.Linear(64, gen_ds.n_classes)])
    opt = torch.optim.Adam(lins.parameters(), lr=0.01)

    def forward(x, blocks):
        h = x
        for i, (lin, k) in enumerate(zip(lins, blocks)):
            src, dst = k["edge_index"]
            agg = torch.zeros(k["n_dst"], h.shape[1]).index_add_(0, dst, h[src])
            deg = torch.bincount(dst, minlength=k["n_dst"]).clamp(min=1).unsqueeze(1)
            h = lin(torch.cat([h[:k["n_dst"]], agg / deg], 1))
            if i + 1 < len(blocks):
                h = torch.relu(h)
        return h

    losses = []
    with offcore.Loader(gen_ds, fanouts=[5, 5], batch_size=128, epochs=5) as loader:
        for _ in range(5):
            total = 0.0
            for b in loader:
                x, y, blocks = b.to_torch()
                loss = torch.nn.functional.cross_entropy(forward(x, blocks), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += float(loss)
            losses.append(total)
    assert losses[-1] < losses[0]
