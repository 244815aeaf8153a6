#!/usr/bin/env bash
# ooc_bench.sh — builds and runs bench/ooc_bench/ (ooc_bench.c, child.c, cgroup.c): generates (once, cached
# under ~/.cache/offcore/bench-ooc) a dataset whose features are 10x the
# memory budget, probes the disk (O_DIRECT sequential MiB/s, random 4 KiB
# IOPS), trains with `memory` and then every registered out-of-core strategy,
# and prints epoch time, x memory, x bound, bytes, amplification, hit ratio,
# peak RSS and the weights check. Options: see `bench/ooc_bench.sh --help`.
#   BUILD=build bench/ooc_bench.sh [--nodes N] [--feat-dim F] [--budget SIZE] ...
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
[ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target ooc_bench >/dev/null
exec "$BUILD/ooc_bench" "$@"
