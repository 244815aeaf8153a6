#!/usr/bin/env bash
# test_train_mpi.sh — `offcore train --distributed` under mpirun (registered
# only in builds with MPI): on a small generated graph, 2 and 3 oversubscribed
# ranks with --micro-shards 4 train the weights_sha256 of one process with
# --micro-shards 4, for the memory, static, ginex and diskgnn strategies
# (static, ginex and diskgnn under a --mem-budget that keeps features on
# disk, each rank its own);
# only rank 0 logs (one line per epoch) and the log counts the gradient bytes
# exchanged; every rank evaluates its share of the evaluation (sampled
# batches, or --eval full's last-layer chunks: rank 0 fewer than all) and the
# logged validation/test metrics (acc, rocauc, f1-macro), best epoch and
# weights equal one process's; outre with --staleness 0 (a feature cache) trains memory's
# weights on N ranks; more ranks than micro-shards are refused; a rank that fails
# (a missing dataset on rank 1) ends every rank within 30 s with an error
# naming it; a rank killed mid-run (SIGKILL) ends the others within 30 s and a
# --resume at the same N from rank 0's checkpoint reaches the uninterrupted
# weights. On a partitioned dataset (offcore partition --parts 2 and 3) the
# ranks, each serving only its part's rows under its own --mem-budget (memory,
# static with most rows on disk, ginex following a plan over the rows its
# part is asked for, direct, mmap) and fetching the others per batch, one
# batch ahead of the step (the log counting the exchanges in flight while a
# step ran: all but each epoch's first batch's, on every rank; with
# --remote-cache too: other parts' hot rows kept, hits logged, fewer bytes
# exchanged), train the single-process weights and log the rows fetched and read and one
# process's evaluation metrics (sampled, and --eval full at one layer, the
# ranks' shares fetching rows from their owners), and resume from a
# checkpoint to the uninterrupted weights; gnndrive and helios on parts, each
# fed the plan's batches over the access map by a feeder of its own, train the
# single-process weights with every batch served from their pipelines (none
# read directly; gnndrive with --remote-cache too); diskgnn on parts, its
# windows packing the rows the access map asks of each part (under the
# part's own plan/, gone after the run), trains the single-process weights
# with every row from its chunks or CPU cache; so do static with --hotness presample
# (each rank caching the part's rows epoch 0 asks for most: fewer disk bytes in epoch 0 than
# by in-degree) and with --hyperbatch (its groups filled by its own feeder over the access
# map, every batch served from them), and outre with --staleness 0 (its profile over the
# access map); outre's historical embeddings, --hyperbatch with other strategies,
# gnndrive's --samplers and --plan-dir are refused on parts, naming themselves; a
# part count unlike the ranks', a part of another partition
# run, a missing or truncated part, ranks whose parts come from two runs, and
# a run without --distributed are refused naming the file, and a
# --remote-cache over the store's share of the budget, under one row or on
# an unpartitioned dataset naming the option, and stated apart from the
# store's share by --dry-run. Env: OC_BIN (the
# CLI). Exit 77 (skip) without mpirun. Ends with the harness's "N passed, N
# failed, N skipped" line.
set -u
bin=${OC_BIN:?OC_BIN: the offcore CLI}
if ! command -v mpirun >/dev/null 2>&1; then
    echo "mpirun not found (openmpi-bin)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 77
fi
if [ "$(id -u)" -eq 0 ]; then # OpenMPI refuses root unless told
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 # more ranks than cores (functional only)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/oc-mpi.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() {
    echo "[  OK  ] $1"
    passed=$((passed + 1))
}
fail() {
    echo "[ FAIL ] $1"
    failed=$((failed + 1))
}
sha_of() { sed -n 's/^weights_sha256 \([0-9a-f]*\)$/\1/p' "$1"; }
# The evaluation's numbers of a JSON-lines log: every val_/test_/best_ field, one a line.
metrics_of() { grep -o '"\(val\|test\|best\)_[a-z0-9_]*":[^,}]*' "$1"; }
# Rank 0's share of the evaluation in a log: "own all" per evaluated epoch.
eval_units_of() { sed -n 's/.*"eval_units":\([0-9]*\),"eval_units_rank0":\([0-9]*\).*/\2 \1/p' "$1"; }
# Whether every epoch of log $1 has rank 0 evaluating less than all (1) or all of it (0).
eval_split() {
    local own all n=0
    while read -r own all; do
        n=$((n + 1))
        if [ "$2" -eq 1 ] && { [ "$own" -eq 0 ] || [ "$own" -ge "$all" ]; }; then return 1; fi
        if [ "$2" -eq 0 ] && [ "$own" -ne "$all" ]; then return 1; fi
    done < <(eval_units_of "$1")
    [ $n -gt 0 ]
}

g=$tmp/g
"$bin" generate --nodes 20000 --avg-degree 8 --feat-dim 64 --classes 4 --quiet "$g" >/dev/null ||
    {
        echo "generate failed"
        exit 1
    }
