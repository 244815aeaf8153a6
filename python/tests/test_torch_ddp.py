"""test_torch_ddp.py — examples/torch_ddp.py (GraphSAGE, torch.distributed gloo + DDP over
Loader(..., rank, world_size)) follows the single-process loss curve: run at world_size 1, 2
and 3 on a tiny generated dataset, the per-epoch losses agree to 2e-6 (float rounding: the
gradients are summed in another order; observed: at most 1.5e-7). The batches are cut into
unequal shares (25 seeds over 2 or 3 ranks), so a loss scaled per share's mean, DDP's average
left unscaled, or dropout masks drawn per row would each move the curve by 1e-4 or more. A bad
--world-size is refused. Skipped when torch (with gloo) is not installed: CI does not install
it, its PyPI wheels pull gigabytes of CUDA libraries.
"""
import os
import re
import subprocess
import sys

import pytest

import offcore

torch = pytest.importorskip("torch", reason="torch is not installed: examples/torch_ddp.py "
                            "untested")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("this torch has no torch.distributed gloo backend: examples/torch_ddp.py "
                "untested", allow_module_level=True)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "torch_ddp.py")
EPOCHS = 4
OPTS = ["--epochs", str(EPOCHS), "--batch", "25", "--fanout", "5,5", "--hidden", "16",
        "--no-eval", "--threads", "1"]
TOL = 2e-6


@pytest.fixture(scope="module")
def ddp_ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp") / "ds"
    ds = offcore.generate(out, n_nodes=1500, feat_dim=24, n_classes=4, avg_degree=8, seed=3,
                          train_frac=0.3, n_threads=1)
    yield ds
    ds.close()


def run_example(ds, *args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, EXAMPLE, ds.path, *OPTS, *args], env=env,
                          capture_output=True, text=True, timeout=600)


def loss_curve(ds, world_size):
    p = run_example(ds, "--world-size", str(world_size))
    assert p.returncode == 0, p.stdout + p.stderr
    losses = [float(v) for v in re.findall(r"^Epoch \d+ \| Loss ([0-9.]+)", p.stdout, re.M)]
    assert len(losses) == EPOCHS, p.stdout
    assert "%d ranks (gloo)" % world_size in p.stdout
    return losses


def test_ranks_follow_the_single_process_loss_curve(ddp_ds):
    one = loss_curve(ddp_ds, 1)
    assert one[-1] < one[0]  # it trains
    for n in (2, 3):
        curve = loss_curve(ddp_ds, n)
        diff = max(abs(a - b) for a, b in zip(one, curve))
        assert diff <= TOL, "world_size %d: %s vs world_size 1: %s" % (n, curve, one)


def test_a_bad_world_size_is_refused(ddp_ds):
    p = run_example(ddp_ds, "--world-size", "0")
    assert p.returncode != 0 and "--world-size must be 1 or more, not 0" in p.stderr
