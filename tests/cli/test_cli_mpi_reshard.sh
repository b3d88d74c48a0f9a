#!/usr/bin/env bash
# CLI tests for `mpirun -np N equishard plan` (registered when meson found MPI).
# Reshard: each process writes its share of the new shards into one OUTDIR, byte
# for byte the one-process OUTDIR (every file: shards, data.list, shards.tsv,
# filtered.tsv, utt2data.list, spk2data.list and their JSON, plan.json) for tar
# none/gzip/zstd and parquet snappy/zstd, N new shards not a multiple of the
# process count, and shards written in passes; stdout is the one-process summary.
# Shard and batch modes: rank 0 writes the same OUTDIR. Failures only some
# ranks meet (sources changed where rank 1 reads them, a rank that built another
# plan, a rank that cannot see the output folder) give one line, exit 2 on every
# process, the previous OUTDIR untouched and no temporary folder left.
# Usage: test_cli_mpi_reshard.sh EQUISHARD MPIRUN [LSAN_SUPPRESSIONS (the ASan build)]
set -u
BIN=$1
MPIRUN=$2
SUPP=${3:-}
FIX=$ES_FIXTURES
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$(dirname "${BASH_SOURCE[0]}")/mpi_lib.sh"
NPS="1 2 3 4"
[[ -n $SUPP ]] && NPS="1 3"
FEW="2 3" # the later variants: fewer process counts (CI time)
[[ -n $SUPP ]] && FEW=3
OUT=$WORK/outdir # every run writes here, so data.list's paths agree too

# damage COPY ORIGINAL OFFSET BYTES: the copy overwritten there, its size and
# time the original's (so only reading it can tell)
damage() {
    printf '%s' "$4" | dd of="$1" bs=1 seek="$3" conv=notrunc status=none
    touch -r "$2" "$1"
}
# reported_once NAME: the last run's stderr holds one speech-token report
reported_once() {
    local n
    n=$(grep -c 'speech tokens from' "$WORK/err")
    [[ $n == 1 ]] || fail "$1: report $n times"
}

# 1. NAME ARGS...: the one-process OUTDIR and summary, then the same from each -np
same_as_single() {
    local name=$1; shift
    "$BIN" plan -q "$@" -o "$OUT" >"$WORK/single.out" 2>"$WORK/single.err" \
        || { fail "$name: one process: $(cat "$WORK/single.err")"; return; }
    rm -rf "$WORK/ref"
    mv "$OUT" "$WORK/ref"
    for np in $NPS; do
        mpi "$np" "$BIN" plan -q "$@" -o "$OUT" \
            || { fail "$name: -np $np: exit $? ($(head -c 300 "$WORK/err"))"; continue; }
        diff -r "$WORK/ref" "$OUT" >/dev/null \
            || fail "$name: -np $np: OUTDIR differs: $(diff -rq "$WORK/ref" "$OUT" | head -3)"
        cmp -s "$WORK/out" "$WORK/single.out" || fail "$name: -np $np: summary differs"
        rm -rf "$OUT"
    done
}
cd "$FIX/corpus_a" || exit 1
RS=(-k 2 -w 2 --mode reshard)
same_as_single tar "${RS[@]}" shards/shards.list # N = 4: -np 3 writes 1, 1 and 2
same_as_single tar-gzip "${RS[@]}" --shards-per-worker 3 --compress gzip shards-gz/shards.list
same_as_single tar-zstd "${RS[@]}" --shards-per-worker 3 --compress zstd shards-zst/shards.list
same_as_single parquet "${RS[@]}" --shards-per-worker 3 parquet/data.list
same_as_single parquet-zstd -k 3 -w 1 --mode reshard --compress zstd parquet/data.list
[[ $(ls "$WORK/ref"/parquet_*.tar | wc -l) == 3 ]] || fail "parquet-zstd: 3 files expected"
# 68 open files leave 4 writers (64 kept for the rest): 12 shards in passes
before=$failures
(ulimit -n 68 && same_as_single passes "${RS[@]}" --shards-per-worker 3 shards/shards.list &&
    exit $((failures - before))) || failures=$((failures + 1))
