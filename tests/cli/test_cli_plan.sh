#!/usr/bin/env bash
# CLI tests for `equishard plan`: plan.json's contract keys (checked with
# Python's json module), the rank/worker lists against the loader's slicing,
# exit codes, determinism across -j and repeat runs, atomic OUTDIR.
set -u
BIN=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cd "$ES_FIXTURES/corpus_a" || exit 1

# 1. shard mode over 4 shards, 2 ranks x 2 workers: every shard exactly once; the
#    rank list sliced [w::W] (CosyVoice/WeNet worker split) equals worker w's list
expect_exit 0 "$BIN" plan -q -k 2 -w 2 -o "$WORK/p" shards/shards.list
python3 - "$WORK/p" <<'PY' || fail "shard-mode outputs"
import json, sys, os
d = sys.argv[1]
plan = json.load(open(os.path.join(d, "plan.json")))
m = plan["metrics"]
for key in ("imbalance", "lower_bound_gap", "batch_spread", "step_straggler", "retention", "kept", "filtered"):
    assert key in m, key
assert m["kept"] + sum(m["filtered"].values()) == 60, m
ranks = plan["ranks"]
assert [r["rank"] for r in ranks] == [0, 1]
for r in ranks:
    for key in ("cost", "utterances", "frames", "batches", "workers"):
        assert key in r, key
    assert len(r["workers"]) == 2
    assert abs(sum(w["cost"] for w in r["workers"]) - r["cost"]) < 1e-6
seen = []
for k in range(2):
    lines = open(os.path.join(d, "rank-%05d.list" % k)).read().split()
    for w in range(2):
        mine = open(os.path.join(d, "rank-%05d.worker-%d.list" % (k, w))).read().split()
        assert lines[w::2] == mine, (k, w, lines, mine)
    seen += lines
assert sorted(seen) == ["shards/shards_%09d.tar" % i for i in range(4)], seen
assert plan["inputs"][0]["path"] == "shards/shards.list" and len(plan["inputs"][0]["xxh3"]) == 16
assert plan["parameters"]["world_size"] == 2 and plan["parameters"]["mode"] == "shard"
PY

# 2. batch mode: equal batch counts, every kept key exactly once (pad repeats aside)
expect_exit 0 "$BIN" plan -q -k 3 -w 2 --mode batch --max-frames-in-batch 1200 -o "$WORK/b" raw.list
python3 - "$WORK/b" <<'PY' || fail "batch-mode outputs"
import json, sys, os
d = sys.argv[1]
plan = json.load(open(os.path.join(d, "plan.json")))
m = plan["metrics"]
assert m["batch_spread"] == 0 and m["retention"] == 1.0, m
keys, counts = [], []
for k in range(3):
    batches = [json.loads(l) for l in open(os.path.join(d, "rank-%05d.batches.jsonl" % k))]
    counts.append(len(batches))
    steps = [b["step"] for b in batches]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    for b in batches:
        assert len(b["keys"]) == len(b["items"])
        assert b["worker"] == b["step"] % 2
        keys += b["keys"]
assert len(set(counts)) == 1, counts
assert len(set(keys)) == m["kept"], (len(set(keys)), m["kept"])
assert len(keys) == m["kept"] + m["remainder"]["utterances"]
PY

# 3. same inputs: byte-identical OUTDIR for -j 1 / -j 2 and a repeat run
expect_exit 0 "$BIN" plan -q -k 2 -w 2 --threads 1 -o "$WORK/j1" shards/shards.list
expect_exit 0 "$BIN" plan -q -k 2 -w 2 --threads 2 -o "$WORK/j2" shards/shards.list
diff -r "$WORK/j1" "$WORK/j2" >/dev/null || fail "-j 1 and -j 2 plans differ"
diff -r "$WORK/j1" "$WORK/p" >/dev/null || fail "repeat run differs"

# 4. a cost table input gives the same plan as the list it came from
expect_exit 0 "$BIN" measure -q -o "$WORK/costs.tsv.zst" shards/shards.list
expect_exit 0 "$BIN" plan -q -k 2 -w 2 -o "$WORK/t" "$WORK/costs.tsv.zst"
diff "$WORK/t/rank-00000.list" "$WORK/p/rank-00000.list" >/dev/null || fail "table input plans differently"
# ... also when the zstd table's first block is longer than the 4 KiB first read
# (the sniffer fed only those bytes and decompressed nothing: "Unrecognized archive
# format"). 200 rows of random keys compress to one block of well over 4 KiB.
python3 - "$WORK/big.tsv" <<'PY'
import random, sys
rng = random.Random(1)
with open(sys.argv[1], "w") as f:
    f.write("#equishard-costs v1\nkey\tshard\tpos\tsample_rate\tchannels\tsamples\taudio_bytes\ttext_len\tspeech_tokens\tspk\tflags\thash\n")
    for i in range(200):
        key = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(40))
        f.write(f"{key}\ts{i % 7}.tar\t{i}\t16000\t1\t{rng.randrange(20000, 90000)}\t1000\t12\t0\tspk\taudio,text\t-\n")
