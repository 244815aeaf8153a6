"""offcore — out-of-core GNN training data from Python: datasets, importers, the generator
and a zero-copy mini-batch loader backed by offcore's sampler, batch pipeline and feature
strategies (liboffcore.so, the C API of include/offcore.h).

    import offcore
    ds = offcore.Dataset("cora")
    loader = offcore.Loader(ds, fanouts=[10, 25], batch_size=1000, strategy="static",
                            mem_budget="64M", epochs=20)
    for epoch in range(20):
        for batch in loader:
            ...  # batch.x, batch.y, batch.blocks, batch.to_torch()

`offcore.metrics` scores logits as `offcore train --metric` does (acc, rocauc, f1-macro).

Place: the package's face; _lib loads the library, dataset.py and loader.py wrap it.
"""
from ._lib import BudgetError, InvalidArgument, NotFound, OffcoreError, lib as _clib
from .dataset import Dataset, generate, import_dataset
from .loader import Batch, BatchReleasedError, Block, Loader, parse_size
from . import metrics

__all__ = ["Dataset", "Loader", "Batch", "Block", "OffcoreError", "InvalidArgument",
           "BudgetError", "NotFound", "BatchReleasedError", "import_dataset", "generate",
           "strategies", "version", "parse_size", "metrics"]


def version():
    """liboffcore's version string."""
    return _clib.offcore_version().decode()


def strategies():
    """Names of the feature strategies a Loader accepts."""
    return [_clib.offcore_strategy_name(i).decode() for i in range(_clib.offcore_n_strategies())]


__version__ = version()
