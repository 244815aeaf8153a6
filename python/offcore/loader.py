"""loader.py — offcore's batch pipeline as a Python iterable of mini-batches, zero-copy.

    loader = Loader(ds, fanouts=[10, 25], batch_size=1000, strategy="static",
                    mem_budget="256M", epochs=E)
    for epoch in range(E):
        for batch in loader:            # epoch 0, 1, ... in turn
            batch.x, batch.y, batch.blocks, batch.seeds

Place: over _lib (offcore_loader_*); the C side samples each batch once and gathers its
feature rows ahead on its own threads, for any strategy (src/train/loader.c).

Buffer lifetime (enforced): a Batch's arrays are views of offcore's buffers, not copies.
A batch stays valid until batch.release(), or while the next `loader.keep` batches are taken
(taking one more releases the oldest held batch: its buffers feed the pipeline), or until
the next epoch starts or the loader closes. After that every accessor of the Batch (x, y,
input_ids, seeds, blocks, to_torch, ...) raises BatchReleasedError. Arrays taken from a
batch before its release must not be used after it (offcore reuses the memory): copy what
you keep (np.array(batch.x), tensor.clone()).
Thread-safety: one thread iterates a loader: an epoch belongs to the thread that started
it, and another thread that iterates the loader meanwhile (or starts an epoch) gets a
RuntimeError instead of waiting forever in the C loader.
Ownership: the Loader owns the C loader and closes it (close(), `with`, or GC).
"""
import collections
import ctypes
import re
import threading
import weakref

import numpy as np

from . import _lib
from ._lib import lib


class BatchReleasedError(_lib.OffcoreError, RuntimeError):
    """A batch's buffers were used after it was released (they belong to offcore again)."""


def parse_size(v):
    """Bytes from an int or a string with an optional K/M/G/T suffix (powers of 1024)."""
    if v is None:
        return 0
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        if v < 0 or v >= 2 ** 64:
            raise ValueError("offcore: a size must be from 0 to 2^64 - 1 bytes, not %d" % v)
        return int(v)
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMGT]?)i?B?\s*", str(v),
                     re.IGNORECASE)
    if not m:
        raise ValueError("offcore: size %r is not a number of bytes with an optional "
                         "K, M, G or T suffix" % (v,))
    mult = 1024 ** " KMGT".index((m.group(2) or " ").upper())
    b = float(m.group(1)) * mult
    if not b < 2.0 ** 64:
        raise ValueError("offcore: size %r is more than 2^64 - 1 bytes" % (v,))
    if b > 0 and int(b) == 0:
        raise ValueError("offcore: size %r is less than one byte (0 means no limit)" % (v,))
    return int(b)



class _Memory:
    """The base of a view: describes C memory to numpy and keeps its owner alive."""

    __slots__ = ("__array_interface__", "owner")

    def __init__(self, addr, shape, typestr, owner, writeable):
        self.__array_interface__ = {"data": (addr, not writeable), "shape": shape,
                                    "typestr": typestr, "version": 3}
        self.owner = owner


class _Handle:
    """Owns the C loader: it is closed when the last object that may view its memory (the
    loader, a batch, a numpy view of either) is gone, so a view kept past close() never
    reads freed memory."""

    __slots__ = ("h", "__weakref__")

    def __init__(self, h):
        self.h = h

    def __del__(self):
        if self.h is not None and lib is not None:
            lib.offcore_loader_close(self.h)
            self.h = None


def _view(addr, shape, dtype, owner, writeable=False):
    """A numpy array of `shape` over C memory at addr (no copy); its base keeps owner alive."""
    if not addr or 0 in shape:
        a = np.empty(shape, dtype=dtype)
        a.flags.writeable = writeable
        return a
    return np.asarray(_Memory(addr, shape, np.dtype(dtype).str, owner, writeable))


