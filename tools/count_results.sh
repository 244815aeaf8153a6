#!/usr/bin/env bash
# count_results.sh BUILD_DIR — sums the "N passed, N failed, N skipped" lines
# that every test executable prints (from ctest's last log) into one total.
set -u
log="$1/Testing/Temporary/LastTest.log"
[ -f "$log" ] || { echo "count_results: no ctest log at $log" >&2; exit 1; }
grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$log" |
    awk -F'[ ,]+' '{p+=$1; f+=$3; s+=$5} END {printf "total: %d passed, %d failed, %d skipped\n", p, f, s; exit (f>0)}'
