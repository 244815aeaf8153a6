#!/usr/bin/env bash
# kg_bench.sh — runs bench/kg_bench.c (built by CMake as $BUILD/kg_bench):
# RED-GNN subgraph extraction, fact graph in RAM vs on disk (O_DIRECT), on a
# KG made by `offcore generate-kg` (default 1M entities, 10M triples, 200
# relations) under ~/.cache/offcore/, removed afterwards unless KEEP=1.
# JSON=FILE also writes the table as JSON (kg_bench --json) for `offcore report`.
#   BUILD=build bench/kg_bench.sh [entities] [triples] [queries] [layers] [batch] [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ENT=${1:-1000000}
TRI=${2:-10000000}
DIR=${DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/offcore/kg-bench-$ENT-$TRI}
cmake --build "$BUILD" --target kg_bench offcore >/dev/null
if [ ! -e "$DIR/kg.json" ]; then
    rm -rf "$DIR"
    /usr/bin/time -f "generate-kg: %e s wall, %M KiB peak RSS" \
        "$BUILD/offcore" generate-kg "$DIR" --entities "$ENT" --triples "$TRI" --queries 5000 --quiet
fi
status=0
"$BUILD/kg_bench" ${JSON:+--json "$JSON"} "$DIR" "${3:-2000}" "${4:-2}" "${5:-16}" "${6:-1,2}" || status=$?
if [ "${KEEP:-0}" != 1 ]; then rm -rf "$DIR"; fi
exit $status
