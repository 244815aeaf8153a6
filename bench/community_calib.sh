#!/bin/sh
# community_calib.sh — the calibration of `offcore generate --communities S
# --mixing MU`: the share of edges inside METIS parts of about PART nodes
# (bench/part_share.c) on the real topologies of ../shared/datasets
# (facebook, twitch-de, github-musae, tolokers, imported with `offcore import
# text`) next to generated graphs at the old default (no communities) and with
# communities at several sizes and mixings. Also prints the share inside
# blocks of PART consecutive ids: the locality the stored order has by itself
# (a generated graph's must be ~PART/N: its ids are scattered).
#
# Usage: BUILD=build SHARED=../shared bench/community_calib.sh
# Environment: NODES (100000), DEG (15), PART (1000), CONFIGS ("100:0.3
#   300:0.3 1000:0.3 300:0.2 300:0.5", size:mixing each), DIR (a fresh
#   temporary directory, removed afterwards unless KEEP=1). Datasets are
#   imported there, never into the repository.
set -eu
BUILD=${BUILD:-build}
SHARED=${SHARED:-../shared}
NODES=${NODES:-100000}
DEG=${DEG:-15}
PART=${PART:-1000}
CONFIGS=${CONFIGS:-"100:0.3 300:0.3 1000:0.3 300:0.2 300:0.5"}
DIR=${DIR:-$(mktemp -d "${TMPDIR:-/tmp}/oc-calib-XXXXXX")}
trap '[ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"' EXIT
BIN=$BUILD/offcore
dirs=""
for d in facebook twitch-de github-musae tolokers; do
    if [ ! -d "$DIR/$d" ]; then
        "$BIN" import text "$SHARED/datasets/$d" "$DIR/$d" --quiet >/dev/null
    fi
    dirs="$dirs $DIR/$d"
done
gen() { # name, extra options
    name=$1
    shift
    if [ ! -d "$DIR/$name" ]; then
        "$BIN" generate --nodes "$NODES" --avg-degree "$DEG" --feat-dim 0 --quiet "$@" \
            "$DIR/$name" >/dev/null
    fi
    dirs="$dirs $DIR/$name"
}
gen "gen-default"
for c in $CONFIGS; do
    gen "gen-S${c%%:*}-mu${c##*:}" --communities "${c%%:*}" --mixing "${c##*:}"
done
echo "share of undirected edges inside METIS parts of ~$PART nodes (in-part) and inside blocks"
echo "of $PART consecutive ids (id-block); generated: $NODES nodes, degree $DEG"
# shellcheck disable=SC2086
"$BUILD/part_share" --part-size "$PART" $dirs
