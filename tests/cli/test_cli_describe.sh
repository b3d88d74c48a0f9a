#!/usr/bin/env bash
# equishard describe and equishard.describe(): every number of data-samples'
# description computed here from the files themselves (samples_truth.py:
# tarfile, the RIFF/FLAC headers, the .txt/.spk members), percentiles by
# numpy's default rule written out below (linear interpolation between the
# two nearest ranks); the filter as CosyVoice's processor.filter drops, with a
# recipe's values and flags over it; the CLI's JSON equal to Python's dict.
BIN=$1
. "$(dirname "$0")/lib.sh"
cd "$ES_SOURCE_ROOT/data-samples" || exit 1
export PYTHONPATH=$ES_SOURCE_ROOT/python${PYTHONPATH:+:$PYTHONPATH}
[[ -n $EQUISHARD_LIB ]] || export EQUISHARD_LIB=$ES_BUILD_ROOT/src/libequishard.so
# an ASan library: its runtime preloaded into the (uninstrumented) interpreter,
# resolved past pyenv's shim script, as tests/python/run.sh does
PY=$(python3 -c 'import sys; print(sys.executable)')
asan=$(ldd "$EQUISHARD_LIB" | awk '/libasan/ { print $3 }')
py() {
    if [[ -n $asan ]]; then
        LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0 "$PY" "$@"
    else
        "$PY" "$@"
    fi
}

# a CosyVoice recipe whose filter keeps 0.8 s .. 4 s
cat >"$WORK/recipe.yaml" <<'YAML'
filter: !name:cosyvoice.dataset.processor.filter
    min_length: 80
    max_length: 400
batch: !name:cosyvoice.dataset.processor.batch
    batch_type: dynamic
    max_frames_in_batch: 2000
data_pipeline: [!ref <filter>, !ref <batch>]
YAML
expect_exit 0 "$BIN" measure -q -o "$WORK/costs.tsv" shards/data.list

# describe_cli NAME ARGS...: the CLI's --json into $WORK/NAME.json
describe_cli() {
    local name=$1; shift
    expect_exit 0 "$BIN" describe --json "$@"
    mv "$WORK/out" "$WORK/$name.json"
}
describe_cli lists -q shards/data.list
describe_cli table "$WORK/costs.tsv"
[[ -s $WORK/err ]] && fail "describing a table printed on stderr: $(cat "$WORK/err")"
describe_cli recipe --recipe "$WORK/recipe.yaml" "$WORK/costs.tsv"
describe_cli flags --recipe "$WORK/recipe.yaml" --min-length 50 "$WORK/costs.tsv"
describe_cli wenet --loader wenet "$WORK/costs.tsv"
cmp -s "$WORK/lists.json" "$WORK/table.json" || fail "a list and its measured table describe differently"

py - "$WORK" <<'PY' || fail "describe's numbers"
import json, math, os, sys
sys.path.insert(0, os.environ["ES_SOURCE_ROOT"] + "/tests/cli")
from samples_truth import shard_rows
import equishard
work = sys.argv[1]
rows = shard_rows()

def pct(xs):
    """numpy.percentile's default ("linear"): position (n-1)*q/100 between ranks."""
    xs = sorted(xs)
    out = {}
    for name, q in (("min", 0), ("p5", 5), ("p25", 25), ("p50", 50), ("p75", 75),
                    ("p95", 95), ("p99", 99), ("max", 100)):
        pos = (len(xs) - 1) * q / 100
        lo = math.floor(pos)
        hi = min(lo + 1, len(xs) - 1)
        out[name] = xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
    return out

def counts(values):
    return {str(v): values.count(v) for v in sorted(set(values))}

def dropped(loader, min_length, max_length, tok_min=1, tok_max=200, lo=0.0005, hi=1.0):
    """processor.filter's reasons in its order; CosyVoice's token limits need
    token counts (none measured here: not applied); WeNet's count characters."""
    by = dict.fromkeys(["no_audio", "too_short", "too_long", "too_few_tokens",
                        "too_many_tokens", "no_speech_token", "ratio_low", "ratio_high",
                        "bad_text"], 0)
    for r in rows:
        frames = r["samples"] / r["rate"] * 100
        n = len(r["text"])
        why = ("too_short" if frames < min_length else "too_long" if frames > max_length
               else None)
        if why is None and loader == "wenet":
            why = ("too_few_tokens" if n < tok_min else "too_many_tokens" if n > tok_max
                   else "ratio_low" if n / frames < lo else "ratio_high" if n / frames > hi
                   else None)
        if why:
            by[why] += 1
    return by

