#!/usr/bin/env bash
# bench/peers/setup.sh: creates (or reuses) the Python virtualenv that bench/peers/run.sh uses to run the
# peer systems (DGL, PyG) next to offcore. It lives outside the repository, under
# ${OC_PEERS_VENV:-$HOME/.cache/offcore/peers-venv}, and installs pinned versions from PyPI only: CPU torch,
# DGL, PyG and the torch-sparse sampler (with torch-scatter) PyG's NeighborLoader needs (built from source: PyPI has no wheel).
# Each peer that cannot be installed is reported and left out; run.sh then skips it with that message.
# PEERS (default "dgl pyg") selects which peers to install. Prints one line per peer:
# "peer NAME ok" or "peer NAME missing: REASON".
set -u
PEERS=${PEERS:-dgl pyg}
VENV=${OC_PEERS_VENV:-$HOME/.cache/offcore/peers-venv}
PY=${PYTHON:-python3}
# DGL 2.1.0 (the newest DGL on PyPI) ships graphbolt for torch <= 2.2.1; numpy < 2 for that torch.
TORCH_PIN="torch==2.2.1"
NUMPY_PIN="numpy==1.26.4"
DGL_PINS="dgl==2.1.0 torchdata==0.7.1 pydantic==2.7.4 pandas==2.2.2 scipy==1.13.1 networkx==3.3 psutil==5.9.8 requests tqdm pyyaml"
PYG_PINS="torch_geometric==2.8.0"
SPARSE_PIN="torch-scatter==2.1.2 torch-sparse==0.6.18"
LOG=${VENV}.log

if [ ! -x "$VENV/bin/python" ]; then
    mkdir -p "$(dirname "$VENV")"
    "$PY" -m venv "$VENV" || { echo "peers: cannot create a virtualenv with $PY -m venv at $VENV" >&2; exit 1; }
fi
pip() { "$VENV/bin/python" -m pip --disable-pip-version-check "$@" >>"$LOG" 2>&1; }
have() { "$VENV/bin/python" -c "$1" >/dev/null 2>&1; }

if ! have "import torch, numpy; assert torch.__version__.startswith('2.2.1')"; then
    pip install "$TORCH_PIN" "$NUMPY_PIN" || true
fi
if have "import torch"; then echo "peer torch ok"; else echo "peer torch missing: pip install $TORCH_PIN failed (see $LOG)"; exit 0; fi

want() { case " $PEERS " in *" $1 "*) return 0 ;; esac; return 1; }

if want dgl; then
if ! have "import dgl, dgl.graphbolt"; then pip install $DGL_PINS "$TORCH_PIN" "$NUMPY_PIN" || true; fi
if have "import dgl, dgl.graphbolt"; then echo "peer dgl ok"; else echo "peer dgl missing: pip install $DGL_PINS failed (see $LOG)"; fi
fi

want pyg || exit 0

if ! have "import torch_geometric"; then pip install $PYG_PINS "$TORCH_PIN" "$NUMPY_PIN" || true; fi
if ! have "import torch_sparse"; then
    # No wheel on PyPI: compile against the installed torch (one job, takes a while on 2 cores).
    pip install wheel setuptools || true
    MAX_JOBS=${MAX_JOBS:-1} pip install --no-build-isolation $SPARSE_PIN "$TORCH_PIN" "$NUMPY_PIN" || true
fi
if have "import torch_geometric, torch_sparse"; then
    echo "peer pyg ok"
elif have "import torch_geometric"; then
    echo "peer pyg missing: $SPARSE_PIN (PyG's neighbor sampler on PyPI) did not build (see $LOG)"
else
    echo "peer pyg missing: pip install $PYG_PINS failed (see $LOG)"
fi
