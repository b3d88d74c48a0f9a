#!/usr/bin/env bash
# Benchmark `equishard measure` on CosyVoice parquet shards against the cost of
# decompressing the columns it needs (the target: little more than that).
#
#   tools/bench/bench_parquet.sh [ROWS]     (default 2000: two files of 1000 rows)
#
# Needs Node.js with parquet-wasm and apache-arrow (tests/data/parquet/README.md
# says how to install them) to write the shards: PQ_NODE_MODULES=/tmp/pq/node_modules.
# Environment:
#   EQUISHARD  the binary (default build/tools/equishard/equishard)
#   PAGES      tools/bench/bench_parquet_pages (default next to EQUISHARD's build)
#   BENCH_DIR  where to write shards (default: a fresh mktemp -d, removed at exit)
#   REPEAT     timed rounds, every command once a round; best is reported (default 5)
#
# For each codec (SNAPPY, as pyarrow writes CosyVoice shards by default, and ZSTD)
# it times, on page-cached files:
#   - equishard measure -j 1 (and --hash);
#   - bench_parquet_pages decode: our column pass over the same seven columns
#     (pread, decompress, levels, values) without audio probes;
#   - bench_parquet_pages decompress: pread + the codec alone over those columns'
#     pages, through reused buffers (the floor: any reader must do this much);
#   - for ZSTD: `zstd -d` over the same page payloads written back to back;
#   - equishard's process start (measuring a one-row file), which a long
#     data.list pays once: "measure minus startup" is the per-shard cost.
set -euo pipefail

ROWS=${1:-2000}
REPEAT=${REPEAT:-5}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
EQUISHARD=${EQUISHARD:-$ROOT/build/tools/equishard/equishard}
PAGES=${PAGES:-$(dirname "$(dirname "$EQUISHARD")")/bench/bench_parquet_pages}
export PQ_NODE_MODULES=${PQ_NODE_MODULES:-/tmp/pq/node_modules}

[[ -x $EQUISHARD && -x $PAGES ]] || { echo "build first: $EQUISHARD, $PAGES" >&2; exit 2; }
[[ -d $PQ_NODE_MODULES/parquet-wasm ]] || { echo "no parquet-wasm in $PQ_NODE_MODULES" >&2; exit 2; }
if [[ -n "${BENCH_DIR:-}" ]]; then
    WORK=$BENCH_DIR
    mkdir -p "$WORK"
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/equishard-pq-bench.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
fi

echo "== machine"
echo "nproc:   $(nproc)"
echo "cpu:     $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || uname -m)"
echo "zstd:    $(zstd --version)"
echo

# wall CMD: seconds one run takes.
wall() {
    local t0 t1
    t0=$(date +%s.%N)
    bash -c "$1" >/dev/null
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{print $2 - $1}'
}
# bench NAME=CMD...: one untimed warm-up run of each, then REPEAT rounds that run
# every command once in turn (so all see the same machine); the best of each.
# A command starting with "@" prints its own seconds first (the helper).
declare -A BEST
bench() {
    local spec name cmd t
    for spec in "$@"; do cmd=${spec#*=}; bash -c "${cmd#@}" >/dev/null; done
    for ((i = 0; i < REPEAT; i++)); do
        for spec in "$@"; do
            name=${spec%%=*}
            cmd=${spec#*=}
            if [[ $cmd == @* ]]; then t=$(bash -c "${cmd#@}" | cut -d' ' -f1); else t=$(wall "$cmd"); fi
            BEST[$name]=$(echo "$t ${BEST[$name]:-1e9}" | awk '{print ($1 < $2 ? $1 : $2)}')
        done
    done
}

printf '%-8s %-44s %10s %10s\n' codec command seconds "x floor"
for codec in snappy zstd; do
    dir=$WORK/$codec
    [[ -f $dir/data.list ]] || node "$HERE/gen_parquet_bench.mjs" "$ROWS" "$dir" "$codec" >/dev/null
    files=$(echo "$dir"/*.tar)
    BEST=()
    cmds=("floor=@$PAGES decompress $files" "decode=@$PAGES decode $files"
          "m1=$EQUISHARD measure -q -j 1 $dir/data.list"
          "mh=$EQUISHARD measure -q -j 1 --hash $dir/data.list"
          "m2=$EQUISHARD measure -q -j 2 $dir/data.list"
          "start=$EQUISHARD measure -q $ROOT/tests/data/parquet/minimal.parquet"
          "rs=$EQUISHARD plan -q -k 2 --mode reshard --compress $codec --min-length 0 --token-max-length 100000 -o $WORK/rs-$codec $dir/data.list"
          "cp=rm -rf $WORK/cp-$codec && mkdir $WORK/cp-$codec && cp $files $WORK/cp-$codec/")
    if [[ $codec == zstd ]]; then
        for f in $files; do "$PAGES" extract "$f" "$f.pages.zst"; done
        cmds+=("z=cat $dir/*.pages.zst | zstd -q -d -c")
    fi
    bench "${cmds[@]}"
    floor=${BEST[floor]}
    row() { printf '%-8s %-44s %10.3f %10.2f\n' "$codec" "$1" "$2" "$(echo "$2 $floor" | awk '{print $1 / $2}')"; }
    row "read + decompress needed pages (floor)" "$floor"
    row "decode needed columns, no probes" "${BEST[decode]}"
    row "equishard measure -j 1" "${BEST[m1]}"
    row "equishard measure -j 1 --hash" "${BEST[mh]}"
    row "equishard measure -j 2" "${BEST[m2]}"
    [[ $codec == zstd ]] && row "zstd -d of the same page bytes" "${BEST[z]}"
    row "equishard startup (measure a 1-row file)" "${BEST[start]}"
    row "equishard measure -j 1 minus startup" "$(echo "${BEST[m1]} ${BEST[start]}" | awk '{print $1 - $2}')"
    printf '%-8s %-44s %10.3f %10.2f  (x cp)\n' "$codec" "reshard: plan --mode reshard -k 2" "${BEST[rs]}" \
        "$(echo "${BEST[rs]} ${BEST[cp]}" | awk '{print $1 / $2}')"
    printf '%-8s %-44s %10.3f\n' "$codec" "cp of the same files" "${BEST[cp]}"
    echo "$codec: $(du -ch $files | tail -1 | cut -f1) in $(echo $files | wc -w) files, $ROWS rows"
done
