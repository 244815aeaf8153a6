#!/usr/bin/env bash
# outre_rr.sh — OUTRE's Redundancy Ratio (input rows of an epoch's batches per
# seed, sum |N~_b| / sum |N_b|) with random batches and with partition batches
# (`--batching partition`, METIS) at several `--partition-batch P` and with
# Fennel (`--partitioner fennel`) at P = 4, for 3- and
# 2-layer GraphSAGE, on one generated graph with communities (the "bench
# graph": 50 planted classes, homophily 0.9) and, for contrast, on the default
# generator graph (10 classes, homophily 0.5). One epoch each, `--eval none`,
# features in RAM (RR does not depend on the strategy). Then, as the thesis's
# Table IV, historical embeddings for 20 % of the nodes (`--strategy outre
# --embed-nodes 0.2`, every push admitted: `--admit 1`, and at the default
# admission) with random batches and with P = 4: two epochs, the second's RR
# (the first starts with an empty cache). The data goes under
# ~/.cache/offcore/outre-rr-* and is removed at the end unless KEEP=1.
#   BUILD=build bench/outre_rr.sh [nodes]     (default 200000)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
NODES=${1:-200000}
OC="$BUILD/offcore"
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/offcore
mkdir -p "$CACHE"
TMP=$(mktemp -d)
cleanup() {
    rm -rf "$TMP"
    [ "${KEEP:-0}" = 1 ] || rm -rf "$CACHE/outre-rr-comm-$NODES" "$CACHE/outre-rr-default-$NODES"
}
trap cleanup EXIT

# rr LOG: the last epoch's RR from the JSON log
rr() { python3 -c 'import json,sys; print("%.2f" % [json.loads(l) for l in open(sys.argv[1]) if "redundancy" in l][-1]["redundancy"]["ratio"])' "$1"; }

run() { # DIR LAYERS FANOUT BATCHING P|- [EXTRA TRAIN ARGS...] -> RR (of the last epoch)
    local log="$TMP/log.json" dir=$1 layers=$2 fanout=$3 batching=$4 p=$5 extra=(--epochs 1)
    shift 5
    [ "$batching" = partition ] && extra+=(--batching partition --partition-batch "$p")
    rm -f "$log"
    "$OC" train "$dir" --layers "$layers" --fanout "$fanout" --batch 1024 --eval none --quiet \
        --log "$log" "${extra[@]}" "$@" >/dev/null 2>"$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
    rr "$log"
}

for kind in comm default; do
    dir="$CACHE/outre-rr-$kind-$NODES"
    if [ ! -d "$dir" ]; then
        if [ $kind = comm ]; then
            "$OC" generate --nodes "$NODES" --avg-degree 10 --feat-dim 32 --classes 50 \
                --homophily 0.9 --quiet "$dir" >/dev/null
        else
            "$OC" generate --nodes "$NODES" --avg-degree 10 --feat-dim 32 --quiet "$dir" >/dev/null
        fi
    fi
    echo "graph: $kind ($NODES nodes, degree 10; $([ $kind = comm ] && echo '50 classes, homophily 0.9' || echo '10 classes, homophily 0.5'))"
    printf '  %-8s %-10s %8s %8s %8s %8s %10s\n' layers fanout random "P=1" "P=4" "P=16" "Fennel P=4"
    for cfg in "3 15,10,5" "2 10,25"; do
        set -- $cfg
        r=$(run "$dir" "$1" "$2" random -)
        line=$(printf '  %-8s %-10s %8s' "$1" "$2" "$r")
        for p in 1 4 16; do
            q=$(run "$dir" "$1" "$2" partition "$p")
            line="$line $(printf '%8s' "$q")"
            red=$(python3 -c "print('%+.1f%%' % (100.0 * ($q - $r) / $r))")
            reds="${reds:-}  P=$p $red"
        done
        q=$(run "$dir" "$1" "$2" partition 4 --partitioner fennel)
        line="$line $(printf '%10s' "$q")"
        reds="$reds  Fennel P=4 $(python3 -c "print('%+.1f%%' % (100.0 * ($q - $r) / $r))")"
        echo "$line    (vs random:${reds})"
        reds=
    done
    [ $kind = comm ] || continue
    echo "  historical embeddings for 20 % of the nodes (outre --embed-nodes 0.2), epoch 2 of 2:"
    printf '  %-8s %-10s %-10s %8s %8s %8s\n' layers fanout batches "none" "admit 1" "0.05"
    for cfg in "3 15,10,5" "2 10,25"; do
        set -- $cfg
        for b in "random -" "partition 4"; do
            read -r batching p <<<"$b"
            emb=(--strategy outre --embed-nodes 0.2 --epochs 2)
            r0=$(run "$dir" "$1" "$2" $batching $p --epochs 2)
            r1=$(run "$dir" "$1" "$2" $batching $p "${emb[@]}" --admit 1)
            r2=$(run "$dir" "$1" "$2" $batching $p "${emb[@]}")
            printf '  %-8s %-10s %-10s %8s %8s %8s    (admit 1: %s, 0.05: %s)\n' "$1" "$2" \
                "$([ $batching = random ] && echo random || echo "P=$p")" "$r0" "$r1" "$r2" \
                "$(python3 -c "print('%+.1f%%' % (100.0 * ($r1 - $r0) / $r0))")" \
                "$(python3 -c "print('%+.1f%%' % (100.0 * ($r2 - $r0) / $r0))")"
        done
    done
done
