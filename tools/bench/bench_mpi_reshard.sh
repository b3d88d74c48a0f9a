#!/usr/bin/env bash
# Wall time of `mpirun -np N equishard plan --mode reshard` for N = 1, 2, 3, 4 on
# synthetic WeNet tar shards, as ratios against the 1-process run of the same
# invocation (docs/PERFORMANCE.md, its `mpirun` rows). Every OUTDIR is checked
# to be byte-identical to the one-process (no mpirun) OUTDIR. As a control, the
# same script times N independent `equishard plan --mode reshard` processes on
# 1/N of the sources each, writing 1/N of the shards into their own OUTDIRs (no
# MPI, and each reads only its own sources): what the machine itself gives N
# processes at that moment.
#
#   tools/bench/bench_mpi_reshard.sh [N_SHARDS] [UTTS_PER_SHARD]   (default 24 200)
#
# Environment:
#   EQUISHARD  path to the binary (default build/tools/equishard/equishard)
#   MPIRUN     launcher (default: mpirun from PATH)
#   BENCH_DIR  where the sources live; reused when it already holds the same
#              corpus (default: a fresh mktemp -d, removed at exit)
#   COMPRESS   the new shards' compression (default gzip: CPU work processes can
#              share; none is the disk's speed)
#   SEED, REPEAT (rounds; the best per command is reported, default 3), NPS
#              (process counts, default "1 2 3 4")
#   INPUT      what plan is given: table (default; the cost table, measured
#              beforehand and untimed) or list (data.list: the timed run
#              measures the sources first, shared among the MPI processes)
#   SOURCES    tar (default) or gzip (the sources gzip-compressed: measuring
#              them decompresses every byte)
#   EXPAND     1: the mpirun commands run with --expand-sources (each process
#              decompresses its share of the sources once into plain copies
#              that all read); default 0
#
# The plan is 2 ranks x 1 worker x 12 shards a worker: 24 new shards, split
# evenly over 1, 2, 3 and 4 processes. Each process runs one OpenMP thread.
# Run from the repository root.
set -euo pipefail