PY
zstd -q -f "$WORK/big.tsv" -o "$WORK/big.tsv.zst"
[[ $(stat -c %s "$WORK/big.tsv.zst") -gt 4096 ]] || fail "big.tsv.zst should exceed 4 KiB"
expect_exit 0 "$BIN" plan -q -k 2 -o "$WORK/tz" "$WORK/big.tsv.zst"
expect_exit 0 "$BIN" plan -q -k 2 -o "$WORK/tp" "$WORK/big.tsv"
diff -r "$WORK/tz" "$WORK/tp" | grep -v '^[<>] *"\(path\|xxh3\)"' | grep -q '^[<>]' && fail "zstd table plans differently"
# plan.json's input digest of a table is taken while the table is read
# (core/file_digest.h): it must be xxhsum's XXH3 of the file's bytes, plain and zstd
for d in tz:big.tsv.zst tp:big.tsv; do
    want=$(xxhsum -H3 "$WORK/${d#*:}" | sed 's/.* = //')
    got=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["inputs"][0]["xxh3"])' \
          "$WORK/${d%%:*}/plan.json")
    [[ -n $want && $got == "$want" ]] || fail "plan.json xxh3 of ${d#*:}: $got, xxhsum says $want"
done

# 5. exit codes: a bound the plan cannot meet is 1; bad usage/input is 2
expect_exit 1 "$BIN" plan -q -k 3 --max-imbalance 0 -o "$WORK/x" shards/shards.list
expect_exit 2 "$BIN" plan -q -o "$WORK/x" shards/shards.list
expect_exit 2 "$BIN" plan -q -k 2 shards/shards.list
expect_exit 2 "$BIN" plan -q -k 2 --mode nope -o "$WORK/x" shards/shards.list
expect_exit 2 "$BIN" plan -q -k 2 -o "$WORK/x" missing.list
[[ $(wc -l <"$WORK/err") == 1 ]] || fail "error is not one line"
expect_exit 2 "$BIN" plan -q -k 2 --min-length 1e9 -o "$WORK/x" shards/shards.list
grep -q "no utterances" "$WORK/err" || fail "all-filtered error: $(cat "$WORK/err")"

# 5b. --on-error skip while measuring a list: the plan is made, the problem listed
printf 'shards/shards_000000000.tar\nshards/missing.tar\nshards/shards_000000001.tar\n' >"$WORK/bad.list"
expect_exit 0 "$BIN" plan -q -k 2 --on-error skip -o "$WORK/s" "$WORK/bad.list"
grep -q "left out 1 problem" "$WORK/err" && grep -q "missing.tar" "$WORK/err" || fail "plan skip summary: $(cat "$WORK/err")"

# 6. a failed run leaves the previous OUTDIR as it was, and no temporary folder
cp -r "$WORK/p" "$WORK/keep"
expect_exit 2 "$BIN" plan -q -k 2 -o "$WORK/p" missing.list
diff -r "$WORK/p" "$WORK/keep" >/dev/null || fail "failed run changed OUTDIR"
ls "$WORK" | grep -q '\.tmp\.' && fail "temporary folder left behind"
mkdir "$WORK/data" && touch "$WORK/data/precious"
expect_exit 2 "$BIN" plan -q -k 2 -o "$WORK/data" shards/shards.list
[[ -f $WORK/data/precious ]] || fail "a foreign folder was replaced"

# 7. report: the table repeats plan.json's numbers; --svg draws one bar per rank
expect_exit 0 "$BIN" report "$WORK/p" --svg "$WORK/p.svg"
kept=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['metrics']['kept'])" "$WORK/p/plan.json")
grep -q "^kept $kept " "$WORK/out" || fail "report does not show kept $kept: $(cat "$WORK/out")"
[[ $(grep -c '<rect class="bar"' "$WORK/p.svg") == 2 ]] || fail "svg has one bar per rank"
python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])" "$WORK/p.svg" || fail "svg is not well-formed XML"
expect_exit 2 "$BIN" report "$WORK/nothing-here"

