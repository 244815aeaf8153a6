#!/usr/bin/env python3
"""py_loader_bench.py — what the Python package adds to an epoch of batches, with no model:
the same loader options run from C (bench/loader_epoch, the C API's loader) and from Python
(offcore.Loader, touching each batch's x, y, seeds and blocks, which builds the zero-copy
views), beside the C loop run inside the Python process (the C API's calls through ctypes,
no Batch objects: the pipeline in the same process), runs interleaved, and the ratio of the median epoch times printed (the issue's
bar: at most 1.2), the ratio of the processes' CPU time per epoch (every thread: less
sensitive to other work on the machine than wall time), and the Python thread's own CPU
time per epoch as a share of the C epoch (the overhead without the noise of a shared machine: on 2 busy cores every
microsecond the consumer spends is taken from the pipeline's threads).

    OFFCORE_LIB=build/liboffcore.so python bench/py_loader_bench.py [DIR] \
        [--strategy memory] [--epochs 6] [--batch 1000] [--fanout 10,25] [--budget 0]

DIR defaults to the demo dataset (~/.cache/offcore/demo-v1, `offcore demo` makes it).
Epoch 0 of each run is a warm-up and left out of the medians.
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


def c_epochs(a, bin_dir, cpu):
    """Wall time per epoch; appends the process's CPU time per epoch to cpu."""
    out = subprocess.run([os.path.join(bin_dir, "loader_epoch"), a.dir, a.strategy,
                          str(a.epochs), str(a.batch), a.fanout, str(a.budget), str(a.threads)],
                         check=True, capture_output=True, text=True).stdout
    cpu += [float(line.split()[5]) for line in out.splitlines()][1:]
    return [float(line.split()[-1]) for line in out.splitlines()]


def raw_epochs(a):
    """The C loop of loader_epoch inside this process: only the C API's calls (through
    ctypes), no Batch, no views: the pipeline's epoch in the same process as Python's."""
    lib, err = _lib.lib, _lib.Error()
    ds, h = ctypes.c_void_p(), ctypes.c_void_p()
    _lib.check(lib.offcore_dataset_open(a.dir.encode(), ctypes.byref(ds), ctypes.byref(err)),
               err)
    o = _lib.LoaderOpts()
    lib.offcore_loader_opts_init(ctypes.byref(o))
    fanouts = [int(f) for f in a.fanout.split(",")]
    o.n_layers = len(fanouts)
    for i, f in enumerate(fanouts):
        o.fanouts[i] = f
    o.strategy, o.batch_size, o.n_epochs = a.strategy.encode(), a.batch, a.epochs
    o.mem_budget_bytes, o.n_threads = a.budget, a.threads
    _lib.check(lib.offcore_loader_open(ds, ctypes.byref(o), ctypes.byref(h), ctypes.byref(err)),
               err)
    times, cb = [], _lib.CBatch()
    lib.offcore_batch_init(ctypes.byref(cb))
    for e in range(a.epochs):
        t0 = time.perf_counter()
        _lib.check(lib.offcore_loader_epoch(h, e, ctypes.byref(err)), err)
        while _lib.check(lib.offcore_loader_next(h, ctypes.byref(cb), ctypes.byref(err)),
                         err) == 0:
            lib.offcore_loader_release(h, ctypes.byref(cb))
        times.append(time.perf_counter() - t0)
    lib.offcore_loader_close(h)
    lib.offcore_dataset_close(ds)
    return times


def py_epochs(a, cpu, proc):
    """Wall time per epoch; appends the consuming thread's CPU time per epoch to cpu and the
    process's (every thread) to proc."""
    times = []
    with offcore.Loader(a.dir, fanouts=[int(f) for f in a.fanout.split(",")],
                        batch_size=a.batch, strategy=a.strategy, mem_budget=a.budget,
                        epochs=a.epochs, threads=a.threads) as loader:
        for _ in range(a.epochs):
            t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
            for b in loader:
                b.x, b.y, b.seeds, b.blocks  # noqa: B018 (the views a trainer would take)
                b.release()
            times.append(time.perf_counter() - t0)
            cpu.append(time.thread_time() - c0)
            proc.append(time.process_time() - p0)
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir", nargs="?", default=os.path.expanduser("~/.cache/offcore/demo-v1"))
    p.add_argument("--strategy", default="memory")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--fanout", default="10,25")
    p.add_argument("--budget", type=int, default=0)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--bin", default=os.path.join(REPO, "build"))
    a = p.parse_args()
    c, raw, py, cpu, c_proc, py_proc = [], [], [], [], [], []
    for _ in range(a.rounds):  # interleaved, so drift on a shared machine hits all three
        c += c_epochs(a, a.bin, c_proc)[1:]
        raw += raw_epochs(a)[1:]
        round_cpu, round_proc = [], []
        py += py_epochs(a, round_cpu, round_proc)[1:]
        cpu += round_cpu[1:]
        py_proc += round_proc[1:]
    mc, mp, mr = statistics.median(c), statistics.median(py), statistics.median(raw)
    print("dataset %s strategy %s batch %d fanout %s: %d epochs each" % (
        a.dir, a.strategy, a.batch, a.fanout, len(c)))
    print("C loader      median epoch %.4fs (min %.4fs)" % (mc, min(c)))
    print("C loop in this process (ctypes calls only) median epoch %.4fs (min %.4fs)"
          % (mr, min(raw)))
    print("Python loader median epoch %.4fs (min %.4fs)" % (mp, min(py)))
    print("ratio python/C %.3f, python/(C loop in this process) %.3f (wall time, median epochs)"
          % (mp / mc, mp / mr))
    mcp, mpp = statistics.median(c_proc), statistics.median(py_proc)
    print("process CPU per epoch (every thread): C %.4fs, Python %.4fs: ratio %.3f"
          % (mcp, mpp, mpp / mcp))
    # the same figure without the machine's noise: what the Python thread itself spends
    print("Python thread CPU per epoch %.4fs (median; ctypes calls, views, labels): %.1f%% of "
          "the C epoch's wall time" % (statistics.median(cpu), 100 * statistics.median(cpu) / mc))


if __name__ == "__main__":
    main()