same_as_single batch -k 3 -w 2 --mode batch shards/shards.list raw.list
same_as_single shard -k 2 -w 2 shards/shards.list shards-zst/shards.list
# lists are measured across the ranks: text tokens (WeNet's CharTokenizer, the
# units the corpus' upper-case letters) and speech tokens counted on each rank
# for its share (batch mode writes them back in costs.tsv.zst); the speech-token
# report comes once, from rank 0
{ printf '<blank> 0\n<unk> 1\n'; for c in {A..Z}; do echo "$c $((2 + $(printf '%d' "'$c") - 65))"; done; } \
    >"$WORK/units.txt"
TOK=(--symbol-table "$WORK/units.txt" --speech-tokens kaldi/utt2speech_token.pt)
NPS=$FEW same_as_single tokens -k 3 -w 2 --mode batch "${TOK[@]}" kaldi shards/shards.list raw.list
reported_once tokens
NPS=$FEW same_as_single reshard-tokens "${RS[@]}" "${TOK[@]}" shards/shards.list
reported_once reshard-tokens
# a cost table among the inputs: each rank that builds loads them whole (the
# speech-token report still once)
"$BIN" measure -q -o "$WORK/gz-costs.tsv" shards-gz/shards.list || fail "measure shards-gz"
NPS=$FEW same_as_single mixed -k 2 -w 2 --mode reshard --speech-tokens kaldi/utt2speech_token.pt \
    shards/shards.list "$WORK/gz-costs.tsv"
reported_once mixed
# --expand-sources (the compressed sources decompressed once, each process its
# share, into plain copies all read; 2e): the same OUTDIR as without it
"$BIN" plan -q "${RS[@]}" --shards-per-worker 3 -o "$OUT" shards-gz/shards.list >/dev/null \
    || fail "gz without --expand-sources"
rm -rf "$WORK/gz-list"
mv "$OUT" "$WORK/gz-list"
NPS=$FEW same_as_single expand-gz "${RS[@]}" --shards-per-worker 3 --expand-sources shards-gz/shards.list
diff -r "$WORK/gz-list" "$WORK/ref" >/dev/null || fail "--expand-sources changed the OUTDIR"
compgen -G "$WORK/ref/.source-*" >/dev/null && fail "--expand-sources: a plain copy left in OUTDIR"
# plain tar and parquet sources are read in place: nothing changes, no copy made
for src in shards/shards.list parquet/data.list; do
    rm -rf "$OUT" "$WORK/in-place"
    "$BIN" plan -q "${RS[@]}" -o "$OUT" "$src" >/dev/null && mv "$OUT" "$WORK/in-place" &&
        "$BIN" plan -q "${RS[@]}" --expand-sources -o "$OUT" "$src" >/dev/null &&
        diff -r "$WORK/in-place" "$OUT" >/dev/null || fail "--expand-sources, $src: OUTDIR differs"
done
rm -rf "$OUT"
NPS=$FEW same_as_single expand-zst "${RS[@]}" --shards-per-worker 3 --compress gzip --expand-sources \
    shards-zst/shards.list

# 2. failures a rank other than 0 meets. A previous OUTDIR stays as it was.
"$BIN" plan -q "${RS[@]}" -o "$OUT" shards/shards.list >/dev/null || fail "previous OUTDIR"
cp -a "$OUT" "$WORK/prev"
intact() { # what
    diff -r "$WORK/prev" "$OUT" >/dev/null || fail "$1: the previous OUTDIR changed"
    compgen -G "$OUT.tmp.*" >/dev/null && fail "$1: a temporary folder was left: $(ls -d "$OUT".tmp.*)"
}
# rank1.sh: rank 1 (or ODD_RANK) runs the command with EXTRA appended, in CWD1
# when set (the others as given)
cat >"$WORK/rank1.sh" <<'EOF'
#!/bin/sh
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-x}}
odd=${ODD_RANK:-1}
[ -n "${CWD1:-}" ] && [ "$rank" = "$odd" ] && cd "$CWD1"
if [ "$rank" = "$odd" ]; then "$@" $EXTRA; else "$@"; fi
rc=$?
echo "$rc" >"$RC_DIR/rc.$rank"
exit "$rc"
EOF
chmod +x "$WORK/rank1.sh"
mkdir "$WORK/rcs"
on_rank1() { # NP EXTRA CWD1 command... : rank 1 differs; every rank's exit code kept
    local np=$1 extra=$2 cwd1=$3; shift 3
    rm -f "$WORK/rcs"/rc.*
    RC_DIR=$WORK/rcs EXTRA=$extra CWD1=$cwd1 ODD_RANK=${ODD_RANK:-1} \
        OMPI_MCA_orte_abort_on_non_zero_status=0 \
        mpi "$np" -x RC_DIR -x EXTRA -x CWD1 -x ODD_RANK -x OMPI_MCA_orte_abort_on_non_zero_status \
        "$WORK/rank1.sh" "$@"
}
all_exit() { # NP CODE what
    for ((r = 0; r < $1; r++)); do
        [[ $(cat "$WORK/rcs/rc.$r" 2>/dev/null) == "$2" ]] \
            || fail "$3: rank $r exit '$(cat "$WORK/rcs/rc.$r" 2>/dev/null)', expected $2"
    done
}

