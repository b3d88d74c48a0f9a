#!/usr/bin/env bash
# Benchmark `equishard measure` against WeNet-style Python tar scanning and a
# GNU tar listing floor, on synthetic WeNet tar shards.
#
#   tools/bench/bench_measure.sh [N_SHARDS] [UTTS_PER_SHARD]   (default 64 200)
#
# Environment:
#   EQUISHARD  path to the binary (default build/tools/equishard/equishard)
#   BENCH_DIR  where to write shards (default: a fresh mktemp -d, removed at exit)
#   SEED       generator seed (default 1234)
#   REPEAT     timed runs per command, best is reported (default 3)
#   GEN        extra gen_tar_shards.py options, e.g. "--rate 8000 --median-s 1.2"
#              for small members (~24 KB clips)
#
# Reads come from the page cache: nothing is dropped; each command runs once
# untimed to warm up, then REPEAT timed runs. Run from the repository root.
set -euo pipefail

N_SHARDS=${1:-64}
UTTS=${2:-200}
SEED=${SEED:-1234}
REPEAT=${REPEAT:-3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
EQUISHARD=${EQUISHARD:-$ROOT/build/tools/equishard/equishard}
PY=${PYTHON:-python3}

if [[ -n "${BENCH_DIR:-}" ]]; then
    WORK=$BENCH_DIR
    mkdir -p "$WORK"
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/equishard-bench.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
fi

echo "== machine"
echo "nproc:   $(nproc)"
echo "cpu:     $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || uname -m)"
echo "kernel:  $(uname -sr)"
echo "memory:  $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo 2>/dev/null)"
echo "python:  $($PY --version 2>&1)"
echo "tar:     $(tar --version | head -1)"
echo "workdir: $WORK ($(df -h "$WORK" | awk 'NR==2 {print $1}'))"
echo

echo "== generating $N_SHARDS shards x $UTTS utterances (seed $SEED)"
# shellcheck disable=SC2086
"$PY" "$HERE/gen_tar_shards.py" "$N_SHARDS" "$UTTS" "$WORK/shards" --seed "$SEED" ${GEN:-}
LIST=$WORK/shards/data.list
NUTT=$((N_SHARDS * UTTS))
echo "size:    $(du -sh "$WORK/shards" | cut -f1)"
echo

# best_of CMD: one untimed warm-up run (must succeed), then REPEAT timed runs;
# prints the best wall time in seconds.
best_of() {
    "$PY" - "$REPEAT" "$1" <<'EOF'
import subprocess, sys, time
reps, cmd = int(sys.argv[1]), sys.argv[2]
def once():
    t = time.perf_counter()
    r = subprocess.run(["bash", "-c", cmd], stdout=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit("command failed (rc %d): %s" % (r.returncode, cmd))
    return dt
once()
print("%.4f" % min(once() for _ in range(reps)))
EOF
}

q() { printf '%q' "$1"; }

declare -a NAMES=() TIMES=()
add() { NAMES+=("$1"); TIMES+=("$2"); printf '  %-28s %8.3f s\n' "$1" "$2"; }

echo "== timing (best of $REPEAT after one warm-up run)"
# sanity: the Python scan must see every utterance
got=$("$PY" "$HERE/wenet_tarfile_scan.py" "$LIST")
[[ "$got" == "$NUTT" ]] || { echo "python scan counted $got, expected $NUTT" >&2; exit 1; }

HAVE_EQ=0
if [[ -x "$EQUISHARD" ]]; then
    HAVE_EQ=1
    for j in 1 2; do
        out=$WORK/measure-j$j.tsv
        t=$(best_of "$(q "$EQUISHARD") measure -j $j -o $(q "$out") $(q "$LIST")")
        add "equishard measure -j $j" "$t"
        echo "    ($(wc -l < "$out") lines in $out)"
    done
else
    echo "  (skipping equishard: $EQUISHARD not found or not executable; set EQUISHARD=...)"
fi
t=$(best_of "$(q "$PY") $(q "$HERE/wenet_tarfile_scan.py") $(q "$LIST")")
add "python tarfile+wave scan" "$t"; T_PY=$t
t=$(best_of "while read -r f; do tar -tvf \"\$f\"; done < $(q "$LIST") > /dev/null")
add "GNU tar -tvf (floor)" "$t"; T_TAR=$t
echo

echo "== results: $N_SHARDS shards, $NUTT utterances"
printf '| %-28s | %10s | %14s |\n' "command" "best (s)" "utterances/s"
printf '|%s|%s|%s|\n' "------------------------------" "------------" "----------------"
for i in "${!NAMES[@]}"; do
    printf '| %-28s | %10.3f | %14.0f |\n' "${NAMES[$i]}" "${TIMES[$i]}" \
        "$(awk -v n="$NUTT" -v t="${TIMES[$i]}" 'BEGIN {print n / t}')"
done
echo
if [[ $HAVE_EQ == 1 ]]; then
    for i in 0 1; do
        awk -v name="${NAMES[$i]}" -v te="${TIMES[$i]}" -v tp="$T_PY" -v tt="$T_TAR" 'BEGIN {
            printf "%s: %.1fx the python scan rate, %.2fx the tar -tvf rate\n",
                   name, tp / te, tt / te }'
    done
else
    echo "ratios need equishard; python scan is $(awk -v tp="$T_PY" -v tt="$T_TAR" 'BEGIN {printf "%.2f", tt / tp}')x the tar -tvf rate"
fi
