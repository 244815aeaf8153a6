#!/usr/bin/env bash
# outre_vs_ginex.sh — OUTRE's closing comparison: `outre` (partition batches,
# historical embeddings at --staleness S, the budget split by its profiling
# pass) against `ginex` (random batches, Belady cache, superbatches) at one
# --mem-budget, for 3-layer (fanout 15,10,5) and 2-layer (10,25) GraphSAGE, in
# one run on one generated graph with communities (the bench graph of
# bench/outre_rr.sh: 50 classes, homophily 0.9). Per run: the last epoch's
# training time (the log's time_s - eval_s), the bytes read from the feature
# file, the Redundancy Ratio, outre's pruned share and chosen split; then
# ginex / outre time ratios. Data under ~/.cache/offcore/outre-vs-ginex-*,
# removed unless KEEP=1.
#   BUILD=build bench/outre_vs_ginex.sh [nodes] [budget] [epochs] [staleness] [budget for 2 layers]
#   (defaults 300000 600M 2 100; FEAT=512 feature dimension, TRAIN_FRAC=0.1 training share;
#   OUTRE_ARGS adds options to the outre runs with embeddings, e.g. "--admit 1")
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OC="$BUILD/offcore"
NODES=${1:-300000}
BUDGET=${2:-600M}
EPOCHS=${3:-2}
STALE=${4:-100}
BUDGET2=${5:-$BUDGET}
read -r -a OUTRE_ARGS <<<"${OUTRE_ARGS:-}"
FEAT=${FEAT:-512}
TRAIN_FRAC=${TRAIN_FRAC:-0.1}
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/offcore
DIR="$CACHE/outre-vs-ginex-$NODES-$FEAT-$TRAIN_FRAC"
TMP=$(mktemp -d)
cleanup() {
    rm -rf "$TMP"
    [ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
}
trap cleanup EXIT
mkdir -p "$CACHE"
[ -d "$DIR" ] || "$OC" generate --nodes "$NODES" --avg-degree 10 --feat-dim "$FEAT" --classes 50 \
    --homophily 0.9 --train-frac "$TRAIN_FRAC" --quiet "$DIR" >/dev/null
echo "graph: $NODES nodes, degree 10, ${FEAT}-dim f32 features ($(du -sh "$DIR/features.npy" | cut -f1)), 50 classes, homophily 0.9, training share $TRAIN_FRAC; $EPOCHS epochs, the last one reported"

# field LOG EXPR: a value of the last epoch object of a JSON log
field() {
    python3 - "$1" "$2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"epoch"' in l and '"final"' not in l]
r = rows[-1]
print(eval(sys.argv[2], {}, {"r": r}))
PY
}

run() { # NAME LAYERS FANOUT BUDGET ARGS... -> prints a line, leaves the time in $TMP/NAME.t
    local name=$1 layers=$2 fanout=$3 budget=$4
    shift 4
    local log="$TMP/$name.json"
    "$OC" train "$DIR" --layers "$layers" --fanout "$fanout" --hidden 256 --batch 1024 \
        --epochs "$EPOCHS" --eval none --mem-budget "$budget" --quiet --log "$log" "$@" \
        >"$TMP/$name.out" 2>"$TMP/$name.err" || {
        echo "  $name: failed: $(tail -1 "$TMP/$name.err")"
        echo nan >"$TMP/$name.t"
        failed=1
        return
    }
    local t rd rr extra=""
    t=$(field "$log" 'round(r["time_s"] - r["stages"]["eval_s"], 3)')
    rd=$(field "$log" 'round(r["features"]["read_bytes"] / 2**20, 1)')
    rr=$(field "$log" 'round(r["redundancy"]["ratio"], 2)')
    if grep -q "cache split" "$TMP/$name.err"; then
        extra=" | pruned $(field "$log" 'round(r["features"]["embeddings"]["pruned_ratio"], 3)') | $(sed -n 's/.*store outre: //p' "$TMP/$name.err" | tr '\n' ' ')"
    fi
    echo "$t" >"$TMP/$name.t"
    printf '  %-14s epoch %7.2f s | read %9.1f MiB | RR %6.2f%s\n' "$name" "$t" "$rd" "$rr" "$extra"
}

for cfg in "3 15,10,5 $BUDGET" "2 10,25 $BUDGET2"; do
    set -- $cfg
    echo "$1 layers (fanout $2), --mem-budget $3:"
    run "ginex-$1L" "$1" "$2" "$3" --strategy ginex
    run "outre-$1L" "$1" "$2" "$3" --strategy outre --batching partition --staleness "$STALE" "${OUTRE_ARGS[@]}"
    run "outre-S0-$1L" "$1" "$2" "$3" --strategy outre --batching partition --staleness 0
    python3 - "$TMP" "$1" <<'PY'
import sys
d, l = sys.argv[1], sys.argv[2]
t = {n: float(open(f"{d}/{n}-{l}L.t").read()) for n in ("ginex", "outre", "outre-S0")}
print("  ginex / outre: %.2fx   ginex / outre without embeddings (partition batches only): %.2fx"
      % (t["ginex"] / t["outre"], t["ginex"] / t["outre-S0"]))
PY
done
if [ -n "${failed:-}" ]; then
    echo "outre_vs_ginex: a run failed (its ratios above are nan)" >&2
    exit 1
fi
