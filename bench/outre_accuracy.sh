#!/usr/bin/env bash
# outre_accuracy.sh — test accuracy at the best validation epoch of `outre`
# (historical embeddings on, at each --staleness given) next to `memory` with
# random batches, mean over seeds 0, 1, 2, for GraphSAGE and GCN, on Cora
# (../shared/datasets/cora, imported with --row-normalize) and on a generated
# graph (100,000 nodes, degree 10, 64-dim features, 10 classes). Cora uses the
# README's Planetoid settings (full neighbours, 200 epochs for GCN; SAGE with
# --fanout -1,-1 --lr 0.01 --weight-decay 5e-4 --epochs 200 --input-dropout 0.5);
# the generated graph 20 epochs of fanout 10,25 and batch 1000 for both models
# (10 batches per epoch). Prints each run's accuracy, the means and outre - memory
# in points. OUTRE_ARGS adds options to the outre runs (e.g. "--admit 1"). Data
# under ~/.cache/offcore/outre-acc-*, removed unless KEEP=1.
#   BUILD=build STALENESS="100 10 6" OUTRE_ARGS= SHARED=../shared bench/outre_accuracy.sh [cora|gen|both]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OC="$BUILD/offcore"
SHARED=${SHARED:-../shared}
STALENESS=${STALENESS:-100 10 6}
read -r -a OUTRE_ARGS <<<"${OUTRE_ARGS:-}"
WHICH=${1:-both}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/offcore
mkdir -p "$CACHE"
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$CACHE/outre-acc-cora" "$CACHE/outre-acc-gen"; }
trap cleanup EXIT

acc() { # DIR ARGS... -> test accuracy at best validation
    "$OC" train "$@" --quiet 2>/dev/null | sed -n 's/^Test Acc at best Val Acc.*: //p'
}

mean() { python3 -c 'import sys; v=[float(x) for x in sys.argv[1:]]; print("%.2f" % (100*sum(v)/len(v)))' "$@"; }

run_set() { # NAME DIR MODEL ARGS...
    local name=$1 dir=$2 model=$3
    shift 3
    local ref
    local -a accs=()
    for seed in 0 1 2; do accs+=("$(acc "$dir" --model "$model" --seed $seed "$@")"); done
    ref=$(mean "${accs[@]}")
    printf '  %-5s %-4s memory          %s  mean %s\n' "$name" "$model" "${accs[*]}" "$ref"
    for S in $STALENESS; do
        accs=()
        for seed in 0 1 2; do
            accs+=("$(acc "$dir" --model "$model" --seed $seed --strategy outre --staleness "$S" "${OUTRE_ARGS[@]}" "$@")")
        done
        local m
        m=$(mean "${accs[@]}")
        printf '  %-5s %-4s outre S=%-6s  %s  mean %s  (%+.2f points)\n' "$name" "$model" "$S" \
            "${accs[*]}" "$m" "$(python3 -c "print($m - $ref)")"
    done
}

if [ "$WHICH" = cora ] || [ "$WHICH" = both ]; then
    d="$CACHE/outre-acc-cora"
    [ -d "$d" ] || "$OC" import text "$SHARED/datasets/cora" "$d" --row-normalize --quiet >/dev/null
    run_set cora "$d" gcn
    run_set cora "$d" sage --fanout -1,-1 --lr 0.01 --weight-decay 5e-4 --epochs 200 \
        --input-dropout 0.5
fi
if [ "$WHICH" = gen ] || [ "$WHICH" = both ]; then
    d="$CACHE/outre-acc-gen"
    [ -d "$d" ] || "$OC" generate --nodes 100000 --avg-degree 10 --feat-dim 64 --quiet "$d" >/dev/null
    run_set gen "$d" sage --fanout 10,25 --batch 1000 --epochs 20
    run_set gen "$d" gcn --fanout 10,25 --batch 1000 --epochs 20
fi
