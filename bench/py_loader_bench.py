#!/usr/bin/env python3
"""py_loader_bench.py — what the Python package adds to an epoch of batches, with no model:
the same loader options run from C (bench/loader_epoch, the C API's loader) and from Python
(offcore.Loader, touching each batch's x, y, seeds and blocks, which builds the zero-copy
views), epochs interleaved, and the ratio of the median epoch times printed (the issue's
bar: at most 1.2).

    OFFCORE_LIB=build/liboffcore.so python bench/py_loader_bench.py [DIR] \
        [--strategy memory] [--epochs 6] [--batch 1000] [--fanout 10,25] [--budget 0]

DIR defaults to the demo dataset (~/.cache/offcore/demo-v1, `offcore demo` makes it).
Epoch 0 of each run is a warm-up and left out of the medians.
Place: bench/ (needs numpy; never run by ctest).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "python"))

import offcore  # noqa: E402


def c_epochs(a, bin_dir):
    out = subprocess.run([os.path.join(bin_dir, "loader_epoch"), a.dir, a.strategy,
                          str(a.epochs), str(a.batch), a.fanout, str(a.budget), str(a.threads)],
                         check=True, capture_output=True, text=True).stdout
    return [float(line.split()[-1]) for line in out.splitlines()]


def py_epochs(a):
    times = []
    with offcore.Loader(a.dir, fanouts=[int(f) for f in a.fanout.split(",")],
                        batch_size=a.batch, strategy=a.strategy, mem_budget=a.budget,
                        epochs=a.epochs, threads=a.threads) as loader:
        for _ in range(a.epochs):
            t0 = time.perf_counter()
            for b in loader:
                b.x, b.y, b.seeds, b.blocks  # noqa: B018 (the views a trainer would take)
                b.release()
            times.append(time.perf_counter() - t0)
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
    c, py = [], []
    for _ in range(a.rounds):  # interleaved, so drift on a shared machine hits both
        c += c_epochs(a, a.bin)[1:]
        py += py_epochs(a)[1:]
    mc, mp = statistics.median(c), statistics.median(py)
    print("dataset %s strategy %s batch %d fanout %s: %d epochs each" % (
        a.dir, a.strategy, a.batch, a.fanout, len(c)))
    print("C loader      median epoch %.4fs (min %.4fs)" % (mc, min(c)))
    print("Python loader median epoch %.4fs (min %.4fs)" % (mp, min(py)))
    print("ratio python/C %.3f" % (mp / mc))


if __name__ == "__main__":
    main()
