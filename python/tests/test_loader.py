"""test_loader.py — the Loader's batches: equal to the C sampler's for the same (seed, epoch,
batch) under every strategy, consistent with the graph files read by numpy (every sampled
edge exists, fanouts hold, seeds cover the split), feature rows equal to features.npy for
every strategy (also under a memory budget, and f16 files widened to f32), shuffle and splits, and zero-copy views.
"""
import numpy as np
import pytest

import offcore

FANOUTS = [4, 3]


def batches_of(loader):
    """Per batch: input ids, blocks (indptr, indices) and x, copied (for comparisons)."""
    out = []
    for b in loader:
        out.append((b.index, b.input_ids.copy(), [(k.indptr.copy(), k.indices.copy())
                                                   for k in b.blocks], b.x.copy(), b.n_seeds))
    return out


@pytest.mark.parametrize("strategy", offcore.strategies())
def test_every_strategy_gives_the_c_samplers_batches_and_the_files_rows(gen_ds, ref, strategy):
    feats = ref["features"]
    with offcore.Loader(gen_ds, fanouts=FANOUTS, batch_size=64, strategy=strategy, seed=11,
                        epochs=2, threads=2) as loader:
        assert len(loader) == (len(ref["train"]) + 63) // 64
        for epoch in range(2):
            n = 0
            for b in loader:
                assert b.epoch == epoch
                want = loader.sample(epoch, b.index)  # the C sampler, on this thread
                assert np.array_equal(want["input_ids"], b.input_ids)
                assert want["n_seeds"] == b.n_seeds
                for (indptr, indices, n_src, n_dst), k in zip(want["blocks"], b.blocks):
                    assert (n_src, n_dst) == (k.n_src, k.n_dst)
                    assert np.array_equal(indptr, k.indptr)
                    assert np.array_equal(indices, k.indices)
                assert b.x.dtype == np.float32 and b.x.shape == (b.n_input, gen_ds.feat_dim)
                assert np.array_equal(b.x, feats[b.input_ids.astype(np.int64)])
                n += 1
            assert n == len(loader)


@pytest.mark.parametrize("strategy", ["memory", "mmap", "direct", "static"])
def test_f16_features_widen_to_the_files_values(f16_ds, strategy):
    ds = f16_ds
    feats = np.load(ds.path + "/features.npy")
    assert feats.dtype == np.float16
    with offcore.Loader(ds, fanouts=[3, 3], batch_size=100, strategy=strategy) as loader:
        for b in loader:
            assert np.array_equal(b.x, feats[b.input_ids.astype(np.int64)].astype(np.float32))


def test_strategies_agree_with_memory_under_a_budget(gen_ds, ref):
    def run(strategy, budget):
        with offcore.Loader(gen_ds, fanouts=FANOUTS, batch_size=64, strategy=strategy,
                            seed=3, mem_budget=budget) as loader:
            return batches_of(loader)
    want = run("memory", None)
    for strategy in ("static", "direct"):
        got = run(strategy, "8M")
        assert len(got) == len(want)
        for (i, ids, blocks, x, ns), (wi, wids, wblocks, wx, wns) in zip(got, want):
            assert i == wi and ns == wns and np.array_equal(ids, wids)
            assert np.array_equal(x, wx)
            for (a, b), (c, d) in zip(blocks, wblocks):
                assert np.array_equal(a, c) and np.array_equal(b, d)


def test_batches_follow_the_graph_files(gen_ds, ref):
    indptr, indices = ref["indptr"], ref["indices"]
    seen = []
    with offcore.Loader(gen_ds, fanouts=FANOUTS, batch_size=100, seed=5) as loader:
        for b in loader:
            ids = b.input_ids.astype(np.int64)
            seen.append(b.seeds.copy())
            assert len(b.blocks) == 2 and b.blocks[-1].n_dst == b.n_seeds
            assert b.blocks[0].n_src == b.n_input
            assert b.blocks[0].n_dst == b.blocks[1].n_src  # layer l's sources = l-1's dsts
            for k, fan in zip(b.blocks, FANOUTS):
                deg = np.diff(k.indptr.astype(np.int64))
                assert k.indptr[-1] == k.n_edges and (k.indices < k.n_src).all()
                for d in range(k.n_dst):
                    v = ids[d]
                    nbrs = set(indices[indptr[v]:indptr[v + 1]].tolist())
                    assert deg[d] == min(len(nbrs), fan)
                    srcs = ids[k.indices[k.indptr[d]:k.indptr[d + 1]].astype(np.int64)]
                    assert set(srcs.tolist()) <= nbrs
            assert np.array_equal(b.y, ref["labels"][b.seeds.astype(np.int64)])
    seeds = np.concatenate(seen)
    assert len(seeds) == len(ref["train"])
    assert np.array_equal(np.sort(seeds), np.sort(ref["train"]))
    assert not np.array_equal(seeds, ref["train"])  # shuffled


def test_no_shuffle_keeps_the_split_order_and_other_splits(gen_ds, ref):
    with offcore.Loader(gen_ds, fanouts=[2], batch_size=50, shuffle=False) as loader:
        seeds = np.concatenate([b.seeds.copy() for b in loader])
    assert np.array_equal(seeds, ref["train"])
    with offcore.Loader(gen_ds, fanouts=[-1, -1], batch_size=4096, shuffle=False,
                        split="val") as loader:
        (b,) = list(loader)
        assert np.array_equal(b.seeds, ref["val"])
        assert np.array_equal(b.x, ref["features"][b.input_ids.astype(np.int64)])


def test_views_are_zero_copy_and_kept_batches_stay_intact(gen_ds, ref):
    with offcore.Loader(gen_ds, fanouts=FANOUTS, batch_size=64, seed=1) as loader:
        kept = []
        for b in loader:
            assert b.x.base is not None and not b.x.flags.owndata
            assert b.x.ctypes.data == b._cb.x  # offcore's own row buffer, not a copy
            assert not b.input_ids.flags.writeable
            kept.append(b)
            live = [k for k in kept if k.valid]
            assert len(live) == min(len(kept), loader.keep + 1)
            for k in live:  # the pipeline never writes into a batch still held
                assert np.array_equal(k.x, ref["features"][k.input_ids.astype(np.int64)])


def test_stats_count_the_epoch(gen_ds):
    with offcore.Loader(gen_ds, fanouts=FANOUTS, batch_size=64) as loader:
        n = sum(1 for _ in loader)
        s = loader.stats()
    assert s["n_fetched"] == n == s["n_batches_per_epoch"] and s["requested_rows"] > 0