# 8. reshard: new tar shards checked member by member with Python's tarfile
#    (tests/reshard_check.py; .zst via the zstd tool), a data.list of
#    OUTDIR/shards_*.tar lines, plan.json's keys, byte-identical repeat runs
CHECK="$ES_SOURCE_ROOT/tests/reshard_check.py"
for c in none gzip zstd; do
    ext=$([[ $c == none ]] && echo .tar || { [[ $c == gzip ]] && echo .tar.gz || echo .tar.zst; })
    expect_exit 0 "$BIN" plan -q -k 2 -w 2 --mode reshard --compress "$c" --min-length 0 \
        -o "$WORK/r-$c" shards/shards.list
    python3 "$CHECK" shards/shards.list "$WORK/r-$c/data.list" >/dev/null || fail "reshard $c: members differ"
    printf "$WORK/r-$c/shards_%09d$ext\n" 0 1 2 3 | cmp -s - "$WORK/r-$c/data.list" || fail "reshard $c: data.list"
done
python3 - "$WORK/r-zstd" <<'PY' || fail "reshard plan.json"
import json, sys, os
plan = json.load(open(os.path.join(sys.argv[1], "plan.json")))
m = plan["metrics"]
for key in ("imbalance", "lower_bound_gap", "batch_spread", "step_straggler", "retention", "kept", "filtered"):
    assert key in m, key
assert m["kept"] == 60 and plan["parameters"]["mode"] == "reshard", m
assert plan["parameters"]["compress"] == "zstd"
r = m["reshard"]
assert r["shards"] == 4 and r["shards_per_worker"] == 1 and r["permutations"] == 20, r
assert r["permutation_max_deviation"] <= 0.005 and r["shard_cost"]["max_deviation"] <= 0.005, r
assert [x["rank"] for x in plan["ranks"]] == [0, 1] and len(plan["ranks"][0]["workers"]) == 2
assert sum(x["utterances"] for x in plan["ranks"]) == 60
PY
cp -r "$WORK/r-none" "$WORK/r-keep"
expect_exit 0 "$BIN" plan -q -k 2 -w 2 --mode reshard --min-length 0 -o "$WORK/r-none" shards/shards.list
diff -r "$WORK/r-none" "$WORK/r-keep" >/dev/null || fail "reshard repeat run differs"
# a relative OUTDIR is written into data.list as given; --root resolves the sources
(cd "$WORK" && "$BIN" plan -q -k 2 --mode reshard --shards-per-worker 3 --root "$ES_FIXTURES/corpus_a" \
    -o rel "$ES_FIXTURES/corpus_a/shards-gz/shards.list" >/dev/null) || fail "reshard with --root"
[[ $(head -1 "$WORK/rel/data.list") == rel/shards_000000000.tar ]] || fail "relative data.list"
(cd "$WORK" && python3 "$CHECK" --root "$ES_FIXTURES/corpus_a" --keys <(cut -f1 "$ES_FIXTURES/corpus_a/truth.tsv" | \
    grep -vxFf <(cut -f1 rel/filtered.tsv)) "$ES_FIXTURES/corpus_a/shards/shards.list" rel/data.list >/dev/null) \
    || fail "reshard with the default filter: kept utterances differ"
[[ $(wc -l <"$WORK/rel/data.list") == 6 ]] || fail "--shards-per-worker 3 with K=2: 6 shards"
# a cost table of the shards works as well as the list
expect_exit 0 "$BIN" plan -q -k 2 -w 2 --mode reshard --min-length 0 -o "$WORK/r-t" "$WORK/costs.tsv.zst"
cmp -s "$WORK/r-t/shards_000000000.tar" "$WORK/r-none/shards_000000000.tar" || fail "reshard from the table differs"
# only shard input; bad option values
expect_exit 2 "$BIN" plan -q -k 2 --mode reshard -o "$WORK/rx" raw.list
grep -q "reshard rewrites tar shards and parquet files" "$WORK/err" || fail "raw-list reshard error: $(cat "$WORK/err")"
expect_exit 2 "$BIN" plan -q -k 2 --mode reshard --compress snappy -o "$WORK/rx" shards/shards.list
grep -q "snappy is for parquet shards" "$WORK/err" || fail "tar + snappy error: $(cat "$WORK/err")"
expect_exit 2 "$BIN" plan -q -k 2 --mode reshard --compress lz4 -o "$WORK/rx" shards/shards.list
expect_exit 2 "$BIN" plan -q -k 2 --mode reshard --shards-per-worker 0 -o "$WORK/rx" shards/shards.list
expect_exit 2 "$BIN" plan -q -k 8 -w 8 --mode reshard -o "$WORK/rx" shards/shards.list
grep -q "cannot fill 64 shards" "$WORK/err" || fail "too many shards: $(cat "$WORK/err")"
[[ -e $WORK/rx ]] && fail "a failed reshard left OUTDIR"

if ((failures)); then
    echo "$failures failure(s)"
    exit 1
fi
echo "all CLI plan tests passed"
