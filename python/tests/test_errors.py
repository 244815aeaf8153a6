"""test_errors.py — what goes wrong is a Python exception carrying offcore's message: bad
paths, bad options (checked by the C library), a budget too small, epochs out of order, and
batches used after release (never a read of memory offcore took back).
"""
import os

import numpy as np
import pytest

import offcore


def test_bad_paths_name_the_path(tmp_path):
    with pytest.raises(offcore.NotFound) as e:
        offcore.Dataset(tmp_path / "missing")
    assert "missing" in str(e.value) and e.value.status_name == "OFFCORE_ERR_NOTFOUND"
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "manifest.json").write_text("{not json")
    with pytest.raises(offcore.OffcoreError) as e:
        offcore.Dataset(tmp_path / "junk")
    assert "manifest.json" in str(e.value)
    with pytest.raises(offcore.OffcoreError) as e:
        offcore.import_dataset(tmp_path / "nosrc", tmp_path / "out")
    assert "nosrc" in str(e.value)
    with pytest.raises(offcore.InvalidArgument) as e:
        offcore.import_dataset(tmp_path, tmp_path / "out2", format="csv")
    assert "format 'csv'" in str(e.value)


def test_bad_options_carry_the_c_message(gen_ds):
    cases = [
        (dict(strategy="nosuch"), "unknown strategy 'nosuch'"),
        (dict(fanouts=[4, 0]), "fanout 0"),
        (dict(batch_size=0), "batch size"),
        (dict(depth=0), "depth 0"),
        (dict(epochs=0), "epochs"),
        (dict(strategy="diskgnn", shuffle=False), "shuffle"),
    ]
    for kw, text in cases:
        with pytest.raises(offcore.OffcoreError) as e:
            offcore.Loader(gen_ds, **kw)
        assert text in str(e.value), (kw, str(e.value))
    with pytest.raises(ValueError):
        offcore.Loader(gen_ds, fanouts=[])
    with pytest.raises(ValueError):
        offcore.Loader(gen_ds, fanouts=[1] * 9)
    with pytest.raises(ValueError):
        offcore.Loader(gen_ds, mem_budget="lots")
    with pytest.raises(offcore.BudgetError) as e:
        offcore.Loader(gen_ds, fanouts=[-1, -1], mem_budget="1M")  # loading fits, batches not
    assert "is too small" in str(e.value)


def test_epochs_run_in_order(gen_ds):
    with offcore.Loader(gen_ds, fanouts=[2], batch_size=500, epochs=2) as loader:
        with pytest.raises(offcore.InvalidArgument) as e:
            loader.epoch(1)
        assert "in order" in str(e.value)
        list(loader)
        list(loader)
        with pytest.raises(offcore.InvalidArgument):
            list(loader)  # epoch 2 of 2
        with pytest.raises(offcore.InvalidArgument) as e:
            loader.sample(0, 10 ** 6)
        assert "out of range" in str(e.value)


def test_a_released_batch_raises(gen_ds):
    with offcore.Loader(gen_ds, fanouts=[3, 3], batch_size=64, epochs=2) as loader:
        it = iter(loader)
        b = next(it)
        block = b.blocks[0]
        b.release()
        assert not b.valid and "released" in repr(b)
        for get in (lambda: b.x, lambda: b.y, lambda: b.input_ids, lambda: b.seeds,
                    lambda: b.blocks, lambda: block.indptr, lambda: block.indices,
                    block.edge_index, b.edge_indices, b.to_torch):
            with pytest.raises(offcore.BatchReleasedError):
                get()
        b.release()  # twice: a no-op
        # taking `keep` + 1 further batches releases the oldest held one
        c = next(it)
        later = [next(it) for _ in range(loader.keep)]
        assert c.valid and all(k.valid for k in later)
        next(it)
        assert not c.valid
        with pytest.raises(offcore.BatchReleasedError):
            c.x
        # the next epoch releases what is still held; so does close
        d = later[-1]
        e = next(iter(loader))
        assert not d.valid and e.valid
    assert not e.valid
    with pytest.raises(offcore.InvalidArgument):
        loader.stats()


def test_view_kept_past_close_keeps_its_memory(gen_ds, ref):
    import gc
    import weakref
    loader = offcore.Loader(gen_ds, fanouts=[5, 5], batch_size=256, seed=1)
    b = next(iter(loader))
    x, ids = b.x, b.input_ids.copy()
    owner = weakref.ref(loader._owner)
    loader.close()
    gc.collect()
    # the batch is released (its buffer may hold a later batch's rows now), but its view
    # still holds the C loader's memory: reading it reads offcore's buffer, never freed memory
    assert not b.valid and owner() is not None
    assert x.shape == (len(ids), 48) and np.isfinite(x).all()
    del x, b
    gc.collect()
    assert owner() is None  # the last view gone: the C loader closed


def test_batches_are_freed(gen_ds):
    import gc
    import weakref
    with offcore.Loader(gen_ds, fanouts=[3, 3], batch_size=64) as loader:
        refs = [weakref.ref(b) for b in loader]
        owner = weakref.ref(loader._owner)
        gc.collect()
        # all but the `keep` newest, which stay valid until released
        assert sum(r() is not None for r in refs) <= loader.keep + 1
    gc.collect()
    assert len(refs) == loader.n_batches and all(r() is None for r in refs)
    assert owner() is None  # nothing refers to the C loader: it closed


def test_sizes_parse():
    assert offcore.parse_size("64M") == 64 << 20
    assert offcore.parse_size("1.5G") == 3 << 29
    assert offcore.parse_size(4096) == 4096
    assert offcore.parse_size(None) == 0
    assert offcore.parse_size("1e9") == 10 ** 9  # as the C parser reads it
    for bad in ("0.5", 2 ** 64, "16777216T", "10X", True):
        with pytest.raises(ValueError):
            offcore.parse_size(bad)
    with pytest.raises(ValueError):
        offcore.parse_size(-1)


def test_iterating_after_close_raises(gen_ds):
    import gc
    loader = offcore.Loader(gen_ds, fanouts=[3, 3], batch_size=64)
    it = iter(loader)
    b = next(it)
    loader.close()
    del b
    gc.collect()  # nothing views the C loader now: it is freed
    with pytest.raises(offcore.InvalidArgument, match="closed"):
        next(it)
    loader = offcore.Loader(gen_ds, fanouts=[3, 3], batch_size=64)
    with pytest.raises(offcore.InvalidArgument, match="closed"):
        for _ in loader:
            loader.close()


@pytest.mark.parametrize("opts", [
    {"fanouts": [2 ** 32 + 5, 5]}, {"fanouts": [5.9, 5]}, {"fanouts": [-2, 5]},
    {"batch_size": 2 ** 64 + 3}, {"epochs": 2 ** 32}, {"seed": -1}, {"threads": True},
    {"mem_budget": 2 ** 64}, {"mem_budget": "16777216T"}, {"mem_budget": "0.5"},
])
def test_out_of_range_options_are_refused(gen_ds, opts):
    kw = {"fanouts": [3, 3], "batch_size": 64}
    kw.update(opts)
    with pytest.raises(ValueError):
        offcore.Loader(gen_ds, **kw)


def test_generate_refuses_out_of_range_counts(tmp_path):
    for kw in ({"n_classes": 2 ** 32 + 10}, {"feat_dim": 2 ** 32 + 4}, {"n_nodes": 10.5}):
        with pytest.raises(ValueError):
            offcore.generate(str(tmp_path / "g"), **kw)
    assert not (tmp_path / "g").exists()