common=(--epochs 2 --batch 500 --threads 1 --quiet --eval sampled --eval-batch 500 --micro-shards 4)
# Under ASan, OpenMPI's own allocations (its plugins, unloaded at MPI_Finalize) read as leaks:
# leak checking stays on for the single-process runs only.
mpi=(env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" mpirun --oversubscribe)

for s in memory static ginex diskgnn; do
    case $s in
    memory) opt=(--strategy memory) ;;
    static) opt=(--strategy static --mem-budget 32M) ;;
    ginex) opt=(--strategy ginex --mem-budget 40M) ;;
    diskgnn) opt=(--strategy diskgnn --mem-budget 40M) ;;
    esac
    "$bin" train "$g" "${common[@]}" "${opt[@]}" --log "$tmp/$s.1.json" >"$tmp/$s.1.out" 2>&1
    rc=$?
    want=$(sha_of "$tmp/$s.1.out")
    if [ $rc -ne 0 ] || [ -z "$want" ]; then
        fail "${s}_single_process: no weights_sha256"
        sed 's/^/    /' "$tmp/$s.1.out"
        continue
    fi
    for n in 2 3; do
        "${mpi[@]}" -np "$n" "$bin" train "$g" "${common[@]}" "${opt[@]}" --distributed \
            --log "$tmp/$s.$n.json" >"$tmp/$s.$n.out" 2>&1
        rc=$?
        got=$(sha_of "$tmp/$s.$n.out")
        if [ $rc -eq 0 ] && [ "$got" = "$want" ] &&
            [ "$(grep -c '^weights_sha256' "$tmp/$s.$n.out")" -eq 1 ]; then
            ok "${s}_np${n}_weights_equal_single_process"
        else
            fail "${s}_np${n}_weights_equal_single_process: exit $rc, got '$got' want '$want'"
            sed 's/^/    /' "$tmp/$s.$n.out"
        fi
        if [ $rc -eq 0 ] && [ -n "$(metrics_of "$tmp/$s.1.json")" ] &&
            [ "$(metrics_of "$tmp/$s.$n.json")" = "$(metrics_of "$tmp/$s.1.json")" ] &&
            eval_split "$tmp/$s.$n.json" 1; then
            ok "${s}_np${n}_split_evaluation_equals_single_process"
        else
            fail "${s}_np${n}_split_evaluation_equals_single_process"
            diff <(metrics_of "$tmp/$s.1.json") <(metrics_of "$tmp/$s.$n.json") | sed 's/^/    /'
            eval_units_of "$tmp/$s.$n.json" | sed 's/^/    units /'
        fi
    done
done

# outre with --staleness 0 (its feature cache alone, no historical embeddings) on N ranks trains
# memory's weights, as in one process; its embeddings are refused below.
for n in 2 3; do
    "${mpi[@]}" -np "$n" "$bin" train "$g" "${common[@]}" --strategy outre --staleness 0 \
        --mem-budget 32M --distributed >"$tmp/outre.$n.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/outre.$n.out")
    want=$(sha_of "$tmp/memory.1.out")
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
        ok "outre_staleness_0_np${n}_weights_equal_memory"
    else
        fail "outre_staleness_0_np${n}_weights_equal_memory: exit $rc, got '$got' want '$want'"
        sed 's/^/    /' "$tmp/outre.$n.out"
    fi
done

# Every --metric, sampled and full evaluation, on a two-class graph (ROC-AUC needs two): N ranks
# log one process's validation/test values and best epoch, each rank evaluating its share.
g2=$tmp/g2
"$bin" generate --nodes 20000 --avg-degree 8 --feat-dim 64 --classes 2 --quiet "$g2" >/dev/null ||
    {
        echo "generate (two classes) failed"
        exit 1
    }
