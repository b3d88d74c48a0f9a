#!/usr/bin/env bash
# Token counts: plan, simulate and validate print (and write in their JSON)
# the same one-line note when a table has no text token counts, with counts
# checked against corpus A's truth.tsv; the tokenizer a table was measured with
# is recorded in it ("# tokenizer: {...}" after the magic line) and in
# plan.json / simulate's / validate's "text_tokens"; tables of different
# tokenizers are not mixed; a table without one is as before.
set -u
BIN=$1
A=$ES_FIXTURES/corpus_a
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# 1. no counts: the three commands, one note. Expected from truth.tsv: every row
# lacks a count (60); those the other filters keep (1 s .. 409.6 s: >= 100 frames)
# with more than 20 characters would be dropped if characters were tokens.
expect_exit 0 "$BIN" measure --root "$A" -o "$WORK/plain.tsv" "$A/kaldi"
read -r unknown would < <(python3 - "$A/truth.tsv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], encoding='utf-8'), delimiter='\t'))
keep = [r for r in rows if 100 <= float(r['num_samples']) / float(r['sample_rate']) * 100 <= 40960]
print(len(rows), sum(int(r['text_chars']) > 20 for r in keep))
PY
)
note="token filters not applied to $unknown utterance(s) without text token counts (measure with --tokenizer); $would of them would be dropped if characters were tokens"
[[ $unknown == 60 && $would -gt 0 ]] || fail "corpus A changed: $unknown $would"
expect_exit 0 "$BIN" plan -k 2 --token-max-length 20 -o "$WORK/p" "$WORK/plain.tsv"
grep -qxF "note: $note" "$WORK/out" || fail "plan: $(grep note "$WORK/out")"
expect_exit 0 "$BIN" simulate --loader cosyvoice -k 2 --token-max-length 20 --no-plan -o "$WORK/sim.json" "$WORK/plain.tsv"
grep -qxF "  note: $note" "$WORK/out" || fail "simulate: $(grep note "$WORK/out")"
expect_exit 0 "$BIN" validate --costs "$WORK/plain.tsv" --token-max-length 20 --json "$WORK/val.json"
grep -qxF "note: $note" "$WORK/out" || fail "validate: $(grep note "$WORK/out")"
python3 - "$WORK/p/plan.json" "$WORK/sim.json" "$WORK/val.json" "$note" <<'PY' || fail "JSON notes differ"
import json, sys
want = {'tokenizer': None, 'count': 'text_tokens', 'rows_counted': 0, 'rows_without': 60, 'note': sys.argv[4]}
got = [json.load(open(sys.argv[1]))['text_tokens'], json.load(open(sys.argv[2]))['text_tokens'],
       json.load(open(sys.argv[3]))['summary']['text_tokens']]
assert got == [want] * 3, got
PY
# WeNet counts characters without a symbol table: no note, text_len counted
expect_exit 0 "$BIN" simulate --loader wenet -k 2 --no-plan -o "$WORK/simw.json" "$WORK/plain.tsv"
grep -q "note:" "$WORK/out" && fail "wenet: a note without a symbol table"
python3 -c "import json,sys; t = json.load(open(sys.argv[1]))['text_tokens']; assert t['count'] == 'text_len' and 'note' not in t, t" \
    "$WORK/simw.json" || fail "wenet text_tokens"
# a table without a tokenizer is as before: the magic line, then the header
[[ $(sed -n 1p "$WORK/plain.tsv") == "#equishard-costs v1" && $(sed -n 2p "$WORK/plain.tsv" | cut -f1-3) == $'key\tshard\tpos' ]] \
    || fail "plain table header: $(head -2 "$WORK/plain.tsv")"

# 2. the identity from a table measured with --symbol-table (units.txt: 5 ids)
printf '<blank> 0\n<unk> 1\nY 2\ne 3\ns 4\n' >"$WORK/units.txt"
expect_exit 0 "$BIN" measure --root "$A" --symbol-table "$WORK/units.txt" -o "$WORK/char.tsv" "$A/raw.list"
[[ $(sed -n 2p "$WORK/char.tsv") == "# tokenizer: {\"kind\":\"wenet_char\",\"path\":\"$WORK/units.txt\",\"files\":\"units.txt\",\"vocab_size\":5,\"specials\":\"none\",\"digest\":\"xxh3-64:"* ]] \
    || fail "identity line: $(sed -n 2p "$WORK/char.tsv")"
expect_exit 0 "$BIN" plan -k 2 -o "$WORK/pc" "$WORK/char.tsv"
expect_exit 0 "$BIN" validate --loader wenet --costs "$WORK/char.tsv" --json "$WORK/valc.json"
python3 - "$WORK/pc/plan.json" "$WORK/valc.json" "$WORK/char.tsv" <<'PY' || fail "identity in plan.json / validate"
import json, sys
line = open(sys.argv[3], encoding='utf-8').read().split('\n')[1]
ident = json.loads(line[len('# tokenizer: '):])
p = json.load(open(sys.argv[1]))['text_tokens']
v = json.load(open(sys.argv[2]))['summary']['text_tokens']
assert p['tokenizer'] == ident == v['tokenizer'], (p, v, ident)
assert p['rows_counted'] == 60 and v['count'] == 'text_tokens', (p, v)
PY