class Block:
    """One layer of a batch (DGL's block): a bipartite graph, CSR over destinations.

    The destinations are the first n_dst of the n_src sources; indices are local source ids.
    """

    __slots__ = ("n_src", "n_dst", "n_edges", "_indptr", "_indices", "_batch")

    def __init__(self, batch, cb):
        self._batch = weakref.ref(batch)  # no cycle: a batch is freed as soon as it is unused
        self.n_src, self.n_dst, self.n_edges = cb.n_src, cb.n_dst, cb.n_edges
        self._indptr = _view(cb.indptr, (cb.n_dst + 1,), np.uint64, batch._owner)
        self._indices = _view(cb.indices, (cb.n_edges,), np.uint32, batch._owner)

    def _check(self):
        b = self._batch()
        if b is None:
            raise BatchReleasedError("offcore: this block's batch was released and freed",
                                     -6, "OFFCORE_ERR_ARG")
        b._check()

    @property
    def indptr(self):
        self._check()
        return self._indptr

    @property
    def indices(self):
        self._check()
        return self._indices

    def edge_index(self):
        """int64 [2, n_edges]: row 0 local source ids, row 1 local destination ids (PyG's
        flow 'source_to_target'); a new array."""
        self._check()
        dst = np.repeat(np.arange(self.n_dst, dtype=np.int64),
                        np.diff(self._indptr).astype(np.int64))
        return np.stack([self._indices.astype(np.int64), dst])

    def __repr__(self):
        return "Block(n_src=%d, n_dst=%d, n_edges=%d)" % (self.n_src, self.n_dst, self.n_edges)