for case in acc:sampled rocauc:sampled rocauc:full f1-macro:full; do
    m=${case%%:*} ev=${case#*:}
    run=(--epochs 3 --batch 500 --threads 1 --quiet --micro-shards 4 --eval-batch 500 --metric "$m"
        --eval "$ev")
    "$bin" train "$g2" "${run[@]}" --log "$tmp/$m.$ev.1.json" >"$tmp/$m.$ev.1.out" 2>&1
    rc=$?
    want=$(sha_of "$tmp/$m.$ev.1.out")
    if [ $rc -ne 0 ] || [ -z "$want" ] || ! eval_split "$tmp/$m.$ev.1.json" 0 ||
        ! metrics_of "$tmp/$m.$ev.1.json" | grep -q '"best_epoch"'; then
        fail "${m}_${ev}_single_process: exit $rc"
        sed 's/^/    /' "$tmp/$m.$ev.1.out"
        continue
    fi
    for n in 2 3; do
        "${mpi[@]}" -np "$n" "$bin" train "$g2" "${run[@]}" --distributed \
            --log "$tmp/$m.$ev.$n.json" >"$tmp/$m.$ev.$n.out" 2>&1
        rc=$?
        if [ $rc -eq 0 ] && [ "$(sha_of "$tmp/$m.$ev.$n.out")" = "$want" ] &&
            [ "$(metrics_of "$tmp/$m.$ev.$n.json")" = "$(metrics_of "$tmp/$m.$ev.1.json")" ] &&
            eval_split "$tmp/$m.$ev.$n.json" 1; then
            ok "${m}_${ev}_np${n}_split_evaluation_equals_single_process"
        else
            fail "${m}_${ev}_np${n}_split_evaluation_equals_single_process: exit $rc"
            diff <(metrics_of "$tmp/$m.$ev.1.json") <(metrics_of "$tmp/$m.$ev.$n.json") |
                sed 's/^/    /'
            eval_units_of "$tmp/$m.$ev.$n.json" | sed 's/^/    units /'
            sed 's/^/    /' "$tmp/$m.$ev.$n.out"
        fi
    done
done

# Partitioned features (offcore partition): N ranks, each holding only its part's rows and
# fetching the rest from their owners per batch, train the single-process weights; the log
# counts the rows fetched from other ranks.
pc=(--epochs 2 --batch 500 --threads 1 --quiet --eval none --micro-shards 4)
loud=(--epochs 2 --batch 500 --threads 1 --eval sampled --eval-batch 500 --micro-shards 4)
# The first epoch's bytes asked of the disk in a log (summed over the ranks).
first_disk() { sed -n 's/.*"requested_disk_bytes":\([0-9]*\).*/\1/p' "$1" | head -1; }
# Whether every epoch of log $1 (N = $2 ranks) overlapped each batch's row exchange with the
# previous batch's step: remote_overlapped = N x (n_batches - 1) > 0, remote_hidden at most
# that, remote_overlap_s > 0.
overlap_ran() {
    local n=0 b o h s w
    while read -r b o h s w; do
        n=$((n + 1))
        if [ "$b" -lt 2 ] || [ "$o" -ne $(($2 * (b - 1))) ] || [ "$h" -gt "$o" ] ||
            ! awk -v s="$s" -v w="$w" 'BEGIN{exit !(s > 0 && w >= 0)}'; then
            return 1
        fi
    done < <(sed -n 's/.*"n_batches":\([0-9]*\),.*"remote_overlapped":\([0-9]*\),"remote_hidden":\([0-9]*\),"remote_overlap_s":\([0-9.e-]*\),"remote_wait_s":\([0-9.e-]*\).*/\1 \2 \3 \4 \5/p' "$1")
    [ $n -gt 0 ]
}
"$bin" train "$g" "${pc[@]}" >"$tmp/part.1.out" 2>&1
want=$(sha_of "$tmp/part.1.out")
for n in 2 3; do
    if ! "$bin" partition "$g" --parts "$n" "$tmp/p$n" --quiet >"$tmp/p$n.out" 2>&1 ||
        [ ! -s "$tmp/p$n/partition.json" ] || [ ! -s "$tmp/p$n/part-$((n - 1))/rows.npy" ]; then
        fail "partition_np${n}_writes_parts"
        sed 's/^/    /' "$tmp/p$n.out"
        continue
    fi
    ok "partition_np${n}_writes_parts"
    "${mpi[@]}" -np "$n" "$bin" train "$tmp/p$n" "${pc[@]}" --distributed --mem-budget 24M \
        --log "$tmp/part.$n.json" >"$tmp/part.$n.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/part.$n.out")
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
        grep -q '"remote_rows":[1-9]' "$tmp/part.$n.json" &&
        grep -q '"remote_bytes":[1-9]' "$tmp/part.$n.json" &&
        grep -q '| Rows local [1-9][0-9]* remote [1-9]' "$tmp/part.$n.out"; then
        ok "partitioned_np${n}_weights_equal_single_process"
    else
        fail "partitioned_np${n}_weights_equal_single_process: exit $rc, got '$got' want '$want'"
        sed 's/^/    /' "$tmp/part.$n.out"
    fi
    # The fill one batch ahead, as it ran: on every rank, every batch but an epoch's first had
    # its rows' exchange in flight (an MPI request outstanding) through the previous batch's
    # step, so each epoch logs N x (batches - 1) overlapped exchanges (0 if the exchange were
    # synchronous), at most that many done by the step's end, and the step seconds they hid under.
    if overlap_ran "$tmp/part.$n.json" "$n"; then
        ok "partitioned_np${n}_rows_travel_while_the_step_runs"
    else
        fail "partitioned_np${n}_rows_travel_while_the_step_runs"
        grep -o '"n_batches":[0-9]*\|"remote_overlap[^,]*\|"remote_hidden[^,]*\|"remote_wait[^,}]*' \
            "$tmp/part.$n.json" | sed 's/^/    /'
    fi
    # Each rank's part served by static under a budget that keeps most of its rows on disk
    # (its reads counted in the log, summed over the ranks): the same weights, and the
    # evaluation split over the ranks (its rows fetched from their owners) logs one process's
    # metrics.
    # (23M at 2 ranks, 22M at 3: budgets that leave part of each rank's rows on disk)
    "${mpi[@]}" -np "$n" "$bin" train "$tmp/p$n" "${common[@]}" --distributed --strategy static \
        --mem-budget $((25 - n))M --log "$tmp/pst.$n.json" >"$tmp/pst.$n.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/pst.$n.out")
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
        grep -q '"features":{"requested_bytes":[1-9][0-9]*,"requested_disk_bytes":[1-9][0-9]*,"read_bytes":[1-9]' \
            "$tmp/pst.$n.json" && grep -q '"remote_rows":[1-9]' "$tmp/pst.$n.json" &&
        [ "$(metrics_of "$tmp/pst.$n.json")" = "$(metrics_of "$tmp/memory.1.json")" ] &&
        eval_split "$tmp/pst.$n.json" 1; then
        ok "partitioned_static_np${n}_weights_equal_single_process"
    else
        fail "partitioned_static_np${n}_weights_equal_single_process: exit $rc, got '$got' want '$want'"
        sed 's/^/    /' "$tmp/pst.$n.out"
        grep -o '"features":{[^}]*' "$tmp/pst.$n.json" | sed 's/^/    /'
        diff <(metrics_of "$tmp/memory.1.json") <(metrics_of "$tmp/pst.$n.json") | sed 's/^/    /'
    fi
    # static's --hotness presample on parts: each rank counts the rows of its part the ranks ask
    # for in epoch 0's batches (the access map) and caches the most asked. The same weights, and
    # epoch 0 asks the disks for fewer bytes than the in-degree caches above (the counts are
    # epoch 0's own requests: no set of as many rows serves more of them).
    "${mpi[@]}" -np "$n" "$bin" train "$tmp/p$n" "${common[@]}" --distributed --strategy static \
        --hotness presample --mem-budget $((25 - n))M --log "$tmp/psp.$n.json" \
        >"$tmp/psp.$n.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/psp.$n.out")
    pre=$(first_disk "$tmp/psp.$n.json")
    deg=$(first_disk "$tmp/pst.$n.json")
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] && [ -n "$pre" ] && [ -n "$deg" ] &&
        [ "$pre" -gt 0 ] && [ "$pre" -lt "$deg" ] &&
        [ "$(metrics_of "$tmp/psp.$n.json")" = "$(metrics_of "$tmp/memory.1.json")" ]; then
        ok "partitioned_static_presample_np${n}_weights_equal_fewer_disk_bytes ($pre < $deg)"
    else
        fail "partitioned_static_presample_np${n}_weights_equal_fewer_disk_bytes: exit $rc, got '$got' want '$want', disk bytes '$pre' vs '$deg'"
        sed 's/^/    /' "$tmp/psp.$n.out"
    fi
    # static's --hyperbatch on parts: its groups are filled by a feeder of its own (the plan's
    # batches as the rows the ranks will ask of the part, in plan order) and each read in one
    # block pass: rows read from disk, every batch served from its group (rank 0's line at the
    # end; a gather waits for the feeder to stage its batch), the single-process weights and
    # metrics (35M at 2 ranks, 31M at 3: the groups and most of the part's rows, not all; no
    # batch pipeline holds sampled batches for them).
    "${mpi[@]}" -np "$n" "$bin" train "$tmp/p$n" "${loud[@]}" --distributed --strategy static \
        --hyperbatch 0.2 --mem-budget $((43 - 4 * n))M --log "$tmp/phb.$n.json" \
        >"$tmp/phb.$n.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/phb.$n.out")
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
        grep -q '"read_bytes":[1-9]' "$tmp/phb.$n.json" &&
        grep -q "store static: \([1-9][0-9]*\) batches fed over the access map, \1 served from their hyperbatch groups, 0 read directly" \
            "$tmp/phb.$n.out" &&
        [ "$(metrics_of "$tmp/phb.$n.json")" = "$(metrics_of "$tmp/memory.1.json")" ]; then
        ok "partitioned_static_hyperbatch_np${n}_weights_equal_groups_fed_by_access_map"
    else
        fail "partitioned_static_hyperbatch_np${n}_weights_equal_groups_fed_by_access_map: exit $rc, got '$got' want '$want'"
        sed 's/^/    /' "$tmp/phb.$n.out"
        grep -o '"features":{[^}]*' "$tmp/phb.$n.json" | sed 's/^/    /'
    fi
    # outre on parts with --staleness 0 (its feature cache alone): its profile counts the rows
    # the ranks ask of the part (the access map), which its cache holds by those counts; rows
    # read from disk, the single-process weights and metrics.
    "${mpi[@]}" -np "$n" "$bin" train "$tmp/p$n" "${loud[@]}" --distributed --strategy outre \
        --staleness 0 --mem-budget $((25 - n))M --log "$tmp/pout.$n.json" >"$tmp/pout.$n.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/pout.$n.out")
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
        grep -q '"read_bytes":[1-9]' "$tmp/pout.$n.json" &&
        grep -q "store outre: profiled [1-9][0-9]* batches over the access map: [1-9][0-9]* of this store's rows asked for" \
            "$tmp/pout.$n.out" &&
        [ "$(metrics_of "$tmp/pout.$n.json")" = "$(metrics_of "$tmp/memory.1.json")" ]; then
        ok "partitioned_outre_staleness_0_np${n}_weights_equal_single_process"
    else
        fail "partitioned_outre_staleness_0_np${n}_weights_equal_single_process: exit $rc, got '$got' want '$want'"
        sed 's/^/    /' "$tmp/pout.$n.out"
        grep -o '"features":{[^}]*' "$tmp/pout.$n.json" | sed 's/^/    /'
    fi
