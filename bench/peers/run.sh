#!/usr/bin/env bash
# bench/peers/run.sh: offcore next to DGL and PyG on the same generated graph, model and machine.
#
# One command: builds offcore (Release, build-release/), sets up the peers' virtualenv
# (bench/peers/setup.sh: pinned torch, DGL, PyG from PyPI, outside the repository), generates a
# 1M-node, 128-dim graph once under ~/.cache/offcore/peers-1m (removed at the end unless KEEP=1),
# measures this machine's sgemm peak (bench/sgemm_peak.c), then for each configuration trains one
# epoch with offcore (`--strategy memory`) and with each peer that installed, all reading the same
# .npy files, and prints per-stage seconds (sample, gather, forward, backward, optimizer), the
# ratios peer/offcore, sampled edges/s, and offcore's forward+backward against the dense-flop bound
# (its GEMM flops of the epoch at the measured sgemm peak).
#
# Usage: bench/peers/run.sh [CONFIG...]   CONFIG in sage2 sage3 gat gcn sample (default: all five)
# `sample` compares the samplers alone: one epoch of the training split at fanout 15,10,5, batch
# 1024, nothing else (offcore: bench/sample_bench.c --dataset, the sampler `offcore train` runs;
# a peer: its loader iterated with --sample-only), and prints each one's sampled edges/s.
# Environment: THREADS (default: all cores), PEERS ("dgl pyg"; empty: offcore alone, no
# virtualenv), KEEP=1 keeps the dataset,
# DIR (dataset directory), BUILD (build-release), OC_PEERS_VENV (the virtualenv),
# QUICK=1 for a reduced run: the same 1M-node graph, features and models, but 2 % of the nodes
# in the training split instead of 10 % (20 batches per epoch instead of 100; its own cached
# dataset, peers-1m-quick), so every system's epoch is a fifth as long on 2 shared cores.
# A benchmark, not part of `make test`; ratios from one run are what to compare on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-release}
QUICK=${QUICK:-0}
GEN_SPLIT=()
if [ "$QUICK" = 1 ]; then
    DIR=${DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/offcore/peers-1m-quick}
    GEN_SPLIT=(--train-frac 0.02 --val-frac 0.01 --test-frac 0.01)
fi
DIR=${DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/offcore/peers-1m}
THREADS=${THREADS:-$(nproc)}
PEERS=${PEERS-dgl pyg} # set but empty: offcore alone
VENV=${OC_PEERS_VENV:-$HOME/.cache/offcore/peers-venv}
CONFIGS=("$@")
[ ${#CONFIGS[@]} -gt 0 ] || CONFIGS=(sage2 sage3 gat gcn sample)

args_of() {
    case "$1" in
    sage2) echo "--model sage --layers 2 --hidden 256 --fanout 10,25 --batch 1000 --lr 0.003 --dropout 0.5" ;;
    sage3) echo "--model sage --layers 3 --hidden 256 --fanout 15,10,5 --batch 1024 --lr 0.003 --dropout 0.5" ;;
    gat) echo "--model gat --layers 2 --hidden 64 --heads 4 --fanout 10,10 --batch 1024 --lr 0.005 --dropout 0.6 --weight-decay 5e-4" ;;
    gcn) echo "--model gcn --layers 2 --hidden 256 --fanout 10,10 --batch 1024 --lr 0.01 --dropout 0.5 --weight-decay 5e-4" ;;
    sample) echo "--model sage --hidden 256 --fanout 15,10,5 --batch 1024 --lr 0.003 --dropout 0.5" ;;
    *)
        echo "bench/peers: unknown configuration '$1' (sage2 sage3 gat gcn sample)" >&2
        exit 2
        ;;
    esac
}
for c in "${CONFIGS[@]}"; do args_of "$c" >/dev/null; done

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target offcore sgemm_peak sample_bench >/dev/null
OC="$BUILD/offcore"

avail=""
if [ -z "${PEERS// /}" ]; then
    echo "== peers: none requested (PEERS is empty): offcore alone"
else
    echo "== peers (virtualenv $VENV)"
    while read -r _ name status rest; do
        if [ "$status" = ok ]; then
            case " $PEERS " in *" $name "*) avail="$avail $name" ;; esac
        fi
        echo "  $name $status $rest"
    done < <(PEERS="$PEERS" bench/peers/setup.sh)
fi

WORK=$(mktemp -d)
cleanup() {
    rm -rf "$WORK"
    [ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
}
trap cleanup EXIT
if ! "$OC" info "$DIR" --no-checksum >/dev/null 2>&1; then
    rm -rf "$DIR"
    mkdir -p "$(dirname "$DIR")"
    "$OC" generate --nodes 1000000 --avg-degree 15 --feat-dim 128 --classes 10 "${GEN_SPLIT[@]}" \
        --quiet "$DIR"
fi

echo "== sgemm peak (OpenBLAS, 2048^3)"
peak=$("$BUILD/sgemm_peak" "$THREADS" | awk '/sgemm_peak_gflops_all/ {print $2}')
echo "  $peak GFLOP/s with $THREADS threads"

sample_only() { # the samplers alone: offcore's, then each peer's loader
    # shellcheck disable=SC2046
    set -- $(args_of sample)
    echo "== sample: fanout 15,10,5, batch 1024, one epoch of the training split, sampling only (threads $THREADS)"
    "$BUILD/sample_bench" --dataset "$DIR" 0 15,10,5 1024 "$THREADS" | tee "$WORK/sample.offcore.txt" | tail -1
    for p in $avail; do
        if ! "$VENV/bin/python" bench/peers/peers.py "$p" "$DIR" "$@" --threads "$THREADS" --sample-only \
            >"$WORK/sample.$p.json" 2>"$WORK/sample.$p.err"; then
            echo "  $p failed: $(tail -1 "$WORK/sample.$p.err")"
            rm -f "$WORK/sample.$p.json"
        fi
    done
    python3 bench/peers/table.py --sample "$WORK/sample.offcore.txt" "$WORK"/sample.*.json
}

for c in "${CONFIGS[@]}"; do
    if [ "$c" = sample ]; then
        sample_only
        continue
    fi
    # shellcheck disable=SC2046
    set -- $(args_of "$c")
    echo "== $c: $* (threads $THREADS)"
    "$OC" train "$DIR" "$@" --epochs 1 --eval sampled --eval-batch 1024 --threads "$THREADS" \
        --quiet --log "$WORK/$c.offcore.json"
    peer_args=() # peers.py takes the layer count from the fanouts
    skip=0
    for a in "$@"; do
        if [ $skip = 1 ]; then skip=0; elif [ "$a" = --layers ]; then skip=1; else peer_args+=("$a"); fi
    done
    for p in $avail; do
        if ! "$VENV/bin/python" bench/peers/peers.py "$p" "$DIR" "${peer_args[@]}" --threads "$THREADS" \
            >"$WORK/$c.$p.json" 2>"$WORK/$c.$p.err"; then
            echo "  $p failed: $(tail -1 "$WORK/$c.$p.err")"
            rm -f "$WORK/$c.$p.json"
        fi
    done
    python3 bench/peers/table.py "$c" "$peak" "$WORK/$c".*.json
done
