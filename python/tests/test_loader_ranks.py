"""test_loader_ranks.py — Loader(..., rank=r, world_size=n) for data-parallel training: for
every batch the n ranks' seeds, rank after rank, are the single loader's seeds in order; each
share is a valid sub-batch (blocks chained, its destinations' edges exactly the global batch's,
rows equal to features.npy, labels the seeds'); n = 1 is the plain loader; shares kept while
later ones are taken stay intact; a bad rank or world_size is refused with a clear error.
"""
import numpy as np
import pytest

import offcore

FANOUTS = [4, 3]
OPTS = dict(fanouts=FANOUTS, batch_size=64, seed=11, epochs=2, threads=2)


def batches(ds, **kw):
    """Every batch of two epochs as (epoch, index, n_seeds, input_ids, blocks, x, y), copied."""
    out = []
    with offcore.Loader(ds, **OPTS, **kw) as loader:
        for _ in range(2):
            for b in loader:
                out.append((b.epoch, b.index, b.n_seeds, b.input_ids.copy(),
                            [(k.indptr.copy(), k.indices.copy(), k.n_src, k.n_dst)
                             for k in b.blocks], b.x.copy(), b.y.copy()))
    return out


def edges_of(ids, blocks, layer):
    """{global destination id: its sources' global ids in the block's order} of one layer."""
    indptr, indices, _, n_dst = blocks[layer]
    return {int(ids[d]): ids[indices[indptr[d]:indptr[d + 1]].astype(np.int64)].tolist()
            for d in range(n_dst)}


def check_share(share, whole, feats, labels):
    e, i, n_seeds, ids, blocks, x, y = share
    assert len(blocks) == len(FANOUTS) and blocks[0][2] == len(ids)
    assert blocks[-1][3] == n_seeds
    for lo, hi in zip(blocks, blocks[1:]):  # layer l's destinations are layer l+1's sources
        assert lo[3] == hi[2]
    for layer, (indptr, indices, n_src, n_dst) in enumerate(blocks):
        assert len(indptr) == n_dst + 1 and indptr[-1] == len(indices)
        assert (np.diff(indptr.astype(np.int64)) >= 0).all() and (indices < n_src).all()
        want = edges_of(whole[3], whole[4], layer)
        for v, srcs in edges_of(ids, blocks, layer).items():
            assert want[v] == srcs  # the very edges the global batch sampled, in its order
    assert np.array_equal(x, feats[ids.astype(np.int64)])
    assert np.array_equal(y, labels[ids[:n_seeds].astype(np.int64)])


@pytest.mark.parametrize("n", [2, 3])
def test_the_ranks_shares_are_the_global_batch_in_order(gen_ds, ref, n):
    whole = batches(gen_ds)
    shares = [batches(gen_ds, rank=r, world_size=n) for r in range(n)]
    assert all(len(s) == len(whole) for s in shares)  # every rank gets every batch
    for k, w in enumerate(whole):
        parts = [s[k] for s in shares]
        assert all(p[:2] == w[:2] for p in parts)  # the same epoch and batch index
        seeds = np.concatenate([p[3][:p[2]] for p in parts])
        assert np.array_equal(seeds, w[3][:w[2]])
        for r, p in enumerate(parts):  # the trainer's micro-shard rule: [B r / n, B (r+1) / n)
            assert p[2] == w[2] * (r + 1) // n - w[2] * r // n
            check_share(p, w, ref["features"], ref["labels"])


def test_one_rank_is_the_plain_loader(gen_ds):
    plain, one = batches(gen_ds), batches(gen_ds, rank=0, world_size=1)
    assert len(plain) == len(one)
    for a, b in zip(plain, one):
        assert a[:3] == b[:3] and np.array_equal(a[3], b[3]) and np.array_equal(a[5], b[5])
        for (p, q, s, d), (p2, q2, s2, d2) in zip(a[4], b[4]):
            assert np.array_equal(p, p2) and np.array_equal(q, q2) and (s, d) == (s2, d2)


def test_kept_shares_stay_intact_while_later_ones_are_taken(gen_ds, ref):
    with offcore.Loader(gen_ds, **OPTS, rank=1, world_size=2) as loader:
        assert loader.keep >= 1
        kept = []
        for b in loader:
            kept.append((b, b.input_ids.copy(), b.x.copy()))
            kept = [k for k in kept if k[0].valid]
            if len(kept) > 1 and b.index % 3 == 0:
                kept[0][0].release()  # out of order: the oldest goes before the newest
            for k, ids, x in kept:
                if k.valid:
                    assert np.array_equal(k.input_ids, ids) and np.array_equal(k.x, x)
                    assert np.array_equal(k.x, ref["features"][ids.astype(np.int64)])


@pytest.mark.parametrize("rank, world_size, what", [
    (2, 2, "rank 2 of world_size 2"),
    (0, 0, "rank 0 of world_size 0"),
])
def test_a_rank_outside_the_world_is_refused(gen_ds, rank, world_size, what):
    with pytest.raises(ValueError, match=what):
        offcore.Loader(gen_ds, **OPTS, rank=rank, world_size=world_size)


@pytest.mark.parametrize("kw", [dict(rank=-1, world_size=2), dict(rank=0, world_size=-2),
                                dict(rank=0.5, world_size=2)])
def test_a_negative_or_fractional_rank_is_refused(gen_ds, kw):
    with pytest.raises(ValueError, match="rank|world_size"):
        offcore.Loader(gen_ds, **OPTS, **kw)