done
# ginex on parts: each rank's inspector plans its Belady cache over the rows the ranks' shards
# ask of its part, batch by batch (the access map), and the executor follows that plan: every
# epoch's rows from disk (summed over the ranks) are exactly the plan's misses, fewer than LRU's.
# Rows read from disk on some epoch, the single-process weights (27M at 2 ranks, 26M at 3).
plan_fits() { # every epoch line: disk hit ratio == Belady miss ratio < LRU miss ratio
    local n=0 disk belady lru
    while read -r disk belady lru; do
        n=$((n + 1))
        if [ "$disk" != "$belady" ] || ! awk -v b="$belady" -v l="$lru" 'BEGIN{exit !(b < l)}'; then
            return 1
        fi
    done < <(sed -n 's/.*"disk":\([0-9.e-]*\)},.*"miss_ratio":{"belady":\([0-9.e-]*\),"lru":\([0-9.e-]*\).*/\1 \2 \3/p' "$1")
    [ $n -gt 0 ]
}
for n in 2 3; do
    "${mpi[@]}" -np "$n" "$bin" train "$tmp/p$n" "${common[@]}" --distributed --strategy ginex \
        --mem-budget $((29 - n))M --log "$tmp/pgx.$n.json" >"$tmp/pgx.$n.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/pgx.$n.out")
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
        grep -q '"read_bytes":[1-9]' "$tmp/pgx.$n.json" && plan_fits "$tmp/pgx.$n.json" &&
        ! grep -q 'not the next planned batch' "$tmp/pgx.$n.out" &&
        [ "$(metrics_of "$tmp/pgx.$n.json")" = "$(metrics_of "$tmp/memory.1.json")" ]; then
        ok "partitioned_ginex_np${n}_weights_equal_single_process_plan_followed"
    else
        fail "partitioned_ginex_np${n}_weights_equal_single_process_plan_followed: exit $rc, got '$got' want '$want'"
        sed 's/^/    /' "$tmp/pgx.$n.out"
        grep -o '"hit_ratio":{[^}]*},[^}]*"miss_ratio":{[^}]*}' "$tmp/pgx.$n.json" | sed 's/^/    /'
    fi
