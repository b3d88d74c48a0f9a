#!/bin/bash
# `equishard plan` on a cost table FILE, this build against a baseline build,
# interleaved round by round (the machine is shared, so only the
# ratios of one run mean anything). Every round also checks that both builds
# wrote byte-identical OUTDIRs.
#
#   BASE=/tmp/perf-base/build/tools/equishard/equishard \
#   N=10000000 K=1024 W=4 ROUNDS=3 MODES="batch shard" tools/bench/bench_plan_cli.sh
#
# BASE: the baseline binary (e.g. main built in a separate folder:
#   mkdir /tmp/perf-base && git archive main | tar -x -C /tmp/perf-base &&
#   (cd /tmp/perf-base && meson setup build && ninja -C build)).
# The table is generated once by build/tools/bench/gen_costs (N rows, 1000 a
# shard) into $TMPDIR/equishard-bench-costs-N.tsv (about 112 bytes a row).
set -eu
cd "$(dirname "$0")/../.."
NEW=${NEW:-build/tools/equishard/equishard}
BASE=${BASE:?set BASE to the baseline equishard binary}
N=${N:-10000000} K=${K:-1024} W=${W:-4} ROUNDS=${ROUNDS:-3} MODES=${MODES:-batch shard}
TMP=${TMPDIR:-/tmp}
TABLE=$TMP/equishard-bench-costs-$N.tsv
[ -s "$TABLE" ] || build/tools/bench/gen_costs "$N" 1000 "$TABLE"
echo "table: $TABLE ($(stat -c %s "$TABLE") bytes, $N rows); $K ranks x $W workers; $ROUNDS rounds"
run() { # run NAME BIN MODE OUT -> "wall user sys"
    /usr/bin/time -f "%e %U %S" -o "$TMP/bench-plan-time" "$2" plan -q -k "$K" -w "$W" -m "$3" \
        -o "$4" "$TABLE" >/dev/null
    cat "$TMP/bench-plan-time"
}
for mode in $MODES; do
    ratios=""
    for r in $(seq "$ROUNDS"); do
        b=$(run base "$BASE" "$mode" "$TMP/bench-plan-base")
        n=$(run new "$NEW" "$mode" "$TMP/bench-plan-new")
        same=$(diff -rq "$TMP/bench-plan-base" "$TMP/bench-plan-new" >/dev/null && echo identical || echo DIFFERENT)
        ratio=$(echo "$b $n" | awk '{printf "%.2f", $1 / $4}')
        ratios="$ratios $ratio"
        echo "$mode round $r: base wall/user/sys $b s | new $n s | base/new $ratio | outputs $same"
    done
    echo "$mode: base/new wall ratio per round:$ratios (median $(echo $ratios | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'))"
done
rm -rf "$TMP/bench-plan-base" "$TMP/bench-plan-new" "$TMP/bench-plan-time"
