#!/usr/bin/env bash
# CLI tests for `equishard measure`: exit codes, one-line errors, output files
# (plain and zstd, atomic), determinism across -j, --on-error skip summary.
# Expected values come from the fixtures' truth.tsv (soxi) and from the zstd tool.
set -u
BIN=$1
FIX=$ES_FIXTURES
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cd "$FIX/corpus_a" || exit 1

# 1. the table: magic line, header, 60 rows whose key/rate/channels/samples/text
#    equal truth.tsv
expect_exit 0 "$BIN" measure -q -o "$WORK/costs.tsv" shards/shards.list
[[ $(head -1 "$WORK/costs.tsv") == "#equishard-costs v1" ]] || fail "first line"
sed -n 2p "$WORK/costs.tsv" | grep -q $'^key\tshard\tpos\tsample_rate\tchannels\tsamples\taudio_bytes\ttext_len\tspeech_tokens\tspk\tflags\thash' || fail "header row"
[[ $(tail -n +3 "$WORK/costs.tsv" | wc -l) == 60 ]] || fail "60 rows"
diff <(tail -n +3 "$WORK/costs.tsv" | cut -f1,4,5,6,8) \
     <(tail -n +2 truth.tsv | awk -F'\t' -v OFS='\t' '{print $1,$3,$4,$5,$7}') >"$WORK/diff" \
    || fail "rows differ from truth.tsv: $(head -5 "$WORK/diff")"

# 1b. CosyVoice parquet shards (data.list): the same 60 rows, speech tokens and
#     speakers included, every embedding present; a parquet file without audio
#     (InspireMusic's) is one line naming it
expect_exit 0 "$BIN" measure -q -o "$WORK/pq.tsv" parquet/data.list
diff <(tail -n +3 "$WORK/pq.tsv" | cut -f1,4,5,6,8,9,10,11) \
     <(tail -n +2 truth.tsv | awk -F'\t' -v OFS='\t' '{print $1,$3,$4,$5,$7,$8,$2,"audio,text,utt_emb,spk_emb"}') \
    >"$WORK/diff" || fail "parquet rows differ from truth.tsv: $(head -5 "$WORK/diff")"
expect_exit 2 "$BIN" measure "$FIX/real/FunAudioLLM__InspireMusic/examples/music_generation/data/samples/parquet/parquet_000000000.tar"
[[ $(wc -l <"$WORK/err") == 1 ]] && grep -q 'parquet_000000000.tar: no audio_data column' "$WORK/err" \
    || fail "parquet without audio_data: $(cat "$WORK/err")"

# 2. stdout by default; .zst output is zstd (the zstd tool reads it) and holds the same
expect_exit 0 "$BIN" measure -q shards/shards.list
cmp -s "$WORK/out" "$WORK/costs.tsv" || fail "stdout differs from -o file"
expect_exit 0 "$BIN" measure -q -o "$WORK/costs.tsv.zst" shards-zst/shards.list
# (other shard files: all but their shard_size and shard_mtime columns)
zstd -q -d -c "$WORK/costs.tsv.zst" | sed 's/\.tar\.zst\t/.tar\t/; s/shards-zst\//shards\//' | cut -f1-12 \
    | cmp -s - <(cut -f1-12 "$WORK/costs.tsv") || fail ".tsv.zst content differs from .tsv"

# 3. byte-identical for -j 1 and -j 2, with --hash, over every input format
expect_exit 0 "$BIN" measure -q -j 1 --hash -o "$WORK/j1.tsv" shards/shards.list shards-gz/shards.list raw.list kaldi
expect_exit 0 "$BIN" measure -q -j 2 --hash -o "$WORK/j2.tsv" shards/shards.list shards-gz/shards.list raw.list kaldi
cmp -s "$WORK/j1.tsv" "$WORK/j2.tsv" || fail "-j 1 and -j 2 differ"
[[ $(tail -n +3 "$WORK/j1.tsv" | wc -l) == 240 ]] || fail "240 rows for 4 inputs"

# 3b. -o FILE streams rows as units finish (memory stays flat); standard output writes the
#     table held whole: the same bytes and the same stderr, for -j 1 and -j 2,
#     with the tokenizer line, embedding flags and speech tokens, list entries
#     before shards (the stat columns decided late), and zstd
#     (the tokenizer is read in place from ../shared, as the tokenizer suites do:
#     without it, the same checks run without the tokenizer line)
TOKS=$ES_SOURCE_ROOT/../shared/fixtures/tokenizers/qwen2
tok_args=(--tokenizer "$TOKS")
[[ -d $TOKS ]] || { echo "SKIP: 3b's tokenizer line ($TOKS absent)"; tok_args=(); }
stream_args=(--hash "${tok_args[@]}" --utt-emb kaldi/utt2embedding.pt --spk-emb kaldi/spk2embedding.pt
             --speech-tokens kaldi/utt2speech_token.pt kaldi raw.list shards/shards.list)
