#!/bin/sh
# beyond_ram.sh — issue 45's beyond-RAM run: a generated graph whose features
# exceed this machine's RAM (default 60M nodes x 128-dim f32 = 28.6 GiB,
# average degree 10, topology on disk), one epoch of GraphSAGE 3 x 256,
# fanout 15,10,5, batch 1024 per strategy, each inside a cgroup v1 memory
# limit of the budget + 64 MiB (docs/BENCHMARKS.md's fixed overhead), page
# cache dropped before each. `memory` cannot run there, so the compute bound
# is measured inside the same runs: the lowest forward + backward + optimizer
# seconds of any run over the same batches. Prints one table (epoch seconds,
# x the compute bound, wait, bytes read, peak RSS, cgroup peak and OOM kills,
# weights) and removes the data afterwards unless KEEP=1.
#
# Usage: bench/beyond_ram.sh [BIN]
#   BIN  the offcore binary (default build-release/offcore)
# Environment:
#   NODES (60000000), FEAT (128), DEG (10), TRAIN (0.01), VAL (0.001)
#   BUDGET (8G)       --mem-budget of every run; the cgroup limit is this + 64 MiB
#   STRATEGIES        default "diskgnn static ginex gnndrive helios mmap direct"
#   EPOCHS (1)        epochs per strategy
#   TIMEOUT (0)       seconds after which a run is stopped (0: none); the table says so
#   EXTRA             more `offcore train` options for every run (e.g. --topo-cache 3.4G)
#   DIR               dataset cache (default ${XDG_CACHE_HOME:-~/.cache}/offcore/beyond-ram)
#   KEEP=1            keep the dataset and logs afterwards
# Needs root for the cgroup and for dropping the page cache; without them it
# says so and runs unconfined (the table is then not the acceptance figure).
set -eu
BIN=${1:-build-release/offcore}
NODES=${NODES:-60000000}
FEAT=${FEAT:-128}
DEG=${DEG:-10}
TRAIN=${TRAIN:-0.01}
VAL=${VAL:-0.001}
BUDGET=${BUDGET:-8G}
STRATEGIES=${STRATEGIES:-diskgnn static ginex gnndrive helios mmap direct}
EPOCHS=${EPOCHS:-1}
TIMEOUT=${TIMEOUT:-0}
EXTRA=${EXTRA:-}
DIR=${DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/offcore/beyond-ram}
DATA=$DIR/n$NODES-deg$DEG-f$FEAT-train$TRAIN-val$VAL
LOGS=$DIR/logs
CGROOT=/sys/fs/cgroup/memory