N_SHARDS=${1:-24}
UTTS=${2:-200}
SEED=${SEED:-1234}
REPEAT=${REPEAT:-3}
NPS=${NPS:-1 2 3 4}
COMPRESS=${COMPRESS:-gzip}
INPUT=${INPUT:-table}
EXPAND=${EXPAND:-0}
SOURCES=${SOURCES:-tar}
[[ $INPUT == table || $INPUT == list ]] || { echo "INPUT: table or list" >&2; exit 2; }
[[ $SOURCES == tar || $SOURCES == gzip ]] || { echo "SOURCES: tar or gzip" >&2; exit 2; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
EQUISHARD=${EQUISHARD:-$ROOT/build/tools/equishard/equishard}
MPIRUN=${MPIRUN:-$(command -v mpirun || true)}
PY=${PYTHON:-python3}
[[ -x $EQUISHARD && -n $MPIRUN ]] || { echo "need $EQUISHARD and mpirun" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1

if [[ -n "${BENCH_DIR:-}" ]]; then
    WORK=$BENCH_DIR
    mkdir -p "$WORK"
else
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/equishard-bench-mpi-reshard.XXXXXX")
    trap 'rm -rf "$WORK"' EXIT
fi

echo "== machine"
echo "nproc:   $(nproc --all)"
echo "mpi:     $("$MPIRUN" --version 2>&1 | head -1)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine)"
echo

CORPUS=$WORK/$SOURCES
STAMP="$N_SHARDS $UTTS $SEED $SOURCES"
if [[ -f $CORPUS/data.list && $(cat "$CORPUS/stamp" 2>/dev/null) == "$STAMP" ]]; then
    echo "== reusing $N_SHARDS shards x $UTTS utterances in $CORPUS"
else
    echo "== generating $N_SHARDS shards x $UTTS utterances (seed $SEED)"
    rm -rf "$CORPUS"
    "$PY" "$HERE/gen_tar_shards.py" "$N_SHARDS" "$UTTS" "$CORPUS" --seed "$SEED"
    if [[ $SOURCES == gzip ]]; then
        gzip -n "$CORPUS"/*.tar
        sed -i 's/\.tar$/.tar.gz/' "$CORPUS/data.list"
    fi
    echo "$STAMP" >"$CORPUS/stamp"
fi
# the cost tables (untimed): all sources, and each control process's part
"$EQUISHARD" measure -q -o "$WORK/costs.tsv" "$CORPUS/data.list"
for np in $NPS; do
    split -n "r/$np" -d -a 2 "$CORPUS/data.list" "$WORK/part$np."
    for p in "$WORK/part$np".??; do
        "$EQUISHARD" measure -q -o "$p.tsv" "$p"
    done
done
# the input of each timed plan: a cost table, or the list it was measured from
input() { [[ $INPUT == table ]] && echo "$1.tsv" || echo "$1"; }
echo "size:    $(du -sh "$CORPUS" | cut -f1) of sources"
echo

source "$HERE/bench_rounds.sh"

# The commands: [0] one process without mpirun, then per N: mpirun -np N, and the
# control, N plain processes on 1/N of the sources and shards each.
PLAN="plan -q -k 2 -w 1 --mode reshard --compress $COMPRESS"
ALL=$([[ $INPUT == table ]] && echo "$WORK/costs.tsv" || echo "$CORPUS/data.list")
CMDS=("$(q "$EQUISHARD") $PLAN --shards-per-worker 12 -o $(q "$WORK/one") $(q "$ALL")")
for np in $NPS; do
    CMDS+=("$(q "$MPIRUN") --oversubscribe -np $np $(q "$EQUISHARD") $PLAN $( ((EXPAND)) && echo --expand-sources) --shards-per-worker 12 -o $(q "$WORK/np$np") $(q "$ALL")")
    cmd=""
    for p in "$WORK/part$np".??; do
        cmd+="$(q "$EQUISHARD") $PLAN --shards-per-worker $((12 / np)) -o $(q "$p.out") $(q "$(input "$p")") & "
    done
    CMDS+=("${cmd}wait")
done

# same files as the one-process OUTDIR (the lists name their own folder)
same_outdir() { # DIR
    local f
    for f in "$WORK/one"/*; do
        case $(basename "$f") in
        data.list | shards.tsv) sed "s#$WORK/one/#$1/#" "$f" | cmp -s - "$1/$(basename "$f")" ;;
        *) cmp -s "$f" "$1/$(basename "$f")" ;;
        esac || { echo "$1/$(basename "$f") differs from one process" >&2; return 1; }
    done
    [[ $(ls "$WORK/one" | wc -l) == $(ls "$1" | wc -l) ]]
}

echo "== timing: $REPEAT rounds of every command after one warm-up run, compress $COMPRESS"
mapfile -t BEST < <(rounds "${CMDS[@]}")
((${#BEST[@]} == ${#CMDS[@]})) || { echo "timing failed" >&2; exit 1; }
T_PLAIN=${BEST[0]}
declare -A T=() C=()
i=1
for np in $NPS; do
    T[$np]=${BEST[$i]}
    C[$np]=${BEST[$((i + 1))]}
    i=$((i + 2))
    same_outdir "$WORK/np$np" || exit 1
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

first=${NPS%% *}
echo "== results: $N_SHARDS $SOURCES sources ($INPUT given$( ((EXPAND)) && echo ', mpirun with --expand-sources')) -> 24 $COMPRESS shards, OUTDIRs byte-identical (best of $REPEAT)"
printf '| %-9s | %10s | %13s | %18s | %9s |\n' processes "mpirun (s)" "vs -np $first" \
    "control: plain (s)" "vs 1 plain"
printf '|%s|%s|%s|%s|%s|\n' ----------- ------------ --------------- -------------------- -----------
for np in $NPS; do
    awk -v np="$np" -v t="${T[$np]}" -v t1="${T[$first]}" -v c="${C[$np]}" -v c1="${C[$first]}" 'BEGIN {
        printf "| %-9s | %10.3f | %12.2fx | %18.3f | %8.2fx |\n", np, t, t1 / t, c, c1 / c }'
done
awk -v t="$T_PLAIN" -v t1="${T[$first]}" 'BEGIN {
    printf "(one process without mpirun: %.3f s; mpirun -np 1 costs %.3f s more)\n", t, t1 - t }'