# 2a. the sources as rank 1 sees them (--root: a copy, same sizes and times, each
#     first header's name damaged) fail while it copies: exit 2 everywhere, rank 1's line
"$BIN" measure -q -o "$WORK/costs.tsv" shards/shards.list || fail "measure"
mkdir -p "$WORK/copy/shards"
cp -p shards/shards_*.tar "$WORK/copy/shards/"
for f in "$WORK"/copy/shards/*.tar; do
    damage "$f" "shards/$(basename "$f")" 0 XXXX
done
for np in 2 4; do
    LEAKCHECK=$((np == 2)) on_rank1 "$np" "--root $WORK/copy" "" \
        "$BIN" plan -q "${RS[@]}" -o "$OUT" "$WORK/costs.tsv"
    all_exit "$np" 2 "changed sources on rank 1, -np $np"
    [[ $(es_lines | wc -l) == 1 ]] && es_lines | grep -q "$WORK/copy/shards/" \
        || fail "changed sources, -np $np: $(cat "$WORK/err")"
    intact "changed sources, -np $np"
done

# 2b. rank 1 built another plan (other options): refused before a shard is written
on_rank1 3 "--shards-per-worker 2" "" "$BIN" plan -q "${RS[@]}" -o "$OUT" "$WORK/costs.tsv"
all_exit 3 2 "different plans"
es_lines | grep -q "built different plans" || fail "different plans: $(cat "$WORK/err")"
intact "different plans"

# 2c. rank 1 cannot see the folder rank 0 began (a relative OUTDIR, another cwd)
mkdir "$WORK/elsewhere"
cp "$WORK/costs.tsv" "$WORK/elsewhere/"
(cd "$WORK" && on_rank1 2 "" "$WORK/elsewhere" \
    "$BIN" plan -q "${RS[@]}" --root "$FIX/corpus_a" -o outdir costs.tsv)
all_exit 2 2 "folder not visible"
es_lines | grep -q "is not visible here" || fail "folder not visible: $(cat "$WORK/err")"
intact "folder not visible"

# 2d. lists are measured once across the ranks, each rank its share, not whole
#     on each. With two shards and -np 2, LPT deals the larger to rank 0 and the
#     smaller to rank 1. A copy of the corpus (same sizes and times) whose smaller
#     shard is damaged: the rank that measures it fails, the other never opens it.
printf '%s\n' shards/shards_000000001.tar shards/shards_000000003.tar >"$WORK/two.list"
mkdir -p "$WORK/damaged/shards"
cp -p shards/shards_00000000[13].tar "$WORK/damaged/shards/"
damage "$WORK/damaged/shards/shards_000000003.tar" shards/shards_000000003.tar 0 XXXX
for mode in batch reshard; do
    rm -rf "$OUT"
    "$BIN" plan -q -k 2 -w 1 --mode "$mode" -o "$OUT" "$WORK/two.list" >/dev/null || fail "two.list $mode"
    mv "$OUT" "$WORK/two-$mode"
    # rank 1 sees the damaged copy: it measures the smaller shard, so the run fails
    # with its line, every rank exits 2 (also in batch mode, where only rank 0 writes)
    LEAKCHECK=1 on_rank1 2 "" "$WORK/damaged" "$BIN" plan -q -k 2 -w 1 --mode "$mode" -o "$OUT" "$WORK/two.list"
    all_exit 2 2 "$mode: rank 1 measures the smaller shard"
    [[ $(es_lines | wc -l) == 1 ]] && es_lines | grep -q "shards_000000003.tar" \
        || fail "$mode: rank 1's damaged shard: $(cat "$WORK/err")"
    [[ -e $OUT ]] && fail "$mode: a failed run left OUTDIR"
done
# rank 0 sees the damaged copy: it measures only the larger shard, so in batch
# mode (rank 1 reads no source afterwards) the plan is the one-process plan
ODD_RANK=0 LEAKCHECK=1 on_rank1 2 "" "$WORK/damaged" "$BIN" plan -q -k 2 -w 1 --mode batch -o "$OUT" "$WORK/two.list"
all_exit 2 0 "batch: rank 0 does not measure rank 1's shard"
diff -r "$WORK/two-batch" "$OUT" >/dev/null || fail "batch, rank 0 damaged copy: OUTDIR differs"

# 2e. --expand-sources: each rank decompresses its share of the compressed
#     sources once into plain copies that every rank reads. LPT deals the two
#     largest .tar.gz (shards_000000001, then shards_000000000) to ranks 0 and 1.
#     Rank 1 sees a copy of the corpus (same sizes and times) with one source
#     damaged: rank 0's source changes nothing (rank 1 reads rank 0's plain
#     copy; without --expand-sources it reads the source and fails); its own
#     source fails the run with that source's line (libarchive's gzip filter
#     checks no CRC, so the damage shows when a rank reads the tar inside).
"$BIN" plan -q "${RS[@]}" --shards-per-worker 3 -o "$OUT" "$WORK/gz-costs.tsv" >/dev/null \
    || fail "gz plan"
rm -rf "$WORK/gz-plain"
mv "$OUT" "$WORK/gz-plain"
for victim in 1 0; do
    view=$WORK/gzview$victim
    mkdir -p "$view/shards-gz"
    cp -p shards-gz/*.tar.gz "$view/shards-gz/"
    damage "$view/shards-gz/shards_00000000$victim.tar.gz" \
        "shards-gz/shards_00000000$victim.tar.gz" 4000 XXXXXXXX
done
on_rank1 2 "--root $WORK/gzview1" "" "$BIN" plan -q "${RS[@]}" --shards-per-worker 3 -o "$OUT" "$WORK/gz-costs.tsv"
all_exit 2 2 "rank 1 reads rank 0's damaged source without --expand-sources"
LEAKCHECK=1 on_rank1 2 "--root $WORK/gzview1" "" "$BIN" plan -q "${RS[@]}" --shards-per-worker 3 \
    --expand-sources -o "$OUT" "$WORK/gz-costs.tsv"
all_exit 2 0 "--expand-sources: rank 1 reads rank 0's copy"
diff -r "$WORK/gz-plain" "$OUT" >/dev/null || fail "--expand-sources: OUTDIR differs"
compgen -G "$OUT/.source-*" >/dev/null && fail "--expand-sources: a plain copy left in OUTDIR"
rm -rf "$WORK/prev"
cp -a "$OUT" "$WORK/prev"
LEAKCHECK=1 on_rank1 2 "--root $WORK/gzview0" "" "$BIN" plan -q "${RS[@]}" --shards-per-worker 3 \
    --expand-sources -o "$OUT" "$WORK/gz-costs.tsv"
all_exit 2 2 "--expand-sources: rank 1's own damaged source"
[[ $(es_lines | wc -l) == 1 ]] && es_lines | grep -q "shards-gz/shards_000000000.tar.gz" \
    || fail "--expand-sources, damaged source: $(cat "$WORK/err")"
intact "--expand-sources, damaged source"

# 3. without a launcher MPI is never initialised (a setting that breaks MPI_Init)
OMPI_MCA_pml=no_such_pml "$BIN" plan -q "${RS[@]}" -o "$WORK/plain" shards/shards.list \
    >/dev/null || fail "plain plan initialised MPI?"

if ((failures)); then
    echo "$failures failure(s)"
    exit 1
fi
echo "all MPI plan CLI tests passed"
