#!/usr/bin/env bash
# CLI tests for `equishard plan --mode reshard` on CosyVoice parquet input. The
# new files are read by hyparquet, an independent reader
# (tests/reshard_parquet_check.mjs: every column of every row equal to its
# source, schema, one row group, codec, the utt2parquet/spk2parquet JSON as
# make_parquet_list.py writes it), and measured again by equishard.
# Sources: corpus A's arrow-rs files and the nine third-party-written files of
# tests/data/parquet (arrow-rs variants, hyparquet-writer, parquetjs: nulls,
# NaN, null list elements, dictionary/delta encodings, v2 pages, row groups,
# legacy 2-level lists). hyparquet comes from npm (tools/dev.sh test installs
# it into build-npm/); without it those checks are skipped and the test reports
# SKIP after running the rest.
set -u
BIN=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export PQ_NODE_MODULES=${PQ_NODE_MODULES:-$ES_SOURCE_ROOT/build-npm/node_modules}
CHECK="$ES_SOURCE_ROOT/tests/reshard_parquet_check.mjs"
have_hyparquet=0
command -v node >/dev/null && [[ -d $PQ_NODE_MODULES/hyparquet ]] && have_hyparquet=1
hyparquet() { # check args...
    ((have_hyparquet)) || return 0
    node "$CHECK" "$@" >"$WORK/check" 2>&1 || fail "hyparquet: $(cat "$WORK/check")"
}
# keep every row, whatever its lengths (the test files hold null and empty texts
# and speech tokens, which CosyVoice's filter, and so ours by default, requires)
OPEN=(--min-length 0 --token-min-length 0 --token-max-length 100000 --min-output-input-ratio 0
      --no-require-speech-token)

cd "$ES_FIXTURES/corpus_a" || exit 1

# 1. corpus A, 2 ranks x 2 workers, every codec: hyparquet reads back the sources'
#    rows; equishard measures the new files to the same rows (less shard and pos)
expect_exit 0 "$BIN" measure -q -o "$WORK/src.tsv" parquet/data.list
for c in snappy zstd gzip none; do
    codec=$(tr a-z A-Z <<<"$c"); [[ $c == none ]] && codec=UNCOMPRESSED
    expect_exit 0 "$BIN" plan -q -k 2 -w 2 --mode reshard --compress "$c" "${OPEN[@]}" \
        -o "$WORK/r-$c" parquet/data.list
    hyparquet --codec "$codec" parquet/data.list "$WORK/r-$c"
    printf "$WORK/r-$c/parquet_%09d.tar\n" 0 1 2 3 | cmp -s - "$WORK/r-$c/data.list" || fail "$c: data.list"
    printf "$WORK/r-$c/utt2parquet_%09d.json\n" 0 1 2 3 | cmp -s - "$WORK/r-$c/utt2data.list" || fail "$c: utt2data.list"
    printf "$WORK/r-$c/spk2parquet_%09d.json\n" 0 1 2 3 | cmp -s - "$WORK/r-$c/spk2data.list" || fail "$c: spk2data.list"
    expect_exit 0 "$BIN" measure -q -o "$WORK/new-$c.tsv" "$WORK/r-$c/data.list"
    python3 - "$WORK/src.tsv" "$WORK/new-$c.tsv" <<'PY' || fail "$c: measured rows differ"
import sys
def rows(p):
    lines = [l.split("\t") for l in open(p).read().splitlines() if not l.startswith("#")]
    head, body = lines[0], lines[1:]
    keep = [i for i, h in enumerate(head) if h not in ("shard", "pos", "shard_size", "shard_mtime")]
    return {r[0]: [r[i] for i in keep] for r in body}
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert len(a) == 60 and a == b, (len(a), len(b))
PY
done
# the default codec is snappy, pyarrow's (and so make_parquet_list.py's)
expect_exit 0 "$BIN" plan -q -k 2 -w 2 --mode reshard "${OPEN[@]}" -o "$WORK/r-default" parquet/data.list
cmp -s "$WORK/r-default/parquet_000000002.tar" "$WORK/r-snappy/parquet_000000002.tar" || fail "default codec is not snappy"
grep -q '"format": "parquet"' "$WORK/r-default/plan.json" || fail "plan.json format"
# same inputs, same bytes
expect_exit 0 "$BIN" plan -q -k 2 -w 2 --mode reshard "${OPEN[@]}" -o "$WORK/r-default" parquet/data.list
for i in 0 1 2 3; do
    cmp -s "$WORK/r-default/parquet_00000000$i.tar" "$WORK/r-snappy/parquet_00000000$i.tar" || fail "repeat run differs"
