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
grep -q -- '--tokenizer PATH or --symbol-table FILE is required' "$WORK/err" || fail "missing --tokenizer: $(cat "$WORK/err")"
mkdir "$WORK/empty"
expect_exit 2 "$BIN" tokenize -t "$WORK/empty" "$WORK/lines.txt"
[[ $(wc -l <"$WORK/err") == 1 ]] && grep -q 'empty: not a tokenizer folder' "$WORK/err" || fail "empty folder: $(cat "$WORK/err")"
printf '{"model": {"type": "WordPiece"}}' >"$WORK/tokenizer.json"
expect_exit 2 "$BIN" tokenize -t "$WORK/tokenizer.json" "$WORK/lines.txt"
[[ $(cat "$WORK/err") == "equishard tokenize: $WORK/tokenizer.json: model type WordPiece: only BPE (Qwen2's byte-level) is supported" ]] \
    || fail "WordPiece: $(cat "$WORK/err")"
expect_exit 2 "$BIN" tokenize -t "$TOK/qwen2" --specials cosyvoice9 "$WORK/lines.txt"
grep -q "specials 'cosyvoice9'" "$WORK/err" || fail "bad specials: $(cat "$WORK/err")"
# a --jsonl line without a "text" string, or not JSON, is flagged in place and the
# run goes on (as a text that is not UTF-8 is): exit 1, output line i = input line i
printf '{"txt": "x"}\n{"text": "hi"}\nnot json\n{"text": "hi"}\n' >"$WORK/nojson.jsonl"
expect_exit 1 "$BIN" tokenize -t "$TOK/qwen2" --jsonl "$WORK/nojson.jsonl"
grep -q 'nojson.jsonl: line 1: no "text" string' "$WORK/err" || fail "jsonl without text: $(cat "$WORK/err")"
grep -q 'nojson.jsonl: line 3: ' "$WORK/err" || fail "jsonl not JSON: $(cat "$WORK/err")"
python3 - "$WORK/out" "$TOK/qwen2/vocab.json" <<'PY' || fail "jsonl output lines: $(cat "$WORK/out")"
import json, sys
got = [json.loads(l) for l in open(sys.argv[1])]
hi = json.load(open(sys.argv[2], encoding="utf-8"))["hi"]   # "hi" is one token of the vocab
assert [g["n"] for g in got] == [None, 1, None, 1], got
assert got[0]["error"] == 'no "text" string' and got[1]["ids"] == got[3]["ids"] == [hi], got
PY

# 5. measure --tokenizer: a text_tokens column last, equal to truth.jsonl's
#    n for every corpus A transcript in each input format; without --tokenizer
#    the table is as before (12 columns); tables with the column read back
CORPUS=$ES_FIXTURES/corpus_a
for input in kaldi raw.list shards/shards.list parquet/data.list; do
    (cd "$CORPUS" && "$BIN" measure -q --tokenizer "$TOK/qwen2" -o "$WORK/tok.tsv" "$input") \
        || fail "measure --tokenizer $input"
    python3 - "$TOK/truth.jsonl" "$WORK/tok.tsv" "$input" <<'PY' || fail "text_tokens of $input"
import json, sys
n = {}
for l in open(sys.argv[1], encoding='utf-8'):
    r = json.loads(l)
    for s in r.get('src', []):
        if s.startswith('corpus_a/'):
            n[s.split('#')[1].split('.')[0]] = r['n']
lines = open(sys.argv[2], encoding='utf-8').read().split('\n')
# the tokenizer's identity between the magic line and the header
ident = json.loads(lines[1][len('# tokenizer: '):]) if lines[1].startswith('# tokenizer: ') else None
assert ident and ident['kind'] == 'qwen2_bpe' and ident['vocab_size'] == 151663, lines[1]
assert ident['specials'] == 'cosyvoice2' and ident['path'].endswith('/qwen2'), ident
rows = [l.split('\t') for l in lines[2:] if l]
col = rows[0].index('text_tokens')  # the last column: after shard_size/shard_mtime for shards
assert col == len(rows[0]) - 1 and col in (12, 14), rows[0]
bad = [r[0] for r in rows[1:] if int(r[col]) != n[r[0]]]
print(f"{sys.argv[3]}: {len(rows) - 1 - len(bad)}/{len(rows) - 1} text_tokens equal truth")
assert not bad and len(rows) == 61, bad[:5]
PY
done
(cd "$CORPUS" && "$BIN" measure -q -o "$WORK/plain.tsv" kaldi) || fail "measure kaldi"
[[ $(sed -n 2p "$WORK/plain.tsv" | awk -F'\t' '{print NF}') == 12 ]] || fail "a table without --tokenizer has 12 columns"
expect_exit 0 "$BIN" plan --world-size 2 --min-length 10 --root "$CORPUS" -o "$WORK/plan-tok" "$WORK/tok.tsv"
python3 -c "
import json, sys
t = json.load(open('$WORK/plan-tok/plan.json'))['text_tokens']
assert t['count'] == 'text_tokens' and t['rows_counted'] == 60 and t['rows_without'] == 0 and 'note' not in t, t
# the table's tokenizer is recorded although plan was given none
k = t['tokenizer']
assert k['kind'] == 'qwen2_bpe' and k['vocab_size'] == 151663 and k['specials'] == 'cosyvoice2', k
assert k['files'] == 'vocab.json+merges.txt+tokenizer_config.json' and k['digest'].startswith('xxh3-64:'), k
" || fail "plan.json text_tokens from a table with counts"
# 6. without token counts the token filters are not applied, and both the
#    summary and plan.json say so in one line
(cd "$CORPUS" && "$BIN" plan --world-size 2 --min-length 10 --token-max-length 20 -o "$WORK/plan-chars" \
    "$WORK/plain.tsv" >"$WORK/out" 2>&1) || fail "plan without counts: $(cat "$WORK/out")"