done
# diskgnn on parts: each rank's planner samples the plan's batches (as every rank does) and packs
# into each batch's chunk the rows the ranks' shards will ask of its part (the access map), in
# windows under the part's own plan/ (removed with the store); the trainer's gathers, in plan
# order, are assembled from them: the single-process weights and metrics, rows packed, none read
# from rows.npy beside the chunks and the CPU cache, every epoch some of them packed (27M at 2
# ranks, 26M at 3: a CPU cache of part of each part's rows).
dg_served() { # every epoch line: packed > 0, disk 0, the tiers (summed over the ranks) make 1
    local n=0 cpu dc packed disk
    while read -r cpu dc packed disk; do
        n=$((n + 1))
        if ! awk -v c="$cpu" -v k="$dc" -v p="$packed" -v d="$disk" \
            'BEGIN{s = c + k + p + d; exit !(p > 0 && d == 0 && s > 0.999999 && s < 1.000001)}'; then
            return 1
        fi
    done < <(sed -n 's/.*"cpu":\([0-9.e-]*\),"disk-cache":\([0-9.e-]*\),"packed":\([0-9.e-]*\),"disk":\([0-9.e-]*\)}.*/\1 \2 \3 \4/p' "$1")
    [ $n -gt 0 ]
}
for n in 2 3; do
    "${mpi[@]}" -np "$n" "$bin" train "$tmp/p$n" "${common[@]}" --distributed --strategy diskgnn \
        --mem-budget $((29 - n))M --log "$tmp/pdg.$n.json" >"$tmp/pdg.$n.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/pdg.$n.out")
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] && dg_served "$tmp/pdg.$n.json" &&
        grep -q '"remote_rows":[1-9]' "$tmp/pdg.$n.json" && [ -d "$tmp/p$n/part-0/plan/diskgnn" ] &&
        [ -z "$(find "$tmp/p$n" -path '*/plan/diskgnn/*' -type f ! -name '.*')" ] &&
        [ "$(metrics_of "$tmp/pdg.$n.json")" = "$(metrics_of "$tmp/memory.1.json")" ]; then
        ok "partitioned_diskgnn_np${n}_weights_equal_single_process_packed_by_access_map"
    else
        fail "partitioned_diskgnn_np${n}_weights_equal_single_process_packed_by_access_map: exit $rc, got '$got' want '$want'"
        sed 's/^/    /' "$tmp/pdg.$n.out"
        grep -o '"hit_ratio":{[^}]*}' "$tmp/pdg.$n.json" | sed 's/^/    /'
        find "$tmp/p$n" -path '*/plan/*' | sed 's/^/    /'
    fi
done
# gnndrive and helios on parts: each rank's store is fed every batch of the plan, in order, by
# its own feeder over the access map (no batch pipeline shows it the batches), so gnndrive's
# extractors and helios's reads run ahead of the trainer's gathers as in one process: rows read
# from disk, the single-process weights and metrics, every batch served from its extracted or
# read-ahead record and none read directly (rank 0's line at the end; 25M at 2 ranks, 24M at
# 3: helios caches a fraction of its part, the rest staged per batch).
for s in gnndrive helios; do
    for n in 2 3; do
        "${mpi[@]}" -np "$n" "$bin" train "$tmp/p$n" "${loud[@]}" --distributed --strategy "$s" \
            --mem-budget $((27 - n))M --log "$tmp/p$s.$n.json" >"$tmp/p$s.$n.out" 2>&1
        rc=$?
        got=$(sha_of "$tmp/p$s.$n.out")
        if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
            grep -q '"read_bytes":[1-9]' "$tmp/p$s.$n.json" &&
            grep -q '"remote_rows":[1-9]' "$tmp/p$s.$n.json" &&
            grep -q "store $s: \([1-9][0-9]*\) batches fed over the access map, \1 served from their [a-z ]*records, 0 read directly" \
                "$tmp/p$s.$n.out" &&
            [ "$(metrics_of "$tmp/p$s.$n.json")" = "$(metrics_of "$tmp/memory.1.json")" ]; then
            ok "partitioned_${s}_np${n}_weights_equal_single_process_fed_by_access_map"
        else
            fail "partitioned_${s}_np${n}_weights_equal_single_process_fed_by_access_map: exit $rc, got '$got' want '$want'"
            sed 's/^/    /' "$tmp/p$s.$n.out"
            grep -o '"features":{[^}]*' "$tmp/p$s.$n.json" | sed 's/^/    /'
        fi
    done
done
# With --remote-cache the access map leaves out what each rank caches, and the feeder's batches
# still match the gathers: every batch served from gnndrive's records, the same weights (2 ranks).
"${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${loud[@]}" --eval none --distributed \
    --strategy gnndrive --mem-budget 27M --remote-cache 1M --log "$tmp/prcgd.json" \
    >"$tmp/prcgd.out" 2>&1
rc=$?
got=$(sha_of "$tmp/prcgd.out")
if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
    grep -q '"remote_cache_hits":[1-9]' "$tmp/prcgd.json" &&
    grep -q "store gnndrive: \([1-9][0-9]*\) batches fed over the access map, \1 served from their extracted records, 0 read directly" \
        "$tmp/prcgd.out"; then
    ok "partitioned_remote_cache_gnndrive_np2_weights_equal_fed_by_access_map"
else
    fail "partitioned_remote_cache_gnndrive_np2_weights_equal_fed_by_access_map: exit $rc, got '$got' want '$want'"
    sed 's/^/    /' "$tmp/prcgd.out"