done

# 2. the default filter: dropped rows are listed in filtered.tsv and not copied
expect_exit 0 "$BIN" plan -q -k 1 -w 2 --mode reshard -o "$WORK/r-filter" parquet/data.list
[[ $(tail -n +2 "$WORK/r-filter/filtered.tsv" | wc -l) -gt 0 ]] || fail "default filter dropped nothing"
hyparquet parquet/data.list "$WORK/r-filter"

# 3. files other writers wrote: nulls, NaN, null list elements, encodings, row groups
for f in arrow_gzip_dict arrow_snappy_rowgroups_pages arrow_snappy_v2_delta arrow_snappy_v2_nodict \
         arrow_uncompressed_plain arrow_zstd_v1_delta arrow_zstd_v2_dict hyparquet_v2 parquetjs_legacy_lists; do
    echo "$ES_TESTDATA/parquet/$f.parquet" >"$WORK/$f.list"
    expect_exit 0 "$BIN" plan -q -k 1 -w 2 --mode reshard --compress zstd "${OPEN[@]}" -o "$WORK/t-$f" "$WORK/$f.list"
    [[ -e $WORK/t-$f/filtered.tsv ]] && fail "$f: rows were filtered"
    hyparquet --codec ZSTD "$WORK/$f.list" "$WORK/t-$f"
done

# 4. sources that cannot be one output: other columns, or tar beside parquet
printf '%s\n' "$ES_TESTDATA/parquet/hyparquet_v2.parquet" "$ES_TESTDATA/parquet/parquetjs_legacy_lists.parquet" >"$WORK/mixed.list"
expect_exit 2 "$BIN" plan -q -k 1 --mode reshard "${OPEN[@]}" -o "$WORK/rx" "$WORK/mixed.list"
grep -q "its columns differ from" "$WORK/err" || fail "schema mismatch error: $(cat "$WORK/err")"
printf '%s\n' parquet/parquet_000000000.tar shards/shards_000000000.tar >"$WORK/tar-pq.list"
expect_exit 2 "$BIN" plan -q -k 1 --mode reshard "${OPEN[@]}" -o "$WORK/rx" "$WORK/tar-pq.list"
grep -q "must all be tar or all parquet" "$WORK/err" || fail "tar + parquet error: $(cat "$WORK/err")"
# a source replaced after it was measured
mkdir -p "$WORK/moved/parquet"
cp parquet/parquet_00000000[01].tar "$WORK/moved/parquet/"
printf 'parquet/parquet_000000000.tar\nparquet/parquet_000000001.tar\n' >"$WORK/moved/data.list"
(cd "$WORK/moved" && "$BIN" measure -q -o costs.tsv data.list) || fail "measure moved"
cp "$WORK/moved/parquet/parquet_000000001.tar" "$WORK/moved/parquet/parquet_000000000.tar"
(cd "$WORK/moved" && "$BIN" plan -q -k 1 --mode reshard "${OPEN[@]}" -o out costs.tsv) >/dev/null 2>"$WORK/err" \
    && fail "a changed source was resharded"
grep -q "changed since it was measured" "$WORK/err" || fail "changed source error: $(cat "$WORK/err")"
[[ -e $WORK/rx || -e $WORK/moved/out ]] && fail "a failed reshard left OUTDIR"

if ((failures)); then
    echo "$failures failure(s)"
    exit 1
fi
if ((!have_hyparquet)); then
    echo "SKIP: the hyparquet checks (no node, or no hyparquet in $PQ_NODE_MODULES; tools/dev.sh test installs it); the rest passed"
    exit 77
fi
echo "all CLI parquet reshard tests passed"
