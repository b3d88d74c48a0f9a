#!/usr/bin/env bash
# CLI tests for `equishard validate` (and measure's --utt-emb/--spk-emb): exit
# codes 0/1/2, the terminal table, --json content (read back with Python's json
# module), --fail-on. Planted defects and their expected findings come from
# tests/validate_cases.py (Python's pickle/zipfile), never from equishard.
set -u
BIN=$1
FIX=$ES_FIXTURES
CASES="python3 $ES_SOURCE_ROOT/tests/validate_cases.py"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
json() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); $2" "$1"; }

cd "$FIX/corpus_a" || exit 1
K=kaldi

# 1. the clean corpus: exit 0, OK, every count 0 in the JSON
expect_exit 0 "$BIN" validate -q --utt-emb $K/utt2embedding.pt --spk-emb $K/spk2embedding.pt \
    --json "$WORK/clean.json" $K
grep -q '^OK$' "$WORK/out" || fail "clean run does not say OK: $(cat "$WORK/out")"
json "$WORK/clean.json" 'assert r["report"] == "validate" and all(f["check"] == "filtered" for f in r["findings"]) and not any(v for k, v in r["counts"].items() if k != "filtered"), r
s = r["summary"]; assert (s["utt_embeddings"], s["spk_embeddings"], s["utterances"], s["speakers"], s["dim"]) == (60, 6, 60, 6, 192), s
assert s["device"] == "cpu" and r["settings"]["min_cosine"] == 0.5' || fail "clean JSON"

# 2. planted defects: exit 1; the JSON lists exactly expected.tsv
$CASES plant "$FIX/corpus_a/kaldi" "$WORK/plant" || fail "plant script"
P=$WORK/plant
expect_exit 1 "$BIN" validate -q --utt-emb $P/utt2embedding.pt --spk-emb $P/spk2embedding.pt \
    --utt2spk $P/utt2spk --json "$WORK/plant.json" $K
grep -q '^FAILED' "$WORK/out" || fail "planted run does not say FAILED"
grep -q 'nan .*A01_0001' "$WORK/out" || fail "table does not name the NaN key: $(cat "$WORK/out")"
json "$WORK/plant.json" '
got = sorted("\t".join([f["check"], f["kind"], f["key"]] + ([f["value"]] if f["check"].startswith("duplicate") else [])) for f in r["findings"] if f["check"] != "filtered")
want = [l.rstrip("\n") for l in open(sys.argv[1].replace("plant.json", "plant/expected.tsv"))]
assert got == want, (got, want)
for f in r["findings"]:
    assert r["counts"][f["check"]] >= 1
    if f["check"] == "nan": assert f["value"] == 1 and isinstance(f["row"], int)
    if f["check"] == "wrong_dim": assert f["value"] == 191
    if f["check"] == "far_from_centroid": assert 0 < f["value"] < 0.5
    if f["check"].startswith("missing"): assert f["value"] is None and "row" not in f
assert sum(r["counts"].values()) == len(r["findings"]) == 10 + r["counts"]["filtered"]' || fail "planted JSON"

# 3. --fail-on: only the listed checks decide the exit code
expect_exit 0 "$BIN" validate -q --utt-emb $P/utt2embedding.pt --utt2spk $P/utt2spk --fail-on none $K
expect_exit 0 "$BIN" validate -q --utt-emb $P/utt2embedding.pt --utt2spk $P/utt2spk \
    --fail-on duplicate_audio,spk_mean_mismatch $K
expect_exit 1 "$BIN" validate -q --utt-emb $P/utt2embedding.pt --utt2spk $P/utt2spk --fail-on nan $K
expect_exit 1 "$BIN" validate -q --utt-emb $P/utt2embedding.pt --utt2spk $P/utt2spk --fail-on all $K
expect_exit 2 "$BIN" validate -q --utt-emb $P/utt2embedding.pt --fail-on nan,frobnicate $K
grep -q "unknown check 'frobnicate'" "$WORK/err" || fail "--fail-on error message"

# 4. thresholds move the findings (README: cosines 0.878..0.933)
expect_exit 1 "$BIN" validate -q --utt-emb $K/utt2embedding.pt --utt2spk $K/utt2spk --min-cosine 0.9335 \
    --json "$WORK/cos.json"
json "$WORK/cos.json" 'assert r["counts"]["far_from_centroid"] == 60' || fail "--min-cosine 0.9335"
expect_exit 0 "$BIN" validate -q --utt-emb $K/utt2embedding.pt --utt2spk $K/utt2spk --min-cosine 0.8775
# an empty utt2spk: no utterance expected, no speaker (and no undefined behaviour under UBSan)
: > "$WORK/empty.utt2spk"
expect_exit 0 "$BIN" validate -q --utt-emb $K/utt2embedding.pt --utt2spk "$WORK/empty.utt2spk" \
    --json "$WORK/empty.json"