[ -x "$BIN" ] || { echo "beyond_ram: $BIN: no such binary (build it first)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "beyond_ram: needs python3 for the table" >&2; exit 2; }
cleanup() {
    for s in $STRATEGIES; do rmdir "$CGROOT/offcore_beyond_$s" 2>/dev/null || true; done
    [ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
}
trap cleanup EXIT
mkdir -p "$LOGS"

budget_bytes=$(python3 -c "
import re, sys
m = re.fullmatch(r'([0-9.]+)([KMGT]?)', sys.argv[1])
if not m: sys.exit('beyond_ram: BUDGET %s: not a size like 8G' % sys.argv[1])
print(int(float(m.group(1)) * {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30, 'T': 1 << 40}[m.group(2)]))
" "$BUDGET")
ram=$(awk '/MemTotal/ { print $2 * 1024 }' /proc/meminfo)
python3 -c "
n, f, ram = $NODES, $FEAT, $ram
print('features %.2f GiB (%d x %d f32), RAM %.2f GiB: %s' % (n * f * 4 / 2**30, n, f, ram / 2**30,
      'beyond RAM' if n * f * 4 > ram else 'NOT beyond RAM (raise NODES)'))"

if [ ! -f "$DATA/manifest.json" ]; then
    echo "generating $DATA ..."
    t0=$(date +%s)
    "$BIN" generate "$DATA" --nodes "$NODES" --feat-dim "$FEAT" --avg-degree "$DEG" \
        --train-frac "$TRAIN" --val-frac "$VAL" --quiet
    echo "generated in $(($(date +%s) - t0)) s"
fi

confined=1
if [ ! -w "$CGROOT" ] || [ "$(id -u)" != 0 ]; then
    confined=0
    echo "beyond_ram: no writable cgroup v1 memory controller or not root: runs are unconfined" >&2
fi
for s in $STRATEGIES; do
    log=$LOGS/$s.jsonl
    out=$LOGS/$s.out
    rm -f "$log"
    [ "$(id -u)" = 0 ] && sync && echo 3 > /proc/sys/vm/drop_caches
    set -- "$BIN" train "$DATA" --strategy "$s" --epochs "$EPOCHS" --fanout 15,10,5 \
        --batch 1024 --hidden 256 --layers 3 --eval none --topology disk \
        --mem-budget "$BUDGET" --log "$log"
    # shellcheck disable=SC2086 # EXTRA is a list of options
    [ -n "$EXTRA" ] && set -- "$@" $EXTRA
    [ "$TIMEOUT" != 0 ] && set -- timeout "$TIMEOUT" "$@"
    echo "[$s] $*"
    rc=0
    if [ $confined = 1 ]; then
        cg=$CGROOT/offcore_beyond_$s
        mkdir -p "$cg"
        echo $((budget_bytes + (64 << 20))) > "$cg/memory.limit_in_bytes"
        echo 0 > "$cg/memory.max_usage_in_bytes"
        sh -c 'echo $$ > "$1/cgroup.procs"; shift; exec /usr/bin/time -v "$@"' sh "$cg" "$@" \
            > "$out" 2>&1 || rc=$?
        oom=$(awk '/oom_kill/ { print $2 }' "$cg/memory.oom_control")
        echo "cgroup $(cat "$cg/memory.max_usage_in_bytes") ${oom:-0}" >> "$out"
    else
        /usr/bin/time -v "$@" > "$out" 2>&1 || rc=$?
    fi
    echo "exit $rc" >> "$out"
    if [ $rc = 0 ]; then echo "[$s] done"; else echo "[$s] exit $rc: $(grep '^offcore' "$out" | tail -n 1)"; fi
done

python3 - "$LOGS" "$TIMEOUT" "$confined" $STRATEGIES <<'EOF'
import json, os, sys
logs, timeout, confined, names = sys.argv[1], int(sys.argv[2]), sys.argv[3] == '1', sys.argv[4:]
runs = []
for s in names:
    r = {'s': s, 'epoch': None}
    out = open(os.path.join(logs, s + '.out')).read().splitlines()
    for line in out:
        if line.startswith('exit '): r['rc'] = int(line.split()[1])
        if line.startswith('cgroup '): r['cg'], r['oom'] = int(line.split()[1]), int(line.split()[2])
        if 'Maximum resident set size' in line: r['rss'] = int(line.split(':')[1]) * 1024
    r['why'] = next((l for l in reversed(out) if l.startswith('offcore')), '')
    path = os.path.join(logs, s + '.jsonl')
    for line in (open(path) if os.path.exists(path) else []):
        j = json.loads(line)
        if 'epoch' in j and 'time_s' in j:
            st, f = j['stages'], j.get('features', {})
            r.update(epoch=j['time_s'], compute=st['forward_s'] + st['backward_s'] + st['optimizer_s'],
                     wait=st['wait_s'], read=f.get('read_bytes', 0), amp=f.get('amplification'),
                     topo=j.get('topology', {}).get('read_bytes', 0))
        if j.get('final'): r['w'] = j['weights_sha256']
    runs.append(r)
done = [r for r in runs if r['epoch'] is not None]
bound = min((r['compute'] for r in done), default=None)
ws = {r['w'] for r in done if r.get('w')}
print()
print('compute bound (lowest forward + backward + optimizer over the same batches): %s'
      % ('%.2f s' % bound if bound else 'none (no run completed)'))
print('%-9s %9s %8s %8s %10s %6s %10s %9s %9s %4s  %s' % ('strategy', 'epoch s', 'x bound', 'wait s',
      'feat read', 'amp', 'topo read', 'peak RSS', 'cgroup', 'oom', 'weights'))
G = 2 ** 30
for r in runs:
    cg = '%.2fG' % (r['cg'] / G) if confined and 'cg' in r else '-'
    oom = str(r.get('oom', '-')) if confined else '-'
    rss = '%.2fG' % (r['rss'] / G) if 'rss' in r else '-'
    if r['epoch'] is None:
        why = ('stopped after %d s' % timeout if r.get('rc') == 124 and timeout
               else 'failed (exit %s) %s' % (r.get('rc'), r['why']))
        print('%-9s %9s %8s %8s %10s %6s %10s %9s %9s %4s  %s' % (r['s'], '-', '-', '-', '-', '-', '-',
              rss, cg, oom, why))
        continue
    amp = '%.2f' % r['amp'] if r['amp'] else '-'
    print('%-9s %9.2f %8.2f %8.2f %9.2fG %6s %9.2fG %9s %9s %4s  %s' % (r['s'], r['epoch'],
          r['epoch'] / bound, r['wait'], r['read'] / G, amp, r['topo'] / G, rss, cg, oom,
          r.get('w', '?')[:8]))
print('weights: %s' % ('none' if not ws else 'all equal' if len(ws) == 1
                      else 'DIFFER: ' + ', '.join(sorted(ws))))
EOF