seconds = [r["samples"] / r["rate"] for r in rows]
spk_secs = {}
for r, s in zip(rows, seconds):
    spk_secs[r["spk"]] = spk_secs.get(r["spk"], 0) + s
base = {
    "utterances": len(rows),
    "seconds": sum(seconds),
    "hours": sum(seconds) / 3600,
    "duration_seconds": pct(seconds),
    "sample_rates": counts([r["rate"] for r in rows]),
    "channels": counts([r["channels"] for r in rows]),
    "text": {"unit": "characters", "utterances": len(rows),
             "percentiles": pct([len(r["text"]) for r in rows])},
    "speakers": {"count": len(spk_secs),
                 "hours_per_speaker": pct([s / 3600 for s in spk_secs.values()])},
    "missing": {"audio": 0, "text": 0, "speaker": 0, "utt_emb": len(rows),
                "spk_emb": len(rows), "speech_tokens": len(rows)},
}

def expected(loader, min_length, max_length):
    by = dropped(loader, min_length, max_length)
    f = {"loader": loader, "kept": len(rows) - sum(by.values()), "filtered": sum(by.values()),
         "filtered_by_reason": by,
         "token_limits_on": "characters" if loader == "wenet" else "tokens",
         "rows_without_token_count": 0 if loader == "wenet" else len(rows)}
    return dict(base, filter=f)

