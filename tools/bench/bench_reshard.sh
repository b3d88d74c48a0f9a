#!/usr/bin/env bash
# Benchmark `equishard plan --mode reshard` against `cp` and `cp` + `sync` of the
# same files (the target: reshard near cp), in interleaved rounds so every
# command sees the same machine; best and median of REPEAT rounds (on a shared
# machine quote the median).
#
#   tools/bench/bench_reshard.sh [N_TAR_SHARDS] [UTTS_PER_SHARD] [PARQUET_ROWS]
#                                                  (default 16 200 2000)
#
# Inputs: WeNet tar shards from gen_tar_shards.py (16 kHz PCM16 WAV + .txt,
# uncompressed tar → tar), and, when PQ_NODE_MODULES holds parquet-wasm and
# apache-arrow (see gen_parquet_bench.mjs), CosyVoice parquet files (SNAPPY → SNAPPY,
# ZSTD → ZSTD). Each input is measured once (untimed); reshard then plans from
# that cost table with -k 2, writes, fsyncs and reads every new file back (its
# verification), as a user's run does. `cp + sync` copies the same files and
# syncs them: the floor for a durable copy.
# Environment:
#   EQUISHARD  the binary (default build/tools/equishard/equishard)
#   BASE       a second binary (e.g. an older build) timed in the same rounds
#   BENCH_DIR  where to write inputs (default: a fresh mktemp -d, removed at exit)
#   REPEAT     rounds (default 5)
#   GEN        extra gen_tar_shards.py options, e.g. "--rate 8000 --median-s 1.2"
#              for small members (~24 KB clips)
set -euo pipefail
N=${1:-16}
U=${2:-200}
ROWS=${3:-2000}
REPEAT=${REPEAT:-5}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
EQUISHARD=${EQUISHARD:-$ROOT/build/tools/equishard/equishard}
if [[ -n "${BENCH_DIR:-}" ]]; then
    WORK=$BENCH_DIR
    mkdir -p "$WORK"
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/equishard-reshard-bench.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
fi

wall() { # seconds of one run of "$@"
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}
copy() { rm -rf "$WORK/cp" && mkdir "$WORK/cp" && cp "$@" "$WORK/cp/"; }
copy_sync() { copy "$@" && sync "$WORK"/cp/*; }

inputs=("tar|$WORK/tar/list.txt|none")
[[ -f $WORK/tar/list.txt ]] || {
    # shellcheck disable=SC2086
    python3 "$HERE/gen_tar_shards.py" "$N" "$U" "$WORK/tar" --seed 7 ${GEN:-} >/dev/null
    ls "$WORK"/tar/*.tar >"$WORK/tar/list.txt"
}
if [[ -n "${PQ_NODE_MODULES:-}" && -d $PQ_NODE_MODULES/parquet-wasm ]]; then
    for codec in snappy zstd; do
        [[ -f $WORK/$codec/data.list ]] || node "$HERE/gen_parquet_bench.mjs" "$ROWS" "$WORK/$codec" "$codec" >/dev/null
        inputs+=("parquet $codec|$WORK/$codec/data.list|$codec")
    done
else
    echo "PQ_NODE_MODULES unset: parquet inputs skipped"
fi

printf '%-16s %-10s %10s %8s %12s %10s %12s\n' input command "best s" "x cp" "x cp+sync" \
    "median s" "x cp+sync"
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
for spec in "${inputs[@]}"; do
    IFS='|' read -r label list codec <<<"$spec"
    files=$(grep -v '^#' "$list" | tr '\n' ' ')
    "$EQUISHARD" measure -q -o "$WORK/costs.tsv" "$list"
    names=(reshard cp cp+sync)
    cmds=("$EQUISHARD plan -q -k 2 --mode reshard --compress $codec --min-length 0 --token-max-length 100000 -o $WORK/out $WORK/costs.tsv"
          "copy $files" "copy_sync $files")
    if [[ -n "${BASE:-}" ]]; then
        names+=(base)
        cmds+=("$BASE plan -q -k 2 --mode reshard --compress $codec --min-length 0 --token-max-length 100000 -o $WORK/out-base $WORK/costs.tsv")
    fi
    declare -A best=() all=()
    for c in "${!cmds[@]}"; do eval "${cmds[$c]}" >/dev/null 2>&1; done # warm the page cache
    for ((r = 0; r < REPEAT; r++)); do
        for c in "${!cmds[@]}"; do
            # shellcheck disable=SC2086
            t=$(wall eval "${cmds[$c]}")
            best[$c]=$(echo "$t ${best[$c]:-1e9}" | awk '{print ($1 < $2 ? $1 : $2)}')
            all[$c]="${all[$c]:-} $t"
        done
    done
    med2=$(echo "${all[2]}" | median)
    for c in "${!cmds[@]}"; do
        med=$(echo "${all[$c]}" | median)
        printf '%-16s %-10s %10.3f %8.2f %12.2f %10.3f %12.2f\n' "$label" "${names[$c]}" "${best[$c]}" \
            "$(echo "${best[$c]} ${best[1]}" | awk '{print $1 / $2}')" \
            "$(echo "${best[$c]} ${best[2]}" | awk '{print $1 / $2}')" \
            "$med" "$(echo "$med $med2" | awk '{print $1 / $2}')"
    done
    unset best all
    echo "$label: $(du -ch $files | tail -1 | cut -f1) in $(echo $files | wc -w) files"
done
