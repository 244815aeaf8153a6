#!/bin/sh
# generate_scale.sh — times `offcore generate` at scale and reports wall time,
# CPU time and peak RSS (the performance target: 10M nodes, degree 15,
# 128-dim f32 in under 10 minutes with peak RSS under 4 GiB).
#
# Usage: bench/generate_scale.sh [BIN] [OUT]
#   BIN  the offcore binary (default build/offcore)
#   OUT  output directory, deleted afterwards (default /tmp/oc-gen-scale)
# Environment: NODES (10000000), DEG (15), FEAT (128), CLASSES (10), DTYPE (f32),
#   THREADS (0 = all cores), SORT_MEM (1G), KEEP=1 keeps the output.
set -eu
BIN=${1:-build/offcore}
OUT=${2:-/tmp/oc-gen-scale}
NODES=${NODES:-10000000}
DEG=${DEG:-15}
FEAT=${FEAT:-128}
CLASSES=${CLASSES:-10}
DTYPE=${DTYPE:-f32}
THREADS=${THREADS:-0}
SORT_MEM=${SORT_MEM:-1G}
LOG=$(mktemp)
trap 'rm -f "$LOG"; [ "${KEEP:-0}" = 1 ] || rm -rf "$OUT"' EXIT

if [ -e "$OUT" ]; then
    echo "generate_scale: $OUT exists; remove it first" >&2
    exit 2
fi
echo "offcore generate --nodes $NODES --avg-degree $DEG --feat-dim $FEAT --classes $CLASSES" \
     "--dtype $DTYPE --threads $THREADS --sort-mem $SORT_MEM $OUT"
/usr/bin/time -v "$BIN" generate --nodes "$NODES" --avg-degree "$DEG" --feat-dim "$FEAT" \
    --classes "$CLASSES" --dtype "$DTYPE" --threads "$THREADS" --sort-mem "$SORT_MEM" \
    --quiet "$OUT" >"$LOG" 2>&1 || { cat "$LOG" >&2; exit 1; }
grep '^generated' "$LOG"
awk -F': ' '
    /Elapsed \(wall clock\)/ { print "wall time      " $2 }
    /User time/              { u = $2 }
    /System time/            { s = $2 }
    /Percent of CPU/         { print "cpu share      " $2 }
    /Maximum resident/       { printf "peak RSS       %.1f MiB\n", $2 / 1024 }
    END                      { printf "cpu time       %.1f s (user %.1f, sys %.1f)\n", u + s, u, s }
' "$LOG"
"$BIN" info "$OUT" | sed -n '1,12p'
du -sh "$OUT" | awk '{ print "disk           " $1 }'