def close(got, want, path="$"):
    """Equal, floats to 1e-12 relative (the sums' order is the files')."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), f"{path}: keys {got} vs {want}"
        for k in want:
            close(got[k], want[k], f"{path}.{k}")
    elif isinstance(want, float):
        assert math.isclose(got, want, rel_tol=1e-12), f"{path}: {got} != {want}"
    else:
        assert got == want and type(got) is type(want), f"{path}: {got!r} != {want!r}"

cases = {"table": ("cosyvoice", 100, 40960), "recipe": ("cosyvoice", 80, 400),
         "flags": ("cosyvoice", 50, 400), "wenet": ("wenet", 0, 40960)}
for name, args in cases.items():
    got = json.load(open(f"{work}/{name}.json"))
    close(got, expected(*args), name)
# the cases differ where they should: something is dropped, for more than one reason
assert expected("cosyvoice", 80, 400)["filter"]["filtered_by_reason"]["too_long"] > 0
assert expected("cosyvoice", 80, 400)["filter"]["filtered_by_reason"]["too_short"] > 0

# Python's dict is the CLI's JSON, for lists, tables, a recipe and settings
costs = f"{work}/costs.tsv"
assert equishard.describe(["shards/data.list"]) == json.load(open(f"{work}/lists.json"))
assert equishard.describe([costs]) == json.load(open(f"{work}/table.json"))
recipe = f"{work}/recipe.yaml"
assert equishard.describe([costs], recipe=recipe) == json.load(open(f"{work}/recipe.json"))
assert equishard.describe([costs], recipe=recipe, min_length=50) == \
    json.load(open(f"{work}/flags.json"))
assert equishard.describe([costs], loader="wenet") == json.load(open(f"{work}/wenet.json"))
with equishard.load([costs]) as t:
    assert equishard.describe(t) == json.load(open(f"{work}/table.json"))
for bad, err in (({"world_size": 2}, TypeError), ({"min_length": "x"}, TypeError),
                 ({"loader": "kaldi"}, ValueError)):
    try:
        equishard.describe([costs], **bad)
    except err:
        pass
    else:
        raise AssertionError(f"describe(**{bad}) was accepted")
PY

# with the recipe's tokenizer (Qwen2's, read in place from ../shared), text
# lengths are token counts: corpus A's from the reference tokenizer's truth
TOKS=$ES_SOURCE_ROOT/../shared/fixtures/tokenizers
if [[ -d $TOKS/qwen2 ]]; then
    (cd "$ES_FIXTURES/corpus_a" && "$BIN" describe -q --json --tokenizer "$TOKS/qwen2" \
        shards/shards.list) >"$WORK/tok.json" || fail "describe --tokenizer: exit $?"
    py - "$WORK/tok.json" "$TOKS/truth.jsonl" "$ES_FIXTURES/corpus_a/shards/shards.list" <<'PY' \
        || fail "describe --tokenizer: $(head -c 600 "$WORK/tok.json")"
import json, math, os, sys, tarfile
got = json.load(open(sys.argv[1]))
n = {}
for line in open(sys.argv[2]):
    o = json.loads(line)
    for src in o.get("src", []):
        if src.startswith("corpus_a/shards/"):
            n[src.split("#")[1].rsplit(".", 1)[0]] = o["n"]
root = os.path.dirname(os.path.dirname(sys.argv[3]))
keys = [m.name.rsplit(".", 1)[0] for p in open(sys.argv[3]).read().split()
        for m in tarfile.open(os.path.join(root, p)) if m.name.endswith(".txt")]
xs = sorted(n[k] for k in keys)
def p(q):
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (pos - lo)
want = {k: p(q) for k, q in (("min", 0), ("p5", 5), ("p25", 25), ("p50", 50), ("p75", 75),
                              ("p95", 95), ("p99", 99), ("max", 100))}
assert got["text"]["unit"] == "tokens" and got["text"]["utterances"] == len(keys), got["text"]
for k, v in want.items():
    assert math.isclose(got["text"]["percentiles"][k], v, rel_tol=1e-12), (k, got["text"], want)
assert got["filter"]["rows_without_token_count"] == 0, got["filter"]
PY
else
    echo "SKIP: describe --tokenizer ($TOKS absent)"
fi

# -o FILE: the same JSON, written atomically; the readable table names the numbers
expect_exit 0 "$BIN" describe -o "$WORK/o.json" "$WORK/costs.tsv"
cmp -s "$WORK/o.json" "$WORK/table.json" || fail "-o FILE differs from --json"
grep -q '^utterances  *24 (34.4 s of audio' "$WORK/out" || fail "table: $(head -3 "$WORK/out")"
grep -q '^speakers  *4$' "$WORK/out" || fail "table speakers: $(cat "$WORK/out")"

# a table without rows: zeros, empty counts, null percentiles (no crash)
head -2 "$WORK/costs.tsv" >"$WORK/empty.tsv"
expect_exit 0 "$BIN" describe --json "$WORK/empty.tsv"
py - "$WORK/out" <<'PY' || fail "empty table: $(cat "$WORK/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["utterances"], d["seconds"], d["duration_seconds"], d["sample_rates"], d["channels"],
        d["text"]["percentiles"], d["speakers"], d["filter"]["kept"]) == \
    (0, 0.0, None, {}, {}, None, {"count": 0, "hours_per_speaker": None}, 0), d
PY
expect_exit 0 "$BIN" describe "$WORK/empty.tsv"
grep -q '^sample rates  *-$' "$WORK/out" || fail "empty table, readable: $(cat "$WORK/out")"

# bad input: one line naming the file, exit 2, nothing on stdout
printf 'not a list\n' >"$WORK/bad.list"
expect_exit 2 "$BIN" describe "$WORK/bad.list"
[[ $(wc -l <"$WORK/err") == 1 && ! -s $WORK/out ]] || fail "bad list: $(cat "$WORK/err")"
expect_exit 2 "$BIN" describe
expect_exit 2 "$BIN" describe --loader kaldi "$WORK/costs.tsv"
expect_exit 2 "$BIN" describe -o "$WORK/costs.tsv" "$WORK/costs.tsv"

# listed by equishard --help; help describe is describe --help
"$BIN" --help | grep -q '^  describe ' || fail "describe is not in equishard --help"
cmp -s <("$BIN" help describe) <("$BIN" describe --help) || fail "help describe differs"

[[ $failures == 0 ]] && echo "ok" || exit 1
