#!/usr/bin/env bash
# Long fuzzing: every libFuzzer harness for SECONDS each (default 60), with its
# corpus kept under tests/fuzz/corpus/<name>/. Inputs that add coverage are
# merged back there (-merge=1: only those adding coverage, minimized set); a
# harness without a folder of its own reads the seeds of the reader its name
# starts with and keeps what it finds in a new folder of its own. Prints one
# line per harness: name, seconds, executions, crashes.
# usage: tools/fuzz.sh [SECONDS] [HARNESS...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
dir=build-fuzz
if [[ ! -f $dir/build.ninja ]]; then
    rm -rf "$dir"
    CC=clang meson setup "$dir" -Dtests=disabled -Dfuzz=enabled -Db_lundef=false >"$dir.setup.log" ||
        { cat "$dir.setup.log"; exit 1; }
fi
ninja -C "$dir" >/dev/null
printf '%-16s %8s %12s %8s\n' harness seconds executions crashes
crashes=0
for exe in "$dir"/tests/fuzz/fuzz_*; do
    [[ -x $exe && -f $exe ]] || continue
    name=${exe##*/fuzz_}
    if (($#)) && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
    keep=tests/fuzz/corpus/$name
    seeds=$keep
    [[ -d $seeds ]] || seeds=tests/fuzz/corpus/${name%%_*}
    work=$(mktemp -d)
    mkdir -p "$work/new" "$work/crash"
    extra=()
    if [[ $name == audio_probe ]]; then
        # real-world recordings (tests/fixtures/real: WeNet, Lhotse, Coqui, SpeechBrain),
        # the small ones, beside the hand-made seed variants
        mkdir -p "$work/real"
        find tests/fixtures/real -type f \( -name '*.wav' -o -name '*.flac' \) -size -64k \
            -exec cp -t "$work/real" {} +
        extra=("$work/real")
    fi
    rc=0
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$work/crash/" "$work/new" "$seeds" "${extra[@]}" 2>"$work/log" || rc=$?
    execs=$(awk '/stat::number_of_executed_units/ { print $2 }' "$work/log" | tail -1)
    found=$(find "$work/crash" -type f | wc -l)
    if ((rc != 0 || found > 0)); then
        tail -40 "$work/log"
        echo "fuzzer $name found a crash (exit $rc): $work/crash" >&2
        crashes=$((crashes + 1))
    else
        mkdir -p "$keep"
        "$exe" -merge=1 "$keep" "$work/new" >/dev/null 2>&1 || true
        rm -rf "$work"
    fi
    printf '%-16s %8s %12s %8s\n' "$name" "$seconds" "${execs:-?}" "$found"
done
((crashes == 0))
