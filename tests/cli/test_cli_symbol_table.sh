#!/usr/bin/env bash
# CLI tests for WeNet's CharTokenizer (--symbol-table units.txt [--non-lang-syms
# FILE] [--split-with-space]): `tokenize` gives the table's ids; `measure` puts
# len(label) in text_tokens; `simulate --loader wenet` and `validate --loader
# wenet` filter on it (not on characters), with counts computed here from the
# transcripts by WeNet's rules (independent of equishard); bad tables and
# option mixes are one line, exit 2.
set -u
BIN=$1
A=$ES_FIXTURES/corpus_a
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# units.txt: <blank>, <unk>, the first 40 words of the corpus (sorted), the
# upper-case letters, ▁ and two non-linguistic symbols
python3 - "$A/raw.list" "$WORK/units.txt" <<'PY'
import json, sys
words = sorted({w for l in open(sys.argv[1], encoding='utf-8') for w in json.loads(l)['txt'].split(' ')})
syms = ['<blank>', '<unk>'] + words[:40] + [chr(c) for c in range(65, 91)] + ['▁', '[NOISE]', '<SIL>']
with open(sys.argv[2], 'w', encoding='utf-8') as f:
    f.writelines(f'{s} {i}\n' for i, s in enumerate(dict.fromkeys(syms)))
PY
printf '[NOISE]\n<SIL>\n' >"$WORK/nls.txt"
id() { awk -v s="$1" '$1 == s { print $2 }' "$WORK/units.txt"; }

# 1. tokenize: characters (' ' is ▁), upper-casing and non-linguistic symbols, words
printf 'AB C\n' >"$WORK/t1.txt"
expect_exit 0 "$BIN" tokenize --symbol-table "$WORK/units.txt" "$WORK/t1.txt"
[[ $(cat "$WORK/out") == "{\"n\": 4, \"ids\": [$(id A), $(id B), $(id ▁), $(id C)]}" ]] || fail "chars: $(cat "$WORK/out")"
printf 'ab [noise] c<SIL>\n' >"$WORK/t2.txt"
expect_exit 0 "$BIN" tokenize --symbol-table "$WORK/units.txt" --non-lang-syms "$WORK/nls.txt" "$WORK/t2.txt"
[[ $(cat "$WORK/out") == "{\"n\": 5, \"ids\": [$(id A), $(id B), $(id '[NOISE]'), $(id C), $(id '<SIL>')]}" ]] \
    || fail "non_lang_syms: $(cat "$WORK/out")"
printf 'Yes. zzz\n' >"$WORK/t3.txt"
expect_exit 0 "$BIN" tokenize --symbol-table "$WORK/units.txt" --split-with-space "$WORK/t3.txt"
[[ $(cat "$WORK/out") == "{\"n\": 2, \"ids\": [$(id Yes.), 1]}" ]] || fail "words: $(cat "$WORK/out")"

# 2. measure: text_tokens is len(label) of every row (words of the stripped txt)
expect_exit 0 "$BIN" measure --root "$A" --symbol-table "$WORK/units.txt" --split-with-space -o "$WORK/c.tsv" "$A/raw.list"
python3 - "$A/raw.list" "$WORK/c.tsv" <<'PY' || fail "text_tokens differ from the word counts"
import csv, json, sys
want = {o['key']: len(o['txt'].strip().split(' ')) for o in map(json.loads, open(sys.argv[1], encoding='utf-8'))}
rows = list(csv.DictReader((l for l in open(sys.argv[2], encoding='utf-8') if not l.startswith('#')), delimiter='\t'))
got = {r['key']: int(r['text_tokens']) for r in rows}
assert got == want, [(k, got.get(k), v) for k, v in want.items() if got.get(k) != v][:5]
PY
expect_exit 0 "$BIN" measure --root "$A" --symbol-table "$WORK/units.txt" -o "$WORK/chars.tsv" "$A/shards/shards.list"
python3 - "$A/raw.list" "$WORK/chars.tsv" <<'PY' || fail "tar: text_tokens differ from the character counts"
import csv, json, sys
want = {o['key']: len(o['txt'].strip()) for o in map(json.loads, open(sys.argv[1], encoding='utf-8'))}
rows = list(csv.DictReader((l for l in open(sys.argv[2], encoding='utf-8') if not l.startswith('#')), delimiter='\t'))
assert {r['key']: int(r['text_tokens']) for r in rows} == want
PY

