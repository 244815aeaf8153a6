#!/usr/bin/env bash
# topo_disk_bench.sh — runs bench/topo_disk_bench.c (built by CMake as
# $BUILD/topo_disk_bench): neighbor sampling over on-disk topology with
# several neighbor-cache sizes vs in-memory topology (batches/s, hit ratio,
# bytes read per batch, amplification, identical batches). The dataset is
# generated into DIR on first use (default: a directory under /tmp).
#   BUILD=build DIR=/tmp/oc-topo-2m bench/topo_disk_bench.sh [n_nodes] [cache] [threads] [batches] [fanouts] [batch]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DIR=${DIR:-/tmp/oc-topo-bench-${1:-2000000}}
cmake --build "$BUILD" --target topo_disk_bench >/dev/null
exec "$BUILD/topo_disk_bench" "$DIR" "$@"
