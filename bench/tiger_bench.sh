#!/usr/bin/env bash
# tiger_bench.sh — TIGER's evaluation (thesis section VI, Fig. 13) on a KG made
# by `offcore generate-kg` under ~/.cache/offcore/ (removed afterwards unless
# KEEP=1): `offcore kg-train --extract basic|atom|ginex-slices|tiger` under a
# --mem-budget at most a fifth of the training graph's fact bytes (checked),
# each run from an empty slice store. Prints per mode the first epoch's time
# (with slicing) and the mean time of the later epochs split into extraction
# and model, slicing time (on the planner thread, overlapping training but
# for the epoch's first superbatch) and how long epoch 0 waited for it,
# slices read, Slice Cache hits, delta_R, delta_U, bytes read, peak RSS; then tiger vs basic speedup after the first epoch and
# tiger's slicing time over ginex-slices'; and checks that every mode trains
# to basic's weights_sha256 and test MRR.
#   BUILD=build bench/tiger_bench.sh [entities] [triples] [queries] [epochs] [budget]
# Other settings (environment): LAYERS (2), HIDDEN (4), BATCH (1: also the evaluation batch), THREADS (2),
# SLICE (256: facts per slice), SUPERBATCH (16), POWER (6: entity popularity exponent),
# MIN_RATIO (5: the least fact bytes / budget accepted; a lower value is printed with the figures).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ENT=${1:-150000}
TRI=${2:-6000000}
QUE=${3:-100}
EPOCHS=${4:-3}
BUDGET=${5:-20M}
LAYERS=${LAYERS:-2}
HIDDEN=${HIDDEN:-4}
BATCH=${BATCH:-1}
THREADS=${THREADS:-2}
SLICE=${SLICE:-256}
SUPERBATCH=${SUPERBATCH:-16}
POWER=${POWER:-6}
ROOT=${ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/offcore/tiger-bench-$ENT-$TRI-$QUE-$POWER}
DIR=$ROOT/kg
cmake --build "$BUILD" --target offcore >/dev/null
mkdir -p "$ROOT"
if [ ! -e "$DIR/kg.json" ]; then
    rm -rf "$DIR"
    /usr/bin/time -f "generate-kg: %e s wall, %M KiB peak RSS" \
        "$BUILD/offcore" generate-kg "$DIR" --entities "$ENT" --triples "$TRI" --queries "$QUE" \
        --power-law "$POWER" --quiet
fi
budget_bytes=$(numfmt --from=iec "$BUDGET")
facts=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["train"]["n_facts"])' "$DIR/kg.json")
fact_bytes=$((facts * 8))
MIN_RATIO=${MIN_RATIO:-5}
ratio=$(python3 -c "print(f'{$fact_bytes / $budget_bytes:.2f}')")
echo "fact graph (training): $facts facts = $((fact_bytes >> 20)) MiB; budget $BUDGET: the fact graph is ${ratio}x the budget"
if [ $((fact_bytes)) -lt $((MIN_RATIO * budget_bytes)) ]; then
    echo "the fact graph must be at least ${MIN_RATIO}x the budget (MIN_RATIO)" >&2
    exit 2
fi
status=0
for mode in basic atom ginex-slices tiger; do
    rm -rf "$ROOT/plan"
    extra=()
    if [ "$mode" = ginex-slices ] || [ "$mode" = tiger ]; then
        extra=(--slice-size "$SLICE" --superbatch "$SUPERBATCH" --plan-dir "$ROOT/plan")
    fi
    /usr/bin/time -f "$mode: %e s wall, %M KiB peak RSS" \
        "$BUILD/offcore" kg-train "$DIR" --preset none --layers "$LAYERS" --hidden "$HIDDEN" \
        --attn-dim 2 --batch "$BATCH" --eval-batch "$BATCH" --epochs "$EPOCHS" \
        --threads "$THREADS" --seed 0 --facts disk --extract "$mode" --mem-budget "$BUDGET" \
        --log "$ROOT/$mode.jsonl" --quiet "${extra[@]}" >"$ROOT/$mode.out" || status=$?
done
python3 - "$ROOT" <<'EOF' || status=1
import json, sys
root = sys.argv[1]
modes = ["basic", "atom", "ginex-slices", "tiger"]
runs = {}
for m in modes:
    try:
        lines = [json.loads(l) for l in open(f"{root}/{m}.jsonl")]
    except OSError:
        print(f"{m}: no log (the run failed)")
        continue
    runs[m] = ([l for l in lines if "epoch" in l], [l for l in lines if l.get("final")][0])
print("| mode | epoch 0 (s) | later epochs (s) | extraction (s) | model (s) | slicing (s) | "
      "epoch 0 waited for slicing (s) | "
      "slices read / accessed | cache hits | delta_R | delta_U | score | read MiB / epoch | "
      "peak RSS MiB | test MRR |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")
for m, (ep, fin) in runs.items():
    later = ep[1:]
    acc = sum(e["slices_accessed"] for e in later)
    hit = 1 - sum(e["slices_read"] for e in later) / acc if acc else float("nan")
    print(f"| {m} | {ep[0]['time_s']:.2f} | {mean([e['time_s'] for e in later]):.2f} | "
          f"{mean([e['extract_s'] for e in later]):.2f} | {mean([e['model_s'] for e in later]):.2f} | "
          f"{ep[0]['slicing_s']:.2f} | {ep[0].get('plan_wait_s', 0):.2f} | {mean([e['slices_read'] for e in later]):.0f} / "
          f"{mean([e['slices_accessed'] for e in later]):.0f} | {hit:.3f} | {ep[-1]['delta_r']:.3f} | "
          f"{ep[-1]['delta_u']:.3f} | {ep[-1]['slicing_score']:.3f} | "
          f"{mean([e['bytes_read'] for e in later]) / 2**20:.1f} | "
          f"{max(e['peak_rss_bytes'] for e in ep) / 2**20:.1f} | {fin['test_mrr']:.4f} |")
ok = True
if "basic" in runs and "tiger" in runs:
    b = mean([e["time_s"] for e in runs["basic"][0][1:]])
    t = mean([e["time_s"] for e in runs["tiger"][0][1:]])
    print(f"tiger vs basic, epochs after the first: {b / t:.2f}x (thesis: 1.9-7.9x)")
if "ginex-slices" in runs and "tiger" in runs:
    g = runs["ginex-slices"][0][0]["slicing_s"]
    t = runs["tiger"][0][0]["slicing_s"]
    print(f"tiger's slicing time / ginex-slices': {t / g:.2f} (thesis: below 0.65)")
for m, (ep, fin) in runs.items():
    same = fin["weights_sha256"] == runs["basic"][1]["weights_sha256"] and \
        fin["test_mrr"] == runs["basic"][1]["test_mrr"]
    ok &= same
    print(f"{m}: weights_sha256 {fin['weights_sha256'][:16]}… {'= basic' if same else 'DIFFERS'}")
sys.exit(0 if ok and len(runs) == 4 else 1)
EOF
if [ "${KEEP:-0}" != 1 ]; then rm -rf "$ROOT"; fi
exit $status
