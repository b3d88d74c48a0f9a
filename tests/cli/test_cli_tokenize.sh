#!/usr/bin/env bash
# CLI tests for `equishard tokenize`: every truth.jsonl record through --jsonl
# gives HF's ids (`ids` with the default cosyvoice2 specials, `ids_cv3` with
# cosyvoice3); plain lines; invalid UTF-8 reported in place (exit 1); refused
# tokenizers and missing options are one line, exit 2. SKIP (77) without
# ../shared/fixtures/tokenizers.
set -u
BIN=$1
TOK=$ES_SOURCE_ROOT/../shared/fixtures/tokenizers
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ -f $TOK/truth.jsonl ]] || { echo "SKIP: $TOK absent"; exit 77; }

# 1. every truth record, both special sets, compared field by field
compare() { # field output
    python3 - "$TOK/truth.jsonl" "$1" "$2" <<'PY' || fail "$1: $(tail -3 "$WORK/cmp")"
import json, sys
truth = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]
got = [json.loads(l) for l in open(sys.argv[3], encoding='utf-8')]
assert len(got) == len(truth), (len(got), len(truth))
bad = [t['id'] for t, g in zip(truth, got) if g['ids'] != t[sys.argv[2]] or g['n'] != len(g['ids'])]
print(f"{sys.argv[2]}: {len(truth) - len(bad)}/{len(truth)} match")
assert not bad, bad[:10]
PY
}
expect_exit 0 "$BIN" tokenize --tokenizer "$TOK/qwen2" --jsonl "$TOK/truth.jsonl"
compare ids "$WORK/out" >"$WORK/cmp" 2>&1; cat "$WORK/cmp"
expect_exit 0 "$BIN" tokenize --tokenizer "$TOK/qwen2" --specials cosyvoice3 --jsonl - <"$TOK/truth.jsonl"
compare ids_cv3 "$WORK/out" >"$WORK/cmp" 2>&1; cat "$WORK/cmp"

# 2. plain lines (stdin and a file give the same), the empty line is no ids
printf 'Yes.\nGood morning, everyone.\n\n[breath]<|endofprompt|>x\n' >"$WORK/lines.txt"
expect_exit 0 "$BIN" tokenize -t "$TOK/qwen2" "$WORK/lines.txt"
cat >"$WORK/want" <<'OUT'
{"n": 2, "ids": [9454, 13]}
{"n": 5, "ids": [15216, 6556, 11, 5019, 13]}
{"n": 0, "ids": []}
{"n": 3, "ids": [151647, 151646, 87]}
OUT
cmp -s "$WORK/out" "$WORK/want" || fail "plain lines: $(cat "$WORK/out")"
"$BIN" tokenize -t "$TOK/qwen2" <"$WORK/lines.txt" | cmp -s - "$WORK/want" || fail "stdin differs"
# --specials none: the CosyVoice tokens are text ("[b" "re" "ath" "]")
expect_exit 0 "$BIN" tokenize -t "$TOK/qwen2" --specials none - <<<'[breath]'
[[ $(cat "$WORK/out") == '{"n": 4, "ids": [18483, 265, 587, 60]}' ]] || fail "specials none: $(cat "$WORK/out")"

# 3. invalid UTF-8: reported in its place, the others still encoded, exit 1
printf 'Yes.\nab\xffc\nYes.\n' >"$WORK/bad.txt"
expect_exit 1 "$BIN" tokenize -t "$TOK/qwen2" "$WORK/bad.txt"
[[ $(sed -n 2p "$WORK/out") == '{"n": null, "error": "text: byte 2: not valid UTF-8"}' && $(wc -l <"$WORK/out") == 3 ]] \
    || fail "invalid UTF-8 line: $(cat "$WORK/out")"
grep -q 'bad.txt: line 2: text: byte 2: not valid UTF-8' "$WORK/err" || fail "stderr: $(cat "$WORK/err")"

# 4. refusals: one line, exit 2
expect_exit 2 "$BIN" tokenize "$WORK/lines.txt"
grep -q -- '--tokenizer PATH is required' "$WORK/err" || fail "missing --tokenizer: $(cat "$WORK/err")"
mkdir "$WORK/empty"
expect_exit 2 "$BIN" tokenize -t "$WORK/empty" "$WORK/lines.txt"
[[ $(wc -l <"$WORK/err") == 1 ]] && grep -q 'empty: not a tokenizer folder' "$WORK/err" || fail "empty folder: $(cat "$WORK/err")"
printf '{"model": {"type": "WordPiece"}}' >"$WORK/tokenizer.json"
expect_exit 2 "$BIN" tokenize -t "$WORK/tokenizer.json" "$WORK/lines.txt"
[[ $(cat "$WORK/err") == "equishard: $WORK/tokenizer.json: model type WordPiece: only BPE (Qwen2's byte-level) is supported" ]] \
    || fail "WordPiece: $(cat "$WORK/err")"
expect_exit 2 "$BIN" tokenize -t "$TOK/qwen2" --specials cosyvoice9 "$WORK/lines.txt"
grep -q "specials 'cosyvoice9'" "$WORK/err" || fail "bad specials: $(cat "$WORK/err")"
printf '{"txt": "x"}\n' >"$WORK/nojson.jsonl"
expect_exit 2 "$BIN" tokenize -t "$TOK/qwen2" --jsonl "$WORK/nojson.jsonl"
grep -q 'nojson.jsonl: line 1: no "text" string' "$WORK/err" || fail "jsonl without text: $(cat "$WORK/err")"

((failures == 0)) || exit 1
echo "tokenize: all passed"