fi
# --remote-cache: each rank keeps the rows of other parts of highest in-degree that 1M holds
# (4096 of its 10000 or 13000 or so), fetched once before training, and asks their owners only
# for the rest: the single-process weights, the log's cache hits > 0 and fewer bytes exchanged
# per epoch than the same run without the cache (part.N.json), every rank's cache full and
# holding some, not all, of the other parts' rows; ginex's plan over what the ranks still ask
# of its part fits as before, with one process's metrics (29M at 2 ranks, 27M at 3: budgets
# that leave part of each rank's rows on disk beside the cache's 1M).
first_of() { sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p" "$1" | head -1; }
for n in 2 3; do
    "${mpi[@]}" -np "$n" "$bin" train "$tmp/p$n" "${pc[@]}" --distributed --mem-budget 24M \
        --remote-cache 1M --log "$tmp/prc.$n.json" >"$tmp/prc.$n.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/prc.$n.out")
    with=$(first_of "$tmp/prc.$n.json" remote_bytes)
    without=$(first_of "$tmp/part.$n.json" remote_bytes)
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
        grep -q '"remote_cache_hits":[1-9]' "$tmp/prc.$n.json" &&
        [ "$(first_of "$tmp/prc.$n.json" remote_cache_rows)" -eq $((n * 4096)) ] &&
        [ "$(first_of "$tmp/prc.$n.json" remote_rows)" = "$(first_of "$tmp/part.$n.json" remote_rows)" ] &&
        [ -n "$with" ] && [ -n "$without" ] && [ "$with" -lt "$without" ] &&
        grep -q '"remote_fill_bytes":[1-9]' "$tmp/prc.$n.json" &&
        grep -q '| Rows local [1-9][0-9]* remote [1-9][0-9]* cached [1-9][0-9]* (hit 0\.[0-9]*)' \
            "$tmp/prc.$n.out"; then
        ok "partitioned_remote_cache_np${n}_weights_equal_hits_fewer_bytes ($with < $without)"
    else
        fail "partitioned_remote_cache_np${n}_weights_equal_hits_fewer_bytes: exit $rc, got '$got' want '$want', bytes '$with' vs '$without'"
        sed 's/^/    /' "$tmp/prc.$n.out"
        grep -o '"data_parallel":{[^}]*' "$tmp/prc.$n.json" | sed 's/^/    /'
    fi
    "${mpi[@]}" -np "$n" "$bin" train "$tmp/p$n" "${common[@]}" --distributed --strategy ginex \
        --mem-budget $((33 - 2 * n))M --remote-cache 1M --log "$tmp/prg.$n.json" >"$tmp/prg.$n.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/prg.$n.out")
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
        grep -q '"remote_cache_hits":[1-9]' "$tmp/prg.$n.json" &&
        grep -q '"read_bytes":[1-9]' "$tmp/prg.$n.json" && plan_fits "$tmp/prg.$n.json" &&
        ! grep -q 'not the next planned batch' "$tmp/prg.$n.out" &&
        [ "$(metrics_of "$tmp/prg.$n.json")" = "$(metrics_of "$tmp/memory.1.json")" ]; then
        ok "partitioned_remote_cache_ginex_np${n}_weights_equal_plan_followed"
    else
        fail "partitioned_remote_cache_ginex_np${n}_weights_equal_plan_followed: exit $rc, got '$got' want '$want'"
        sed 's/^/    /' "$tmp/prg.$n.out"
        grep -o '"hit_ratio":{[^}]*},[^}]*"miss_ratio":{[^}]*}' "$tmp/prg.$n.json" | sed 's/^/    /'
    fi
done
# Exact layer-wise evaluation (--eval full) on parts, one layer (its chunks read features, and
# 3 ranks share them unevenly: a rank with fewer joins the others' last fetch with none): one
# process's metrics and weights.
pf=(--epochs 2 --batch 500 --threads 1 --quiet --eval full --eval-batch 300 --micro-shards 4
    --layers 1 --fanout 10)
"$bin" train "$g" "${pf[@]}" --log "$tmp/pfull.1.json" >"$tmp/pfull.1.out" 2>&1
"${mpi[@]}" -np 3 "$bin" train "$tmp/p3" "${pf[@]}" --distributed --strategy static \
    --log "$tmp/pfull.3.json" >"$tmp/pfull.3.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -n "$(sha_of "$tmp/pfull.1.out")" ] &&
    [ "$(sha_of "$tmp/pfull.3.out")" = "$(sha_of "$tmp/pfull.1.out")" ] &&
    [ -n "$(metrics_of "$tmp/pfull.1.json")" ] &&
    [ "$(metrics_of "$tmp/pfull.3.json")" = "$(metrics_of "$tmp/pfull.1.json")" ] &&
    eval_split "$tmp/pfull.3.json" 1; then
    ok "partitioned_full_evaluation_np3_equals_single_process"
else
    fail "partitioned_full_evaluation_np3_equals_single_process: exit $rc"
    sed 's/^/    /' "$tmp/pfull.3.out"
    diff <(metrics_of "$tmp/pfull.1.json") <(metrics_of "$tmp/pfull.3.json") | sed 's/^/    /'
fi
# direct and mmap serve a part through the same gather (2 ranks).
for s in direct mmap; do
    "${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pc[@]}" --distributed --strategy "$s" \
        >"$tmp/p$s.out" 2>&1
    rc=$?
    got=$(sha_of "$tmp/p$s.out")
    if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ]; then
        ok "partitioned_${s}_np2_weights_equal_single_process"
    else
        fail "partitioned_${s}_np2_weights_equal_single_process: exit $rc, got '$got' want '$want'"
        sed 's/^/    /' "$tmp/p$s.out"
    fi
done
# A partitioned run resumed from rank 0's checkpoint reaches the uninterrupted weights.
pr=(--epochs 3 --batch 500 --threads 1 --quiet --eval none --micro-shards 4)
"$bin" train "$g" "${pr[@]}" >"$tmp/pres.1.out" 2>&1
"${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pr[@]}" --epochs 1 --distributed \
    --checkpoint "$tmp/pck" >"$tmp/pres.a.out" 2>&1
