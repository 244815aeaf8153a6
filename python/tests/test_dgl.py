"""test_dgl.py — to_dgl() gives DGL blocks with the batch's nodes and edges (skipped when dgl
is not installed: CI does not install it).
"""
import numpy as np
import pytest

import offcore

dgl = pytest.importorskip("dgl", reason="dgl is not installed: to_dgl untested")


def test_to_dgl_blocks_hold_the_batchs_edges(gen_ds):
    with offcore.Loader(gen_ds, fanouts=[3, 4], batch_size=64) as loader:
        b = next(iter(loader))
        blocks = b.to_dgl()
        assert len(blocks) == len(b.blocks)
        for g, k in zip(blocks, b.blocks):
            assert (g.num_src_nodes(), g.num_dst_nodes(), g.num_edges()) == \
                (k.n_src, k.n_dst, k.n_edges)
            src, dst = g.edges()
            assert np.array_equal(np.stack([src.numpy(), dst.numpy()]), k.edge_index())
