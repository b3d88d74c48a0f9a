#!/usr/bin/env bash
# Batch mode's JSONL writer, a baseline bench_plan_io against this one in
# interleaved rounds (the target: JSONL written at >= 1 GB/s per core).
#
#   tools/bench/bench_jsonl_ab.sh TABLE BASE_BENCH_PLAN_IO [NEW_BENCH_PLAN_IO]
#
# Each round runs `bench_plan_io TABLE K W batch-writes OUT` with each binary in
# turn (OUT on /dev/shm, so no disk): the plan is written five times, and each
# write prints the user CPU of the calling thread, which formats and writes the
# lower half of the ranks' files (a second thread the upper half). Prints per
# round and binary the median of the five, in seconds and GB/s of that
# thread's user CPU, then the median over rounds of the per-round ratio
# base/new. bench_plan_io is linked statically: a copy of an older build's
# binary keeps its code. TABLE: e.g. build/tools/bench/gen_costs 10000000 1000 T.
#
# Environment: ROUNDS (default 6), K (1024), W (4), OUT (/dev/shm/bench-jsonl).
set -euo pipefail

TABLE=${1:?TABLE}
BASE=${2:?BASE_BENCH_PLAN_IO}
NEW=${3:-build/tools/bench/bench_plan_io}
ROUNDS=${ROUNDS:-6} K=${K:-1024} W=${W:-4}
OUT=${OUT:-/dev/shm/bench-jsonl}
trap 'rm -rf "$OUT"' EXIT

# median_write BIN -> "seconds GB/s": the median write of one bench_plan_io run
median_write() {
    local out gb
    out=$("$1" "$TABLE" "$K" "$W" batch-writes "$OUT" | grep 'calling thread')
    gb=$(awk 'NR == 1 { print $5 }' <<<"$out")
    awk '{ print $12 }' <<<"$out" | sort -n |
        awk -v gb="$gb" '{ t[NR] = $1 } END { m = t[int((NR + 1) / 2)]; printf "%.3f %.3f\n", m, gb / m }'
}

ratios=()
for r in $(seq "$ROUNDS"); do
    # alternate which binary goes first, so neither always follows the other
    if (( r % 2 )); then b=$(median_write "$BASE"); n=$(median_write "$NEW")
    else n=$(median_write "$NEW"); b=$(median_write "$BASE"); fi
    ratio=$(awk -v b="${b% *}" -v n="${n% *}" 'BEGIN { printf "%.2f", b / n }')
    ratios+=("$ratio")
    echo "round $r: base ${b% *} s (${b#* } GB/s) | new ${n% *} s (${n#* } GB/s) | base/new $ratio"
done
printf '%s\n' "${ratios[@]}" | sort -n |
    awk '{ a[NR] = $1 } END { printf "median base/new over %d rounds: %s\n", NR, a[int((NR + 1) / 2)] }'
