"""conftest.py — fixtures for the offcore package's tests: a generated dataset (3000 nodes,
48-dim f32 features) shared by the session, its files read back with numpy as the reference,
a small f16 one, and Cora imported from ../shared/datasets when present (OC_SHARED, as the C tests).

Run by tools/py-test.sh (ctest: python_tests), with OFFCORE_LIB naming the built library.
"""
import os

import numpy as np
import pytest

import offcore


@pytest.fixture(scope="session")
def gen_ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("gen") / "ds"
    ds = offcore.generate(out, n_nodes=3000, feat_dim=48, n_classes=4, avg_degree=8, seed=7,
                          train_frac=0.3, n_threads=1)
    yield ds
    ds.close()


@pytest.fixture(scope="session")
def f16_ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("f16") / "ds"
    ds = offcore.generate(out, n_nodes=1200, feat_dim=24, n_classes=3, avg_degree=6, seed=2,
                          f16=True, n_threads=1)
    yield ds
    ds.close()


@pytest.fixture(scope="session")
def ref(gen_ds):
    """The dataset's arrays straight from its .npy files (numpy, not offcore)."""
    p = gen_ds.path
    return {
        "features": np.load(os.path.join(p, "features.npy")),
        "indptr": np.load(os.path.join(p, "indptr.npy")).astype(np.int64),
        "indices": np.load(os.path.join(p, "indices.npy")).astype(np.int64),
        "labels": np.load(os.path.join(p, "labels.npy")),
        "train": np.load(os.path.join(p, "train_idx.npy")),
        "val": np.load(os.path.join(p, "val_idx.npy")),
    }


@pytest.fixture(scope="session")
def shared_datasets():
    root = os.environ.get("OC_SHARED")
    root = os.path.join(root, "datasets") if root else None
    if not root or not os.path.isdir(os.path.join(root, "cora")):
        pytest.skip("shared datasets absent (OC_SHARED/datasets/cora)")
    return root


def pytest_terminal_summary(terminalreporter):
    """Ends the run with the line every offcore test prints (tools/count_results.sh sums it)."""
    st = terminalreporter.stats
    n = {k: len([r for r in st.get(k, []) if getattr(r, "when", "call") in ("call", "setup", "collect")])
         for k in ("passed", "failed", "error", "skipped")}
    terminalreporter.write_line("%d passed, %d failed, %d skipped"
                                % (n["passed"], n["failed"] + n["error"], n["skipped"]))