grep -q '^note: token filters not applied to 60 utterance(s) without text token counts (measure with --tokenizer); [0-9]* of them would be dropped if characters were tokens$' "$WORK/out" \
    || fail "summary note: $(cat "$WORK/out")"
python3 -c "
import json
p = json.load(open('$WORK/plan-chars/plan.json'))
t = p['text_tokens']
assert t['rows_without'] == 60 and t['note'].startswith('token filters not applied'), t
assert p['metrics']['filtered']['too_many_tokens'] == 0, p['metrics']['filtered']
assert int(t['note'].split('; ')[1].split()[0]) > 0, t
" || fail "plan.json note without counts"
# with --tokenizer on the lists: the tokenizer is recorded, the filter counts tokens
(cd "$CORPUS" && "$BIN" plan --world-size 2 --min-length 10 --token-max-length 5 --tokenizer "$TOK/qwen2" \
    -o "$WORK/plan-list" kaldi >"$WORK/out" 2>&1) || fail "plan --tokenizer: $(cat "$WORK/out")"
python3 -c "
import json
p = json.load(open('$WORK/plan-list/plan.json'))
t = p['text_tokens']['tokenizer']
assert t['vocab_size'] == 151663 and t['specials'] == 'cosyvoice2' and t['digest'].startswith('xxh3-64:'), t
assert t['files'] == 'vocab.json+merges.txt+tokenizer_config.json', t
assert p['metrics']['filtered']['too_many_tokens'] > 0, p['metrics']['filtered']
# the same record as the one plan-tok took from the table measured with it
k = json.load(open('$WORK/plan-tok/plan.json'))['text_tokens']['tokenizer']
assert t['kind'] == 'qwen2_bpe' and t['digest'] == k['digest'] and t['vocab_size'] == k['vocab_size'], (t, k)
" || fail "plan.json tokenizer record"

# 7. NFC as HF's normalizer computes it: the unicode-normalization-alignments
#    crate HF tokenizers uses has Unicode 9.0 tables, so a code point added
#    since (combining marks of Unicode 10-14 here; DerivedAge) has combining
#    class 0 and neither decomposes nor composes, where libutf8proc reorders
#    and composes around it. truth.jsonl has no such code point, so the ids
#    expected come from an independent Python tokenizer: NFC written out from
#    the Unicode algorithm over Python's unicodedata with that rule applied to
#    the listed code points, then the Split regex (Python `regex`), byte-level
#    and rank-order BPE over vocab.json/merges.txt. It is checked first against
#    truth.jsonl (HF's own ids) on every record without an added token.
python3 - "$TOK" >"$WORK/nfc9.jsonl" <<'PY' || fail "HF NFC oracle: $(tail -3 "$WORK/nfc9.jsonl")"
import json, sys, unicodedata
import regex
tok = sys.argv[1]
# Added after Unicode 9.0 (DerivedAge.txt): U+07FD 11.0, U+1DF6 10.0,
# U+1ABF and U+11930/U+11935/U+11938 13.0, U+1DFA and U+0898 14.0.
NEW = {0x07FD, 0x1DF6, 0x1ABF, 0x11930, 0x11935, 0x11938, 0x1DFA, 0x0898}
try:
    for line in open('/usr/share/unicode/DerivedAge.txt', encoding='utf-8'):
        f = line.split('#')[0].split(';')
        if len(f) == 2:
            a, _, b = f[0].strip().partition('..')
            for c in NEW & set(range(int(a, 16), int(b or a, 16) + 1)):
                assert float(f[1]) > 9.0, (hex(c), f[1])
except FileNotFoundError:
    pass

def ccc(c):
    return 0 if c in NEW else unicodedata.combining(chr(c))

