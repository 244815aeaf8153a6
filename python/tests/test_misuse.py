"""test_misuse.py — issue 49: misuse of the package raises instead of hanging, cutting or
wrapping (two threads iterating one Loader, a NUL inside a path, strategy or plan_dir, an
epoch past 2^64 - 1), and a features.npy truncated under an mmap Loader raises offcore's
"truncated" error instead of killing the process with SIGBUS. Runs that could hang or die
run in a child interpreter with a timeout.
"""
import os
import signal
import subprocess
import sys
import time

import pytest

import offcore

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)


def _child(code, timeout=60):
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_two_threads_iterating_one_loader_raise(gen_ds):
    code = """
import threading, offcore
ds = offcore.Dataset(%r)
loader = offcore.Loader(ds, fanouts=[2], batch_size=100, epochs=2)
it = iter(loader)
next(it)
seen = []
def other():
    for what, f in (("iter", lambda: list(loader)), ("next", lambda: next(it))):
        try:
            f()
            seen.append(what + ": no error")
        except RuntimeError as e:
            seen.append(what + ": RuntimeError" if "another thread" in str(e) else repr(e))
        except ValueError as e:
            seen.append(what + ": " + repr(e))
t = threading.Thread(target=other)
t.start()
t.join()
rest = list(it)
print(seen, len(rest) + 1 == len(loader))
""" % gen_ds.path
    p = _child(code)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail("two threads on one Loader hung")
    assert p.returncode == 0, err
    assert "['iter: RuntimeError', 'next: RuntimeError'] True" in out, out + err


def test_nul_inside_a_string_is_refused(gen_ds, tmp_path):
    with pytest.raises(ValueError, match="NUL"):
        offcore.Dataset("/tmp\x00x")
    with pytest.raises(ValueError, match="NUL"):
        offcore.Dataset(os.fsencode(gen_ds.path) + b"\x00junk")
    with pytest.raises(ValueError, match="NUL"):
        offcore.Loader(gen_ds, strategy="memory\x00static")
    with pytest.raises(ValueError, match="NUL"):
        offcore.Loader(gen_ds, strategy="diskgnn", plan_dir=str(tmp_path) + "\x00/x")
    with pytest.raises(ValueError, match="NUL"):
        offcore.generate(str(tmp_path / "g") + "\x00x", n_nodes=100, n_threads=1)


def test_epoch_is_range_checked(gen_ds):
    with offcore.Loader(gen_ds, fanouts=[2], batch_size=500, epochs=2) as loader:
        for bad in (2 ** 64, 2 ** 64 + 1, -1, 1.5):
            with pytest.raises(ValueError, match="epoch"):
                loader.epoch(bad)
        with pytest.raises(ValueError, match="epoch"):
            loader.sample(2 ** 64, 0)
        assert len(list(loader.epoch(0))) == len(loader)  # still usable, from epoch 0


def test_mmap_loader_reports_a_truncated_file(tmp_path):
    ds = offcore.generate(tmp_path / "mm", n_nodes=8000, feat_dim=512, n_classes=4, seed=1,
                          n_threads=1)
    path = ds.path
    ds.close()
    code = """
import sys, offcore
loader = offcore.Loader(%r, fanouts=[10, 10], batch_size=500, strategy="mmap", epochs=100000)
print("started", flush=True)
try:
    while True:
        for b in loader:
            pass
except offcore.OffcoreError as e:
    print("error:", e, flush=True)
    sys.exit(3)
""" % path
    p = _child(code)
    feat = os.path.join(path, "features.npy")
    size = os.path.getsize(feat)
    assert p.stdout.readline().startswith("started")
    fd = os.open(feat, os.O_WRONLY)
    try:
        t0 = time.time()
        while p.poll() is None and time.time() - t0 < 60:
            os.ftruncate(fd, 4096)
            time.sleep(0.001)
            os.ftruncate(fd, size)
            time.sleep(0.002)
    finally:
        os.close(fd)
    if p.poll() is None:
        p.kill()
    out, err = p.communicate()
    assert p.returncode != -signal.SIGBUS, "SIGBUS: " + err
    assert p.returncode == 3 and "truncated" in out, (p.returncode, out, err)
