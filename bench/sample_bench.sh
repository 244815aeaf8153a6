#!/usr/bin/env bash
# sample_bench.sh — builds bench/sample_bench.c against a build's liboffcore.a
# and runs it: neighbor-sampling throughput (batches/s, sampled edges/s) on a
# synthetic power-law graph, GraphSAGE fanouts 15,10,5, batch 1024, at 1 and
# 2 threads by default.
#   BUILD=build-smp bench/sample_bench.sh [n_nodes] [batches] [fanouts] [batch] [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
[ -f "$BUILD/liboffcore.a" ] || cmake --build "$BUILD" --target offcore_lib
out="$BUILD/sample_bench"
${CC:-cc} -std=c11 -O2 -D_GNU_SOURCE -Wall -Wextra -Werror -Iinclude bench/sample_bench.c \
    "$BUILD/liboffcore.a" -lz -lpthread -lm -o "$out"
exec "$out" "$@"