"${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pr[@]}" --distributed --checkpoint "$tmp/pck" \
    --resume >"$tmp/pres.b.out" 2>&1
rc=$?
want=$(sha_of "$tmp/pres.1.out")
got=$(sha_of "$tmp/pres.b.out")
if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
    grep -q "resuming from $tmp/pck after epoch 1" "$tmp/pres.b.out"; then
    ok "partitioned_resume_reaches_uninterrupted_weights"
else
    fail "partitioned_resume_reaches_uninterrupted_weights: exit $rc, got '$got' want '$want'"
    sed 's/^/    /' "$tmp/pres.a.out" "$tmp/pres.b.out"
fi
# Bad input, refused before training with an error naming the file: a part count unlike the
# ranks', a part of another partition run, a missing part, a truncated part, and (each rank
# reading its own partition.json, as on separate machines) ranks whose parts differ in run id.
"$bin" partition "$g" --parts 2 "$tmp/q2" --quiet >/dev/null 2>&1
refused() { # name, expected message (grep), then the command
    local name=$1 msg=$2
    shift 2
    timeout 60 "$@" >"$tmp/$name.out" 2>&1
    local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q -- "$msg" "$tmp/$name.out" &&
        ! grep -q '^Epoch' "$tmp/$name.out"; then
        ok "$name"
    else
        fail "$name: exit $rc"
        sed 's/^/    /' "$tmp/$name.out"
    fi
}
refused partitioned_wrong_rank_count_refused \
    "p3/partition.json: a partition into 3 parts, but this run has 2 rank(s)" \
    "${mpi[@]}" -np 2 "$bin" train "$tmp/p3" "${pc[@]}" --distributed
cp -r "$tmp/p2" "$tmp/mixed"
rm -rf "$tmp/mixed/part-1"
cp -r "$tmp/q2/part-1" "$tmp/mixed/part-1"
refused partitioned_other_run_part_refused \
    "mixed/part-1/part.json: run id [0-9a-f]*, but the partition.json beside it has .*another partition run" \
    "${mpi[@]}" -np 2 "$bin" train "$tmp/mixed" "${pc[@]}" --distributed
cp -r "$tmp/p3" "$tmp/gone"
rm -rf "$tmp/gone/part-2"
refused partitioned_missing_part_refused "gone/part-2/part.json: missing: part 2" \
    "${mpi[@]}" -np 3 "$bin" train "$tmp/gone" "${pc[@]}" --distributed
cp -r "$tmp/p2" "$tmp/short"
truncate -s -4096 "$tmp/short/part-0/rows.npy"
refused partitioned_truncated_part_refused "short/part-0/rows.npy: truncated: file is" \
    "${mpi[@]}" -np 2 "$bin" train "$tmp/short" "${pc[@]}" --distributed
refused partitioned_ranks_of_two_runs_refused \
    "run id [0-9a-f]*, but rank [01]'s part has .*different partition runs" \
    "${mpi[@]}" -np 1 "$bin" train "$tmp/p2" "${pc[@]}" --distributed : \
    -np 1 "$bin" train "$tmp/q2" "${pc[@]}" --distributed
refused partitioned_without_distributed_refused "p2 is a partitioned dataset" \
    "$bin" train "$tmp/p2" "${pc[@]}"
# outre's historical embeddings, like gnndrive's --reorder, are refused by any --distributed
# run, naming --staleness; so are --hyperbatch but static's (the others' groups are the batch
# pipeline's) and gnndrive's --samplers (a part's batches are sampled by the store's feeder),
# each naming itself.
refused partitioned_outre_embeddings_refused \
    "--distributed: outre's historical embeddings (--staleness 100) are kept per whole batch .*give --staleness 0" \
    "${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pc[@]}" --distributed --strategy outre
refused partitioned_hyperbatch_refused \
    "--hyperbatch on a partitioned dataset with --strategy helios: its groups are filled from the batches the batch pipeline samples" \
    "${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pc[@]}" --distributed --strategy helios \
    --mem-budget 25M --hyperbatch 0.3
refused partitioned_gnndrive_samplers_refused \
    "store gnndrive: --samplers on a partitioned dataset's part: its batches are sampled by the store's one feeding thread" \
    "${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pc[@]}" --distributed --strategy gnndrive --samplers 2
# --remote-cache: more than the store's share of the budget, less than a row, or on a dataset
# that is not partitioned.
refused partitioned_remote_cache_over_budget_refused \
    "--remote-cache 2.00 MiB: its [0-9]* rows of other parts need .*, but the store's share of --mem-budget .* is .*; give a smaller --remote-cache or a larger --mem-budget" \
    "${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pc[@]}" --distributed --mem-budget 18M \
    --remote-cache 2M
refused partitioned_remote_cache_no_row_refused \
    "--remote-cache 100 bytes holds no row: a row of .*p2/part-[01]/rows.npy is 256 bytes" \
    "${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pc[@]}" --distributed --remote-cache 100
refused remote_cache_not_partitioned_refused \
    "--remote-cache: .*/g is not a partitioned dataset" "$bin" train "$g" "${pc[@]}" --remote-cache 1M
# --dry-run: --remote-cache's rows are stated apart from the feature store's share they leave.
bytes_of() { # "12.50 MiB" -> bytes
    awk '{ m = $2 == "KiB" ? 1024 : $2 == "MiB" ? 1048576 : $2 == "GiB" ? 1073741824 : 1;
           printf "%.0f\n", $1 * m }'
}
store_of() { sed -n 's/.*, \([0-9.]* [KMG]*i*B\) for the feature store$/\1/p' "$1" | bytes_of; }
"${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pc[@]}" --distributed --mem-budget 24M --dry-run \
    >"$tmp/dry.0.out" 2>&1
