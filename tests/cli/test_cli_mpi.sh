#!/usr/bin/env bash
# CLI tests for `mpirun -np N equishard measure` (registered when meson found MPI):
# the table is byte-identical to the one-process table for every input format,
# any process count and any -j; --on-error skip lists the same skips; a bad shard
# measured by a rank other than 0 gives the one-process error on rank 0's stderr
# and a non-zero exit on every rank, with no hang (every launch runs under
# `timeout`). A plain `equishard measure` never initialises MPI.
# Usage: test_cli_mpi.sh EQUISHARD MPIRUN [LSAN_SUPPRESSIONS (the ASan build)]
set -u
BIN=$1
MPIRUN=$2
SUPP=${3:-}
FIX=$ES_FIXTURES
SAMPLES=$ES_SOURCE_ROOT/data-samples
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

source "$(dirname "${BASH_SOURCE[0]}")/mpi_lib.sh"
# process counts and -j of the equality runs (fewer in the slower ASan build)
NPS="1 2 3 4" JS="1 2"
[[ -n $SUPP ]] && NPS="1 3" JS=2
# 1. byte-identical to one process: every format, with --hash, 1-4 processes, -j 1/2
same_as_single() { # name dir "-j values" inputs...
    local name=$1 dir=$2 js=$3; shift 3
    (cd "$dir" && "$BIN" measure -q --hash -o "$WORK/$name.tsv" "$@") || { fail "$name: single run"; return; }
    for np in $NPS; do
        for j in $js; do
            (cd "$dir" && mpi "$np" "$BIN" measure -q -j "$j" --hash -o "$WORK/$name-$np.tsv" "$@") \
                || { fail "$name: mpirun -np $np -j $j: exit $? ($(head -c 300 "$WORK/err"))"; continue; }
            cmp -s "$WORK/$name.tsv" "$WORK/$name-$np.tsv" || fail "$name: -np $np -j $j differs"
        done
    done
}
same_as_single fixtures "$FIX/corpus_a" "$JS" shards/shards.list shards-gz/shards.list \
    shards-zst/shards.list parquet/data.list raw.list kaldi
same_as_single samples "$SAMPLES" 2 shards/data.list shards-zst/data.list raw.list kaldi
[[ $(tail -n +3 "$WORK/fixtures.tsv" | wc -l) == 360 ]] || fail "fixtures: 360 rows"

# 1b. standard output and .zst output come from rank 0 alone, the same bytes
cd "$FIX/corpus_a" || exit 1
mpi 3 "$BIN" measure -q shards/shards.list || fail "stdout run"
"$BIN" measure -q shards/shards.list | cmp -s - "$WORK/out" || fail "stdout differs from one process"
mpi 3 "$BIN" measure -q -o "$WORK/m.tsv.zst" shards/shards.list kaldi || fail ".zst run"
"$BIN" measure -q -o "$WORK/s.tsv.zst" shards/shards.list kaldi
cmp -s "$WORK/m.tsv.zst" "$WORK/s.tsv.zst" || fail ".tsv.zst differs from one process"

# 1c. the embedding flags are set on rank 0's merged table as on one process's
EMB=(--utt-emb kaldi/utt2embedding.pt --spk-emb kaldi/spk2embedding.pt)
mpi 2 "$BIN" measure -q "${EMB[@]}" -o "$WORK/emb-2.tsv" kaldi raw.list || fail "--utt-emb run"
"$BIN" measure -q "${EMB[@]}" -o "$WORK/emb.tsv" kaldi raw.list
cmp -s "$WORK/emb.tsv" "$WORK/emb-2.tsv" || fail "--utt-emb/--spk-emb: tables differ"
grep -q 'utt_emb,spk_emb' "$WORK/emb.tsv" || fail "--utt-emb set no flag"

# Bad shards. LPT deals the largest unit to rank 0 and the next to rank 1, so in
# "big good shard, then a small bad one" the bad one is rank 1's for any N >= 2.
head -c 700000 shards/shards_000000002.tar >"$WORK/cut.tar"   # truncated mid-member
head -c 3000000 /dev/urandom >"$WORK/noise.tar"                 # no shard at all
printf '%s\n' "$PWD/shards/shards_000000001.tar" "$WORK/cut.tar" >"$WORK/rank1.list"
printf '%s\n' "$WORK/cut.tar" "$WORK/noise.tar" "$PWD/shards/shards_000000000.tar" \
    "$WORK/missing.tar" "$PWD/shards/shards_000000003.tar" >"$WORK/bad.list"
