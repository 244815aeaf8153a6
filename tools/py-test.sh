#!/usr/bin/env bash
# py-test.sh — runs the Python package's tests (python/tests) against liboffcore.so, in a
# venv with numpy and pytest (created once under ${OC_PY_VENV:-~/.cache/offcore/py-venv}).
# torch is not installed here (its PyPI wheels pull gigabytes of CUDA libraries): the
# torch tests skip with a message unless the venv has it. ctest runs this (python_tests)
# with OFFCORE_LIB set to the build's library; exit 77 (skipped) when no venv can be made.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${OC_PY_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/offcore/py-venv}
py=${PYTHON:-python3}
if ! "$venv/bin/python" -c 'import numpy, pytest' 2>/dev/null; then
    mkdir -p "$(dirname "$venv")"
    if ! "$py" -m venv "$venv" >/dev/null 2>&1; then
        echo "py-test: skipped: '$py -m venv $venv' failed (on Debian: apt-get install python3-venv)"
        echo "0 passed, 0 failed, 1 skipped"
        exit 77
    fi
    if ! "$venv/bin/python" -m pip install -q numpy pytest; then
        echo "py-test: skipped: pip could not install numpy and pytest into $venv (no network?)"
        echo "0 passed, 0 failed, 1 skipped"
        exit 77
    fi
fi
: "${OFFCORE_LIB:=$PWD/build/liboffcore.so}"
export OFFCORE_LIB
[ -f "$OFFCORE_LIB" ] || { echo "py-test: $OFFCORE_LIB does not exist: run make first"; exit 1; }
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
exec "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider python/tests "$@"
