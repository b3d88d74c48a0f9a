#!/usr/bin/env bash
# Peak memory and wall time of `equishard measure -o FILE` at millions of rows,
# a baseline binary against this one in the same run (the point: measure writes
# rows as units finish instead of holding the whole table).
#
#   tools/bench/bench_measure_stream.sh ROWS BASE_BIN [NEW_BIN]
#
# ROWS utterances in WeNet tar.zst shards of 100 000 (tools/bench/gen_tar_rows:
# a transcript and a tiny WAV per key; zstd -1), read through one shard list.
# Each binary runs `measure -q -j 2 -o OUT.tsv` REPEAT times, alternating, under
# /usr/bin/time (%M: peak RSS, %e: wall seconds); the tables must be the same
# bytes, and the new one's -j 1 table too (one extra untimed run, CHECK_J1=1).
#
# Environment: BENCH_DIR (default: mktemp -d, removed at exit; reused when it
# already holds ROWS rows), REPEAT (default 1), GEN (default
# build/tools/bench/gen_tar_rows). Run from the repository root after ninja.
set -euo pipefail

ROWS=${1:?ROWS}
BASE=${2:?BASE_BIN}
NEW=${3:-build/tools/equishard/equishard}
GEN=${GEN:-build/tools/bench/gen_tar_rows}
REPEAT=${REPEAT:-1}
PER_SHARD=100000

if [[ -z ${BENCH_DIR:-} ]]; then
    BENCH_DIR=$(mktemp -d)
    trap 'rm -rf "$BENCH_DIR"' EXIT
fi
mkdir -p "$BENCH_DIR/shards"
shards=$(( (ROWS + PER_SHARD - 1) / PER_SHARD ))
if [[ $(cat "$BENCH_DIR/rows" 2>/dev/null) != "$ROWS" ]]; then
    rm -f "$BENCH_DIR"/shards/*
    : >"$BENCH_DIR/data.list"
    for ((i = 0; i < shards; i++)); do
        n=$(( i == shards - 1 ? ROWS - i * PER_SHARD : PER_SHARD ))
        f=$(printf '%s/shards/shard_%06d.tar.zst' "$BENCH_DIR" "$i")
        "$GEN" "$i" "$n" | zstd -1 -q -T1 -o "$f"
        echo "$f" >>"$BENCH_DIR/data.list"
    done
    echo "$ROWS" >"$BENCH_DIR/rows"
fi
echo "corpus: $ROWS rows in $shards shard(s), $(du -sh "$BENCH_DIR/shards" | cut -f1) (tar.zst)"

# one timed run: prints "WALL_S PEAK_KB"
timed() {
    local bin=$1 out=$2
    /usr/bin/time -f '%e %M' -o "$BENCH_DIR/time" "$bin" measure -q -j 2 -o "$out" "$BENCH_DIR/data.list"
    cat "$BENCH_DIR/time"
}

printf '%-6s %-5s %10s %12s\n' binary round wall_s peak_rss_MB
for ((r = 1; r <= REPEAT; r++)); do
    for side in base new; do
        bin=$BASE; [[ $side == new ]] && bin=$NEW
        read -r wall kb < <(timed "$bin" "$BENCH_DIR/$side.tsv")
        printf '%-6s %-5s %10s %12.1f\n' "$side" "$r" "$wall" "$(echo "$kb / 1024" | bc -l)"
        echo "$side $wall $kb" >>"$BENCH_DIR/results"
    done
done
cmp "$BENCH_DIR/base.tsv" "$BENCH_DIR/new.tsv" && echo "tables: the same bytes ($(stat -c %s "$BENCH_DIR/new.tsv") bytes, $(( $(wc -l <"$BENCH_DIR/new.tsv") - 2 )) rows)"
if [[ ${CHECK_J1:-1} == 1 ]]; then
    "$NEW" measure -q -j 1 -o "$BENCH_DIR/new-j1.tsv" "$BENCH_DIR/data.list"
    cmp "$BENCH_DIR/new.tsv" "$BENCH_DIR/new-j1.tsv" && echo "-j 1 table: the same bytes"
fi