class Batch:
    """A mini-batch: blocks[0] is the input side, blocks[-1] ends at the seeds.

    input_ids: global ids of the input nodes (the seeds first); x: their feature rows
    (float32, n_input x feat_dim); seeds = input_ids[:n_seeds]; y: the seeds' labels (int64).
    """

    def __init__(self, loader, cb):
        self._loader = loader
        self._owner = loader._owner  # the C loader stays open while this batch's views live
        self._cb = cb  # the C struct: holds the handle offcore_loader_release needs
        self._valid = True
        self.epoch, self.index = cb.epoch, cb.index
        self.n_seeds, self.n_input = cb.n_seeds, cb.n_input
        # views own the C loader's handle, not this batch: numpy does not collect cycles
        # through an array's base, so a batch its own views referred to would never be freed
        self._ids = _view(cb.input_ids, (cb.n_input,), np.uint64, self._owner)
        self._x = (_view(cb.x, (cb.n_input, cb.feat_dim), np.float32, self._owner, writeable=True)
                   if cb.x else None)
        self._blocks = [Block(self, cb.blocks[i]) for i in range(cb.n_layers)]
        self._y = None

    def _check(self):
        if not self._valid:
            raise BatchReleasedError(
                "offcore: batch %d of epoch %d was released: its buffers belong to offcore "
                "again (copy what you keep before release, or the next epoch)"
                % (self.index, self.epoch), -6, "OFFCORE_ERR_ARG")

    @property
    def valid(self):
        return self._valid

    @property
    def x(self):
        self._check()
        return self._x

    @property
    def input_ids(self):
        self._check()
        return self._ids

    n_id = input_ids  # PyG's name

    @property
    def seeds(self):
        self._check()
        return self._ids[:self.n_seeds]

    @property
    def y(self):
        self._check()
        if self._y is None:
            self._y = self._loader._labels[self._ids[:self.n_seeds].astype(np.int64)].astype(
                np.int64)
        return self._y

    @property
    def blocks(self):
        self._check()
        return self._blocks

    def edge_indices(self):
        """PyG style, one (edge_index, size) per layer, input side first: edge_index is int64
        [2, E] (local source, local destination), size = (n_src, n_dst). The destinations of
        a layer are the first n_dst rows of its input (x_target = x[:n_dst])."""
        self._check()
        return [(b.edge_index(), (b.n_src, b.n_dst)) for b in self._blocks]

    def to_torch(self, device=None):
        """(x, y, blocks) as torch tensors: x and the block arrays share offcore's memory on
        the CPU (torch.from_numpy); each block is a dict with indptr, indices (int64 copies:
        torch's sparse ops want int64), edge_index, n_src, n_dst. Needs torch."""
        self._check()
        import torch
        import warnings
        with warnings.catch_warnings():  # read-only views: torch may warn, offcore does not write
            warnings.simplefilter("ignore", UserWarning)
            x = torch.from_numpy(self._x)
        blocks = []
        for b in self._blocks:
            blocks.append({"n_src": b.n_src, "n_dst": b.n_dst,
                           "indptr": torch.from_numpy(b._indptr.astype(np.int64)),
                           "indices": torch.from_numpy(b._indices.astype(np.int64)),
                           "edge_index": torch.from_numpy(b.edge_index())})
        y = torch.from_numpy(self.y)
        if device is not None:
            x = x.to(device)
            y = y.to(device)
            for b in blocks:
                for k in ("indptr", "indices", "edge_index"):
                    b[k] = b[k].to(device)
        return x, y, blocks

    def to_dgl(self):
        """DGL blocks (dgl.create_block from each CSR), input side first. Needs dgl."""
        self._check()
        import dgl
        import torch
        out = []
        for b in self._blocks:
            src, dst = torch.from_numpy(b.edge_index())
            out.append(dgl.create_block((src, dst), num_src_nodes=int(b.n_src),
                                        num_dst_nodes=int(b.n_dst)))
        return out

    def release(self):
        """Gives the buffers back to offcore; every accessor raises afterwards."""
        if self._valid:
            self._valid = False
            self._loader._release(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        state = "" if self._valid else ", released"
        return ("Batch(epoch=%d, index=%d, n_seeds=%d, n_input=%d, layers=%d%s)"
                % (self.epoch, self.index, self.n_seeds, self.n_input, len(self._blocks), state))


class _EpochIter:
    """One epoch's batches. A thread other than the epoch's gets a RuntimeError from next()
    before the generator resumes, so the epoch's own thread can go on iterating."""

    def __init__(self, loader, gen):
        self._loader, self._gen = loader, gen
        self._thread = threading.get_ident()  # the epoch's thread (epoch() claimed it)

    def __iter__(self):
        return self

    def __next__(self):
        self._loader._claim()  # raises in another thread; the generator is untouched
        try:
            return next(self._gen)
        except BaseException:
            self._loader._unclaim()  # done (StopIteration) or failed: the epoch is over
            raise

    def close(self):
        """Ends the epoch early: another thread may then start the next one."""
        self._gen.close()
        self._loader._unclaim(self._thread)

    def __del__(self):  # an epoch left early (break) ends when its iterator is dropped
        if getattr(self, "_gen", None) is not None:
            self.close()


class Loader(_lib.Closable):
    """Mini-batches of a Dataset from offcore's pipeline, shaped like PyG's NeighborLoader.

    fanouts: neighbors per layer, input side first (DGL's and `offcore train --fanout`
    order; PyG's num_neighbors lists the seed side first), -1 = all. strategy: a feature
    strategy (offcore.strategies()); mem_budget: bytes or "512M" for offcore's allocations
    in this process (the last loader opened sets it). epochs: how many epochs will be
    iterated (planning strategies need it); each `iter(loader)` runs the next epoch.
    split: 'train', 'val' or 'test'. depth: batches gathered ahead. store_bytes: a cap on
    the strategy's caches (bytes or "64M"); with several loaders under one budget, cap it:
    a strategy sizes its cache from what is left when it opens, and loaders opened before
    still grow their sampling buffers. rank, world_size: for data-parallel training
    (PyTorch DDP): each batch is rank's share of the global batch a loader with
    world_size=1 yields (same seed, same order, same number of batches), the sub-batch of
    its seeds [B rank // world_size, B (rank + 1) // world_size) cut as `offcore train
    --micro-shards` cuts them (its x a copy of the share's rows); the shares of ranks
    0 .. world_size-1 together are the global batch's seeds in order.
    """

    def __init__(self, dataset, fanouts=(10, 25), batch_size=1000, strategy="memory",
                 mem_budget=None, shuffle=True, seed=0, split="train", epochs=1, threads=0,
                 depth=2, plan_dir=None, store_bytes=None, rank=0, world_size=1):
        from .dataset import Dataset, _SPLITS
        if not isinstance(dataset, Dataset):
            dataset = Dataset(dataset)
        self.dataset = dataset
        fanouts = list(fanouts)
        if not 1 <= len(fanouts) <= _lib.MAX_LAYERS:
            raise ValueError("offcore: fanouts lists %d values: give 1 to %d"
                             % (len(fanouts), _lib.MAX_LAYERS))
        if split not in _SPLITS:
            raise ValueError("offcore: split %r is not 'train', 'val' or 'test'" % (split,))
        u32, u64 = 2 ** 32 - 1, 2 ** 64 - 1
        batch_size, seed = _lib.whole("batch_size", batch_size, 0, u64), _lib.whole("seed", seed, 0, u64)
        epochs, threads = _lib.whole("epochs", epochs, 0, u32), _lib.whole("threads", threads, 0, u32)
        depth = _lib.whole("depth", depth, 0, u32)
        rank, world_size = _lib.whole("rank", rank, 0, u32), _lib.whole("world_size", world_size,
                                                                         0, u32)
        fanouts = [_lib.whole("a fanout", f, -1, 2 ** 31 - 1) for f in fanouts]
        o = _lib.LoaderOpts()
        lib.offcore_loader_opts_init(ctypes.byref(o))
        o.n_layers = len(fanouts)
        for i, f in enumerate(fanouts):
            o.fanouts[i] = f
        o.batch_size, o.seed, o.shuffle, o.split = int(batch_size), int(seed), \
            int(bool(shuffle)), _SPLITS[split]
        o.strategy = _lib.cstr("strategy", str(strategy))
        o.mem_budget_bytes = parse_size(mem_budget)
        o.n_epochs, o.n_threads, o.depth = int(epochs), int(threads), int(depth)
        o.plan_dir = _lib.cstr("plan_dir", plan_dir) if plan_dir is not None else None
        o.store_bytes = parse_size(store_bytes)
        o.rank, o.world_size = rank, world_size  # the C side checks rank < world_size
        err = _lib.Error()
        h = ctypes.c_void_p()
        _lib.check(lib.offcore_loader_open(dataset.handle, ctypes.byref(o), ctypes.byref(h),
                                           ctypes.byref(err)), err)
        self._h = h
        self._owner = _Handle(h)
        self.fanouts, self.batch_size, self.strategy = fanouts, batch_size, str(strategy)
        self.epochs, self.seed, self.shuffle = epochs, seed, bool(shuffle)
        self.rank, self.world_size = rank, world_size
        self.n_batches = lib.offcore_loader_n_batches(h)
        self.keep = lib.offcore_loader_max_held(h)  # batches kept valid besides the newest
        n = ctypes.c_uint64()
        p = lib.offcore_loader_labels(h, ctypes.byref(n))
        self._labels = _view(p, (n.value,), np.int32, self._owner)
        self._held = collections.deque()
        self._epoch = 0
        self._err = _lib.Error()
        self._guard = threading.Lock()  # guards _owner_thread
        self._owner_thread = None  # the thread iterating the current epoch, None between

    def __len__(self):
        return self.n_batches

    def _handle(self):
        if self._h is None:
            raise _lib.InvalidArgument("offcore: the loader was closed", -6, "OFFCORE_ERR_ARG")
        return self._h

    def _release(self, batch):
        self._held.remove(batch)
        lib.offcore_loader_release(self._h, ctypes.byref(batch._cb))

    def _release_all(self):
        while self._held:
            self._held[0].release()

    def __iter__(self):
        return self.epoch(self._epoch)

    def _claim(self):
        """Makes the calling thread the loader's iterating thread, or raises if another one
        is iterating it (two threads in offcore_loader_next would wait on each other)."""
        me = threading.get_ident()
        with self._guard:
            if self._owner_thread not in (None, me):
                raise RuntimeError("offcore: this Loader is being iterated by another thread: "
                                   "one thread iterates a loader (open one per thread)")
            self._owner_thread = me

    def _unclaim(self, thread=None):
        with self._guard:
            if self._owner_thread == (thread or threading.get_ident()):
                self._owner_thread = None

    def epoch(self, e):
        """Iterates epoch e (the next one: epochs run 0, 1, ... in order)."""
        e = _lib.whole("epoch", e, 0, 2 ** 64 - 1)
        h = self._handle()
        self._claim()
        try:
            self._release_all()
            _lib.check(lib.offcore_loader_epoch(h, e, ctypes.byref(self._err)), self._err)
        except BaseException:
            self._unclaim()
            raise
        self._epoch = e + 1
        return self._iterate(h)

    def _iterate(self, h):
        return _EpochIter(self, self._batches())

    def _batches(self):
        err = self._err
        while True:
            # closed meanwhile: the handle may be freed already (raises InvalidArgument)
            h = self._handle()
            while len(self._held) > self.keep:
                self._held[0].release()  # the oldest: its buffers feed the pipeline
            cb = _lib.CBatch()
            lib.offcore_batch_init(ctypes.byref(cb))
            rc = lib.offcore_loader_next(h, ctypes.byref(cb), ctypes.byref(err))
            if rc == _lib.DONE:
                return
            _lib.check(rc, err)
            b = Batch(self, cb)
            self._held.append(b)
            yield b

    def sample(self, epoch, index):
        """Batch `index` of `epoch` sampled by the C sampler on this thread, without the store
        or the pipeline (the reference the iterated batches equal): a dict of numpy copies
        (input_ids, blocks as (indptr, indices, n_src, n_dst)); no features."""
        epoch = _lib.whole("epoch", epoch, 0, 2 ** 64 - 1)
        index = _lib.whole("index", index, 0, 2 ** 64 - 1)
        cb = _lib.CBatch()
        lib.offcore_batch_init(ctypes.byref(cb))
        _lib.check(lib.offcore_loader_sample(self._handle(), epoch, index, ctypes.byref(cb),
                                             ctypes.byref(self._err)), self._err)
        ids = _view(cb.input_ids, (cb.n_input,), np.uint64, None).copy()
        blocks = []
        for i in range(cb.n_layers):
            k = cb.blocks[i]
            blocks.append((_view(k.indptr, (k.n_dst + 1,), np.uint64, None).copy(),
                           _view(k.indices, (k.n_edges,), np.uint32, None).copy(),
                           k.n_src, k.n_dst))
        return {"epoch": epoch, "index": index, "n_seeds": cb.n_seeds, "input_ids": ids,
                "blocks": blocks}

    def stats(self):
        """The pipeline's and the strategy's counters since open (a dict)."""
        s = _lib.Stats()
        lib.offcore_stats_init(ctypes.byref(s))
        _lib.check(lib.offcore_loader_stats(self._handle(), ctypes.byref(s),
                                            ctypes.byref(self._err)), self._err)
        return {k: getattr(s, k) for k, _ in _lib.Stats._fields_ if k != "struct_size"}

    def close(self):
        """Releases every batch; the C loader (its pipeline and buffers) closes now, or, while
        a batch or a numpy view of one is still referenced, when the last of them is gone."""
        if self._h is not None:
            self._release_all()
            self._h = None
            self._labels = None
            self._owner = None