# 3. two tokenizers: refused, one line, exit 2 (inputs side by side, or `cat`)
expect_exit 0 "$BIN" measure --root "$A" --symbol-table "$WORK/units.txt" --split-with-space -o "$WORK/word.tsv" "$A/raw.list"
expect_exit 2 "$BIN" plan -k 2 -o "$WORK/px" "$WORK/char.tsv" "$WORK/word.tsv"
[[ $(wc -l <"$WORK/err") == 1 ]] && grep -q "word.tsv: text_tokens counted with another tokenizer than the inputs before it" "$WORK/err" \
    || fail "two tokenizers: $(cat "$WORK/err")"
cat "$WORK/char.tsv" "$WORK/word.tsv" >"$WORK/both.tsv"
expect_exit 2 "$BIN" validate --costs "$WORK/both.tsv"
[[ $(cat "$WORK/err") == "equishard validate: $WORK/both.tsv: line 65: measured with another tokenizer than the table before it (its text_tokens would not compare)" ]] \
    || fail "cat of two tokenizers: $(cat "$WORK/err")"
# a damaged record is one line too
sed '2s/"kind"/"kinds"/' "$WORK/char.tsv" >"$WORK/damaged.tsv"
expect_exit 2 "$BIN" plan -k 2 -o "$WORK/pd" "$WORK/damaged.tsv"
grep -q "damaged.tsv: line 2: tokenizer: expected a JSON object" "$WORK/err" || fail "damaged: $(cat "$WORK/err")"

# 4. a tokenizer folder whose path is not UTF-8 (byte 0xff): the record writes
# the byte \udcff as every JSON output does, so Python's json.loads and
# .encode("utf-8", "surrogateescape") give back the exact path bytes; plan.json,
# simulate's and validate's JSON keep it, and a table measured again with the
# same tokenizer concatenates with it.
qwen2=
for d in "$ES_SOURCE_ROOT/../shared/fixtures/tokenizers/qwen2" "$ES_SOURCE_ROOT/shared/fixtures/tokenizers/qwen2"; do
    [[ -d $d ]] && { qwen2=$d; break; }
done
if [[ -n $qwen2 ]]; then
    tokff="$WORK/$(printf 'tok\xff')"
    cp -r "$qwen2" "$tokff"
    expect_exit 0 "$BIN" measure --root "$A" --tokenizer "$tokff" -o "$WORK/ff.tsv" "$A/kaldi"
    expect_exit 0 "$BIN" measure --root "$A" --tokenizer "$tokff" -o "$WORK/ff2.tsv" "$A/kaldi"
    cat "$WORK/ff.tsv" "$WORK/ff2.tsv" >"$WORK/ffcat.tsv"
    expect_exit 0 "$BIN" plan -q -k 2 -o "$WORK/pff" "$WORK/ff.tsv"
    expect_exit 0 "$BIN" simulate -q --loader cosyvoice -k 2 --no-plan -o "$WORK/simff.json" "$WORK/ff.tsv"
    expect_exit 0 "$BIN" validate -q --costs "$WORK/ffcat.tsv" --json "$WORK/valff.json"
    python3 - "$WORK/ff.tsv" "$tokff" "$WORK/pff/plan.json" "$WORK/simff.json" "$WORK/valff.json" <<'PY' \
        || fail "tokenizer path not UTF-8: $(sed -n 2p "$WORK/ff.tsv")"
import json, os, sys
line = open(sys.argv[1], 'rb').read().split(b'\n')[1].decode('utf-8')   # UTF-8 throughout
assert line.startswith('# tokenizer: ') and '\\udcff' in line and '\ufffd' not in line, line
ident = json.loads(line[len('# tokenizer: '):])
want = os.fsencode(sys.argv[2])
assert ident['path'].encode('utf-8', 'surrogateescape') == want, ident
p = json.load(open(sys.argv[3]))['text_tokens']['tokenizer']
s = json.load(open(sys.argv[4]))['text_tokens']['tokenizer']
v = json.load(open(sys.argv[5]))['summary']['text_tokens']['tokenizer']
assert p == s == v == ident, (p, s, v, ident)
assert p['path'].encode('utf-8', 'surrogateescape') == want, p
PY
else
    echo "SKIP 4: no ../shared/fixtures/tokenizers/qwen2"
fi
# the same for a symbol table named in latin-1 given to plan over a table
# without counts: plan.json names it (its "files" is the file's name; the
# record was null, the name refused as a JSON string)
unitsef="$WORK/$(printf 'un\xefts.txt')"
cp "$WORK/units.txt" "$unitsef"
expect_exit 0 "$BIN" plan -q -k 2 --symbol-table "$unitsef" -o "$WORK/pef" "$WORK/plain.tsv"
python3 - "$WORK/pef/plan.json" "$unitsef" <<'PY' || fail "symbol table not UTF-8: $(grep -A3 '"tokenizer"' "$WORK/pef/plan.json")"
import json, os, sys
t = json.load(open(sys.argv[1]))['text_tokens']['tokenizer']
assert t['kind'] == 'wenet_char', t
assert t['path'].encode('utf-8', 'surrogateescape') == os.fsencode(sys.argv[2]), t
assert t['files'].encode('utf-8', 'surrogateescape') == os.path.basename(os.fsencode(sys.argv[2])), t
PY

exit $((failures > 0))