"$BIN" measure -q -o "$WORK/x.tsv" "$WORK/rank1.list" 2>"$WORK/err1"
[[ $? == 2 ]] && grep -q 'cut.tar' "$WORK/err1" || fail "one process: cut.tar must fail: $(cat "$WORK/err1")"
"$BIN" measure -q -o "$WORK/x.tsv" "$WORK/bad.list" 2>"$WORK/err-bad"

# 2. a bad shard on rank 1: rank 0 prints the one-process line, mpirun exits 2
for np in 2 3 4; do
    LEAKCHECK=$((np == 3)) mpi "$np" "$BIN" measure -q -o "$WORK/x.tsv" "$WORK/rank1.list"
    rc=$?
    [[ $rc == 2 ]] || fail "bad shard on rank 1, -np $np: exit $rc, expected 2"
    es_lines | cmp -s - "$WORK/err1" || fail "-np $np: stderr differs: $(es_lines)"
    # the first bad shard in list order (cut.tar, on rank 1) wins over the bad
    # shard rank 0 measured itself (noise.tar, the largest)
    mpi "$np" "$BIN" measure -q -j 1 -o "$WORK/x.tsv" "$WORK/bad.list"
    rc=$?
    [[ $rc == 2 ]] || fail "bad.list, -np $np: exit $rc"
    es_lines | cmp -s - "$WORK/err-bad" || fail "bad.list -np $np: $(es_lines) vs $(cat "$WORK/err-bad")"
done
[[ -e $WORK/x.tsv ]] && fail "a failed run wrote its output"

# 3. every process exits 2, not just the one mpirun reports (OpenMPI 4: keep
#    mpirun from killing the others after the first non-zero exit)
mkdir "$WORK/rcs"
RC_DIR=$WORK/rcs OMPI_MCA_orte_abort_on_non_zero_status=0 \
    mpi 4 -x RC_DIR -x OMPI_MCA_orte_abort_on_non_zero_status "$WORK/rc.sh" \
    "$BIN" measure -q -o "$WORK/x.tsv" "$WORK/rank1.list"
for r in 0 1 2 3; do
    [[ $(cat "$WORK/rcs/rc.$r" 2>/dev/null) == 2 ]] || fail "rank $r: exit '$(cat "$WORK/rcs/rc.$r" 2>/dev/null)', expected 2"
done

# 4. --on-error skip: exit 0, the same table and the same skip lines
"$BIN" measure -q --on-error skip -o "$WORK/skip.tsv" "$WORK/bad.list" 2>"$WORK/err-skip" \
    || fail "one process skip run"
grep -q 'left out 3 problem' "$WORK/err-skip" || fail "skip summary: $(cat "$WORK/err-skip")"
for np in 2 4; do
    LEAKCHECK=$((np == 4)) mpi "$np" "$BIN" measure -q --on-error skip -o "$WORK/skip-$np.tsv" "$WORK/bad.list" \
        || fail "skip -np $np: exit $?"
    cmp -s "$WORK/skip.tsv" "$WORK/skip-$np.tsv" || fail "skip -np $np: table differs"
    cmp -s "$WORK/err" "$WORK/err-skip" || fail "skip -np $np: skip lines differ: $(cat "$WORK/err")"
done

# 5. an input no rank can read: one line, exit 2, no hang
mpi 3 "$BIN" measure -q "$WORK/nonexistent.list"
rc=$?
[[ $rc == 2 && $(es_lines | wc -l) == 1 ]] && es_lines | grep -q nonexistent.list \
    || fail "missing list: exit $rc, $(cat "$WORK/err")"

# 6. without a launcher MPI is never initialised: a setting that breaks MPI_Init
#    (no such transport) changes nothing
OMPI_MCA_pml=no_such_pml "$BIN" measure -q -o "$WORK/plain.tsv" shards/shards.list \
    || fail "plain run initialised MPI?"
cmp -s "$WORK/plain.tsv" <("$BIN" measure -q shards/shards.list) || fail "plain run output"

if ((failures)); then
    echo "$failures failure(s)"
    exit 1
fi
echo "all MPI measure CLI tests passed"