def decompose(c):
    if 0xAC00 <= c < 0xAC00 + 11172:  # Hangul syllables: L V [T]
        s = c - 0xAC00
        return [0x1100 + s // 588, 0x1161 + s % 588 // 28] + ([0x11A7 + s % 28] if s % 28 else [])
    d = '' if c in NEW else unicodedata.decomposition(chr(c))
    if not d or d.startswith('<'):
        return [c]
    return [x for p in d.split() for x in decompose(int(p, 16))]

def excluded(c):  # Full_Composition_Exclusion (stable since Unicode 3.1)
    return unicodedata.normalize('NFC', chr(c)) != chr(c)

PAIRS = {}
for c in range(0x110000):
    d = unicodedata.decomposition(chr(c)) if c not in NEW else ''
    if d and not d.startswith('<') and len(d.split()) == 2 and not excluded(c):
        PAIRS[tuple(int(p, 16) for p in d.split())] = c

def pair(a, b):
    if 0x1100 <= a < 0x1100 + 19 and 0x1161 <= b < 0x1161 + 21:
        return 0xAC00 + ((a - 0x1100) * 21 + b - 0x1161) * 28
    if 0xAC00 <= a < 0xAC00 + 11172 and (a - 0xAC00) % 28 == 0 and 0x11A7 < b < 0x11A7 + 28:
        return a + b - 0x11A7
    return PAIRS.get((a, b))

def nfc(s):
    cps = [x for ch in s for x in decompose(ord(ch))]
    for i in range(1, len(cps)):  # canonical ordering: a stable insertion sort of each run
        j = i
        while j > 0 and ccc(cps[j]) and ccc(cps[j - 1]) > ccc(cps[j]):
            cps[j - 1], cps[j] = cps[j], cps[j - 1]
            j -= 1
    out, starter, last = [], None, 0
    for c in cps:
        k = ccc(c)
        p = pair(out[starter], c) if starter is not None and (len(out) - 1 == starter or 0 < last < k) else None
        if p:
            out[starter] = p
            continue
        if k == 0:
            starter = len(out)
        last = k
        out.append(c)
    return ''.join(map(chr, out))

bs = list(range(ord('!'), ord('~') + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
rest = [b for b in range(256) if b not in bs]  # GPT-2's bytes_to_unicode
byte_char = {b: chr(c) for b, c in zip(bs + rest, bs + [256 + n for n in range(len(rest))])}
vocab = json.load(open(tok + '/qwen2/vocab.json', encoding='utf-8'))
ranks = {tuple(l.split()): i for i, l in enumerate(open(tok + '/qwen2/merges.txt', encoding='utf-8').read().split('\n')[1:]) if l}
PAT = regex.compile(r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")

def bpe(word):
    parts = [byte_char[b] for b in word.encode('utf-8')]
    while len(parts) > 1:
        r, i = min((ranks.get((parts[i], parts[i + 1]), 1 << 30), i) for i in range(len(parts) - 1))
        if r == 1 << 30:
            break
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return [vocab[p] for p in parts]

def ids(text):
    return [i for w in PAT.findall(nfc(text)) for i in bpe(w)]

added = [l.split('\t', 1)[1].rstrip('\n') for l in open(tok + '/qwen2/added_tokens_cosyvoice2.tsv', encoding='utf-8')]
checked = 0
for line in open(tok + '/truth.jsonl', encoding='utf-8'):
    t = json.loads(line)
    if not any(a in t['text'] for a in added) and not regex.search(r'[\x1c-\x1f]', t['text']):
        assert ids(t['text']) == t['ids'], t['id']
        checked += 1
assert checked > 500, checked
texts = ['a\u1abf\u0301', 'x\u0301\u1abf', 'e\u0301\u1dfa\u0323 caf\u00e9',
         '\U00011935\U00011930 \U00011938', '\u0301\u1abfa\u0301b', 'o\u0308\u1df6\u0304 \u4f60\u597d\u0898\u0651\u064e',
         '\u07fd\u0323 \u0627\u0651\u07fd\u064e', 'q\u0323\u1dfa\u0307\u1abf\u0302']
for t in texts:
    # the rule changes each of them: Python's own NFC (Unicode 14) differs
    assert nfc(t) != unicodedata.normalize('NFC', t), ascii(t)
    print(json.dumps({'text': t, 'ids': ids(t)}))
PY
expect_exit 0 "$BIN" tokenize --tokenizer "$TOK/qwen2" --jsonl "$WORK/nfc9.jsonl"
python3 - "$WORK/nfc9.jsonl" "$WORK/out" <<'PY' || fail "NFC as HF: $(cat "$WORK/out")"
import json, sys
want = [json.loads(l) for l in open(sys.argv[1], encoding='utf-8')]
got = [json.loads(l) for l in open(sys.argv[2], encoding='utf-8')]
assert len(want) == 8 and len(got) == 8, (len(want), len(got))
bad = [(ascii(w['text']), w['ids'], g['ids']) for w, g in zip(want, got) if g['ids'] != w['ids']]
assert not bad, bad
PY

((failures == 0)) || exit 1
echo "tokenize: all passed"
