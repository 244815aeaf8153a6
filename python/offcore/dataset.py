"""dataset.py — an offcore dataset directory from Python, and importing or generating one.

Place: over _lib (offcore_dataset_*, offcore_import, offcore_generate); Loader takes a Dataset.
Thread-safety: a Dataset may be read from any thread.
Ownership: a Dataset owns its C handle (closed by close(), `with`, or garbage collection);
labels and splits are numpy copies the caller owns; features() maps features.npy read-only.
"""
import ctypes
import os

import numpy as np

from . import _lib
from ._lib import lib

_SPLITS = {"train": 0, "val": 1, "test": 2}


def _path(p, what):
    if not isinstance(p, (str, bytes, os.PathLike)):
        raise TypeError("offcore: %s must be a path, not %s" % (what, type(p).__name__))
    return _lib.cstr(what, p)


class Dataset(_lib.Closable):
    """A dataset directory (docs/FORMAT.md), opened and validated by offcore.

    Attributes: path, name, n_nodes, n_edges, feat_dim, n_classes, n_train, n_val, n_test.
    """

    def __init__(self, path):
        err = _lib.Error()
        h = ctypes.c_void_p()
        _lib.check(lib.offcore_dataset_open(_path(path, "the dataset path"), ctypes.byref(h),
                                            ctypes.byref(err)), err)
        self._h = h
        info = _lib.DatasetInfo()
        lib.offcore_dataset_info_init(ctypes.byref(info))
        _lib.check(lib.offcore_dataset_info(self._h, ctypes.byref(info), ctypes.byref(err)), err)
        self.path = os.fsdecode(lib.offcore_dataset_dir(self._h))
        self.name = info.name.decode("utf-8", "replace")
        self.n_nodes, self.n_edges = info.n_nodes, info.n_edges
        self.feat_dim, self.n_classes = info.feat_dim, info.n_classes
        self.n_train, self.n_val, self.n_test = info.n_train, info.n_val, info.n_test
        self._labels = None

    @property
    def handle(self):
        if self._h is None:
            raise _lib.InvalidArgument("offcore: dataset %s was closed" % self.path, -6,
                                       "OFFCORE_ERR_ARG")
        return self._h

    @property
    def labels(self):
        """int32 array of n_nodes labels (-1 = unlabeled), loaded once."""
        if self._labels is None:
            out = np.empty(self.n_nodes, dtype=np.int32)
            err = _lib.Error()
            _lib.check(lib.offcore_dataset_labels(self.handle, out.ctypes.data, out.size,
                                                  ctypes.byref(err)), err)
            out.flags.writeable = False
            self._labels = out
        return self._labels

    def split(self, which):
        """uint64 node ids of the 'train', 'val' or 'test' split."""
        if which not in _SPLITS:
            raise ValueError("offcore: split %r is not 'train', 'val' or 'test'" % (which,))
        n = {"train": self.n_train, "val": self.n_val, "test": self.n_test}[which]
        out = np.empty(n, dtype=np.uint64)
        err = _lib.Error()
        _lib.check(lib.offcore_dataset_split(self.handle, _SPLITS[which], out.ctypes.data,
                                             out.size, ctypes.byref(err)), err)
        return out

    def features(self):
        """features.npy mapped read-only (numpy reads the 4096-byte padded header)."""
        return np.load(os.path.join(self.path, "features.npy"), mmap_mode="r")

    def close(self):
        if self._h is not None:
            lib.offcore_dataset_close(self._h)
            self._h = None

    def __repr__(self):
        return ("Dataset(%r, name=%r, n_nodes=%d, n_edges=%d, feat_dim=%d, n_classes=%d)"
                % (self.path, self.name, self.n_nodes, self.n_edges, self.feat_dim,
                   self.n_classes))


def import_dataset(src, out, format="text", directed=False, row_normalize=False, f16=False,
                   name=None, mem_bytes=0):
    """Imports src (format 'text', 'ogb', 'graphbolt' or 'npy', as `offcore import`) into
    the new directory out and returns it opened."""
    o = _lib.ImportOpts()
    lib.offcore_import_opts_init(ctypes.byref(o))
    o.format = _lib.cstr("format", str(format))
    o.directed, o.row_normalize, o.feat_f16 = int(bool(directed)), int(bool(row_normalize)), \
        int(bool(f16))
    o.name = _lib.cstr("name", str(name)) if name is not None else None
    o.mem_bytes = _lib.whole("mem_bytes", mem_bytes, 0, 2 ** 64 - 1)
    err = _lib.Error()
    _lib.check(lib.offcore_import(_path(src, "src"), _path(out, "out"), ctypes.byref(o),
                                  ctypes.byref(err)), err)
    return Dataset(out)


def generate(out, n_nodes=100000, feat_dim=128, n_classes=10, avg_degree=15.0, seed=0,
             f16=False, **kw):
    """Generates a synthetic dataset into the new directory out (as `offcore generate`) and
    returns it opened (f16: features stored as float16). Further options: homophily, power_law, feat_signal, train_frac,
    val_frac, test_frac, n_threads."""
    o = _lib.GenerateOpts()
    lib.offcore_generate_opts_init(ctypes.byref(o))
    u32, u64 = 2 ** 32 - 1, 2 ** 64 - 1
    o.n_nodes, o.feat_dim = _lib.whole("n_nodes", n_nodes, 0, u64), _lib.whole("feat_dim", feat_dim, 0, u32)
    o.n_classes = _lib.whole("n_classes", n_classes, 0, u32)
    o.avg_degree, o.seed, o.feat_f16 = float(avg_degree), _lib.whole("seed", seed, 0, u64), \
        int(bool(f16))
    for k, v in kw.items():
        if k not in ("homophily", "power_law", "feat_signal", "train_frac", "val_frac",
                     "test_frac", "n_threads"):
            raise TypeError("offcore.generate: unknown option %r" % (k,))
        setattr(o, k, _lib.whole(k, v, 0, u32) if k == "n_threads" else float(v))
    err = _lib.Error()
    _lib.check(lib.offcore_generate(_path(out, "out"), ctypes.byref(o), ctypes.byref(err)), err)
    return Dataset(out)
