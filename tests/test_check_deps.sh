#!/usr/bin/env bash
# test_check_deps.sh — tools/check_deps.sh's rules fire: the script is copied
# with a tiny made-up source tree into a temporary directory; the clean tree
# passes (exit 0), then each rule is broken once and the script must exit 1
# naming file:line and the rule. Ends with the harness's "N passed, N failed,
# N skipped" line; exit 1 if anything failed.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/oc-check-deps.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# A clean tree: every rule satisfied.
clean_tree() {
    rm -rf "$tmp/t"
    mkdir -p "$tmp/t/tools" "$tmp/t/include/offcore" "$tmp/t/src/core" "$tmp/t/src/pipeline" \
        "$tmp/t/src/io" "$tmp/t/src/kg" "$tmp/t/src/cli" "$tmp/t/src/store/alpha" \
        "$tmp/t/src/store/beta"
    cp "$here/tools/check_deps.sh" "$tmp/t/tools/"
    printf '#include <stdint.h>\n' >"$tmp/t/include/offcore/core.h"
    printf '#include "offcore/core.h"\n' >"$tmp/t/include/offcore/io.h"
    printf '#include <pthread.h>\nvoid f(void) { pthread_create(0, 0, 0, 0); }\n' \
        >"$tmp/t/src/core/pool.c"
    cp "$tmp/t/src/core/pool.c" "$tmp/t/src/pipeline/stage.c"
    cp "$tmp/t/src/core/pool.c" "$tmp/t/src/cli/signals.c" # listed in THREAD_ALLOWED
    printf '#include "offcore/core.h"\n#include "io/io_int.h"\n' >"$tmp/t/src/io/io.c"
    : >"$tmp/t/src/io/io_int.h"
    printf '#include "offcore/io.h"\n#include "pipeline/x.h"\n' >"$tmp/t/src/kg/kg.c"
    printf '#include "store/store_int.h"\n' >"$tmp/t/src/store/registry.c"
    : >"$tmp/t/src/store/store_int.h"
    : >"$tmp/t/src/store/alpha/alpha_int.h"
    printf '#include "store/store_int.h"\n#include "store/alpha/alpha_int.h"\n#include "alpha_int.h"\n' \
        >"$tmp/t/src/store/alpha/alpha.c"
    : >"$tmp/t/src/store/beta/beta_int.h"
    printf '#include "store/beta/beta_int.h"\n' >"$tmp/t/src/store/beta/beta.c"
}

# expect NAME WANT_RC WANT_TEXT: runs the script on the tree as it is now.
expect() {
    out=$("$tmp/t/tools/check_deps.sh" 2>&1)
    rc=$?
    if [ "$rc" -eq "$2" ] && case "$out" in *"$3"*) true ;; *) false ;; esac then
        echo "[  OK  ] $1"
        passed=$((passed + 1))
    else
        echo "[ FAIL ] $1: exit $rc (want $2), output:"
        echo "$out" | sed 's/^/    /'
        echo "    (wanted: $3)"
        failed=$((failed + 1))
    fi
}

clean_tree
expect clean_tree_passes 0 "module dependencies: ok"

clean_tree
printf '#include "offcore/core.h"\n#include "store/beta/beta_int.h"\n' >>"$tmp/t/src/store/alpha/alpha.c"
expect strategy_includes_another_strategys_header 1 \
    'src/store/alpha/alpha.c:5: [strategy-privacy] "store/beta/beta_int.h" is private to strategy '"'beta'"

clean_tree
printf '#include "../alpha/alpha_int.h"\n' >>"$tmp/t/src/store/beta/beta.c"
expect strategy_includes_a_sibling_by_relative_path 1 \
    'src/store/beta/beta.c:2: [strategy-privacy] "../alpha/alpha_int.h" is private to strategy'

clean_tree
printf '#include "store/alpha/alpha_int.h"\n' >>"$tmp/t/src/store/registry.c"
expect store_layer_includes_a_strategys_header 1 \
    'src/store/registry.c:2: [strategy-privacy]'

clean_tree
printf '\nvoid g(void) { pthread_create(0, 0, 0, 0); }\n' >>"$tmp/t/src/kg/kg.c"
expect thread_outside_core_and_pipeline 1 'src/kg/kg.c:4: [one-stage-runner] pthread_create outside'

clean_tree
mv "$tmp/t/src/cli/signals.c" "$tmp/t/src/cli/watch.c"
expect thread_in_a_file_not_allowed 1 'src/cli/watch.c:2: [one-stage-runner]'

clean_tree
printf '#include <pthread.h>\nint s(void) { return pthread_create(0, 0, 0, 0); }\n' \
    >"$tmp/t/src/store/beta/beta_io.c"
expect strategy_starts_a_thread 1 'src/store/beta/beta_io.c:2: [strategy-threads]'

clean_tree
printf '#include "kg/kg_int.h"\n' >>"$tmp/t/src/io/io.c"
expect include_of_a_module_above 1 "src/io/io.c:3: [layering] 'io' must not include \"kg/kg_int.h\""

clean_tree
printf '#include "io/io_int.h"\n' >>"$tmp/t/src/kg/kg.c"
expect private_header_outside_its_module 1 'src/kg/kg.c:3: [private-header] private header "io/io_int.h"'

clean_tree
printf '#include "offcore/kg.h"\n' >>"$tmp/t/include/offcore/io.h"
expect public_header_includes_a_module_above 1 'include/offcore/io.h:2: [public-header]'

clean_tree
printf '#include <liburing.h>\n' >>"$tmp/t/include/offcore/io.h"
expect public_header_leaks_liburing 1 'include/offcore/io.h:2: [public-types]'

clean_tree
printf '#include <mpi.h>\n' >>"$tmp/t/src/kg/kg.c"
expect mpi_outside_its_door 1 'src/kg/kg.c:3: [mpi-door] only src/train/dist_mpi.c includes mpi.h'

clean_tree
mkdir -p "$tmp/t/src/train"
printf '#include <mpi.h>\n' >"$tmp/t/src/train/dist_mpi.c"
expect mpi_in_its_door 0 "module dependencies: ok"

echo "$passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
