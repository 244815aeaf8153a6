#!/usr/bin/env python3
"""py_loader_bench.py — what the Python package adds to an epoch of batches, with no model.

Two loaders with the same options run inside one Python process, epochs alternating so the
machine's drift hits both: the C loop (the C API's next/release calls through ctypes, no
Python object per batch: the pipeline's own epoch) and offcore.Loader (touching each batch's
x, y, seeds and blocks, which builds the zero-copy views). Printed: both median epoch times
and their ratio (the issue's bar: at most 1.2), and the Python thread's own CPU per epoch.
For reference, bench/loader_epoch (the same loop in a C program) runs the same epochs in a
process of its own; across processes the wall times on a shared machine differ by more than
the loader does, so that ratio is printed but is not the measure.

    OFFCORE_LIB=build/liboffcore.so python bench/py_loader_bench.py [DIR] \
        [--strategy memory] [--epochs 16] [--batch 250] [--fanout 15,10,5] [--budget 0]

DIR defaults to the demo dataset (~/.cache/offcore/demo-v1, `offcore demo` makes it).
Epoch 0 of each loader is a warm-up and left out of the medians.
Place: bench/ (needs numpy; never run by ctest).
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))

import offcore  # noqa: E402
from offcore import _lib  # noqa: E402


def c_program_epochs(a):
    """Wall seconds per epoch of bench/loader_epoch (a C program, its own process)."""
    out = subprocess.run([os.path.join(a.bin, "loader_epoch"), a.dir, a.strategy,
                          str(a.epochs), str(a.batch), a.fanout, str(a.budget), str(a.threads)],
                         check=True, capture_output=True, text=True).stdout
    return [float(line.split()[-1]) for line in out.splitlines()]


class CLoop:
    """The C API's loop through ctypes: next and release, nothing built per batch."""

    def __init__(self, ds, a, fanouts):
        self.lib, self.err, self.h = _lib.lib, _lib.Error(), ctypes.c_void_p()
        o = _lib.LoaderOpts()
        self.lib.offcore_loader_opts_init(ctypes.byref(o))
        o.n_layers = len(fanouts)
        for i, f in enumerate(fanouts):
            o.fanouts[i] = f
        o.strategy, o.batch_size, o.n_epochs = a.strategy.encode(), a.batch, a.epochs
        o.mem_budget_bytes, o.n_threads = a.budget, a.threads
        _lib.check(self.lib.offcore_loader_open(ds.handle, ctypes.byref(o), ctypes.byref(self.h),
                                                ctypes.byref(self.err)), self.err)
        self.cb = _lib.CBatch()
        self.lib.offcore_batch_init(ctypes.byref(self.cb))

    def epoch(self, e):
        lib, h, cb, err = self.lib, self.h, ctypes.byref(self.cb), ctypes.byref(self.err)
        _lib.check(lib.offcore_loader_epoch(h, e, err), self.err)
        while _lib.check(lib.offcore_loader_next(h, cb, err), self.err) == 0:
            lib.offcore_loader_release(h, cb)

    def close(self):
        self.lib.offcore_loader_close(self.h)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir", nargs="?", default=os.path.expanduser("~/.cache/offcore/demo-v1"))
    p.add_argument("--strategy", default="memory")
    p.add_argument("--epochs", type=int, default=16)
    p.add_argument("--batch", type=int, default=250)
    p.add_argument("--fanout", default="15,10,5")
    p.add_argument("--budget", type=int, default=0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--bin", default=os.path.join(REPO, "build"))
    a = p.parse_args()
    fanouts = [int(f) for f in a.fanout.split(",")]
    ds = offcore.Dataset(a.dir)
    c_loop = CLoop(ds, a, fanouts)
    loader = offcore.Loader(ds, fanouts=fanouts, batch_size=a.batch, strategy=a.strategy,
                            mem_budget=a.budget, epochs=a.epochs, threads=a.threads)
    c, py, cpu = [], [], []
    for e in range(a.epochs):
        t0 = time.perf_counter()
        c_loop.epoch(e)
        c.append(time.perf_counter() - t0)
        t0, c0 = time.perf_counter(), time.thread_time()
        for b in loader:
            b.x, b.y, b.seeds, b.blocks  # noqa: B018 (the views a trainer would take)
            b.release()
        py.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    n_batches = len(loader)
    loader.close()
    c_loop.close()
    c, py, cpu = c[1:], py[1:], cpu[1:]
    mc, mp = statistics.median(c), statistics.median(py)
    print("dataset %s, strategy %s, batch %d, fanout %s: %d batches per epoch, %d epochs each"
          % (a.dir, a.strategy, a.batch, a.fanout, n_batches, len(c)))
    print("C loop (ctypes calls only)  median epoch %.4fs (min %.4fs)" % (mc, min(c)))
    print("offcore.Loader              median epoch %.4fs (min %.4fs)" % (mp, min(py)))
    print("ratio Python/C %.3f" % (mp / mc))
    print("Python thread CPU per epoch %.4fs (median): %.1f%% of the C epoch"
          % (statistics.median(cpu), 100 * statistics.median(cpu) / mc))
    prog = c_program_epochs(a)[1:]
    print("reference: bench/loader_epoch (C program, own process) median epoch %.4fs: "
          "Python/C program %.3f" % (statistics.median(prog), mp / statistics.median(prog)))


if __name__ == "__main__":
    main()
