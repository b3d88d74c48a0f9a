#!/usr/bin/env bash
# Wall time of `mpirun -np N equishard measure -j 1` for N = 1, 2, 3, 4 on
# synthetic WeNet tar.gz shards, as ratios against the 1-process run of the same
# invocation (docs/PERFORMANCE.md). Every table is checked to be byte-identical
# to the one-process (no mpirun) table. As a control, the same script times N
# independent `equishard measure -j 1` processes on 1/N of the list each (no MPI,
# no merge): what the machine itself gives N processes at that moment.
#
#   tools/bench/bench_mpi.sh [N_SHARDS] [UTTS_PER_SHARD]   (default 24 200: 24 shards
#   split evenly over 1, 2, 3 and 4 processes)
#
# Environment:
#   EQUISHARD  path to the binary (default build/tools/equishard/equishard)
#   MPIRUN     launcher (default: mpirun from PATH)
#   BENCH_DIR  where the shards live; reused when it already holds the same
#              corpus (default: a fresh mktemp -d, removed at exit)
#   SEED       generator seed (default 1234)
#   REPEAT     rounds of timed runs, the best per command is reported (default 3)
#   NPS        process counts (default "1 2 3 4")
#
# tar.gz: measuring gzip shards is decompression, CPU work that more processes
# can share (plain tar is measured at page-cache speed, ~0.1 s for this corpus).
# Each process runs one OpenMP thread (-j 1): on a machine with C cores, scaling
# stops at N = C. Run from the repository root.
set -euo pipefail

N_SHARDS=${1:-24}
UTTS=${2:-200}
SEED=${SEED:-1234}
REPEAT=${REPEAT:-3}
NPS=${NPS:-1 2 3 4}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
EQUISHARD=${EQUISHARD:-$ROOT/build/tools/equishard/equishard}
MPIRUN=${MPIRUN:-$(command -v mpirun || true)}
PY=${PYTHON:-python3}
[[ -x $EQUISHARD && -n $MPIRUN ]] || { echo "need $EQUISHARD and mpirun" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if [[ -n "${BENCH_DIR:-}" ]]; then
    WORK=$BENCH_DIR
    mkdir -p "$WORK"
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/equishard-bench-mpi.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
fi

echo "== machine"
echo "nproc:   $(nproc)"
echo "cpu:     $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || uname -m)"
echo "mpi:     $("$MPIRUN" --version 2>&1 | head -1)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine)"
echo

CORPUS=$WORK/shards-gz
STAMP="$N_SHARDS $UTTS $SEED"
if [[ -f $CORPUS/data.list && $(cat "$CORPUS/stamp" 2>/dev/null) == "$STAMP" ]]; then
    echo "== reusing $N_SHARDS shards x $UTTS utterances in $CORPUS"
else
    echo "== generating $N_SHARDS shards x $UTTS utterances (seed $SEED), gzip -1"
    rm -rf "$CORPUS" "$WORK/tar"
    "$PY" "$HERE/gen_tar_shards.py" "$N_SHARDS" "$UTTS" "$WORK/tar" --seed "$SEED"
    mkdir -p "$CORPUS"
    for f in "$WORK"/tar/*.tar; do
        gzip -1 -n -c "$f" >"$CORPUS/$(basename "$f").gz"
        rm "$f"
    done
    rm -rf "$WORK/tar"
    ls "$CORPUS"/*.tar.gz >"$CORPUS/data.list"
    echo "$STAMP" >"$CORPUS/stamp"
fi
LIST=$CORPUS/data.list
NUTT=$((N_SHARDS * UTTS))
echo "size:    $(du -sh "$CORPUS" | cut -f1) compressed"
echo

source "$HERE/bench_rounds.sh"

# The commands: [0] one process without mpirun, then per N: mpirun -np N, and the
# control, N plain processes on 1/N of the list each.
ONE=$WORK/one.tsv
CMDS=("$(q "$EQUISHARD") measure -q -j 1 -o $(q "$ONE") $(q "$LIST")")
for np in $NPS; do
    CMDS+=("$(q "$MPIRUN") --oversubscribe -np $np $(q "$EQUISHARD") measure -q -j 1 -o $(q "$WORK/np$np.tsv") $(q "$LIST")")
    split -n "r/$np" -d -a 2 "$LIST" "$WORK/part$np."
    cmd=""
    for p in "$WORK/part$np".*; do
        cmd+="$(q "$EQUISHARD") measure -q -j 1 -o /dev/null $(q "$p") & "
    done
    CMDS+=("${cmd}wait")
done

echo "== timing: $REPEAT rounds of every command after one warm-up run, -j 1 per process"
mapfile -t BEST < <(rounds "${CMDS[@]}")
((${#BEST[@]} == ${#CMDS[@]})) || { echo "timing failed" >&2; exit 1; }
T_PLAIN=${BEST[0]}
declare -A T=() C=()
i=1
for np in $NPS; do
    T[$np]=${BEST[$i]}
    C[$np]=${BEST[$((i + 1))]}
    i=$((i + 2))
    cmp -s "$ONE" "$WORK/np$np.tsv" || { echo "mpirun -np $np: table differs from one process" >&2; exit 1; }
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

first=${NPS%% *}
echo "== results: $N_SHARDS tar.gz shards, $NUTT utterances, tables byte-identical (best of $REPEAT)"
printf '| %-9s | %10s | %13s | %12s | %18s | %9s |\n' processes "mpirun (s)" "vs -np $first" \
    "utterances/s" "control: plain (s)" "vs 1 plain"
printf '|%s|%s|%s|%s|%s|%s|\n' ----------- ------------ --------------- -------------- \
    -------------------- -----------
for np in $NPS; do
    awk -v np="$np" -v t="${T[$np]}" -v t1="${T[$first]}" -v n="$NUTT" -v c="${C[$np]}" \
        -v c1="${C[$first]}" 'BEGIN {
        printf "| %-9s | %10.3f | %12.2fx | %12.0f | %18.3f | %8.2fx |\n", np, t, t1 / t, n / t, c, c1 / c }'
done
awk -v t="$T_PLAIN" -v t1="${T[$first]}" 'BEGIN {
    printf "(one process without mpirun: %.3f s; mpirun -np 1 costs %.3f s more: launcher and MPI_Init)\n", t, t1 - t }'
