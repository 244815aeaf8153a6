#!/usr/bin/env bash
# kg_budget_check.sh — `offcore kg-train` under --mem-budget on the 12 GraIL
# splits of ../shared/datasets/kg-inductive, each at its preset: imports the
# split (under ~/.cache/offcore/, removed afterwards unless KEEP=1), asks
# `kg-train --dry-run` for the smallest --mem-budget that fits, checks that
# one MiB less is refused before training naming that budget, trains one
# epoch (with evaluation) at exactly that budget, then the same epoch at 1G
# (without a budget when the smallest is more: 1G is then refused up front),
# and prints per split: the smallest budget, the accountant's peak and the
# peak RSS at that budget and at 1G, whether both epochs gave the same loss
# and validation MRR, and pass/fail (fail: a refusal that does not name the
# budget, a run at the budget that fails, or a different epoch).
#   BUILD=build bench/kg_budget_check.sh [split ...]   (default: all 12)
# Environment: THREADS (2), SHARED (../shared), EPOCHS (1).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
THREADS=${THREADS:-2}
EPOCHS=${EPOCHS:-1}
SHARED=${SHARED:-../shared}
SRC=$SHARED/datasets/kg-inductive
ROOT=${ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/offcore/kg-budget-check}
if [ ! -d "$SRC" ]; then
    echo "$SRC not found: the GraIL splits are not here" >&2
    exit 2
fi
cmake --build "$BUILD" --target offcore >/dev/null
BIN=$BUILD/offcore
SPLITS=("$@")
if [ ${#SPLITS[@]} -eq 0 ]; then
    SPLITS=(WN18RR_v1 WN18RR_v2 WN18RR_v3 WN18RR_v4 fb237_v1 fb237_v2 fb237_v3 fb237_v4
        nell_v1 nell_v2 nell_v3 nell_v4)
fi
mkdir -p "$ROOT"
# the JSON log's field of the last epoch line
field() { python3 -c 'import json,sys
rows=[json.loads(l) for l in open(sys.argv[1]) if "\"epoch\"" in l]
print(rows[-1][sys.argv[2]] if rows else "")' "$1" "$2"; }
mib() { python3 -c "print(f'{int(float(\"$1\")) / 1048576:.1f}')"; }
# one epoch at budget $2 (0: none) of dataset $1: sets rc, log; peak RSS (KiB) in $ROOT/time.txt
train() {
    local log=$ROOT/$3.jsonl
    rm -f "$log"
    rc=0
    /usr/bin/time -f "%M" -o "$ROOT/time.txt" "$BIN" kg-train "$1" --epochs "$EPOCHS" \
        --threads "$THREADS" --mem-budget "$2" --log "$log" --quiet >"$ROOT/$3.out" \
        2>"$ROOT/$3.err" || rc=$?
}
printf '%-10s %9s %8s | %-28s | %-29s | %-5s %s\n' split smallest "-1MiB" \
    "at smallest: exit acct/RSS MiB" "at 1G: acct/RSS MiB" same result
status=0
t0=$(date +%s)
for s in "${SPLITS[@]}"; do
    ds=$ROOT/$s
    rm -rf "$ds"
    "$BIN" import kg "$SRC/$s" "$ds" --quiet >/dev/null
    dry=$("$BIN" kg-train "$ds" --threads "$THREADS" --dry-run 2>/dev/null)
    need=$(sed -n 's/.*fits is \([0-9]*\)M.*/\1/p' <<<"$dry")
    result=pass
    if [ -z "$need" ]; then
        printf '%-10s dry run printed no budget: %s\n' "$s" "$dry"
        status=1
        continue
    fi
    refused=no
    if ! err=$("$BIN" kg-train "$ds" --threads "$THREADS" --dry-run --mem-budget "$((need - 1))M" 2>&1 >/dev/null) &&
        grep -q "the smallest that fits is --mem-budget ${need}M" <<<"$err"; then
        refused=yes
    else
        result=fail
    fi
    train "$ds" "${need}M" at
    rc_at=$rc
    rss_at=$(cat "$ROOT/time.txt" | tail -1)
    acct_at=$( [ $rc_at -eq 0 ] && field "$ROOT/at.jsonl" mem_peak_bytes || echo 0)
    [ $rc_at -eq 0 ] || { result=fail; sed 's/^/    /' "$ROOT/at.err" | tail -2; }
    ref=1G
    if [ "$need" -gt 1024 ]; then ref=0; fi # 1G is refused: the reference runs unbudgeted
    train "$ds" "$ref" big
    rss_big=$(cat "$ROOT/time.txt" | tail -1)
    acct_big=$( [ $rc -eq 0 ] && field "$ROOT/big.jsonl" mem_peak_bytes || echo 0)
    same=no
    if [ $rc_at -eq 0 ] && [ $rc -eq 0 ] &&
        [ "$(field "$ROOT/at.jsonl" loss) $(field "$ROOT/at.jsonl" valid_mrr)" = \
          "$(field "$ROOT/big.jsonl" loss) $(field "$ROOT/big.jsonl" valid_mrr)" ]; then
        same=yes
    else
        result=fail
    fi
    [ "$result" = pass ] || status=1
    [ "$ref" = 1G ] || ref="(none)"
    printf '%-10s %8sM %8s | %4s %10s / %7s     | %10s / %7s %-6s | %-5s %s\n' "$s" "$need" \
        "$refused" "$rc_at" "$(mib "$acct_at")" "$(mib $((rss_at * 1024)))" "$(mib "$acct_big")" \
        "$(mib $((rss_big * 1024)))" "$([ "$ref" = 1G ] || echo "$ref")" "$same" "$result"
    if [ "${KEEP:-0}" != 1 ]; then rm -rf "$ds"; fi
done
echo "total $(( $(date +%s) - t0 )) s (threads $THREADS, $EPOCHS epoch(s) per run)"
if [ "${KEEP:-0}" != 1 ]; then rm -rf "$ROOT"; fi
exit $status
