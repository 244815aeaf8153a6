#!/usr/bin/env bash
# sample_bench.sh — runs bench/sample_bench.c (built by CMake as
# $BUILD/sample_bench): neighbor-sampling throughput (batches/s, sampled
# edges/s) on a synthetic power-law graph, GraphSAGE fanouts 15,10,5, batch
# 1024, at 1 and 2 threads by default.
#   BUILD=build bench/sample_bench.sh [n_nodes] [batches] [fanouts] [batch] [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
cmake --build "$BUILD" --target sample_bench >/dev/null
exec "$BUILD/sample_bench" "$@"