expect_exit 0 "$BIN" measure -q -j 2 "${stream_args[@]}"
mv "$WORK/out" "$WORK/whole.tsv"; mv "$WORK/err" "$WORK/whole.err"
for j in 1 2; do
    expect_exit 0 "$BIN" measure -q -j $j -o "$WORK/stream.tsv" "${stream_args[@]}"
    cmp -s "$WORK/stream.tsv" "$WORK/whole.tsv" || fail "-j $j: -o FILE differs from stdout"
    cmp -s "$WORK/err" "$WORK/whole.err" || fail "-j $j: stderr differs: $(cat "$WORK/err")"
    expect_exit 0 "$BIN" measure -q -j $j -o "$WORK/stream.tsv.zst" "${stream_args[@]}"
    zstd -q -d -c "$WORK/stream.tsv.zst" | cmp -s - "$WORK/whole.tsv" || fail "-j $j: .zst differs"
done
if ((${#tok_args[@]})); then
    grep -q '^# tokenizer: ' "$WORK/whole.tsv" && [[ $(tail -n +4 "$WORK/whole.tsv" | wc -l) == 180 ]] \
        || fail "streamed table: tokenizer line and 180 rows"
else
    [[ $(tail -n +3 "$WORK/whole.tsv" | wc -l) == 180 ]] || fail "streamed table: 180 rows"
fi

# 4. --root resolves list entries from elsewhere
(cd "$WORK" && "$BIN" measure -q --root "$FIX/corpus_a" -o root.tsv "$FIX/corpus_a/shards/shards.list") \
    || fail "--root run"
cmp -s "$WORK/root.tsv" "$WORK/costs.tsv" || fail "--root output differs"

# 5. bad input: exit 2, one line naming the file; the previous output survives
printf 'shards/shards_000000000.tar\nshards/missing.tar\n' >"$WORK/bad.list"
cp "$WORK/costs.tsv" "$WORK/keep.tsv"
expect_exit 2 "$BIN" measure -q -o "$WORK/keep.tsv" "$WORK/bad.list"
[[ $(wc -l <"$WORK/err") == 1 ]] || fail "error is not one line: $(cat "$WORK/err")"
grep -q 'shards/missing.tar' "$WORK/err" || fail "error does not name the shard"
cmp -s "$WORK/keep.tsv" "$WORK/costs.tsv" || fail "failed run touched the old output"
ls "$WORK" | grep -q '\.tmp\.' && fail "temporary file left behind"

# 6. --on-error skip: exit 0, the good shard measured, the problem listed on stderr
expect_exit 0 "$BIN" measure -q --on-error skip -o "$WORK/skip.tsv" "$WORK/bad.list"
[[ $(tail -n +3 "$WORK/skip.tsv" | wc -l) == 16 ]] || fail "skip kept 16 rows"
grep -q 'left out 1 problem' "$WORK/err" && grep -q 'missing.tar' "$WORK/err" || fail "skip summary: $(cat "$WORK/err")"

# 7. usage errors exit 2
expect_exit 2 "$BIN" measure
expect_exit 2 "$BIN" measure -j 0 shards/shards.list
expect_exit 2 "$BIN" measure --on-error maybe shards/shards.list
expect_exit 2 "$BIN" frobnicate
expect_exit 2 "$BIN" measure "$WORK/nonexistent.list"
expect_exit 0 "$BIN" measure --help
expect_exit 0 "$BIN" --version

# 8. a file that is no input at all (binary, not tar): exit 2, says so
head -c 2000 /dev/urandom | tr '\0' '\1' >"$WORK/noise.bin"; printf '\0' >>"$WORK/noise.bin"
expect_exit 2 "$BIN" measure "$WORK/noise.bin"
grep -q 'noise.bin' "$WORK/err" || fail "noise error names the file"

# 8b. --speech-tokens: utt2speech_token.pt's list lengths are truth.tsv's speech
#     tokens (Kaldi measures none itself); a source lacking keys leaves those rows
#     0 (the loader's require_speech_token filter drops them) and keys the inputs
#     lack are counted; plan, simulate and validate take it too
cd "$FIX/corpus_a" || exit 1
expect_exit 0 "$BIN" measure -q --speech-tokens kaldi/utt2speech_token.pt -o "$WORK/st.tsv" kaldi
diff <(tail -n +3 "$WORK/st.tsv" | cut -f1,9) <(tail -n +2 truth.tsv | cut -f1,8) >"$WORK/diff" \
    || fail "--speech-tokens differs from truth.tsv: $(head -4 "$WORK/diff")"
grep -q 'speech tokens from kaldi/utt2speech_token.pt: 60 row(s) set, 0 row(s) without (speech_tokens 0), 0 key(s) not in the inputs' "$WORK/err" \
    || fail "--speech-tokens counts: $(cat "$WORK/err")"
# a plain pickle (protocol 2, as pickle.dump writes it) of A01's lists and one stranger
python3 - "$WORK/a01.pkl" <<'PY' || fail "writing the pickle"
import pickle, sys
d = {f"A01_{i:04d}": [7] * (i + 3) for i in range(1, 11)}
d["nobody"] = [1, 2]
pickle.dump(d, open(sys.argv[1], "wb"), protocol=2)
PY
expect_exit 0 "$BIN" measure -q --speech-tokens "$WORK/a01.pkl" -o "$WORK/st.tsv" kaldi
grep -q '10 row(s) set, 50 row(s) without (speech_tokens 0), 1 key(s) not in the inputs' "$WORK/err" \
    || fail "--speech-tokens subset counts: $(cat "$WORK/err")"
[[ $(awk -F'\t' 'NR>2 && $9 != 0' "$WORK/st.tsv" | wc -l) == 10 && \
   $(awk -F'\t' '$1 == "A01_0005" {print $9}' "$WORK/st.tsv") == 8 ]] || fail "--speech-tokens subset rows"
expect_exit 2 "$BIN" measure -q --speech-tokens kaldi/utt2embedding.pt kaldi
grep -q 'utt2embedding.pt: holds floats' "$WORK/err" || fail "embeddings as tokens: $(cat "$WORK/err")"
expect_exit 0 "$BIN" simulate -q --loader cosyvoice --world-size 2 --require-speech-token \
    --speech-tokens "$WORK/a01.pkl" kaldi
grep -q '10 row(s) set' "$WORK/err" && grep -q 'no_speech_token 40' "$WORK/out" \
    || fail "simulate --speech-tokens: $(cat "$WORK/err")"
expect_exit 0 "$BIN" plan -q -k 2 -o "$WORK/plan" --speech-tokens kaldi/utt2speech_token.pt kaldi
grep -q '60 row(s) set' "$WORK/err" || fail "plan --speech-tokens"
expect_exit 1 "$BIN" validate -q --fail-on filtered --require-speech-token \
    --speech-tokens "$WORK/a01.pkl" --json "$WORK/v.json" kaldi
grep -q '10 row(s) set' "$WORK/err" && \
    python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['summary']['filtered']['no_speech_token'] == 40" \
    "$WORK/v.json" || fail "validate --speech-tokens: $(cat "$WORK/err")"

# 9. data-samples (the README demo): every layout measures to its soxi truth
cd "$ES_SOURCE_ROOT/data-samples" || exit 1
truth() { tail -n +2 truth.tsv | awk -F'\t' -v OFS='\t' '{print $1,$3,$4,$5,$6}' | sort; }
for input in shards/data.list shards-zst/data.list raw.list kaldi parquet/data.list; do
    expect_exit 0 "$BIN" measure -q -o "$WORK/ds.tsv" "$input"
    diff <(tail -n +3 "$WORK/ds.tsv" | cut -f1,4,5,6,8 | sort) <(truth) >"$WORK/diff" \
        || fail "data-samples $input differs from truth.tsv: $(head -4 "$WORK/diff")"
done
for input in kaldi shards/data.list parquet/data.list; do # speakers: utt2spk, key.spk members, spk column
    expect_exit 0 "$BIN" measure -q -o "$WORK/ds.tsv" "$input"
    diff <(tail -n +3 "$WORK/ds.tsv" | cut -f1,10 | sort) <(tail -n +2 truth.tsv | cut -f1,2 | sort) >/dev/null \
        || fail "data-samples $input speakers differ from truth.tsv"
done

if ((failures)); then
    echo "$failures failure(s)"
    exit 1
fi
echo "all CLI measure tests passed"
