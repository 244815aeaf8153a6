"""test_import.py — importing (the C text importer) and generating from Python: Cora from
../shared/datasets gives the node, edge and split counts `offcore import` gives, and the
generator's options reach the files.
"""
import numpy as np
import pytest

import offcore


def test_generate_options(tmp_path):
    ds = offcore.generate(tmp_path / "g", n_nodes=500, feat_dim=8, n_classes=3, avg_degree=4,
                          seed=1, train_frac=0.5, val_frac=0.1, test_frac=0.1)
    assert (ds.n_nodes, ds.feat_dim, ds.n_classes) == (500, 8, 3)
    assert 200 <= ds.n_train <= 260 and len(ds.split("train")) == ds.n_train
    assert ds.features().shape == (500, 8) and ds.labels.shape == (500,)
    with pytest.raises(TypeError):
        offcore.generate(tmp_path / "h", colour="red")
    with pytest.raises(offcore.OffcoreError) as e:
        offcore.generate(tmp_path / "g", n_nodes=500)  # exists
    assert str(tmp_path / "g") in str(e.value)


def test_import_cora(tmp_path, shared_datasets):
    ds = offcore.import_dataset(shared_datasets + "/cora", tmp_path / "cora", format="text",
                                row_normalize=True)
    assert (ds.n_nodes, ds.feat_dim, ds.n_classes) == (2708, 1433, 7)
    assert (ds.n_train, ds.n_val, ds.n_test) == (140, 500, 1000)
    rows = ds.features()
    nz = rows.sum(axis=1)
    assert np.allclose(nz[nz > 0], 1.0, atol=1e-5)  # row-normalized