"${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pc[@]}" --distributed --mem-budget 24M \
    --remote-cache 1M --dry-run >"$tmp/dry.1.out" 2>&1
s0=$(store_of "$tmp/dry.0.out")
s1=$(store_of "$tmp/dry.1.out")
if [ -n "$s0" ] && [ -n "$s1" ] && [ $((s0 - s1)) -ge 1000000 ] && [ $((s0 - s1)) -le 1100000 ] &&
    grep -q "^dry run: and 1.00 MiB of other parts' rows (--remote-cache)" "$tmp/dry.1.out" &&
    ! grep -q "other parts' rows" "$tmp/dry.0.out"; then
    ok "partitioned_dry_run_states_remote_cache_apart ($s0 -> $s1 bytes)"
else
    fail "partitioned_dry_run_states_remote_cache_apart: store '$s0' then '$s1'"
    sed 's/^/    /' "$tmp/dry.0.out" "$tmp/dry.1.out"
fi
refused partitioned_plan_dir_refused "--plan-dir on a partitioned dataset: a rank's plan files (diskgnn's windows) go under its own part, PART/plan" \
    "${mpi[@]}" -np 2 "$bin" train "$tmp/p2" "${pc[@]}" --distributed --strategy diskgnn \
    --plan-dir "$tmp/pd"

# The log: rank 0's alone (2 epoch lines and a final one), with the gradient bytes it exchanged.
log=$tmp/memory.2.json
if [ "$(grep -c '"epoch"' "$log")" -eq 2 ] &&
    grep -q '"data_parallel":{"ranks":2,"micro_shards":4,"grad_sent_bytes":[1-9]' "$log" &&
    grep -q '"grad_recv_bytes":[1-9]' "$log"; then
    ok "log_by_rank_0_counts_gradient_bytes"
else
    fail "log_by_rank_0_counts_gradient_bytes"
    sed 's/^/    /' "$log"
fi

# More ranks than micro-shards: refused before training, naming both counts.
"${mpi[@]}" -np 3 "$bin" train "$g" --epochs 1 --micro-shards 2 --distributed --quiet \
    >"$tmp/few.out" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q "3 ranks but 2 micro-shard(s)" "$tmp/few.out"; then
    ok "more_ranks_than_micro_shards_refused"
else
    fail "more_ranks_than_micro_shards_refused: exit $rc"
    sed 's/^/    /' "$tmp/few.out"
fi

# A failing rank (rank 1 opens a missing dataset): every rank exits within 30 s, naming it.
long=(--epochs 500 --batch 500 --threads 1 --quiet --eval none --micro-shards 2 --distributed)
t0=$(date +%s)
timeout 60 "${mpi[@]}" -np 1 "$bin" train "$g" "${long[@]}" : \
    -np 1 "$bin" train "$tmp/missing" "${long[@]}" >"$tmp/fail.out" 2>&1
rc=$?
dt=$(($(date +%s) - t0))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $dt -le 30 ] &&
    grep -q "error: rank 1 of 2: .*missing" "$tmp/fail.out"; then
    ok "failing_rank_ends_all_naming_it (${dt}s)"
else
    fail "failing_rank_ends_all_naming_it: exit $rc after ${dt}s"
    sed 's/^/    /' "$tmp/fail.out"
fi

# A rank killed mid-run: the others end within 30 s (mpirun names the rank); resuming at the
# same N from rank 0's last checkpoint gives the weights of an uninterrupted run.
ck=(--epochs 40 --batch 500 --threads 1 --quiet --eval none --micro-shards 2)
"$bin" train "$g" "${ck[@]}" >"$tmp/ck.1.out" 2>&1
want=$(sha_of "$tmp/ck.1.out")
timeout 120 "${mpi[@]}" -np 2 sh -c 'echo $$ >"$0/pid.$OMPI_COMM_WORLD_RANK"; exec "$@"' \
    "$tmp" "$bin" train "$g" "${ck[@]}" --distributed --checkpoint "$tmp/ck" \
    >"$tmp/kill.out" 2>&1 &
runner=$!
for _ in $(seq 1 600); do # until rank 0 saved a checkpoint (epoch 0 done)
    [ -s "$tmp/ck/checkpoint.bin" ] && [ -s "$tmp/pid.1" ] && break
    sleep 0.05
done
t0=$(date +%s)
kill -9 "$(cat "$tmp/pid.1")" 2>/dev/null
wait $runner
rc=$?
dt=$(($(date +%s) - t0))
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $dt -le 30 ] && grep -q "rank 1" "$tmp/kill.out" &&
    ! grep -q '^weights_sha256' "$tmp/kill.out"; then
    ok "killed_rank_ends_all (${dt}s)"
else
    fail "killed_rank_ends_all: exit $rc after ${dt}s"
    sed 's/^/    /' "$tmp/kill.out"
fi
"${mpi[@]}" -np 2 "$bin" train "$g" "${ck[@]}" --distributed --checkpoint "$tmp/ck" --resume \
    >"$tmp/resume.out" 2>&1
rc=$?
got=$(sha_of "$tmp/resume.out")
if [ $rc -eq 0 ] && [ -n "$want" ] && [ "$got" = "$want" ] &&
    grep -q "resuming from $tmp/ck after epoch [1-9]" "$tmp/resume.out"; then
    ok "resume_after_kill_reaches_uninterrupted_weights"
else
    fail "resume_after_kill_reaches_uninterrupted_weights: got '$got' want '$want'"
    sed 's/^/    /' "$tmp/resume.out"
fi

echo "$passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