# 3. the wenet filter counts labels: --token-max-length 5 drops the transcripts of
# more than 5 words (27 of 60 here, counted from raw.list), not those of more than
# 5 characters (53: without --symbol-table, WeNet's filter counts characters)
drops=$(python3 -c "import json,sys; print(sum(len(json.loads(l)['txt'].strip().split(' ')) > 5 for l in open(sys.argv[1])))" "$A/raw.list")
[[ $drops == 27 ]] || fail "corpus changed: $drops transcripts of more than 5 words"
expect_exit 0 "$BIN" simulate --loader wenet -k 2 --token-max-length 5 --no-plan "$WORK/c.tsv"
grep -q "33 kept .*filtered: too_many_tokens 27$" "$WORK/out" || fail "simulate: $(sed -n 2p "$WORK/out")"
expect_exit 0 "$BIN" simulate --loader wenet -k 2 --token-max-length 5 --no-plan --root "$A" "$A/raw.list"
grep -q "filtered: too_many_tokens 53$" "$WORK/out" || fail "simulate, characters: $(sed -n 2p "$WORK/out")"

# 4. a transcript WeNet gives no label (whitespace only: strip() leaves nothing;
# one of unknown symbols with a table without <unk>): text_tokens 0 is a count
# (flag no_tokens), and the wenet filter drops it as too_few_tokens
cp "$A/wav/A01/A01_0001.wav" "$WORK/a.wav"
printf '{"key": "w1", "wav": "a.wav", "txt": "AB"}\n{"key": "w2", "wav": "a.wav", "txt": "   "}\n' >"$WORK/ws.list"
printf 'A 1\nB 2\n' >"$WORK/no_unk.txt"
printf '{"key": "w3", "wav": "a.wav", "txt": "zz"}\n' >>"$WORK/ws.list"
expect_exit 0 "$BIN" measure --root "$WORK" --symbol-table "$WORK/no_unk.txt" -o "$WORK/ws.tsv" "$WORK/ws.list"
[[ $(awk -F'\t' 'NR > 3 { print $1, $8, $11, $NF }' "$WORK/ws.tsv" | tr '\n' '|') == "w1 2 audio,text,item 2|w2 3 audio,text,item,no_tokens 0|w3 2 audio,text,item,no_tokens 0|" ]] \
    || fail "no_tokens: $(cut -f1,8,11,13 "$WORK/ws.tsv")"
expect_exit 0 "$BIN" simulate --loader wenet -k 1 --no-plan "$WORK/ws.tsv"
grep -q "3 utterances, 1 kept .*filtered: too_few_tokens 2$" "$WORK/out" || fail "no_tokens filter: $(sed -n 2p "$WORK/out")"

# 5. refusals: one line naming the file and line, or the option mix; exit 2
printf '<unk> 1\nA\n' >"$WORK/bad_units.txt"
expect_exit 2 "$BIN" measure --symbol-table "$WORK/bad_units.txt" -o "$WORK/x.tsv" "$A/raw.list"
[[ $(cat "$WORK/err") == "equishard measure: $WORK/bad_units.txt: line 2: expected \"SYMBOL ID\" (two fields), as WeNet's read_symbol_table asserts" ]] \
    || fail "bad units: $(cat "$WORK/err")"
printf 'NOISE\n' >"$WORK/bad_nls.txt"
expect_exit 2 "$BIN" tokenize --symbol-table "$WORK/units.txt" --non-lang-syms "$WORK/bad_nls.txt" "$WORK/t1.txt"
grep -q "bad_nls.txt: line 1: a non-linguistic symbol is {xxx}, <xxx> or \[xxx\]" "$WORK/err" || fail "bad nls: $(cat "$WORK/err")"
expect_exit 2 "$BIN" measure --symbol-table "$WORK/units.txt" --tokenizer "$WORK" "$A/raw.list"
[[ $(cat "$WORK/err") == "equishard measure: --tokenizer and --symbol-table name two tokenizers; give the recipe's one" ]] \
    || fail "both: $(cat "$WORK/err")"
expect_exit 2 "$BIN" simulate --loader wenet -k 2 --split-with-space "$A/raw.list"
grep -q "options of --symbol-table" "$WORK/err" || fail "orphan option: $(cat "$WORK/err")"
[[ ! -e $WORK/x.tsv ]] || fail "a refused measure wrote its output"

exit $((failures > 0))