json "$WORK/empty.json" 'assert r["summary"]["utterances"] == 0 and r["summary"]["speakers"] == 0' \
    || fail "empty utt2spk"
expect_exit 1 "$BIN" validate -q --utt-emb $K/utt2embedding.pt --dim 256
grep -q 'wrong_dim *60' "$WORK/out" || fail "--dim 256: $(cat "$WORK/out")"

# 5. sources by content: parquet shards (CosyVoice data.list), a .npy with key list
expect_exit 0 "$BIN" validate -q --utt-emb parquet/data.list --spk-emb parquet/data.list
grep -q 'validated 60 utterance and 6 speaker' "$WORK/out" || fail "parquet: $(cat "$WORK/out")"
NPY=$FIX/real/speechbrain__speechbrain/tests/samples/TTS/speakers/LJ050-0131.npy
expect_exit 0 "$BIN" validate -q --spk-emb "$NPY"
expect_exit 1 "$BIN" validate -q --spk-emb "$NPY" --dim 80

# 6. the list's utterances: missing embeddings, duplicate audio, unreadable shards
mkdir -p "$WORK/k2" && cp $K/text $K/utt2spk "$WORK/k2/"
awk -v d="$PWD" '{print $1, d "/" $2}' $K/wav.scp >"$WORK/k2/wav.scp"
echo "A01_9999 $PWD/wav/A01/A01_0001.wav" >>"$WORK/k2/wav.scp"
echo "A01_9999 A01" >>"$WORK/k2/utt2spk"
expect_exit 1 "$BIN" validate -q --utt-emb $K/utt2embedding.pt --json "$WORK/list.json" "$WORK/k2"
json "$WORK/list.json" 'c = r["counts"]; assert c["missing_utt_emb"] == 1 and c["duplicate_audio"] == 1, c
d = [f for f in r["findings"] if f["check"] == "duplicate_audio"][0]; assert (d["key"], d["value"]) == ("A01_9999", "A01_0001"), d' \
    || fail "list JSON"
expect_exit 1 "$BIN" validate -q --utt-emb $K/utt2embedding.pt --fail-on missing_utt_emb "$WORK/k2"
expect_exit 0 "$BIN" validate -q --utt-emb $K/utt2embedding.pt --fail-on duplicate_audio --no-hash "$WORK/k2"
printf 'shards/shards_000000000.tar\nshards/missing.tar\n' >"$WORK/bad.list"
expect_exit 1 "$BIN" validate -q --json "$WORK/bad.json" "$WORK/bad.list"
json "$WORK/bad.json" 'u = [f for f in r["findings"] if f["check"] == "unreadable"]; assert len(u) == 1 and "missing.tar" in u[0]["key"] and u[0]["kind"] == "data", u' \
    || fail "unreadable finding"
"$BIN" measure -q --hash -o "$WORK/costs.tsv" "$WORK/k2" || fail "measure --hash"
expect_exit 1 "$BIN" validate -q --utt-emb $K/utt2embedding.pt --costs "$WORK/costs.tsv" --fail-on duplicate_audio
expect_exit 1 "$BIN" validate -q --utt-emb $K/utt2embedding.pt --fail-on duplicate_audio "$WORK/costs.tsv"

# 7. unusable input: exit 2, one line naming the file
expect_exit 2 "$BIN" validate -q --utt-emb "$WORK/nonexistent.pt"
[[ $(wc -l <"$WORK/err") == 1 ]] && grep -q nonexistent.pt "$WORK/err" || fail "missing source: $(cat "$WORK/err")"
$CASES cases "$WORK/cases" || fail "cases script"
expect_exit 2 "$BIN" validate -q --utt-emb "$WORK/cases/evil_reduce.pkl"
grep -q 'GLOBAL posix.system refused' "$WORK/err" || fail "evil pickle: $(cat "$WORK/err")"
head -c 5000 $K/utt2embedding.pt >"$WORK/cut.pt"
expect_exit 2 "$BIN" validate -q --utt-emb "$WORK/cut.pt"
grep -q 'cut.pt' "$WORK/err" || fail "truncated .pt message"
expect_exit 2 "$BIN" validate -q --utt-emb "$WORK/cases/v1_f4.npy"
grep -q 'needs a key list' "$WORK/err" || fail ".npy without keys"
expect_exit 0 "$BIN" validate -q --utt-emb "$WORK/cases/v1_f4.npy" --utt-keys "$WORK/cases/keys3.txt" --dim 4 --norm-ratio 0
grep -q 'validated 3 utterance' "$WORK/out" || fail ".npy with keys: $(cat "$WORK/out")"
expect_exit 2 "$BIN" validate
expect_exit 2 "$BIN" validate --device gpu --utt-emb $K/utt2embedding.pt
expect_exit 2 "$BIN" validate --min-cosine abc --utt-emb $K/utt2embedding.pt
expect_exit 2 "$BIN" validate --costs "$WORK/costs.tsv" $K
expect_exit 0 "$BIN" validate --help
# --device cuda without a GPU: a clear error; auto falls back to the CPU
if ! "$BIN" validate -q --device cuda --utt-emb $K/utt2embedding.pt >"$WORK/out" 2>"$WORK/err"; then
    grep -q 'no CUDA device' "$WORK/err" || fail "--device cuda message: $(cat "$WORK/err")"
