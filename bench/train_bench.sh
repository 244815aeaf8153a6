#!/usr/bin/env bash
# train_bench.sh — the CPU engine benchmark: on a generated 1M-node graph
# (cached), GraphSAGE with 3 layers, hidden 256, fanout 15,10,5, batch 1024:
#   - sampling throughput (batches/s, sampled edges/s) from bench/sample_bench.c,
#   - one training epoch's time split into sample / gather / forward /
#     backward / optimizer (from the --log JSON),
#   - the fraction of this machine's measured sgemm peak (bench/sgemm_peak.c)
#     that the dense parts reach (GEMM flops / GEMM seconds, from the log).
# Usage: bench/train_bench.sh [epochs]   (BUILD, DIR, THREADS override defaults)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-release}
DIR=${DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/offcore/bench-train-1m}
THREADS=${THREADS:-$(nproc)}
EPOCHS=${1:-1}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target offcore sample_bench sgemm_peak >/dev/null
OC="$BUILD/offcore"

if ! "$OC" info "$DIR" --no-checksum >/dev/null 2>&1; then
    rm -rf "$DIR"
    mkdir -p "$(dirname "$DIR")"
    "$OC" generate --nodes 1000000 --avg-degree 15 --feat-dim 128 --classes 10 --quiet "$DIR"
fi

echo "== sgemm peak (OpenBLAS, 2048^3)"
peak=$("$BUILD/sgemm_peak" "$THREADS" | tee /dev/stderr | awk '/sgemm_peak_gflops_all/ {print $2}')

echo "== sampling throughput (fanout 15,10,5, batch 1024, 1M-node power-law graph)"
"$BUILD/sample_bench" 1000000 100 15,10,5 1024 "1,$THREADS"

echo "== training: sage, 3 layers, hidden 256, fanout 15,10,5, batch 1024, $THREADS threads"
log=$(mktemp)
"$OC" train "$DIR" --model sage --layers 3 --hidden 256 --fanout 15,10,5 --batch 1024 \
    --epochs "$EPOCHS" --eval sampled --eval-batch 1024 --threads "$THREADS" --quiet --log "$log"
python3 - "$log" "$peak" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
peak = float(sys.argv[2])
for r in rows:
    if r.get("final"):
        continue
    st = r["stages"]
    # the epoch's wall time without evaluation: sampling and gathering run beside the trainer
    # (their busy seconds overlap the rest), so the stages do not add up to it
    train = r["time_s"] - st["eval_s"]
    print(f"epoch {r['epoch']}: {r['n_batches']} batches, training {train:.1f} s "
          f"({r['n_batches'] / train:.2f} batches/s), evaluation {st['eval_s']:.1f} s")
    for k in ("wait_s", "forward_s", "backward_s", "optimizer_s"):
        if k in st:
            print(f"  {k[:-2]:<10} {st[k]:8.2f} s  {100 * st[k] / train:5.1f} % of the epoch")
    for k in ("sample_s", "gather_s"):
        print(f"  {k[:-2]:<10} {st[k]:8.2f} s  busy beside the trainer (overlaps the above)")
    gf = r["gemm_flops"] / st["gemm_s"] / 1e9 if st["gemm_s"] > 0 else 0.0
    print(f"  dense (GEMM) {r['gemm_flops'] / 1e12:.2f} TFLOP in {st['gemm_s']:.2f} s = "
          f"{gf:.1f} GFLOP/s = {100 * gf / peak:.0f} % of the measured sgemm peak {peak:.1f}; "
          f"GEMM is {100 * st['gemm_s'] / (st['forward_s'] + st['backward_s']):.0f} % of "
          f"forward+backward")
    print(f"  peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB, val acc {r['val_acc']:.3f}")
PY
rm -f "$log"