fi

# 8. atomic JSON: a failed run leaves the previous report intact
cp "$WORK/clean.json" "$WORK/keep.json"
expect_exit 2 "$BIN" validate -q --utt-emb "$WORK/nonexistent.pt" --json "$WORK/keep.json"
cmp -s "$WORK/keep.json" "$WORK/clean.json" || fail "failed run touched the old report"
ls "$WORK" | grep -q '\.tmp\.' && fail "temporary file left behind"

# 9. measure --utt-emb/--spk-emb: presence flags
"$BIN" measure -q --utt-emb $P/utt2embedding.pt --spk-emb $P/spk2embedding.pt -o "$WORK/m.tsv" $K \
    || fail "measure with embeddings"
awk -F'\t' 'NR > 2 { u = ($11 ~ /utt_emb/); s = ($11 ~ /spk_emb/)
    if (u != ($1 != "A03_0003") || s != ($10 != "A02")) { print "row " $1 ": " $11; bad = 1 } }
    END { exit bad }' "$WORK/m.tsv" || fail "measure flags"
expect_exit 2 "$BIN" measure -q --utt-emb "$WORK/nonexistent.pt" $K

# 10. data checks with the loader model (data-samples: 24 utterances in 3 uneven shards)
cd "$ES_SOURCE_ROOT/data-samples" || exit 1
expect_exit 0 "$BIN" validate -q --json "$WORK/data.json" shards/data.list
json "$WORK/data.json" 'import csv
truth = list(csv.DictReader(open("truth.tsv"), delimiter="\t"))
want = sorted(t["key"] for t in truth if int(t["num_samples"]) / int(t["sample_rate"]) * 100 < 100)
got = [f for f in r["findings"] if f["check"] == "filtered"]
assert want and sorted(f["key"] for f in got) == want, (got, want)
assert all(f["kind"] == "data" and f["value"] == "too_short" for f in got), got
assert r["summary"]["filtered"]["too_short"] == len(want) == r["counts"]["filtered"], r["summary"]
assert r["counts"]["imbalance"] == 0 and "loader" not in r["summary"]' || fail "filtered keys"
expect_exit 1 "$BIN" validate -q --fail-on filtered shards/data.list
expect_exit 0 "$BIN" validate -q --min-length 0 --fail-on filtered shards/data.list
expect_exit 1 "$BIN" validate -q --world-size 2 --json "$WORK/imb.json" shards/data.list
grep -q 'imbalance .*1 ! epoch 0' "$WORK/out" || fail "imbalance table: $(cat "$WORK/out")"
json "$WORK/imb.json" 'i = [f for f in r["findings"] if f["check"] == "imbalance"]
assert len(i) == 1 and i[0]["key"] == "epoch 0" and i[0]["kind"] == "data", i
v = i[0]["value"]; s = r["summary"]["loader"]
assert v["imbalance"] > 0.05 or v["retention"] < 0.95, v
assert (s["loader"], s["world_size"], s["workers"], s["max_imbalance"]) == ("cosyvoice", 2, 1, 0.05), s
assert (s["imbalance"], s["retention"]) == (v["imbalance"], v["retention"]), s' || fail "imbalance JSON"
expect_exit 0 "$BIN" validate -q --world-size 2 --max-imbalance 1 shards/data.list
expect_exit 0 "$BIN" validate -q --world-size 2 --fail-on none shards/data.list
expect_exit 0 "$BIN" validate -q --world-size 1 --loader wenet --workers 0 shards/data.list
expect_exit 2 "$BIN" validate -q --world-size 2 --loader frobnicate shards/data.list
expect_exit 2 "$BIN" validate -q --world-size 0 shards/data.list
expect_exit 2 "$BIN" validate -q --world-size 2 --utt-emb "$FIX/corpus_a/kaldi/utt2embedding.pt"

echo "$failures failure(s)"
exit $((failures > 0))
